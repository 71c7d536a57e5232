"""The report's first lines: one sentence per model that says what to buy or rent, what it costs
and what it is compared with, and the warnings a sweep without latency targets needs.

Plain data in (option rows as dicts, the sweep's workload and targets), plain text out; report.py
puts it into the context and the templates lay it out.
"""

from __future__ import annotations

import math

from llmsweep.columns import TARGET_NAMES
from llmsweep.finance import HOURS_PER_MONTH

# How a layout is written (answers, tables and charts): tp always, then these when above 1.
LAYOUT_PARTS = (("dp_attention", "dp-attn"), ("ep", "ep"), ("pp", "pp"))


def f_layout(o: dict) -> str:
    """A replica's parallel layout in the engines' terms: tp8, tp8 pp2, tp1 dp-attn16 ep16."""
    parts = [f"tp{o.get('tp', 1)}"]
    parts += [f"{n}{o[k]}" for k, n in LAYOUT_PARTS if (o.get(k) or 1) > 1]
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


def target_seconds(v: float) -> str:
    """A latency target as the sweep gives it: below a second in ms to 3 significant digits ('0.001 ms':
    targets go down to 1 µs; '12.5 ms', not the '12 ms' `seconds` rounds a time to), from a second to the
    millisecond ('1.5 s', '3,600 s'). The charts label their target lines with it too."""
    if v < 1:
        return f"{v * 1e3:.3g} ms"
    return f"{v:,.3f}".rstrip("0").rstrip(".") + " s"


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


def _count(v: float) -> str:
    """A number of users (users x peak_factor may have a fraction): 300, 1,250, 301.5."""
    return f"{v:,.1f}".removesuffix(".0")


def users_rate_text(o: dict, workload: dict | None) -> str:
    """For a workload of users, the rate option `o` is sized for, with its arithmetic (its peak_users,
    request latency and peak_requests_per_s): 'sized for λ = 300 users ÷ (5 s + 16.9 s) = 13.7
    requests/s at the peak, 232 of them in flight'; '' otherwise."""
    if not workload or workload.get("users") is None:
        return ""
    rate, latency, users = o.get("peak_requests_per_s"), o.get("request_latency_s"), o.get("peak_users")
    if _missing(rate) or _missing(latency) or _missing(users):
        return ""
    flight = rate * latency
    shown = f"{flight:,.0f}" if flight >= 100 else f"{flight:.3g}"
    return (
        f"sized for λ = {_count(users)} user{'' if users == 1 else 's'} ÷ ({workload['think_time_s']:g} s + "
        f"{latency:,.3g} s) = {rate:,.3g} requests/s at the peak, {shown} of them in flight"
    )


def traffic_statement(workload: dict | None, defaults: dict) -> str:
    """The traffic the plan sizes for, in words, with the arithmetic: the request rate (from users and
    their think time: λ = users / (think time + R), R each option's request latency, users_rate_text),
    the peak, the headroom and the spare replicas, saying which of them are the defaults. '' without a
    workload."""
    if not workload:
        return ""
    w = {**defaults, **{k: v for k, v in workload.items() if v is not None}}
    if w.get("users") is not None:
        peak = w.get("peak_factor", 1.0)
        users = f"{w['users']:,}" if peak == 1 else f"{w['users']:,} × {peak:g} = {_count(w['users'] * peak)}"
        text = (
            f"{w['users']:,} concurrent users, each thinking {w['think_time_s']:g} s between an answer and the next "
            f"question and waiting R seconds for each answer, so each sends one request every think time + R; at "
            f"the peak, {users} users send λ = users ÷ (think time + R) = {_count(w['users'] * peak)} ÷ "
            f"({w['think_time_s']:g} s + R) requests/s, sized for each option with R its request latency at the "
            "operating point its fleet runs at (so never more requests in flight, λ × R, than users; each model's "
            "answer gives R and λ for its recommendation)"
        )
        rate = None
    elif w.get("requests_per_s") is not None:
        rate = w["requests_per_s"]
        text = f"{rate:,.3g} requests/s on average"
    else:
        text = f"{w['tokens_per_day']:,.0f} output tokens a day"
        rate = None
    peak = w.get("peak_factor", 1.0)
    if rate is not None:
        text += f"; peak × {peak:g} = {rate * peak:,.3g} requests/s"
    elif w.get("users") is None:
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
    if slo.get("ttft_s") is not None:  # the statistic always said: a mean and a p90 target differ by 1.3x and more
        parts.append(f"{slo.get('percentile') or 'mean'} TTFT ≤ {target_seconds(slo['ttft_s'])}")
    if slo.get("tpot_s") is not None:
        parts.append(f"TPOT ≤ {target_seconds(slo['tpot_s'])}")
    if slo.get("request_latency_s") is not None:
        parts.append(f"request latency ≤ {target_seconds(slo['request_latency_s'])}")
    return "with " + " and ".join(parts)


