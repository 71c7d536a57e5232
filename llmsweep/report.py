"""Reports: estimates + manifest -> a self-contained report.html and a report.md with SVG charts.

`build_context` turns the results into plain data (the only place that decides what a report
says); jinja2 templates (StrictUndefined, HTML autoescaped) lay it out and format numbers through
the filters below. vega, vega-lite and vega-embed are inlined once, from vl-convert-python's
bundle: the page works with no network.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import jinja2
import polars as pl

from llmsweep import answer as answers
from llmsweep.catalog.engines import AUTO_KV_RULE
from llmsweep.charts import build_charts
from llmsweep.columns import BY_NAME, EFFICIENCY_COLUMNS, higher_is_better
from llmsweep.errors import LlmsweepError
from llmsweep.export import spreadsheet_round
from llmsweep.finance import RENT_24_7, cost_per_million, option_rows
from llmsweep.plan import FALLBACK_RANK, break_even
from llmsweep.vega import vega_bundle

TABLE_ROWS = 200  # configurations listed in the report's table (the CSV has them all)
LOW_BIT_CAVEAT = (
    "4-bit and lower weight formats lose visible quality on code, maths and long documents: "
    "evaluate the quantised model on your own tasks before buying for it."
)
TABLE_COLUMNS = (
    "gpu",
    "engine",
    "model",
    "precision",
    "kv_cache_format",
    "tp",
    "pp",
    "batch",
    "input_tokens",
    "output_tokens",
    "memory_per_gpu_bytes",
    "max_batch",
    "ttft_s",
    "tpot_s",
    "decode_tokens_per_s_per_seq",
    "output_tokens_per_s_per_gpu",
    "bound",
)
# kept on a narrow screen (the GPU cell then also says the weights and layout: _narrow_layout)
TABLE_KEY_COLUMNS = ("gpu", "batch", "ttft_s", "decode_tokens_per_s_per_seq")
# Shown after the layout when the sweep compares serving modes (more than one mode or speculative setting).
SERVING_TABLE_COLUMNS = ("mode", "prefill_workers", "decode_workers", "speculative")


# -- formatting filters (raw SI values in, text out) ----------------------------------------------------------
def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v)))


def f_bytes(v) -> str:
    """Memory in GiB (2^30 bytes), as the charts show it: vendors' "80 GB" HBM is 80 GiB."""
    return "–" if _missing(v) else f"{v / 2**30:,.1f} GiB"


def f_gib(v) -> str:
    return "–" if _missing(v) else f"{v / 2**30:,.1f} GiB"


def f_seconds(v) -> str:
    if _missing(v):
        return "–"
    return f"{v * 1e3:,.1f} ms" if v < 1 else f"{v:,.2f} s"


def f_tps(v) -> str:
    return "–" if _missing(v) else f"{v:,.1f} tok/s"


def f_usd(v) -> str:
    return "–" if _missing(v) else f"${v:,.2f}" if v >= 1 else f"${v:,.4f}"


def f_hourly(v) -> str:
    """A price per GPU-hour, to the cent: '$2.49', '$0.86', '$1.51' (a purchase's amortised hour)."""
    return "–" if _missing(v) else f"${v:,.2f}"


def f_money(v) -> str:
    """Whole dollars with thousands separators; millions as '$1.28 M'."""
    if _missing(v):
        return "–"
    if v == 0:
        return "$0"
    if abs(v) >= 1e6:
        return f"${v / 1e6:,.2f} M"
    return f"${v:,.0f}" if abs(v) >= 100 else f_usd(v)


def f_kw(v) -> str:
    """kW to 0.1, rounded as the workbook's Power (kW) column shows it (5.25 -> 5.3, half away from zero)."""
    return "–" if _missing(v) else f"{spreadsheet_round(v, 1):,.1f}"


def f_pct(v) -> str:
    return "–" if _missing(v) else f"{v:.0%}"


def f_num(v) -> str:
    if _missing(v):
        return "–"
    return f"{v:,}" if isinstance(v, int) else f"{v:,.3g}"


