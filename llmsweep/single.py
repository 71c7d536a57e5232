"""One configuration, by the names a user types: resolve them, estimate, present the result."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from llmsweep.catalog import load_catalog
from llmsweep.columns import BY_NAME
from llmsweep.estimate import add_estimates, select_exported
from llmsweep.grid import Axes, auto_precision, expand
from llmsweep.plan import add_plan_columns, make_plan_inputs
from llmsweep.present import format_value

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
        "bandwidth_efficiency",
        "compute_efficiency",
    ),
    "Cost (an example cloud price; a sweep's costs take your own)": (
        "usd_per_gpu_hour",
        "usd_per_hour",
        "usd_per_million_output_tokens",
        "tokens_per_joule",
    ),
}


@dataclass(frozen=True)
class Estimate:
    frame: pl.DataFrame  # one row, exported columns
    notes: tuple[str, ...]  # name-resolution notes for the user
    profile: str

    @property
    def row(self) -> dict:
        return self.frame.row(0, named=True)

    def text(self) -> str:
        row = self.row
        lines = []
        for title, names in SECTIONS.items():
            lines.append(title)
            for n in names:
                col = BY_NAME[n]
                lines.append(f"  {col.label:<30} {format_value(col.unit, row[n])}")
        if row["load_note"]:
            lines.append(f"Load: {row['load_note']}")
        if row["reason"]:
            lines.append(f"Does not run: {row['reason']}")
        if row["notes"]:
            lines.append(f"Note: {row['notes']}")
        if row["price_source"]:
            lines.append(f"Price: {row['price_source']}")
        lines.append(f"Profile: {self.profile}")
        return "\n".join(lines)


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
) -> Estimate:
    catalog = load_catalog()
    g, m = catalog.resolve_gpu(gpu), catalog.resolve_model(model)
    catalog.model(m.id)  # reads and validates a config.json before any frame work
    named = {m.id: m.precision} if m.precision else {}
    # no precision given: `auto`, the model's own format (grid.auto_precision)
    p = catalog.resolve_precision(precision or auto_precision(catalog, m.id, named))
    kv = "auto" if kv_precision.strip().lower() == "auto" else catalog.resolve_precision(kv_precision).id
    prof = catalog.profile(profile)
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
    )
    prices = make_plan_inputs(catalog, [g.id])
    frame = select_exported(add_plan_columns(add_estimates(expand(catalog, axes, prof)), prices)).collect()
    overridden = (
        f"precision {p.id} as given, not the {m.precision} the model name says"
        if precision and m.precision and p.id != m.precision
        else None
    )
    notes = tuple(n for n in (g.note, m.note, overridden, p.note, *prices.notes) if n)
    return Estimate(frame=frame, notes=notes, profile=profile)