def _bought(o: dict) -> bool:
    return str(o.get("price_source") or "").startswith("sweep: bought")


def _how(o: dict) -> str:
    """'bought for $355,000 up front', 'rented at $2.49 per GPU-hour', 'rented (1y-reserved) at $2.10 per
    GPU-hour', 'rented at $4.54 per GPU-hour (example: Spheron, 2026-05-07)': a rental's price is what a
    reader checks first."""
    offer = str(o.get("offer") or "")
    if _bought(o):
        return f"bought{_up_front(o)}"
    how = "rented"
    if offer.startswith("rent-"):
        how = f"rented ({offer.removeprefix('rent-')})"
    elif offer not in ("rent", "example", ""):
        how = f"rented ({offer})"
    rate = o.get("usd_per_gpu_hour")
    if rate is None:
        return how
    source = str(o.get("price_source") or "")
    return f"{how} at {money(rate)} per GPU-hour" + (f" ({source})" if source.startswith("example") else "")


def _up_front(o: dict) -> str:
    """' for $1,420,000 up front': what a purchase pays before it serves, which its monthly figure spreads."""
    capex = o.get("capex_usd")
    return f" for {money(capex)} up front" if _bought(o) and capex else ""


def _fleet(o: dict) -> str:
    """'40 × b200 (fp8 weights)', with how it serves when that is more than an aggregated replica:
    '40 × b200 (nvfp4 weights, disaggregated 4P1D, MTP)'; a purchase in whole units says what is
    bought: '28 × h200-sxm (fp8 weights, 32 bought in whole units)'. The weight format is always
    said: two formats of one GPU can cost the same, and the narrower one carries a quality risk."""
    n = o.get("gpus_needed") if o.get("gpus_needed") is not None else o.get("gpus")
    served = [f"{o['precision']} weights"] if o.get("precision") else []
    if _more_bought(o):
        served.append(f"{o['gpus_bought']:,} bought in whole units{_up_front(o)}")
    if o.get("mode") == "disaggregated":
        served.append(f"disaggregated {o['prefill_workers']}P{o['decode_workers']}D")
    if o.get("speculative") not in (None, "none"):
        served.append(METHODS.get(o["speculative"], o["speculative"]))
    return f"{n:,} × {o['gpu']}" + (f" ({', '.join(served)})" if served else "")


def _more_bought(o: dict) -> bool:
    """A purchase in whole units buys more GPUs than the fleet uses (gpus_bought, finance.purchase_units)."""
    n = o.get("gpus_needed") if o.get("gpus_needed") is not None else o.get("gpus")
    return o.get("gpus_bought") is not None and o["gpus_bought"] != n


def _named(o: dict) -> str:
    """The fleet and how it is paid for: '4 × h100-sxm rented at $2.49 per GPU-hour', '28 × h200-sxm (32
    bought in whole units for $1,420,000 up front)' (the purchase said once)."""
    return _fleet(o) if _more_bought(o) else f"{_fleet(o)} {_how(o)}"