def f_value(v, column: str) -> str:
    """Format by the column's declared unit."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    unit = BY_NAME[column].unit if column in BY_NAME else ""
    formatter = {
        "bytes": f_bytes,
        "s": f_seconds,
        "tokens/s": f_tps,
        "USD": f_money,
        "USD/year": f_money,
        "USD/month": f_money,
        "USD/M tokens": f_usd,
        "USD/h": f_usd,
        "kW": f_kw,
        "fraction": f_pct,
    }.get(unit)
    if formatter:
        return formatter(v)
    return str(v) if isinstance(v, str) else f_num(v)


_MD_ESCAPES = (
    ("\\", "\\\\"),  # first: a user's backslash must not cancel the escapes below
    ("&", "&amp;"),  # no entities (&#33; is "!")
    ("<", "&lt;"),  # no raw HTML (<img>), no <https://...> autolinks
    (">", "&gt;"),
    ("[", "\\["),  # no links or images: ![x](https://...), [x](javascript:...), [x]: url
    ("]", "\\]"),
    ("|", "\\|"),  # no extra table cells
    ("\r\n", " "),
    ("\r", " "),  # no new lines (headings, quotes, lists)
    ("\n", " "),
)


def f_md(v) -> str:
    """Escape text for Markdown (a table cell or a line): no HTML, no links, autolinks or images
    (nothing a viewer would fetch or link), no pipes or line breaks. Every user-derived string in
    report.md passes here."""
    text = str(v)
    for a, b in _MD_ESCAPES:
        text = text.replace(a, b)
    # GitHub links bare URLs, www. names and e-mail addresses (GFM autolinks): break each, showing the same
    # text. '://' and 'www.' are matched as written, so an entity stops them; e-mail is matched after
    # entities are decoded, so a zero-width space follows '@' (which also stops @mentions).
    text = text.replace("://", ":&#47;&#47;").replace("@", "@\u200b")
    return re.sub(r"(?i)(www)\.", r"\1&#46;", text)


def f_json_script(value) -> str:
    """JSON safe to place inside <script>: no '</' can close the tag."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")


LINK_KINDS = ("scale-up", "pcie", "scale-out")


f_layout = answers.f_layout  # a replica's parallel layout in the engines' terms: tp8 pp2, tp1 dp-attn16 ep16


def f_links(o: dict) -> str:
    """How many servers a replica spans and which link each collective uses (NVLink / Infinity
    Fabric, PCIe, the network), when it is more than NVLink inside one server ('' otherwise):
    '2 servers per replica in one NVLink domain · tp NVLink · pp network' (`experts`: the dispatch or the gather
    across attention-DP groups)."""
    used = {name: o.get(key) for key, name in (("tp_link", "tp"), ("expert_link", "experts"), ("pp_link", "pp"))}
    used = {name: kind for name, kind in used.items() if kind in LINK_KINDS}
    servers = o.get("servers_per_replica") or 1
    if servers <= 1 and all(kind == "scale-up" for kind in used.values()):
        return ""
    links = [f"{name} {answers.link_name(kind, o, short=True)}" for name, kind in used.items()]
    # a replica across servers whose every collective runs on the scale-up link (a GB200 NVL72's trays)
    # needs them in one scale-up domain, which a rental must provide: said (a disaggregated replica's
    # servers may each hold a worker, joined by the KV transfer alone, and are not)
    one_domain = o.get("mode") != "disaggregated" and used and all(k == "scale-up" for k in used.values())
    domain = f" in one {answers.link_name('scale-up', o, short=True)} domain" if one_domain else ""
    spans = [f"{servers} servers per replica{domain}"] if servers > 1 else []
    return " · ".join(spans + links)


def f_pools(o: dict) -> str:
    """'1P3D: 1 prefill worker of tp8 ep8 + 3 decode workers of tp1 dp-attn8 ep8' ('' aggregated)."""
    return answers.pools_text(o)


def f_short_option(o: dict) -> str:
    """An option in a few words, enough to tell two apart in a column header: 'gb200 example · fp8 ·
    tp1 dp-attn16 ep16 · MTP', 'b200 rent · nvfp4 · 2P1D'."""
    offer = f" {o['offer']}" if o.get("offer") else ""
    layout = answers.pools(o) or f_layout(o)
    spec = o.get("speculative")
    spec = f" · {answers.METHODS.get(spec, spec)}" if spec not in (None, "none") else ""
    return f"{o['gpu']}{offer} · {o['precision']} · {layout}{spec}"


FILTERS = {
    "short_option": f_short_option,
    "layout": f_layout,
    "pools": f_pools,
    "links": f_links,
    "bytes": f_bytes,
    "gib": f_gib,
    "seconds": f_seconds,
    "tps": f_tps,
    "usd": f_usd,
    "hourly": f_hourly,
    "money": f_money,
    "kw": f_kw,
    "pct": f_pct,
    "num": f_num,
    "value": f_value,
    "md": f_md,
    "json_script": f_json_script,
}


