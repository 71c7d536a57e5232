"""One configuration, by the names a user types: resolve them, estimate, present the result."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from llmsweep.catalog import load_catalog
from llmsweep.catalog.architecture import unread_quantization
from llmsweep.columns import BY_NAME, EFFICIENCY_COLUMNS
from llmsweep.errors import LlmsweepError
from llmsweep.estimate import select_exported
from llmsweep.estimate.parallel import MEMORY_REASON
from llmsweep.grid import NO_SPECULATION, Axes, Speculation, auto_precision, grid_parts
from llmsweep.plan import add_plan_columns, make_plan_inputs
from llmsweep.present import fmt_bytes, fmt_num, format_value

# What `llmsweep estimate` shows as a table, section by section.
SECTIONS: dict[str, tuple[str, ...]] = {
    "Configuration": (
        "gpu",
        "engine",
        "model",
        "precision",
        "kv_precision",
        "kv_cache_format",
        "tp",
        "pp",
        "ep",
        "dp_attention",
        "batch",
        "input_tokens",
        "output_tokens",
        "compute_dtype",
        "params_total",
        "params_active",
    ),
    "Layout across GPUs": (
        "gpus",
        "servers_per_replica",
        "tp_link",
        "expert_link",
        "pp_link",
    ),
    "Memory per GPU": (
        "weight_bytes",
        "kv_cache_bytes",
        "activation_bytes",
        "overhead_bytes",
        "memory_per_gpu_bytes",
        "usable_memory_bytes",
        "fits",
        "max_batch",
    ),
    "Prefill (one prompt, alone)": (
        "prefill_flops",
        "prefill_s",
        "prefill_tokens_per_s",
        "prefill_arithmetic_intensity",
    ),
    "Decode (one step, whole batch, no prefill)": (
        "decode_flops_per_step",
        "decode_bytes_per_step",
        "decode_compute_s",
        "decode_memory_s",
        "decode_comm_s",
        "decode_routing_s",
        "decode_overhead_s",
        "decode_step_s",
        "decode_tokens_per_s",
    ),
    "Serving at this concurrency (continuous batching, chunked prefill)": (
        "max_running_requests",
        "decode_batch",
        "ttft_s",
        "ttft_p90_s",
        "ttft_p99_s",
        "tpot_s",
        "decode_tokens_per_s_per_seq",
        "request_latency_s",
        "requests_per_s_per_replica",
        "output_tokens_per_s",
        "output_tokens_per_s_per_gpu",
        "prefill_fraction",
    ),
    "Roofline": (
        "arithmetic_intensity",
        "ridge_point",
        "bound",
        *EFFICIENCY_COLUMNS,
    ),
    "Cost (an example cloud price; a sweep's costs take your own)": (
        "usd_per_gpu_hour",
        "usd_per_hour",
        "usd_per_million_output_tokens",
        "tokens_per_joule",
    ),
}
# Sections whose figures only a configuration that runs has (a layout that does not fit memory has
# a prefill and a step to compute, but no operating point to serve or price)
NEEDS_A_RUN = ("Serving at this concurrency", "Cost", "Disaggregated serving", "Speculative decoding")
TWO_DECIMALS = {"tokens_per_step"}  # 1.85 tokens per step, not 1.9
# The sections of a serving mode, shown only for a configuration in that mode (`Estimate.sections`),
# each after the section named first.
MODE_SECTIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "disaggregated": (
        "Layout across GPUs",
        "Disaggregated serving (a prefill pool and a decode pool; the layout above is a decode worker's)",
        (
            "prefill_tp",
            "prefill_pp",
            "prefill_ep",
            "prefill_dp_attention",
            "prefill_worker_gpus",
            "prefill_pool_gpus",
            "decode_pool_gpus",
            "prefill_memory_per_gpu_bytes",
            "kv_transfer_bytes",
            "kv_link",
            "kv_transfer_s",
            "prefill_utilization",
        ),
    ),
    "speculative": (
        "Decode (one step, whole batch, no prefill)",
        "Speculative decoding (a step verifies the drafted tokens)",
        ("draft_model", "draft_tokens", "acceptance_rate", "tokens_per_step", "draft_weight_bytes"),
    ),
    "prefix": (
        "Prefill (one prompt, alone)",
        "Prefix cache",
        ("prefix_hit_rate", "prefix_shared", "prefill_new_tokens"),
    ),
}


@dataclass(frozen=True)
class Estimate:
    frame: pl.DataFrame  # one row, exported columns
    notes: tuple[str, ...]  # name-resolution notes for the user
    profile: str
    matmul_dtypes: frozenset[str] = frozenset({"fp8", "fp4"})  # the dtype efficiencies shown (all, unless said)

    @property
    def row(self) -> dict:
        return self.frame.row(0, named=True)

    def sections(self) -> dict[str, tuple[str, ...]]:
        """SECTIONS, with those of the serving modes this configuration uses (MODE_SECTIONS)."""
        row = self.row
        used = {
            "disaggregated": row["mode"] == "disaggregated",
            "speculative": row["speculative"] != "none",
            "prefix": bool(row["prefix_hit_rate"]),
        }
        out: dict[str, tuple[str, ...]] = {}
        for title, names in SECTIONS.items():
            if used["disaggregated"] and title.startswith("Cost"):
                names = (*names[:3], "usd_per_million_input_tokens", *names[3:])
            if used["disaggregated"] and title == "Memory per GPU":
                title = "Memory per GPU (a decode worker's)"
            if title == "Roofline":  # a dtype's GEMM efficiency where a matmul runs at it: nvfp4 on an H100 is bf16
                unused = {f"{d}_gemm_efficiency" for d in ("fp8", "fp4") if d not in self.matmul_dtypes}
                names = tuple(n for n in names if n not in unused)
            out[title] = names
            for mode, (after, own, extra) in MODE_SECTIONS.items():
                if after == title and used[mode]:
                    out[own] = tuple(n for n in extra if n != "draft_model" or row["speculative"] == "draft")
        return out

    def text(self) -> str:
        row = self.row
        lines = []
        if row["reason"]:
            lines.append(f"Does not run: {_reason(row)}. Serving and cost figures need a configuration that runs.")
        for title, names in self.sections().items():
            lines.append(title)
            if row["reason"] and title.startswith(NEEDS_A_RUN):
                lines.append("  - (the configuration does not run)")
                continue
            for n in names:
                col = BY_NAME[n]
                value = fmt_num(row[n], col.unit, 2) if n in TWO_DECIMALS else format_value(col.unit, row[n])
                lines.append(f"  {col.label:<30} {value}")
            if title == "Configuration" and (row["mode"] != "aggregated" or row["speculative"] != "none"):
                lines.append(f"  {'Serving mode':<30} {serving_label(row)}")
        if row["load_note"] and not row["reason"]:
            lines.append(f"Load: {row['load_note']}")
        if row["notes"]:
            lines.append(f"Note: {row['notes']}")
        if row["price_source"]:
            lines.append(f"Price: {row['price_source']}")
        lines.append(f"Profile: {self.profile}")
        return "\n".join(lines)


def matmul_dtypes(row: dict) -> frozenset[str]:
    """The dtypes a configuration's matmuls run at (compute.seconds_per_flop, attention_flop_cost): the
    weights' compute dtype, and fp8 for attention over an fp8 or fp4 cache on a GPU with an fp8 rate."""
    return frozenset({row["compute_dtype"], *(("fp8",) if row["fp8_attention"] and row["fp8_rate"] else ())})