def answer(
    model: str,
    s_in: int,
    s_out: int,
    offers: list[dict],
    workload: dict | None,
    slo: dict | None,
    horizon_years: float,
    fleets: bool,
    sensitivity: list[dict] | None = None,
) -> str:
    """One sentence: the first-ranked option (offers are the first table's rows, ranked ones first, in
    rank order), what it costs, and the cheapest option of the other kind (rented against bought)
    or else the runner-up, by how much more a month it costs; then, from `sensitivity` (the pick's rows
    of plan/robustness.py), whether a 20 % move reverses the ranking (close_call)."""
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
    sized = users_rate_text(best, workload)
    sized = f" ({sized})" if sized else ""
    if best.get("tco_usd_per_month") is None:  # no prices: the fastest per GPU (or per user)
        speed = best.get("decode_tokens_per_s_per_seq")
        per_gpu = best.get("output_tokens_per_s_per_gpu")
        return (
            f"{head}: {_fleet(best)} at {f_layout(best)}, {speed:,.1f} tokens/s per user, "
            f"{per_gpu:,.0f} tokens/s per GPU{sized}."
        )
    horizon = f"{horizon_years:g} year{'s' if horizon_years != 1 else ''}"
    if fleets:
        text = (
            f"{head}: {_named(best)}, {money(best['tco_usd_per_month'])} a month, "
            f"{money(best['tco_usd'])} over {horizon}{sized}{_band(best)}"
        )
    else:  # the month on the per-token figure's basis: the replica's GPUs at their hourly cost
        # (a bought GPU's share of its server and rack), not the whole servers a fleet would buy
        month = (best.get("usd_per_hour") or 0.0) * HOURS_PER_MONTH
        text = (
            f"{head}: {_named(best)}, {per_token(best['usd_per_million_output_tokens'])} per million "
            f"output tokens with one replica fully loaded ({money(month)} a month)"
        )
    key = "tco_usd_per_month" if fleets else "usd_per_million_output_tokens"
    unit = "a month" if fleets else "per million output tokens"
    others = [o for o in ranked[1:] if _bought(o) != _bought(best) and o.get(key) is not None]
    kind = ("the cheapest rental" if _bought(best) else "the cheapest purchase") if others else "the runner-up"
    pool = others or [o for o in ranked[1:] if o.get(key) is not None]
    if pool:
        other = min(pool, key=lambda o: o[key]) if others else pool[0]  # the cheapest of the other kind
        more = other[key] - best[key]
        # how it is paid for, unless that is the best option's offer again (its price said once)
        same_offer = (other["gpu"], other.get("offer")) == (best["gpu"], best.get("offer"))
        what = _fleet(other) if same_offer else _named(other)
        # its rank, as the tables number it: the runner-up here is the next GPU x offer (x serving mode), which
        # the ranked layouts below may list after other layouts of the first
        kind += f" (#{other['rank']})" if other.get("rank") is not None else ""
        shown = money(abs(more)) if fleets else per_token(abs(more))
        if shown == (money(0.0) if fleets else per_token(0.0)):
            text += f"; {kind}, {what}, costs the same"
        else:  # ranked by something other than cost, the next option may be the cheaper one
            text += f"; {kind}, {what}, costs {shown} {'more' if more > 0 else 'less'} {unit}"
    return text + "." + close_call(sensitivity or []) + _unpriced(offers)


def close_call(sensitivity: list[dict]) -> str:
    """' A 20 % move reverses the ranking: memory bandwidth reached -20 %, traffic +20 % (see "Does the top
    choice hold").' when any assumption moved by 20 % puts another option first (plan/robustness.py), so
    that a buyer reads how fragile a pick is beside the pick, not only in the table below it."""
    # the assumption without its gloss: 'memory bandwidth reached', 'price of gb200 example'
    flips = [
        f"{str(s['assumption']).split(' (')[0].split(', against')[0]} {s['change']}"
        for s in sensitivity
        if s.get("flips")
    ]
    if not flips:
        return ""
    listed = flips[0] if len(flips) == 1 else f"{', '.join(flips[:-1])} or {flips[-1]}"
    return f' A 20 % move reverses the ranking: {listed} (see "Does the top choice hold").'


def _band(o: dict) -> str:
    """', or 32 GPUs if it runs at the slow end of its 80 % uncertainty band' when the estimate's
    uncertainty (the profile's out-of-sample errors) could need a larger fleet than the point estimate: a
    buyer sees the range."""
    n, high = o.get("gpus_needed"), o.get("gpus_needed_high")
    if n is None or high is None or high <= n:
        return ""
    return f", or {high:,} GPUs if it runs at the slow end of its 80 % uncertainty band"


