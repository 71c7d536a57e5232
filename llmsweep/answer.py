"""The report's first lines: one sentence per model that says what to buy or rent, what it costs
and what it is compared with, and the warnings a sweep without latency targets needs.

Plain data in (option rows as dicts, the sweep's workload and targets), plain text out; report.py
puts it into the context and the templates lay it out.
"""

from __future__ import annotations

import math


def f_layout(o: dict) -> str:
    """tp8, tp8 pp2, tp1 dp-attn16 ep16 (as report.f_layout)."""
    parts = [f"tp{o.get('tp', 1)}"]
    parts += [f"{n}{o[k]}" for k, n in (("dp_attention", "dp-attn"), ("ep", "ep"), ("pp", "pp")) if (o.get(k) or 1) > 1]
    return " ".join(parts)


# What interactive use needs, for sweeps that set no targets of their own: MLPerf Inference v5.0's
# "interactive" scenario for Llama 2 70B (MLCommons, April 2025) bounds the 99th percentile of
# TTFT at 450 ms and of TPOT at 40 ms, i.e. at least 25 tokens/s per user.
INTERACTIVE_TOKENS_PER_S = 25.0
INTERACTIVE_TTFT_P99_S = 0.45
INTERACTIVE_SOURCE = (
    "MLPerf Inference v5.0's interactive scenario (Llama 2 70B, MLCommons 2025): p99 TTFT ≤ 450 ms and "
    "p99 TPOT ≤ 40 ms, i.e. at least 25 tokens/s per user"
)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and not math.isfinite(v))


def money(v: float) -> str:
    return f"${v:,.0f}" if abs(v) >= 100 else f"${v:,.2f}"


def per_token(v: float) -> str:
    """A cost per million tokens: $1.58, $0.8665."""
    return f"${v:,.2f}" if abs(v) >= 1 else f"${v:,.4f}"


def seconds(v: float) -> str:
    return f"{v * 1e3:,.0f} ms" if v < 1 else f"{v:,.1f} s".replace(".0 s", " s")


def interactive_warnings(o: dict) -> list[str]:
    """Where an option is slower than interactive use needs (INTERACTIVE_SOURCE): per-user tokens/s
    below 25, or p99 TTFT above 450 ms."""
    out = []
    speed, ttft = o.get("decode_tokens_per_s_per_seq"), o.get("ttft_p99_s")
    if not _missing(speed) and speed < INTERACTIVE_TOKENS_PER_S:
        out.append(f"{speed:,.1f} tokens/s per user (interactive use needs ≥ {INTERACTIVE_TOKENS_PER_S:g})")
    if not _missing(ttft) and ttft > INTERACTIVE_TTFT_P99_S:
        out.append(f"p99 TTFT {seconds(ttft)} (interactive use needs ≤ {seconds(INTERACTIVE_TTFT_P99_S)})")
    return out


def traffic_text(workload: dict | None) -> str:
    """'at 20 requests/s (peak × 2)' or 'at 500 concurrent users (30 s think time)'; '' without a workload."""
    if not workload:
        return ""
    if workload.get("users") is not None:
        text = f"for {workload['users']:,} concurrent users ({workload.get('think_time_s', 0):g} s think time)"
    elif workload.get("requests_per_s") is not None:
        text = f"at {workload['requests_per_s']:g} requests/s"
    else:
        text = f"at {workload['tokens_per_day']:,.0f} output tokens a day"
    peak = workload.get("peak_factor", 1.0)
    return text + (f" (peak × {peak:g})" if peak and peak != 1 else "")


def traffic_statement(workload: dict | None, defaults: dict) -> str:
    """The traffic the plan sizes for, in words, with the arithmetic: the request rate (from users and
    their think time: λ = users / think time), the peak, the headroom and the spare replicas, saying
    which of them are the defaults. '' without a workload."""
    if not workload:
        return ""
    w = {**defaults, **{k: v for k, v in workload.items() if v is not None}}
    if w.get("users") is not None:
        rate = w["users"] / w["think_time_s"]
        text = (
            f"{w['users']:,} concurrent users, each thinking {w['think_time_s']:g} s between an answer and the next "
            f"question: λ = users ÷ think time = {w['users']:,} ÷ {w['think_time_s']:g} s = {rate:,.3g} requests/s on "
            "average (a user who also waits R seconds for each answer sends one request every think time + R, so "
            "users ÷ (think time + R) is the real rate; R is left out, which sizes for at least that)"
        )
    elif w.get("requests_per_s") is not None:
        rate = w["requests_per_s"]
        text = f"{rate:,.3g} requests/s on average"
    else:
        text = f"{w['tokens_per_day']:,.0f} output tokens a day"
        rate = None
    peak = w.get("peak_factor", 1.0)
    if rate is not None:
        text += f"; peak × {peak:g} = {rate * peak:,.3g} requests/s"
    else:
        text += f"; peak × {peak:g}"
    text += f"; {w.get('headroom', 0.2):.0%} headroom on top"
    given = "redundancy" in workload
    spare = w.get("redundancy", 0)
    n = int(str(spare).split("+")[1]) if isinstance(spare, str) else int(spare)
    spares = f"{n} spare replica{'s' if n != 1 else ''}"
    text += f"; {spares} (redundancy {spare}{'' if given else ', the default: n+1 adds one'})"
    return "Traffic: " + text + "."