def _reason(row: dict) -> str:
    """The row's reason, in figures where it is that the memory does not fit (parallel.MEMORY_REASON)."""
    need, have = row.get("memory_per_gpu_bytes"), row.get("usable_memory_bytes")
    if row["reason"] == MEMORY_REASON and need is not None and have is not None:
        return f"does not fit: it needs {fmt_bytes(need)} a GPU, and {fmt_bytes(have)} is usable"
    return row["reason"]


def xpyd(row: dict) -> str:
    """A disaggregated replica's pools as xPyD: 1 prefill and 2 decode workers are 1P2D."""
    return f"{row['prefill_workers']}P{row['decode_workers']}D"


def serving_label(row: dict) -> str:
    """The serving mode in words: aggregated, or disaggregated 1P2D; with speculative decoding
    mtp k=1 (the drafted tokens per step)."""
    mode = f"disaggregated {xpyd(row)}" if row["mode"] == "disaggregated" else "aggregated"
    if row["speculative"] == "none":
        return mode
    draft = f" ({row['draft_model']})" if row["draft_model"] else ""
    return f"{mode}, {row['speculative']}{draft} k={row['draft_tokens']}"


def speculation(
    catalog, model: str, method: str, draft_tokens: int | None, acceptance: float | None, draft_model: str | None
) -> tuple[Speculation, str | None]:
    """The speculative-decoding setting `estimate` asks for (method none, mtp, eagle or draft), the
    same checks as a sweep's (spec/serving.py), and the draft model's name-resolution note."""
    from llmsweep.spec.serving import DEFAULT_DRAFT_TOKENS, draft_problem, mtp_problem

    if method == "none":
        given = [o for o, v in (("--draft-tokens", draft_tokens), ("--acceptance", acceptance)) if v is not None]
        if draft_model is not None or given:
            what = given[0] if given else "--draft-model"
            raise LlmsweepError(f"{what} is for speculative decoding: add --speculative mtp, eagle or draft")
        return NO_SPECULATION, None
    note = None
    if method == "draft":
        if draft_model is None:
            raise LlmsweepError(
                "--speculative draft needs --draft-model: the smaller model that drafts (e.g. llama-3.1-8b)"
            )
        d = catalog.resolve_model(draft_model)
        catalog.model(d.id)
        draft_model, note = d.id, d.note
        problem = draft_problem(catalog, draft_model, [model])
    elif draft_model is not None:
        what = "the model's own MTP module" if method == "mtp" else "an EAGLE head"
        raise LlmsweepError(f"--draft-model is for --speculative draft; {method} drafts with {what}")
    else:
        problem = mtp_problem(catalog, [model]) if method == "mtp" else None
    if problem:
        raise LlmsweepError(problem)
    k = draft_tokens or DEFAULT_DRAFT_TOKENS[method]
    return Speculation(method, k, acceptance, None, draft_model), note