def _unpriced(offers: list[dict]) -> str:
    """' gb300 and mi355x have no price: not ranked.' for the GPUs that fit but have no offer (the sweep's
    costs name other GPUs), so a reader does not take the answer as having beaten them."""
    gpus = list(dict.fromkeys(o["gpu"] for o in offers if o.get("fits") and o.get("offer") is None))
    if not gpus:
        return ""
    names = gpus[0] if len(gpus) == 1 else f"{', '.join(gpus[:-1])} and {gpus[-1]}"
    return f" {names} {'has' if len(gpus) == 1 else 'have'} no price: not ranked."


# -- serving modes: how an option serves, and which mode is cheapest per GPU --------------------------------------
# the scale-up link by its vendor's name, per GPU family (NVIDIA's otherwise)
SCALE_UP = {"cdna": "Infinity Fabric", "rdna": "Infinity Fabric", "gaudi": "RoCE scale-up ports", "xe": "Xe Link"}


def link_name(kind: str, o: dict, short: bool = False) -> str:
    """A link as a reader names it: 'NVLink' (or the GPU family's own scale-up link: 'Infinity Fabric'
    on AMD), 'PCIe', 'the network (NICs)'; `short` drops the gloss ('network')."""
    if kind == "scale-up":
        name = SCALE_UP.get(str(o.get("gpu_family") or ""), "NVLink")
        return name if short else f"{name} (one scale-up domain)"
    if kind == "scale-out":
        return "network" if short else "the network (NICs)"
    return {"pcie": "PCIe"}.get(kind, kind)


METHODS = {"mtp": "MTP", "eagle": "EAGLE", "draft": "a draft model"}
LIMITS = {name: f"the {label} target" for name, label in TARGET_NAMES.items()}


def _disaggregated(o: dict) -> bool:
    return o.get("mode") == "disaggregated"


def _workers(n: int, kind: str) -> str:
    return f"{n} {kind} worker{'s' if n != 1 else ''}"


def pools(o: dict) -> str:
    """'3P1D' for a disaggregated option, '' for an aggregated one."""
    return f"{o['prefill_workers']}P{o['decode_workers']}D" if _disaggregated(o) else ""


def prefill_layout(o: dict) -> str:
    """A prefill worker's layout, spelled as f_layout spells a replica's."""
    return f_layout({k: o.get(f"prefill_{k}") for k in ("tp", "pp", "ep", "dp_attention")})


def pools_text(o: dict) -> str:
    """'1P3D: 1 prefill worker of tp8 ep8 + 3 decode workers of tp1 dp-attn8 ep8'; '' when aggregated."""
    if not _disaggregated(o):
        return ""
    prefill = _workers(o["prefill_workers"], "prefill")
    decode = _workers(o["decode_workers"], "decode")
    return f"{pools(o)}: {prefill} of {prefill_layout(o)} + {decode} of {f_layout(o)}"


def kv_text(o: dict) -> str:
    """'KV cache over the network (NICs), 14.4 ms a prompt'; '' when aggregated."""
    if not _disaggregated(o) or o.get("kv_link") is None:
        return ""
    when = f", {seconds_exact(o['kv_transfer_s'])} a prompt" if not _missing(o.get("kv_transfer_s")) else ""
    return f"KV cache over {link_name(o['kv_link'], o)}{when}"


def seconds_exact(v: float) -> str:
    """Times that may be well under a millisecond: 0.81 ms, 14.4 ms, 1.25 s."""
    if v < 0.01:
        return f"{v * 1e3:.2f} ms"
    return f"{v * 1e3:,.1f} ms" if v < 1 else f"{v:,.2f} s"


def speculation_given(o: dict, settings: list[dict] | None) -> bool:
    """True when the sweep states the acceptance of the option's speculative setting (else the profile's
    default is assumed). `settings`: the manifest's `speculative` entries."""
    for s in settings or []:
        same = s.get("method") == o.get("speculative") and s.get("draft_tokens") == o.get("draft_tokens")
        if same and (s.get("acceptance") is not None or s.get("tokens_per_step") is not None):
            return True
    return False


