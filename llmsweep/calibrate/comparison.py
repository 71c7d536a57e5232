"""Measurements -> one frame -> estimates -> the comparison frame, and its error summaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from llmsweep.calibrate.measurement import DECODE_RATE, Measurement, source_key
from llmsweep.catalog import Catalog, Profile, load_catalog
from llmsweep.catalog.profiles import Efficiency
from llmsweep.columns import OPTION_KEYS, SCHEMA
from llmsweep.estimate import add_estimates, load
from llmsweep.grid import MAX, gpu_table, model_table, precision_tables

PARAMS = ("bandwidth_efficiency", "compute_efficiency", "step_overhead_s", "layer_overhead_s")
# The configuration of a measurement: measurements that share it share one estimator row.
KEY = (*OPTION_KEYS, "batch", "batch_is_max", "request_rate")
_LEFT = {"how": "left", "maintain_order": "left"}
# Compared quantities that are not frame columns.
DERIVED = {DECODE_RATE: 1 / pl.col("tpot_s")}


def _layout(ms: Sequence[Measurement]) -> dict[str, list]:
    """Each measurement's configuration, column by column (OPTION_KEYS are Measurement fields)."""
    return {k: [getattr(m, k) for m in ms] for k in OPTION_KEYS}


def measurement_frame(measurements: Sequence[Measurement]) -> pl.DataFrame:
    """One row per measurement: its configuration (the grid's identity columns, `max` as
    batch_is_max), the estimate column it is compared with and the measured value (SI)."""
    ms = list(measurements)
    return pl.DataFrame(
        {
            **_layout(ms),
            "batch": [1 if m.batch == MAX else int(m.batch) for m in ms],
            "batch_is_max": [m.batch == MAX for m in ms],
            # an open-loop measurement's offered rate (null: closed loop at `batch`)
            "request_rate": [m.request_rate if m.open_loop else None for m in ms],
            "column": [m.column for m in ms],
            "measured": [m.measured for m in ms],
        },
        schema={
            **{k: SCHEMA.get(k, pl.String) for k in KEY if k not in ("batch_is_max", "request_rate")},
            "batch_is_max": pl.Boolean,
            "request_rate": pl.Float64,
            "column": pl.String,
            "measured": pl.Float64,
        },
    ).select(*KEY, "column", "measured")


def configuration_frame(keys: pl.DataFrame, catalog: Catalog, profile: Profile) -> pl.DataFrame:
    """The distinct configurations of `keys`, joined with GPU, model, precision and link facts and
    the profile's parameters, the way grid.py builds a grid (one small table per entity)."""
    keys = keys.select(KEY).unique(maintain_order=True)
    gpus, engines, models, precisions, kvs = (
        keys[k].unique(maintain_order=True).to_list() for k in ("gpu", "engine", "model", "precision", "kv_precision")
    )
    rates, kv = precision_tables(catalog, gpus, precisions, kvs)
    return (
        keys.lazy()
        .join(gpu_table(catalog, gpus, profile, engines), on=["gpu", "engine"], **_LEFT)
        .join(model_table(catalog, models), on="model", **_LEFT)
        .join(rates, on=["gpu", "precision"], **_LEFT)
        .join(kv, on=["precision", "kv_precision"], **_LEFT)
        .collect()
    )


def _at_rates(closed: pl.LazyFrame, columns: list[str]) -> pl.LazyFrame:
    """Rows with a `request_rate` get the open-loop operating point at that rate (estimate/load.py)
    in the compared columns (and tpot_s, which DERIVED reads); the others keep the closed loop."""
    rate = pl.col("request_rate")
    opened = load.open_loop(closed, rate.fill_null(0.0))
    names = [n for n in dict.fromkeys([*columns, "tpot_s"]) if n in opened.collect_schema().names()]
    both = closed.with_row_index("_r").join(
        opened.select(pl.col(n).alias(f"_open_{n}") for n in names).with_row_index("_r"), on="_r"
    )
    return both.with_columns(
        pl.when(rate.is_not_null()).then(pl.col(f"_open_{n}")).otherwise(pl.col(n)).alias(n) for n in names
    )


def _finite(column: str | pl.Expr) -> pl.Expr:
    """The column as Float64, null where it is not a finite number."""
    x = (pl.col(column) if isinstance(column, str) else column).cast(pl.Float64)
    return pl.when(x.is_finite()).then(x)