def estimate_one(
    *,
    gpu: str,
    model: str,
    engine: str = "auto",
    precision: str | None = None,
    kv_precision: str = "auto",
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    dp_attention: int = 1,
    batch: int | str = 1,
    input_tokens: int = 1024,
    output_tokens: int = 256,
    profile: str = "default",
    mode: str = "aggregated",
    prefill_workers: int | None = None,
    decode_workers: int | None = None,
    prefill_tp: int | None = None,
    prefill_pp: int | None = None,
    prefill_ep: int | None = None,
    prefill_dp_attention: int | None = None,
    speculative: str = "none",
    draft_tokens: int | None = None,
    acceptance: float | None = None,
    draft_model: str | None = None,
    prefix_hit_rate: float = 0.0,
    prefix_shared: bool = False,
) -> Estimate:
    """One configuration. The serving-mode arguments as `estimate`'s options: a prefill or decode
    pool only with mode disaggregated (a prefill layout left out = the decode worker's, tp ... ),
    speculative decoding by method (draft_tokens: the method's default; acceptance: the profile's)."""
    catalog = load_catalog()
    g, m = catalog.resolve_gpu(gpu), catalog.resolve_model(model)
    entry = catalog.model(m.id)  # reads and validates a config.json before any frame work
    unread = None if precision or m.precision else unread_quantization(entry.config)
    unread = unread and f"model {model!r}: {unread}"
    named = {m.id: m.precision} if m.precision else {}
    # no precision given: `auto`, the model's own format (grid.auto_precision); `fp4` is the GPU
    # vendor's FP4 format, resolved by the grid, whose row notes say which (Catalog.fp4_format)
    p = catalog.resolve_precision(precision or auto_precision(catalog, m.id, named))
    weights = catalog.weight_format(p.id, g.id, m.id).id
    kv, kv_note = "auto", None
    if kv_precision.strip().lower() != "auto":  # a cache's `fp4` is not resolved per GPU, as in a sweep
        cache = catalog.kv_format(catalog.resolve_precision(kv_precision).id)
        kv, kv_note = cache.id, cache.note
    prof = catalog.profile(profile)
    pools = {
        "prefill_workers": prefill_workers,
        "decode_workers": decode_workers,
        "prefill_tp": prefill_tp,
        "prefill_pp": prefill_pp,
        "prefill_ep": prefill_ep,
        "prefill_dp_attention": prefill_dp_attention,
    }
    given = [k for k, v in pools.items() if v is not None]
    if mode != "disaggregated" and given:
        option = "--" + given[0].replace("_", "-")
        raise LlmsweepError(
            f"{option} is for --mode disaggregated (a prefill pool and a decode pool): add it, or drop {option}"
        )
    spec, draft_note = speculation(catalog, m.id, speculative, draft_tokens, acceptance, draft_model)
    axes = Axes(
        gpu=[g.id],
        engine=[catalog.resolve_engine(engine).id],
        model=[m.id],
        precision=[p.id],
        kv_precision=[kv],
        input_tokens=[input_tokens],
        output_tokens=[output_tokens],
        batch=[batch],
        tp=[tp],
        pp=[pp],
        ep=[ep],
        dp_attention=[dp_attention],
        mode=[mode],
        prefill_workers=[prefill_workers or 1],
        decode_workers=[decode_workers or 1],
        **{k: [v] for k, v in pools.items() if k.startswith("prefill_") and k != "prefill_workers" and v is not None},
        speculative=[spec],
        prefix_hit_rate=[prefix_hit_rate],
        prefix_shared=prefix_shared,
    )
    prices = make_plan_inputs(catalog, [g.id])
    estimated = grid_parts(catalog, axes, prof).estimate()
    full = add_plan_columns(estimated, prices).collect()
    frame = select_exported(full.lazy()).collect()
    said = (precision or "").strip()
    said += f" ({weights})" if said.lower() != weights else ""  # fp4 as given (mxfp4)
    overridden = (
        f"precision {said} as given, not the {m.precision} the model name says"
        if precision and m.precision and weights != m.precision
        else None
    )
    most = catalog.model(m.id).architecture.max_context_tokens
    too_long = (
        f"{input_tokens + output_tokens:,} tokens of context (input + output) exceed {m.id}'s maximum, {most:,}"
        if most is not None and input_tokens + output_tokens > most
        else None
    )
    notes = tuple(
        n for n in (g.note, m.note, unread, overridden, p.note, kv_note, draft_note, too_long, *prices.notes) if n
    )
    return Estimate(frame=frame, notes=notes, profile=profile, matmul_dtypes=matmul_dtypes(full.row(0, named=True)))
