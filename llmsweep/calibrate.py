"""Published measurements <-> estimates.

Reads files in the schema of shared/reference/measured-dev.csv (see its README), resolves each
row to a configuration through the catalogs, estimates it, and pairs measured with estimated
values. Rows that cannot be mapped are returned with the reason, never dropped silently.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from llmsweep.catalog import Catalog, load_catalog
from llmsweep.errors import LlmsweepError
from llmsweep.estimate import add_estimates
from llmsweep.grid import MAX, Axes, expand

# measured metric (and unit) -> (estimate column, factor from the measured unit to SI)
METRICS: dict[tuple[str, str], tuple[str, float]] = {
    ("decode_tok_s_per_seq", "tok/s"): ("decode_tokens_per_s_per_seq", 1.0),
    ("prefill_tok_s", "tok/s"): ("prefill_tokens_per_s", 1.0),
    ("output_throughput_tok_s", "tok/s"): ("output_tokens_per_s", 1.0),
    ("output_throughput_tok_s", "tok/s/gpu"): ("output_tokens_per_s_per_gpu", 1.0),
    ("ttft_ms", "ms"): ("ttft_s", 1e-3),
    ("tpot_ms", "ms"): ("tpot_s", 1e-3),
    ("itl_ms", "ms"): ("tpot_s", 1e-3),
    ("max_batch", ""): ("max_batch", 1.0),
    ("memory_gb", "GB"): ("model_weight_bytes", 2.0**30),  # the source's "GB" are GiB (see its notes)
}
ASSUMED_TOKENS = 256  # for lengths a source does not state
PLACEHOLDER_GPU = "h100-sxm"  # weight-size rows name no GPU; weights do not depend on it
REQUIRED = (
    "id",
    "source",
    "gpu",
    "tp",
    "pp",
    "model",
    "weight_precision",
    "kv_precision",
    "batch",
    "input_len",
    "output_len",
    "metric",
    "value",
    "unit",
)


@dataclass(frozen=True)
class Measurement:
    id: str
    source: str
    gpu: str
    model: str
    precision: str
    kv_precision: str
    tp: int
    pp: int
    batch: int | str
    input_tokens: int
    output_tokens: int
    metric: str
    column: str
    measured: float  # SI units
    assumptions: str


def _int(row: dict, key: str, default: int | None = None) -> int:
    text = (row.get(key) or "").strip()
    if not text:
        if default is None:
            raise ValueError(f"{key} is empty")
        return default
    try:
        return int(float(text))
    except ValueError:
        raise ValueError(f"{key} {text!r} is not a number") from None


def read_measurements(path: str | Path, catalog: Catalog | None = None) -> tuple[list[Measurement], list[dict]]:
    """(rows mapped to configurations, [{id, reason}] for rows that could not be mapped)."""
    catalog = catalog or load_catalog()
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [k for k in REQUIRED if k not in (reader.fieldnames or [])]
            if missing:
                raise LlmsweepError(f"{path}: missing column(s) {', '.join(missing)} (see measured-dev.csv's README)")
            rows = list(reader)
    except (OSError, UnicodeDecodeError) as e:
        raise LlmsweepError(f"{path}: cannot read measurements: {e}") from None
    mapped, skipped = [], []
    for line, row in enumerate(rows, start=2):
        rid = row.get("id") or f"line {line}"
        try:
            metric, unit = row["metric"].strip(), row["unit"].strip()
            if (metric, unit) not in METRICS:
                raise ValueError(f"metric {metric!r} in unit {unit!r} is not one llmsweep estimates")
            column, scale = METRICS[(metric, unit)]
            notes = []
            gpu = row["gpu"].strip()
            if gpu in ("", "n/a") and column == "model_weight_bytes":
                gpu, _ = PLACEHOLDER_GPU, notes.append("weights only (no GPU named)")
            precision = row["weight_precision"].strip()
            if precision in ("", "unknown"):
                raise ValueError("weight precision not stated")
            kv = row["kv_precision"].strip()
            kv = "auto" if kv in ("", "unknown") else catalog.resolve_precision(kv).id
            batch_text = row["batch"].strip()
            batch: int | str = MAX if not batch_text else _int(row, "batch")
            if batch == MAX:
                notes.append("batch not stated: the largest that fits")
            lengths = []
            for key in ("input_len", "output_len"):
                if not row[key].strip():
                    notes.append(f"{key} not stated: {ASSUMED_TOKENS} assumed")
                lengths.append(_int(row, key, ASSUMED_TOKENS))
            value = float(row["value"])
            mapped.append(
                Measurement(
                    id=rid,
                    source=row["source"],
                    gpu=catalog.resolve_gpu(gpu).id,
                    model=catalog.resolve_model(row["model"].strip()).id,
                    precision=catalog.resolve_precision(precision).id,
                    kv_precision=kv,
                    tp=_int(row, "tp", 1),
                    pp=_int(row, "pp", 1),
                    batch=batch,
                    input_tokens=lengths[0],
                    output_tokens=lengths[1],
                    metric=metric,
                    column=column,
                    measured=value * scale,
                    assumptions="; ".join(notes),
                )
            )
        except (ValueError, LlmsweepError) as e:
            skipped.append({"id": rid, "reason": str(e)})
    return mapped, skipped


def compare(measurements: list[Measurement], profile: str = "default", catalog: Catalog | None = None) -> pl.DataFrame:
    """One row per measurement: id, metric, measured, estimated, ratio (estimated / measured),
    and the configuration it was estimated as."""
    catalog = catalog or load_catalog()
    prof = catalog.profile(profile)
    parts = []
    for m in measurements:
        axes = Axes(
            gpu=[m.gpu],
            model=[m.model],
            precision=[m.precision],
            kv_precision=[m.kv_precision],
            input_tokens=[m.input_tokens],
            output_tokens=[m.output_tokens],
            batch=[m.batch],
            tp=[m.tp],
            pp=[m.pp],
        )
        parts.append(
            add_estimates(expand(catalog, axes, prof)).select(
                pl.lit(m.id).alias("id"),
                pl.lit(m.metric).alias("metric"),
                pl.lit(m.measured).alias("measured"),
                pl.col(m.column).cast(pl.Float64).alias("estimated"),
                "gpu",
                "model",
                "precision",
                "kv_precision",
                "tp",
                "pp",
                "batch",
                "input_tokens",
                "output_tokens",
                "fits",
                pl.lit(m.assumptions).alias("assumptions"),
                pl.lit(m.source).alias("source"),
            )
        )
    out = pl.concat(pl.collect_all(parts)) if parts else pl.DataFrame()
    return out.with_columns(ratio=pl.col("estimated") / pl.col("measured")) if parts else out