def speculation_text(o: dict, settings: list[dict] | None = None, profile: str = "") -> str:
    """'MTP, 1 drafted token, acceptance 0.85 assumed (the default profile's), 1.85 tokens a step', or
    '... acceptance 0.7 (the sweep's) ...'; '' without speculative decoding."""
    method = o.get("speculative")
    if method in (None, "none") or not o.get("draft_tokens"):
        return ""
    name = METHODS.get(method, method)
    if method == "draft" and o.get("draft_model"):
        name = f"draft model {o['draft_model']}"
    k = o["draft_tokens"]
    source = "(the sweep's)" if speculation_given(o, settings) else f"assumed (the {profile or 'efficiency'} profile's)"
    alpha = o.get("acceptance_rate")
    accepted = f", acceptance {alpha:.3g} {source}" if not _missing(alpha) else ""
    e = o.get("tokens_per_step")
    step = f", {e:.2f} tokens a step" if not _missing(e) else ""
    return f"{name}, {k} drafted token{'s' if k != 1 else ''}{accepted}{step}"


def speculation_statement(rows: list[dict], settings: list[dict] | None = None, profile: str = "") -> str:
    """Once per report: the acceptance each speculative method was estimated with, and that it is an
    assumption ('' without speculative decoding): 'Speculative decoding: MTP with 1 drafted token at
    acceptance 0.85, the default profile's mtp_acceptance (the sweep gives no acceptance). Acceptance depends
    on the traffic (...); measure it on yours.'"""
    seen: dict[tuple, str] = {}
    for o in rows:
        method, k, alpha = o.get("speculative"), o.get("draft_tokens"), o.get("acceptance_rate")
        if method in (None, "none") or not k or _missing(alpha) or (method, k, alpha) in seen:
            continue
        name = METHODS.get(method, method)
        tokens = f"{k} drafted token{'s' if k != 1 else ''}"
        if speculation_given(o, settings):
            source = "as the sweep states"
        else:
            source = f"the {profile or 'efficiency'} profile's {method}_acceptance (the sweep gives no acceptance)"
        seen[(method, k, alpha)] = f"{name} with {tokens} at acceptance {alpha:.3g}, {source}"
    if not seen:
        return ""
    return (
        "Speculative decoding: " + "; ".join(seen.values()) + ". The acceptance is an assumption: it depends on "
        "the traffic (chat and code accept more drafted tokens than random-token benchmark prompts), so measure "
        "it on yours; TPOT scales with 1 / tokens a step."
    )


def prefix_text(o: dict) -> str:
    """'prefix cache: 50 % of prompt tokens (a prefix every request shares)'; '' without one."""
    h = o.get("prefix_hit_rate")
    if _missing(h) or not h:
        return ""
    shared = " (a prefix every request shares, held once)" if o.get("prefix_shared") else ""
    return f"prefix cache: {h:.0%} of prompt tokens{shared}"


def serving_text(o: dict, settings: list[dict] | None = None, profile: str = "") -> str:
    """How an option serves beyond its layout, each part only when it applies: 'KV cache over ... ·
    MTP, ... · prefix cache: ...' ('' for a plain aggregated replica; pools_text has the pools)."""
    parts = [kv_text(o), speculation_text(o, settings, profile), prefix_text(o)]
    return " · ".join(p for p in parts if p)


def pools_short(o: dict) -> str:
    """'4P1D · prefill tp8 ep8 · decode tp1 dp-attn8 ep8' ('' aggregated): a table cell's pools."""
    if not _disaggregated(o):
        return ""
    return f"{pools(o)} · prefill {prefill_layout(o)} · decode {f_layout(o)}"


def serving_tag(o: dict) -> str:
    """The fewest words that tell options apart on a narrow screen: '4P1D + MTP', 'aggregated'."""
    spec = o.get("speculative")
    extra = f" + {METHODS.get(spec, spec)}" if spec not in (None, "none") else ""
    return (pools(o) or "aggregated") + extra