def targets_text(slo: dict | None) -> str:
    """'with p90 TTFT ≤ 2 s and TPOT ≤ 50 ms'; 'with no latency targets' when the sweep sets none."""
    if not slo or not any(slo.get(k) is not None for k in ("ttft_s", "tpot_s", "request_latency_s")):
        return "with no latency targets"
    parts = []
    if slo.get("ttft_s") is not None:
        stat = slo.get("percentile") or "mean"
        parts.append(f"{'' if stat == 'mean' else stat + ' '}TTFT ≤ {seconds(slo['ttft_s'])}")
    if slo.get("tpot_s") is not None:
        parts.append(f"TPOT ≤ {seconds(slo['tpot_s'])}")
    if slo.get("request_latency_s") is not None:
        parts.append(f"request latency ≤ {seconds(slo['request_latency_s'])}")
    return "with " + " and ".join(parts)


def _bought(o: dict) -> bool:
    return str(o.get("price_source") or "").startswith("sweep: bought")


def _how(o: dict) -> str:
    """'bought', 'rented', 'rented (1y-reserved)', or the offer's own name."""
    offer = str(o.get("offer") or "")
    if _bought(o):
        return "bought"
    if offer.startswith("rent-"):
        return f"rented ({offer.removeprefix('rent-')})"
    if offer == "example":
        return "rented at an example price"
    return "rented" if offer in ("rent", "") else f"rented ({offer})"


def _fleet(o: dict) -> str:
    n = o.get("gpus_needed") if o.get("gpus_needed") is not None else o.get("gpus")
    return f"{n:,} × {o['gpu']}"


def answer(
    model: str,
    s_in: int,
    s_out: int,
    offers: list[dict],
    workload: dict | None,
    slo: dict | None,
    horizon_years: float,
    fleets: bool,
) -> str:
    """One sentence: the first-ranked option (offers are the first table's rows, ranked ones first, in
    rank order), what it costs, and the cheapest option of the other kind (rented against bought)
    or else the runner-up, by how much more a month it costs."""
    name = model.split("/")[-1]
    head = " ".join(p for p in (name, traffic_text(workload), targets_text(slo)) if p)
    head += f" ({s_in:,} tokens in, {s_out:,} out)"
    ranked = [o for o in offers if o.get("rank") is not None]
    if not ranked:
        fits = [o for o in offers if o.get("fits")]
        if not fits:
            return f"{head}: no option fits."
        closest = fits[0]
        miss = f", it misses by {closest['slo_miss']}" if closest.get("slo_miss") else ""
        return f"{head}: no option meets the targets; the closest is {_fleet(closest)}{miss}."
    best = ranked[0]
    if best.get("tco_usd_per_month") is None:  # no prices: the fastest per GPU (or per user)
        speed = best.get("decode_tokens_per_s_per_seq")
        per_gpu = best.get("output_tokens_per_s_per_gpu")
        return (
            f"{head}: {_fleet(best)} ({best['precision']}, {f_layout(best)}), {speed:,.1f} tokens/s per user, "
            f"{per_gpu:,.0f} tokens/s per GPU."
        )
    horizon = f"{horizon_years:g} year{'s' if horizon_years != 1 else ''}"
    if fleets:
        text = (
            f"{head}: {_fleet(best)} {_how(best)}, {money(best['tco_usd_per_month'])} a month, "
            f"{money(best['tco_usd'])} over {horizon}"
        )
    else:
        text = (
            f"{head}: {_fleet(best)} {_how(best)}, {per_token(best['usd_per_million_output_tokens'])} per million "
            f"output tokens with one replica fully loaded ({money(best['tco_usd_per_month'])} a month)"
        )
    key = "tco_usd_per_month" if fleets else "usd_per_million_output_tokens"
    unit = "a month" if fleets else "per million output tokens"
    others = [o for o in ranked[1:] if _bought(o) != _bought(best) and o.get(key) is not None]
    kind = ("the cheapest rental" if _bought(best) else "the cheapest purchase") if others else "the runner-up"
    pool = others or [o for o in ranked[1:] if o.get(key) is not None]
    if pool:
        other = pool[0]
        more = other[key] - best[key]
        what = _fleet(other) + ("" if others else f" {_how(other)}")
        shown = money(more) if fleets else per_token(more)
        text += f"; {kind}, {what}, costs {shown} more {unit}" if more > 0 else f"; {kind}, {what}, costs the same"
    return text + "."
