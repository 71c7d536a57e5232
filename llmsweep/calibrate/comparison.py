"""Measurements -> one frame -> estimates -> the comparison frame, and its error summaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from llmsweep.calibrate.measurement import Measurement, source_key
from llmsweep.catalog import Catalog, Profile, load_catalog
from llmsweep.estimate import add_estimates
from llmsweep.grid import Axes, expand

PARAMS = ("bandwidth_efficiency", "compute_efficiency", "step_overhead_s", "layer_overhead_s")


@dataclass
class Evaluator:
    """One grid row per measurement, built once; profile parameters are then swapped in as columns,
    so a fit can evaluate thousands of parameter sets quickly."""

    measurements: list[Measurement]
    base: pl.DataFrame  # grid rows (facts + the starting profile's columns), in measurement order

    @classmethod
    def build(cls, measurements: list[Measurement], profile: Profile, catalog: Catalog | None = None) -> Evaluator:
        catalog = catalog or load_catalog()
        parts = [
            expand(
                catalog,
                Axes(
                    gpu=[m.gpu],
                    model=[m.model],
                    precision=[m.precision],
                    kv_precision=[m.kv_precision],
                    input_tokens=[m.input_tokens],
                    output_tokens=[m.output_tokens],
                    batch=[m.batch],
                    tp=[m.tp],
                    pp=[m.pp],
                ),
                profile,
            )
            for m in measurements
        ]
        base = pl.concat(pl.collect_all(parts), how="vertical_relaxed") if parts else pl.DataFrame()
        return cls(measurements, base)

    def estimate(self, profile: Profile) -> list[float | None]:
        if not self.measurements:
            return []
        families = self.base["gpu_family"].cast(pl.String).to_list()
        effs = [profile.for_family(f) for f in families]
        frame = self.base.with_columns(
            [
                pl.Series(n, [getattr(e, n) for e in effs], dtype=pl.Float64)
                for n in (
                    *PARAMS,
                    "allreduce_latency_s",
                    "memory_reserve_fraction",
                    "runtime_overhead_bytes",
                    "tp_buffer_bytes",
                )
            ]
        )
        columns = sorted({m.column for m in self.measurements})
        out = add_estimates(frame.lazy()).select(columns).collect()
        values = [out[m.column][i] for i, m in enumerate(self.measurements)]
        return [float(v) if v is not None else None for v in values]


def comparison_frame(
    measurements: list[Measurement], estimated: Sequence[float | None], base: pl.DataFrame | None = None
) -> pl.DataFrame:
    rows = []
    for i, (m, e) in enumerate(zip(measurements, estimated, strict=True)):
        rows.append(
            {
                "id": m.id,
                "metric": m.metric,
                "measured": m.measured,
                "estimated": e,
                "ratio": (e / m.measured) if e else None,
                "gpu": m.gpu,
                "model": m.model,
                "precision": m.precision,
                "kv_precision": m.kv_precision,
                "tp": m.tp,
                "pp": m.pp,
                "batch": str(m.batch),
                "input_tokens": m.input_tokens,
                "output_tokens": m.output_tokens,
                "fits": bool(base["fits"][i]) if base is not None and "fits" in base.columns else None,
                "engine": m.engine,
                "source": source_key(m.source),
                "assumptions": m.assumptions,
            }
        )
    return pl.DataFrame(rows, infer_schema_length=None)


def compare(
    measurements: list[Measurement], profile: str | Profile = "default", catalog: Catalog | None = None
) -> pl.DataFrame:
    """One row per measurement: id, metric, measured, estimated, ratio (estimated / measured), and
    the configuration it was estimated as."""
    catalog = catalog or load_catalog()
    prof = catalog.profile(profile) if isinstance(profile, str) else profile
    ev = Evaluator.build(measurements, prof, catalog)
    if not measurements:
        return comparison_frame([], [])
    fits = add_estimates(ev.base.lazy()).select("fits").collect()
    return comparison_frame(measurements, ev.estimate(prof), fits)


def summary(comparison: pl.DataFrame, by: str) -> pl.DataFrame:
    """Per `by` (metric or source): count, median and 90th-percentile absolute error, median ratio."""
    err = (pl.col("ratio") - 1).abs()
    return (
        comparison.filter(pl.col("ratio").is_not_null())
        .group_by(by)
        .agg(
            pl.len().alias("rows"),
            err.median().alias("median_abs_error"),
            err.quantile(0.9).alias("p90_abs_error"),
            pl.col("ratio").median().alias("median_ratio"),
        )
        .sort(by)
    )