def serving_short(o: dict) -> str:
    """A table cell's serving details: 'KV over network, 14.4 ms · MTP k=1, α 0.85 · prefix 50%'
    ('' for a plain aggregated replica); speculation_statement says where the acceptance comes from."""
    parts = []
    if _disaggregated(o) and o.get("kv_link") is not None:
        when = f", {seconds_exact(o['kv_transfer_s'])}" if not _missing(o.get("kv_transfer_s")) else ""
        parts.append(f"KV over {link_name(o['kv_link'], o, short=True)}{when}")
    method = o.get("speculative")
    if method not in (None, "none") and o.get("draft_tokens"):
        alpha = o.get("acceptance_rate")
        accepted = f", α {alpha:.2f}" if not _missing(alpha) else ""
        parts.append(f"{METHODS.get(method, method)} k={o['draft_tokens']}{accepted}")
    h = o.get("prefix_hit_rate")
    if not _missing(h) and h:
        parts.append(f"prefix {h:.0%}")
    return " · ".join(parts)


def option_name(o: dict) -> str:
    """A short name for an option in a sentence: 'disaggregated 3P1D (prefill tp8 ep8, decode tp1 dp-attn8
    ep8) with MTP', 'aggregated tp8 ep8'."""
    spec = o.get("speculative")
    with_spec = f" with {METHODS.get(spec, spec)}" if spec not in (None, "none") else ""
    if _disaggregated(o):
        return f"disaggregated {pools(o)} (prefill {prefill_layout(o)}, decode {f_layout(o)}){with_spec}"
    return f"aggregated {f_layout(o)}{with_spec}"


def _cost(o: dict, fleets: bool) -> float | None:
    v = o.get("fleet_usd_per_million_output_tokens") if fleets else o.get("usd_per_million_output_tokens")
    return None if _missing(v) else v


def saturation(o: dict) -> str:
    """What is full when a replica saturates at its capacity: its prefill pool, its KV cache, or its
    decode steps (an aggregated replica: prompts and decode steps together)."""
    busy, batch = o.get("capacity_prefill_busy"), o.get("capacity_decode_batch")
    slots = o.get("max_batch")
    if not _missing(batch) and slots and batch >= 0.95 * slots:
        where = "a decode worker" if _disaggregated(o) else "a replica"
        return f"its KV cache holds no more than {slots:,} sequences {where}"
    if _disaggregated(o):
        return "its prefill pool is full" if not _missing(busy) and busy >= 0.95 else "its decode steps are full"
    return "prompts and decode steps fill it"


def _at_capacity(o: dict, subject: str) -> str:
    """What a replica does at its capacity and what stops it: 'it takes 27.1 requests/s up to the p90
    TTFT target, 4 prefill workers 98% busy and 1 decode worker running 817 sequences at TPOT 29 ms
    with no prefill interference'."""
    cap, limit = o.get("capacity_requests_per_s"), o.get("capacity_limit")
    batch, tpot, busy = o.get("capacity_decode_batch"), o.get("capacity_tpot_s"), o.get("capacity_prefill_busy")
    if any(_missing(v) for v in (cap, batch, tpot, busy)) or not cap:
        return ""
    stop = f"saturated: {saturation(o)}" if limit == "saturated" else f"up to {LIMITS.get(limit, limit)}"
    if _disaggregated(o):
        prefill = _workers(o["prefill_workers"], "prefill")
        decode = _workers(o["decode_workers"], "decode")
        return (
            f"{subject} takes {cap:,.3g} requests/s ({stop}), {prefill} {busy:.0%} busy and {decode} running "
            f"{batch:,.0f} sequences at TPOT {seconds(tpot)} with no prefill interference"
        )
    return (
        f"{subject} takes {cap:,.3g} requests/s ({stop}), prompts taking {busy:.0%} of its time between decode "
        f"steps of {batch:,.0f} sequences (TPOT {seconds(tpot)})"
    )


def serving_comparison(offers: list[dict], fleets: bool) -> list[str]:
    """For a sweep that compares serving modes: per GPU (the offer of its best-ranked option), which
    mode is cheapest, by how much and why (what each replica does at its capacity, and the GPUs each
    fleet needs), from the best option of each mode there (`offers`: the first table's rows); and for
    one that compares speculative decoding, what it changes there. [] when neither applies (or no
    option meets the targets)."""
    out = []
    unit = "per million output tokens"
    ranked = [o for o in offers if o.get("rank") is not None and _cost(o, fleets) is not None]
    for gpu in dict.fromkeys(o["gpu"] for o in ranked):
        offer = next(o for o in ranked if o["gpu"] == gpu).get("offer")
        mine = [o for o in ranked if o["gpu"] == gpu and o.get("offer") == offer]
        best = {}
        for mode in ("aggregated", "disaggregated"):
            of_mode = [o for o in mine if o.get("mode") == mode]
            best[mode] = min(of_mode, key=lambda o: _cost(o, fleets)) if of_mode else None
        agg, dis = best["aggregated"], best["disaggregated"]
        if agg is not None and dis is not None:
            out.append(_mode_sentence(gpu, agg, dis, fleets, unit))
        spec = _speculation_effect(mine, fleets, unit)
        if spec:
            out.append(spec)
    return out