# -- context --------------------------------------------------------------------------------------------------
def _why(r: dict, batches: list[int] | None = None) -> str:
    """One plain sentence on what limits this option and what would change it (a disaggregated
    replica: its decode workers' step)."""
    bound = r["bound"]
    where = " on the decode workers" if r.get("mode") == "disaggregated" else ""
    if bound == "memory":
        share = r["decode_weight_fraction"]
        if share >= 0.5:
            text = f"memory-bound{where}: {share:.0%} of each step's memory traffic reads the weights"
            if r["bytes_per_weight"] >= 1.5:
                text += "; an 8-bit or 4-bit weight format would cut that by half or more"
        else:
            text = f"memory-bound{where}: the KV cache is {1 - share:.0%} of each step's traffic"
            if (r.get("kv_bytes_per_element") or 2) >= 1.5:
                text += "; an fp8 KV cache halves it"
            else:
                kv = r.get("kv_cache_format") or r["kv_precision"]  # `auto`: the format the engine chose
                text += f" (already {kv}); shorter contexts or more GPUs per replica cut it"
    elif bound == "compute":
        batch = -(-r["batch"] // (r.get("decode_workers") or 1))  # a decode worker's share
        text = (
            f"compute-bound at batch {batch}{where}: the {r['compute_dtype']} matmuls set the pace; "
            "a GPU with more FLOP/s would help"
        )
    elif bound == "communication":
        share = r["decode_comm_s"] / r["decode_step_s"]
        text = f"communication-bound{where}: tp={r['tp']} all-reduces take {share:.0%} of each step"
    else:
        text = f"fixed per-step costs dominate{where} (a small model): larger batches amortise them"
    holds = r["max_batch"] * (r.get("decode_workers") or 1)  # a disaggregated replica: every decode worker's
    cap, limit = r.get("capacity_requests_per_s"), r.get("capacity_limit")
    if not _missing(r.get("offered_requests_per_s")) and not _missing(cap) and cap and limit:
        # sized for a workload: what holds a replica's rate, not the closed-loop batch (489 in flight at
        # the traffic were said to be 'held at 144' by the targets)
        stop = (
            f"it saturates ({answers.saturation(r)})"
            if limit == "saturated"
            else f"{answers.LIMITS.get(limit, limit)} is missed"
        )
        # the step's bound is half the story where prompts fill much of an aggregated replica's time: their
        # prefill is compute-bound, so compute moves its capacity too (rack-scale: a 20 % slower compute
        # doubles a 'memory-bound' fleet)
        busy = r.get("capacity_prefill_busy")
        prompts = (
            f", prompts (compute-bound) taking {busy:.0%} of its time there"
            if r.get("mode") != "disaggregated" and not _missing(busy) and busy >= 0.25
            else ""
        )
        return text + f"; a replica takes up to {cap:,.3g} requests/s before {stop}{prompts}."
    if r["batch"] >= holds:
        text += f"; the batch ({r['batch']}) is the most that fits in memory"
    elif batches and r["batch"] == max(batches):
        text += f"; the sweep's batches stop at {r['batch']} (memory allows {holds})"
    elif batches and r.get("slo_batch"):
        text += (
            f"; the latency targets hold the batch at {r['slo_batch']} of the sweep's batches (memory allows {holds})"
        )
    elif r.get("slo_batch") and r["slo_batch"] < holds:
        text += f"; the latency targets hold the batch at {r['slo_batch']} (memory allows {holds})"
    return text + "."


MAX_WORKLOADS = 4  # (input, output) pairs given recommendations of their own; beyond, one representative pair


def workloads(pairs: list[tuple[int, int]], preferred: tuple[int | None, int | None]) -> tuple[list, str | None]:
    """The (input, output) pairs that get recommendations: all of them when there are few; else the
    sweep's workload lengths if the grid has them, or the pair nearest the median lengths."""
    if len(pairs) <= MAX_WORKLOADS:
        return pairs, None
    if preferred in pairs:
        chosen = preferred
    else:
        mid_in = sorted(p[0] for p in pairs)[len(pairs) // 2]
        mid_out = sorted(p[1] for p in pairs)[len(pairs) // 2]
        chosen = min(pairs, key=lambda p: (abs(p[0] - mid_in), abs(p[1] - mid_out)))
    note = (
        f"The sweep has {len(pairs)} input/output length pairs; recommendations are shown for "
        f"{chosen[0]:,} in / {chosen[1]:,} out, and plan.csv has every pair."
    )
    return [chosen], note


def _is_cost(column: str) -> bool:
    return column.startswith(("usd", "fleet_usd", "tco", "capex", "opex"))


def _p90_band(r: dict) -> dict:
    """The p90 TTFT's band, by the same factors as the mean's (the profile's prefill band: ttft_s_low /
    ttft_s): shown beside a p90 that a target checks, where the mean's alone made it look safe."""
    mean, p90, low, high = (r.get(k) for k in ("ttft_s", "ttft_p90_s", "ttft_s_low", "ttft_s_high"))
    if any(_missing(v) for v in (mean, p90, low, high)) or not mean:
        return {"ttft_p90_s_low": None, "ttft_p90_s_high": None}
    return {"ttft_p90_s_low": p90 * low / mean, "ttft_p90_s_high": p90 * high / mean}


def _option(
    r: dict, column: str, batches: list[int] | None = None, targets: bool = True, serving: dict | None = None
) -> dict:
    caveats = [LOW_BIT_CAVEAT] if r["bytes_per_weight"] * 8 <= 4.5 else []
    if r.get("load_note"):  # clients beyond the engine's limit or the KV cache wait for a slot
        caveats.append(f"at this operating point the {r['load_note']}")
    shown = {  # the cost per token of the ranking (finance.cost_per_million: the fleet's with a workload)
        "usd_per_m": r.get("usd_per_million"),
        "usd_per_m_low": r.get("usd_per_million_low"),
        "usd_per_m_high": r.get("usd_per_million_high"),
        **_p90_band(r),
    }
    warnings = [] if targets else answers.interactive_warnings(r)
    serving = serving or {}
    how = answers.serving_text(r, serving.get("settings"), serving.get("profile", "")) if "mode" in r else ""
    return {
        **r,
        **shown,
        "score": r[column],
        "why": _why(r, batches),
        "caveats": caveats,
        "warnings": warnings,
        "serving": how if serving.get("shown") else "",
        "pools": answers.pools_text(r) if "mode" in r else "",
        "pools_short": answers.pools_short(r) if "mode" in r else "",
        "serving_short": answers.serving_short(r) if serving.get("shown") and "mode" in r else "",
        # with disaggregated options in the results, every option says its mode
        "mode_label": (r.get("mode") or "") if serving.get("disaggregated") else "",
        "tag": answers.serving_tag(r) if serving.get("shown") and "mode" in r else "",
    }


def recommendations(
    options: pl.DataFrame,
    column: str,
    top_n: int,
    licenses: dict[str, str],
    pairs: list[tuple[int, int]],
    sensitivity: dict[str, list[dict]],
    rent_paid: str = RENT_24_7,
    batches: list[int] | None = None,
    spec: dict | None = None,
    horizon_years: float = 3.0,
    serving: dict | None = None,
) -> list[dict]:
    """Per model and workload: the answer in one sentence, the top_n options that meet the targets
    (ranked by `column`, the first is the recommendation and the second the runner-up), the best
    option that misses the targets and by how much (when it beats the recommendation on `column`, or
    none meets them), a break-even line when buying competes with
    renting, how the top choice holds up when an assumption moves by 20 %, and (for a sweep that
    compares serving modes) the cheapest mode per GPU and why. `serving`: serving_info."""
    spec = spec or {}
    serving = serving or {}
    targets = has_targets(spec)
    higher = higher_is_better(column)
    opts = options.with_columns(pl.col(pl.Categorical).cast(pl.String), **cost_per_million())
    per_offer = option_rows(options, column, higher)
    groups = []
    for model, s_in, s_out in sorted(opts.select("model", "input_tokens", "output_tokens").unique().rows()):
        if (s_in, s_out) not in pairs:
            continue
        rows = opts.filter(
            (pl.col("model") == model) & (pl.col("input_tokens") == s_in) & (pl.col("output_tokens") == s_out)
        )
        ranked = rows.filter(pl.col("rank").is_not_null()).sort("rank").head(top_n)
        missing = rows.filter(pl.col("fits") & ~pl.col("meets_slo") & pl.col(column).is_not_null())
        missing = missing.with_row_index("_o").sort([column, "_o"], descending=[higher, False]).head(1)
        scores = ranked[column].to_list()
        if scores and missing.height:  # worth naming only if it beats the recommendation on the metric
            miss_score = missing[column][0]
            if not (miss_score > scores[0] if higher else miss_score < scores[0]):
                missing = missing.clear()
        ties = [i + 1 for i in range(1, len(scores)) if scores[i] == scores[i - 1]]
        offers = per_offer.filter(
            (pl.col("model") == model) & (pl.col("input_tokens") == s_in) & (pl.col("output_tokens") == s_out)
        )
        table = [_option(r, column, batches, targets, serving) for r in offers.iter_rows(named=True)]
        fleets = any(o.get("gpus_needed") is not None for o in table)
        compared = answers.serving_comparison(table, fleets) if serving.get("shown") else []
        assumed = answers.speculation_statement(table, serving.get("settings"), serving.get("profile", ""))
        groups.append(
            {
                "model": model,
                "answer": answers.answer(
                    model,
                    s_in,
                    s_out,
                    table,
                    spec.get("workload"),
                    spec.get("slo"),
                    horizon_years,
                    fleets,
                    sensitivity.get(f"{model}|{s_in}|{s_out}", []),
                ),
                "offers": table,
                "input_tokens": s_in,
                "output_tokens": s_out,
                "license": licenses.get(model, "unknown: check the model card"),
                "options": [_option(r, column, batches, targets, serving) for r in ranked.iter_rows(named=True)],
                "miss": _option(missing.row(0, named=True), column, batches, True, serving) if missing.height else None,
                "comparison": compared,
                "speculation": assumed,
                "ties": ties,
                "break_even": break_even(rows, model, column, rent_paid) if _is_cost(column) else None,
                "sensitivity": sensitivity.get(f"{model}|{s_in}|{s_out}", []),
            }
        )
    return groups


def build_context(frame: pl.LazyFrame, options: pl.DataFrame, manifest: dict) -> dict:
    """Everything a report shows, as plain data."""
    spec = yaml_spec(manifest)
    report = spec.get("report") or {}
    top_n = int(report.get("top_n", 10))
    cat = manifest["catalog"]
    licenses = {m: e.get("license", "unknown") for m, e in cat["models"].items()}
    column = manifest.get("rank_by") or spec.get("rank_by", FALLBACK_RANK)
    if column not in options.columns and column not in frame.collect_schema().names():
        column = FALLBACK_RANK
    higher = higher_is_better(column)
    load = spec.get("workload") or {}
    pairs = sorted(options.select("input_tokens", "output_tokens").unique().rows()) if options.height else []
    pairs, workload_note = workloads(pairs, (load.get("input_tokens"), load.get("output_tokens")))
    finance = manifest.get("finance") or {}
    serving = serving_info(frame, options, manifest)
    recs = (
        recommendations(
            options,
            column,
            top_n,
            licenses,
            pairs,
            manifest.get("sensitivity") or {},
            finance.get("rent_paid", "24/7"),
            listed_batches(spec),
            spec,
            finance.get("horizon_years", 3),
            serving,
        )
        if options.height
        else []
    )
    priced = bool(manifest.get("prices"))
    counts = frame.select(pl.len().alias("rows"), pl.col("fits").sum().alias("fit")).collect().row(0, named=True)
    shown = list(TABLE_COLUMNS)
    names = frame.collect_schema().names()
    wide = [n for n in ("ep", "dp_attention") if n in names]  # shown where a layout uses them
    used = frame.filter(pl.col("fits")).select(pl.col(n).max() > 1 for n in wide).collect() if wide else None
    shown[shown.index("pp") + 1 : shown.index("pp") + 1] = [n for n in wide if used is not None and used[n][0]]
    if serving["shown"]:  # the serving mode after the layout
        at = shown.index("pp") + 1 + sum(n in shown for n in wide)
        shown[at:at] = [c for c in SERVING_TABLE_COLUMNS if c in names]
    slo = spec.get("slo") or {}
    order = [column, "_order"]
    if slo:  # sorted by cost, rows that miss a target are among the cheapest: those that meet them first
        shown.append("meets_slo")
        order.insert(0, "meets_slo")
    table = (
        frame.with_row_index("_order")
        .filter(pl.col("fits"))
        .sort(order, descending=[True, higher, False] if slo else [higher, False], nulls_last=True)
        .head(TABLE_ROWS)
        .select([c for c in shown if c != column] + [column])
        .with_columns(pl.col(pl.Categorical).cast(pl.String))
        .collect()
    )
    return {
        "title": spec.get("title") or spec.get("name") or manifest["sweep"]["name"],
        "name": manifest["sweep"]["name"],
        "sweep_file": manifest["sweep"]["file"],
        "sweep_sha256": manifest["sweep"]["sha256"],
        "llmsweep_version": manifest["llmsweep_version"],
        "rows": counts["rows"],
        "fit": counts["fit"],
        "gpus": sorted(cat["gpus"]),
        "models": sorted(cat["models"]),
        "precisions": sorted(cat["precisions"]),
        "engines": engines_sentence(manifest.get("engines") or {}),
        "profile": manifest["profile"],
        "rank": {
            "column": column,
            "label": BY_NAME[column].label if column in BY_NAME else column,
            "higher_is_better": higher,
            "statement": rank_statement(
                column, bool(load), finance.get("horizon_years", 3), users=bool(load) and load.get("users") is not None
            ),
        },
        "targets": has_targets(spec),
        "slo_given": isinstance(spec.get("slo"), dict),  # `slo:` there, perhaps without a target
        "ttft_stat": slo.get("percentile", "mean") if has_targets(spec) else "mean",
        "ttft_column": {"p90": "ttft_p90_s", "p99": "ttft_p99_s"}.get(slo.get("percentile", "mean"), "ttft_s")
        if has_targets(spec)
        else "ttft_s",
        "interactive": answers.INTERACTIVE_SOURCE,
        # 'p90 TTFT ≤ 2 s and TPOT ≤ 50 ms', as the answers say it ('' without targets)
        "slo_text": answers.targets_text(slo).removeprefix("with ") if has_targets(spec) else "",
        "workload": load,
        "traffic": answers.traffic_statement(load, workload_defaults()),
        "prices": manifest.get("prices") or {},
        "priced": priced,
        "finance_statement": finance.get("statement") if priced else None,
        "horizon_years": finance.get("horizon_years", 3),
        "recommendations": recs,
        "table": {
            "columns": table.columns,
            "rows": table.rows(),
            # on a narrow screen the layout columns give way: each GPU cell says it in a few words instead
            "layouts": [_narrow_layout(r) for r in table.iter_rows(named=True)],
            "shown": table.height,
            "total_fit": counts["fit"],
            "key": [*TABLE_KEY_COLUMNS, "meets_slo", column],  # kept on a narrow screen
            "meeting_first": bool(slo),
        },
        "labels": {c: (BY_NAME[c].label if c in BY_NAME else c) for c in table.columns},
        "catalog": cat,
        "in_force": values_in_force(options, cat),
        "admission_note": admission_note(listed_batches(spec) if load else None),
        "auto_kv_rule": AUTO_KV_RULE,
        "serving": serving,
        "notes": [*manifest.get("notes", []), *([workload_note] if workload_note else [])],
    }


def serving_info(frame: pl.LazyFrame, options: pl.DataFrame, manifest: dict) -> dict:
    """What the reports say about serving modes: `shown` when the results compare them (more than one
    mode or speculative setting, or any disaggregated, speculative or prefix-cached row), which of them
    the rows use (for the method section), the sweep's speculative settings (whether it states each
    acceptance, or the profile's is assumed) and the profile's name."""
    names = frame.collect_schema().names()
    have = [c for c in ("mode", "speculative", "prefix_hit_rate") if c in names]
    info = {"shown": False, "disaggregated": False, "speculative": False, "prefix": False}
    if have:
        stats = frame.select(
            *(pl.col(c).n_unique().alias(f"{c}_n") for c in have),
            *([(pl.col("mode") == "disaggregated").any().alias("disaggregated")] if "mode" in have else []),
            *([(pl.col("speculative") != "none").any().alias("speculative")] if "speculative" in have else []),
            *([(pl.col("prefix_hit_rate") > 0).any().alias("prefix")] if "prefix_hit_rate" in have else []),
        ).collect()
        row = stats.row(0, named=True)
        info.update({k: bool(row.get(k)) for k in ("disaggregated", "speculative", "prefix")})
        several = any(row.get(f"{c}_n", 1) > 1 for c in ("mode", "speculative"))
        info["shown"] = several or info["disaggregated"] or info["speculative"] or info["prefix"]
    if "mode" in options.columns and options.height:
        info["disaggregated"] = info["disaggregated"] or bool((options["mode"] == "disaggregated").any())
        info["shown"] = info["shown"] or info["disaggregated"]
    settings = manifest.get("speculative")
    info["settings"] = [s for s in settings if isinstance(s, dict)] if isinstance(settings, list) else []
    info["profile"] = str((manifest.get("profile") or {}).get("name", ""))
    return info


IN_FORCE = (*EFFICIENCY_COLUMNS, "step_overhead_s", "max_running_requests")


def values_in_force(options: pl.DataFrame, catalog: dict) -> list[dict]:
    """The efficiency values every row ran with, per engine x GPU (the profile's defaults overridden
    per engine and per GPU family), from the plan's rows, so a reader can recompute a TPOT by hand."""
    cols = [c for c in IN_FORCE if c in options.columns]
    if not cols or options.height == 0:
        return []
    kv = []
    if {"kv_cache_format", "kv_precision"} <= set(options.columns):  # the KV formats in force, `auto` said so
        chosen = pl.when(pl.col("kv_precision") == "auto").then(pl.lit(" (auto)")).otherwise(pl.lit(""))
        kv = [(pl.col("kv_cache_format") + chosen).unique(maintain_order=True).sort().str.join(", ").alias("kv_cache")]
    rows = (
        options.with_columns(pl.col(pl.Categorical).cast(pl.String))
        .group_by(["engine", "gpu"], maintain_order=True)
        .agg([pl.col(c).drop_nulls().first() for c in cols] + kv)
        .sort(["engine", "gpu"])
    )
    gpus = catalog.get("gpus") or {}

    def bandwidth(gpu: str) -> int | None:
        gbps = (gpus.get(gpu) or {}).get("memory_bandwidth_gbps")
        return None if gbps is None else round(gbps)

    return [
        {
            **r,
            "family": (gpus.get(r["gpu"]) or {}).get("family", ""),
            "bandwidth_gbps": bandwidth(r["gpu"]),
            "max_running_requests": int(r.get("max_running_requests") or 0),
            "compute_scale": r.get("compute_scale") or 1.0,
            "kv_cache": r.get("kv_cache") or "",
        }
        for r in rows.iter_rows(named=True)
    ]


def workload_defaults() -> dict:
    """The workload keys' defaults (peak_factor, headroom, redundancy), as the sweep file's schema has them."""
    from llmsweep.spec import WorkloadSpec

    return {name: f.default for name, f in WorkloadSpec.model_fields.items() if f.default is not None}


def has_targets(spec: dict) -> bool:
    """True when the sweep sets a latency target (a verdict "meets the targets" means something)."""
    slo = spec.get("slo") or {}
    return any(slo.get(k) is not None for k in ("ttft_s", "tpot_s", "request_latency_s"))


def rank_statement(column: str, workload: bool, horizon_years: float, users: bool = False) -> str:
    """What the ranking orders by, in words, with the figures that agree with it (with a workload of
    `users`, each option serves them its own number of requests, so its cost per token does not)."""
    label = BY_NAME[column].label if column in BY_NAME else column
    better = "higher" if higher_is_better(column) else "lower"
    if column == "tco_usd":
        months = 12 * horizon_years
        per_token = (
            f"USD per month is TCO ÷ {months:g} months, which orders the options the same way; USD per million "
            f"output tokens is TCO over the tokens the fleet serves in those {horizon_years:g} years, and the same "
            "users send a faster option more requests, so a fleet that costs more can cost less per token"
            if users
            else f"USD per month is TCO ÷ {months:g} months, and USD per million output tokens is TCO over the tokens "
            f"the fleet serves in those {horizon_years:g} years, so both order the options the same way"
        )
        return (
            f"Options are ranked by what the fleet costs over {horizon_years:g} years (TCO: capex + "
            f"{horizon_years:g} × opex; whole servers and racks, headroom and redundancy included; lower is "
            f"better). {per_token}."
        )
    if column == "usd_per_million_output_tokens":
        extra = "" if workload else " (no workload: a fleet is one replica)"
        return (
            f"Options are ranked by USD per million output tokens of one replica fully loaded{extra}; lower is better."
        )
    return f"Options are ranked by {label} ({better} is better)."


def admission_note(batches: list[int] | None) -> str:
    """The sentence a report adds under a workload when the grid lists its batches without `max`:
    each replica then admits at most the largest of them (plan/sizing.at_traffic), which the engine's
    limit per attention-DP rank in the values in force does not show."""
    if not batches:
        return ""
    cap = max(batches)
    return (
        f" The grid lists its batches without max, so under the workload each replica also admits at most"
        f" {cap:,} request{'s' if cap != 1 else ''} at a time, whatever the engine's limit."
    )


def listed_batches(spec: dict) -> list[int] | None:
    """The grid's batches when it has no `max` (the plan chooses among them), else None."""
    batch = (spec.get("grid") or {}).get("batch", [1])
    batch = batch if isinstance(batch, list) else [batch]
    if any(str(b).strip().lower() == "max" for b in batch):
        return None
    return [int(b) for b in batch if isinstance(b, int) and not isinstance(b, bool)] or None


def _narrow_layout(row: dict) -> list[str]:
    """A configuration's weights, layout and serving mode in the fewest words, the lines of the narrow
    screen's GPU cell: ['fp8 · tp1 dp-attn8 ep8'], ['fp8 · tp8 ep8', '2P1D + MTP'] (rows the key columns
    alone would not tell apart: the layout columns give way there)."""
    lines = [" · ".join(str(v) for v in (row.get("precision"), answers.f_layout(row)) if v)]
    if row.get("mode") == "disaggregated" or row.get("speculative") not in (None, "none"):
        lines.append(answers.serving_tag(row))
    return lines


def engines_sentence(engines: dict[str, list[str]]) -> str:
    """'vllm on h100-sxm, l40s; llama.cpp on rtx-4090' from {gpu: [engine, ...]}."""
    by_engine: dict[str, list[str]] = {}
    for gpu, names in engines.items():
        for e in names:
            by_engine.setdefault(e, []).append(gpu)
    text = "; ".join(f"{e} on {', '.join(gpus)}" for e, gpus in by_engine.items())
    return text + " (each engine's efficiency profile applies; the grid's engine axis chooses others)" if text else "?"


def yaml_spec(manifest: dict) -> dict:
    import yaml

    return yaml.safe_load(manifest["sweep"]["content"]) or {}


# -- rendering ------------------------------------------------------------------------------------------------
def template_dir() -> Path:
    """The packaged templates (top-level templates/ in a checkout, llmsweep/templates in the wheel)."""
    packaged = resources.files("llmsweep").joinpath("templates")
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "templates"


def environment(template_dir_override: str | Path | None, html: bool) -> jinja2.Environment:
    """Templates run in jinja2's immutable sandbox: a team's --template-dir cannot reach Python
    internals or change the context. (It is still code someone wrote: it can loop for ever.)"""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    folder = Path(template_dir_override) if template_dir_override else template_dir()
    loaders = [jinja2.FileSystemLoader(str(folder))]
    if template_dir_override:  # a team's folder may restyle only some templates
        loaders.append(jinja2.FileSystemLoader(str(template_dir())))
    env = ImmutableSandboxedEnvironment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=html,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


def _template_line(error: BaseException, fallback: str) -> str:
    """`file:line` of the template line that failed: jinja2 puts the template's file and line into
    the traceback frames of the code it compiled."""
    if isinstance(error, jinja2.TemplateSyntaxError) and error.filename:
        return f"{error.filename}:{error.lineno}"
    where = fallback
    tb = error.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.endswith(".j2") or (not name.endswith(".py") and Path(name).is_file()):
            where = f"{name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def _loader_file(error: BaseException) -> str | None:
    """The file jinja2's loader was reading when `error` happened."""
    found, tb = None, error.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_locals.get("filename")
        if tb.tb_frame.f_code.co_filename.endswith("loaders.py") and isinstance(name, str):
            found = name
        tb = tb.tb_next
    return found


def _render(template: str, context: dict, template_dir_override, html: bool) -> str:
    """Render one template; every failure, ours or a --template-dir one's, becomes a LlmsweepError
    naming the template file and line."""
    folder = template_dir_override or template_dir()
    try:
        return environment(template_dir_override, html).get_template(template).render(**context)
    except jinja2.TemplateNotFound as e:
        where = _template_line(e, "")
        missing = f"template {e.name!r} is not in {folder}" + (
            " or the packaged templates" if template_dir_override else ""
        )
        raise LlmsweepError(f"{where}: {missing}" if where else missing) from e
    except UnicodeDecodeError as e:
        raise LlmsweepError(f"{_loader_file(e) or folder}: the template is not UTF-8 text ({e.reason})") from e
    except OSError as e:
        raise LlmsweepError(f"{e.filename or folder}: cannot read the template: {e.strerror or e}") from e
    except jinja2.TemplateError as e:
        where = _template_line(e, str(Path(folder) / template))
        raise LlmsweepError(f"{where}: template error: {e.message or type(e).__name__}") from e
    except Exception as e:  # raised inside a template: 1 / 0, a filter given the wrong thing ...
        where = _template_line(e, str(Path(folder) / template))
        raise LlmsweepError(f"{where}: the template raised {type(e).__name__}: {e}") from e


def render_html(context: dict, charts: list, template_dir_override=None) -> str:
    """report.html: the context, the charts' specs and the vega bundle, inlined once."""
    bundle = vega_bundle()
    if "</script" in bundle.lower():  # would end the inline <script> early
        raise LlmsweepError("the vega bundle contains '</script' and cannot be inlined")
    specs = [
        {"id": s.id, "title": title, "question": s.question, "note": note, "spec": chart.to_dict()}
        for s, chart, title, note in charts
    ]
    return _render("report.html.j2", {**context, "charts": specs, "vega_bundle": bundle}, template_dir_override, True)


def render_markdown(context: dict, charts: list, template_dir_override=None) -> tuple[str, dict[str, str]]:
    """(report.md text, {relative path: SVG text}) for the charts folder beside it."""
    import vl_convert as vlc

    links, files = [], {}
    for s, chart, title, note in charts:
        path = f"charts/{s.id}.svg"
        files[path] = vlc.vegalite_to_svg(chart.to_json())
        links.append({"id": s.id, "title": title, "question": s.question, "note": note, "path": path})
    return _render("report.md.j2", {**context, "charts": links}, template_dir_override, False), files


def write_reports(
    folder: Path,
    frame: pl.LazyFrame,
    options: pl.DataFrame,
    manifest: dict,
    formats: Sequence[str],
    template_dir_override=None,
) -> list[str]:
    """Write report.html and/or report.md (+ charts/*.svg) into `folder`; returns the relative paths."""
    context = build_context(frame, options, manifest)
    charts = build_charts(frame, options, context["gpus"])  # one colour per GPU of the report
    written = []
    if "html" in formats:
        (folder / "report.html").write_text(render_html(context, charts, template_dir_override), encoding="utf-8")
        written.append("report.html")
    if "md" in formats:
        text, files = render_markdown(context, charts, template_dir_override)
        (folder / "charts").mkdir(exist_ok=True)
        for rel, svg in files.items():
            (folder / rel).write_text(svg, encoding="utf-8")
            written.append(rel)
        (folder / "report.md").write_text(text, encoding="utf-8")
        written.append("report.md")
    return written