@dataclass
class Evaluator:
    """Every measurement in one frame, built once: the distinct configurations with their facts,
    and per measurement the configuration it uses and the column it is compared with. A candidate
    profile is evaluated on all rows in one vectorised estimator pass (its parameters swapped in as
    columns, per GPU family), so a fit can try thousands of parameter sets."""

    measurements: list[Measurement]
    configs: pl.DataFrame  # one row per distinct configuration: facts + the starting profile's columns
    rows: pl.DataFrame  # one row per measurement: KEY, column, measured, config (row of `configs`)

    @classmethod
    def build(cls, measurements: list[Measurement], profile: Profile, catalog: Catalog | None = None) -> Evaluator:
        catalog = catalog or load_catalog()
        rows = measurement_frame(measurements)
        configs = configuration_frame(rows, catalog, profile) if measurements else pl.DataFrame()
        if measurements:
            index = configs.select(KEY).with_row_index("config")
            rows = rows.join(index, on=list(KEY), nulls_equal=True, **_LEFT)  # request_rate is null: closed loop
        return cls(list(measurements), configs, rows)

    @property
    def base(self) -> pl.DataFrame:
        """The estimator's input, one row per measurement (in measurement order)."""
        return self.configs[self.rows["config"]] if self.measurements else self.configs

    @property
    def families(self) -> list[str]:
        """Each measurement's GPU family."""
        return self.base["gpu_family"].cast(pl.String).to_list() if self.measurements else []

    @property
    def engines(self) -> list[str]:
        """Each measurement's engine."""
        return self.base["engine"].cast(pl.String).to_list() if self.measurements else []

    def evaluate(self, profile: Profile) -> pl.DataFrame:
        """Per measurement: `estimated` (SI units; null where there is no finite estimate) and `fits`."""
        if not self.measurements:
            return pl.DataFrame(schema={"estimated": pl.Float64, "fits": pl.Boolean})
        pair = pl.concat_str(pl.col("gpu_family").cast(pl.String), pl.lit("|"), pl.col("engine").cast(pl.String))
        pairs = self.configs.select(pair.unique()).to_series().to_list()
        effs = {p: profile.for_family(*p.split("|", 1)).model_dump() for p in pairs}
        swap = [
            pair.replace_strict({p: e[n] for p, e in effs.items()}, default=getattr(profile.defaults, n))
            .cast(self.configs.schema[n])
            .alias(n)
            for n in Efficiency.model_fields
        ]
        columns = self.rows["column"].unique().sort().to_list()
        derived = {k: v for k, v in DERIVED.items() if k in columns}
        estimates = add_estimates(self.configs.lazy().with_columns(swap))
        if self.configs["request_rate"].is_not_null().any():  # open-loop rows: the point at their rate
            estimates = _at_rates(estimates, columns)
        estimates = estimates.with_columns(**derived).select(*columns, "fits")
        picked = pl.coalesce([pl.when(pl.col("column") == c).then(_finite(c)) for c in columns])
        return (
            self.rows.lazy()
            .select("config", "column")
            .join(estimates.with_row_index("config"), on="config", **_LEFT)
            .select(estimated=picked, fits=pl.col("fits"))
            .collect()
        )

    def subset(self, rows: Sequence[int]) -> Evaluator:
        """The evaluator of the measurements at `rows` only (and only the configurations they use)."""
        picked = self.rows[pl.Series(list(rows), dtype=pl.UInt32)]
        used = picked["config"].unique(maintain_order=True)
        renumber = pl.DataFrame({"config": used, "new": pl.int_range(len(used), dtype=pl.UInt32, eager=True)})
        picked = picked.join(renumber, on="config", **_LEFT).drop("config").rename({"new": "config"})
        return Evaluator([self.measurements[i] for i in rows], self.configs[used], picked)

    def estimate_series(self, profile: Profile) -> pl.Series:
        return self.evaluate(profile)["estimated"]

    def estimate(self, profile: Profile) -> list[float | None]:
        return self.estimate_series(profile).to_list()


def comparison_frame(
    measurements: list[Measurement], estimated: Sequence[float | None] | pl.Series, base: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The comparison file's rows: id, metric, measured, estimated, ratio (estimated / measured),
    the configuration, whether it fits, the engine, the source and the assumptions made."""
    ms = list(measurements)
    est = pl.Series("estimated", list(estimated) if not isinstance(estimated, pl.Series) else estimated, pl.Float64)
    fits = (
        base["fits"] if base is not None and "fits" in base.columns else pl.Series([None] * len(ms), dtype=pl.Boolean)
    )
    frame = pl.DataFrame(
        {
            "id": [m.id for m in ms],
            "metric": [m.metric for m in ms],
            "measured": [m.measured for m in ms],
            "estimated": est,
            **_layout(ms),
            "batch": [str(m.batch) for m in ms],
            "fits": fits.cast(pl.Boolean),
            "source": [source_key(m.source) for m in ms],
            "assumptions": [m.assumptions for m in ms],
        },
        # the layout's numbers in their frame dtypes; names stay text (a CSV for people)
        schema_overrides={
            "measured": pl.Float64,
            **{k: SCHEMA[k] for k in OPTION_KEYS if SCHEMA[k].is_integer()},
            "id": pl.String,
            "metric": pl.String,
        },
    )
    estimated_ = _finite("estimated")
    ratio = pl.when(estimated_ != 0).then(_finite(estimated_ / pl.col("measured")))
    return (
        frame.with_columns(estimated=estimated_)
        .with_columns(ratio=ratio)
        .select(
            "id",
            "metric",
            "measured",
            "estimated",
            "ratio",
            *[c for c in frame.columns if c not in ("id", "metric", "measured", "estimated")],
        )
    )


def compare(
    measurements: list[Measurement], profile: str | Profile = "default", catalog: Catalog | None = None
) -> pl.DataFrame:
    """One row per measurement: id, metric, measured, estimated, ratio (estimated / measured), and
    the configuration it was estimated as."""
    catalog = catalog or load_catalog()
    prof = catalog.profile(profile) if isinstance(profile, str) else profile
    ev = Evaluator.build(measurements, prof, catalog)
    out = ev.evaluate(prof)
    return comparison_frame(ev.measurements, out["estimated"], out)


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