def _mode_sentence(gpu: str, agg: dict, dis: dict, fleets: bool, unit: str) -> str:
    win, lose = (dis, agg) if _cost(dis, fleets) <= _cost(agg, fleets) else (agg, dis)
    saving = 1 - _cost(win, fleets) / _cost(lose, fleets)
    other = "aggregated" if win is dis else "disaggregated"
    than = f"{option_name(lose)}, the best {other} option"
    if saving < 0.005:
        text = f"On {gpu}, {option_name(win)} costs the same {unit} as {than}"
    else:
        text = f"On {gpu}, {option_name(win)} is {saving:.0%} cheaper {unit} than {than}"
    if fleets and win.get("fleet_gpus") is not None and lose.get("fleet_gpus") is not None:
        text += f": {win['fleet_gpus']:,} GPUs for the traffic against {lose['fleet_gpus']:,}"
    article = "an" if other[0] == "a" else "a"
    why = [w for w in (_at_capacity(win, "a replica"), _at_capacity(lose, f"{article} {other} one")) if w]
    if why:
        text += ". At capacity " + "; ".join(why)
    return text + "." + _disaggregated_caveat(dis if win is dis else None)


def _disaggregated_caveat(dis: dict | None) -> str:
    """For a disaggregated option that wins or ties: how far its bands reach (from the measured
    disaggregated deployments' errors, which ran slower than estimated: docs/fidelity.md)."""
    if dis is None or _missing(dis.get("ttft_s_high")) or _missing(dis.get("ttft_s")):
        return ""
    reach = f"its mean TTFT's 80 % band runs to {seconds(dis['ttft_s_high'])} (estimated {seconds(dis['ttft_s'])})"
    if not _missing(dis.get("gpus_needed_high")) and not _missing(dis.get("gpus_needed")):
        reach += f" and its GPUs for the traffic to {dis['gpus_needed_high']:,} ({dis['gpus_needed']:,} estimated)"
    return (
        f" Disaggregated figures are the least certain: {reach}, as the measured disaggregated deployments ran "
        "slower than estimated; try it on your own traffic before buying for it."
    )


def _speculation_effect(mine: list[dict], fleets: bool, unit: str) -> str:
    """What speculative decoding changes on one GPU: its best option with it against its best without."""
    on = [o for o in mine if o.get("speculative") not in (None, "none")]
    off = [o for o in mine if o.get("speculative") in (None, "none")]
    if not on or not off:
        return ""
    a = min(off, key=lambda o: _cost(o, fleets))
    b = min(on, key=lambda o: _cost(o, fleets))
    change = 1 - _cost(b, fleets) / _cost(a, fleets)
    name = METHODS.get(b["speculative"], b["speculative"])
    tpot = f"TPOT at capacity {seconds(a['capacity_tpot_s'])} without it, {seconds(b['capacity_tpot_s'])} with it"
    if _missing(a.get("capacity_tpot_s")) or _missing(b.get("capacity_tpot_s")):
        tpot = f"TPOT {seconds(a['tpot_s'])} without it, {seconds(b['tpot_s'])} with it"
    if abs(change) < 0.005:
        what = f"{name} does not change the cost {unit}"
        limit = b.get("capacity_limit")
        if limit == "saturated":
            what += f": the replica saturates ({saturation(b)}) whatever its TPOT"
        elif limit and limit != "tpot_s":
            what += f": {LIMITS.get(limit, limit)} bounds its capacity, not the decode step"
        return f"On {mine[0]['gpu']}, {what} ({tpot})."
    more = "cheaper" if change > 0 else "dearer"
    return f"On {mine[0]['gpu']}, {name} makes the best option {abs(change):.0%} {more} {unit} ({tpot})."
