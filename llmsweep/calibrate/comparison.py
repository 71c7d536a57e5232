"""Measurements -> one frame -> estimates -> the comparison frame, and its error summaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import polars as pl

from llmsweep.calibrate.measurement import DECODE_RATE, Measurement, noting_replicas, source_key, tp_candidates
from llmsweep.catalog import Catalog, Profile, load_catalog
from llmsweep.catalog.profiles import Efficiency
from llmsweep.columns import OPTION_KEYS, POOL_COLUMNS, SCHEMA
from llmsweep.estimate import load, modes
from llmsweep.grid import MAX, aggregated_defaults, checkpoint_table, gpu_table, kv_table, model_table, precision_table

PARAMS = ("bandwidth_efficiency", "compute_efficiency", "step_overhead_s", "layer_overhead_s")
# The serving mode of a configuration (measurement.py: Measurement's fields; null = aggregated).
SERVING_KEYS = ("mode", *POOL_COLUMNS, "speculative", "draft_tokens")
# The configuration of a measurement: measurements that share it share one estimator row.
KEY = (*OPTION_KEYS, *SERVING_KEYS, "batch", "batch_is_max", "served", "request_rate", "ttft_limit_s", "tpot_limit_s")
_FLAGS = ("batch_is_max", "served")  # KEY columns that are booleans outside the grid's schema
_FLOATS = ("request_rate", "ttft_limit_s", "tpot_limit_s")  # KEY columns that are not grid columns
_LEFT = {"how": "left", "maintain_order": "left"}
# Compared quantities that are not frame columns.
DERIVED = {DECODE_RATE: 1 / pl.col("tpot_s")}


def _layout(ms: Sequence[Measurement]) -> dict[str, list]:
    """Each measurement's configuration, column by column (OPTION_KEYS are Measurement fields)."""
    return {k: [getattr(m, k) for m in ms] for k in OPTION_KEYS}


def _serving(ms: Sequence[Measurement]) -> dict[str, list]:
    """Each measurement's serving mode, in the grid's spelling (SERVING_KEYS)."""
    return {
        "mode": ["disaggregated" if m.disaggregated else "aggregated" for m in ms],
        **{k: [getattr(m, k) for m in ms] for k in POOL_COLUMNS},
        "speculative": ["mtp" if m.draft_tokens else "none" for m in ms],
        "draft_tokens": [m.draft_tokens for m in ms],
    }


def measurement_frame(measurements: Sequence[Measurement]) -> pl.DataFrame:
    """One row per measurement: the configuration of one of its replicas (the grid's identity
    columns, `max` as batch_is_max, the replica's share of the concurrency or of the offered rate),
    the estimate column it is compared with, the measured value (SI) and `scale`, the factor from
    the replica's estimate to the measured system's (Measurement.scale)."""
    ms = list(measurements)
    return pl.DataFrame(
        {
            **_layout(ms),
            **_serving(ms),
            "batch": [1 if m.batch == MAX else int(m.replica_batch) for m in ms],
            "batch_is_max": [m.batch == MAX for m in ms],
            "served": [m.served for m in ms],
            # an open-loop measurement's offered rate per replica (null: closed loop at `batch`)
            "request_rate": [m.replica_rate if m.open_loop else None for m in ms],
            # server/interactive scenarios: the latency limits the rate must meet (null: none)
            "ttft_limit_s": [m.ttft_limit_s for m in ms],
            "tpot_limit_s": [m.tpot_limit_s for m in ms],
            "column": [m.column for m in ms],
            "measured": [m.measured for m in ms],
            "scale": [m.scale for m in ms],
        },
        schema={
            **{k: SCHEMA.get(k, pl.String) for k in KEY if k not in (*_FLAGS, *_FLOATS)},
            **dict.fromkeys(_FLAGS, pl.Boolean),
            **dict.fromkeys(_FLOATS, pl.Float64),
            "column": pl.String,
            "measured": pl.Float64,
            "scale": pl.Float64,
        },
    ).select(*KEY, "column", "measured", "scale")


def configuration_frame(keys: pl.DataFrame, catalog: Catalog, profile: Profile) -> pl.DataFrame:
    """The distinct configurations of `keys`, joined with GPU, model, precision and link facts and
    the profile's parameters, the way grid.py builds a grid (one small table per entity)."""
    keys = keys.select(KEY).unique(maintain_order=True)
    gpus, engines, models, precisions, kvs = (
        keys[k].unique(maintain_order=True).to_list() for k in ("gpu", "engine", "model", "precision", "kv_precision")
    )
    rates, kv = precision_table(catalog, gpus, precisions), kv_table(catalog, engines, models, precisions, kvs)
    pairs = keys.select("model", "precision").unique(maintain_order=True).rows()
    return (
        keys.lazy()
        .join(gpu_table(catalog, gpus, profile, engines), on=["gpu", "engine"], **_LEFT)
        .join(model_table(catalog, models), on="model", **_LEFT)
        .join(checkpoint_table(catalog, pairs), on=["model", "precision"], **_LEFT)
        .join(rates, on=["gpu", "precision"], **_LEFT)
        .join(kv, on=["engine", "model", "precision", "kv_precision"], **_LEFT)
        .pipe(aggregated_defaults)
        .pipe(without_front_end)
        .collect()
    )


def without_front_end(frame: pl.LazyFrame | pl.DataFrame) -> pl.LazyFrame | pl.DataFrame:
    """A configuration measured by an offline harness (`served` false: no HTTP server or tokeniser
    between the benchmark and the engine) pays no request_overhead_s before its first token."""
    return frame.with_columns(
        request_overhead_s=pl.when(pl.col("served")).then(pl.col("request_overhead_s")).otherwise(0.0)
    )


def choose_layouts(measurements: Sequence[Measurement], profile: Profile, catalog: Catalog) -> list[Measurement]:
    """Rows that give num_gpus but no tp, at the layout llmsweep picks for that many GPUs: among the
    divisors of num_gpus / (pp x dp_attention) (tp_candidates) at which the configuration runs
    (`fits`: memory, and no layout or context reason) at the replica's share of the concurrency
    (the largest batch that fits, for `max`), the one with the most output tokens/s per GPU (what
    the plan ranks by for one GPU type: the lowest cost per token), the smaller tp on a tie. When
    none runs: the largest tp without a layout reason (the estimator's memory reason stays on the
    row), else the largest tp.
    Chosen once, with the starting profile (a fit keeps the layout). Each chosen row says which in
    its assumptions (noting_replicas). Other rows are unchanged."""
    ms = list(measurements)
    trials = [(i, replace(m, tp=t)) for i, m in enumerate(ms) if m.layout_chosen for t in tp_candidates(m)]
    if not trials:
        return ms
    rows = measurement_frame([t for _, t in trials])
    configs = configuration_frame(rows, catalog, profile)
    index = configs.select(KEY).with_row_index("config")
    rows = rows.join(index, on=list(KEY), nulls_equal=True, **_LEFT)
    runs = (
        modes.add_estimates(configs)
        .lazy()
        .select(
            "fits",
            layout_ok=pl.col("layout_reason").is_null(),
            per_gpu=pl.col("output_tokens_per_s_per_gpu").fill_null(0.0),
        )
    )
    found = runs.collect()[rows["config"]]
    options: dict[int, list[tuple[Measurement, bool, bool, float]]] = {}
    for (i, trial), fits, ok, per_gpu in zip(trials, found["fits"], found["layout_ok"], found["per_gpu"], strict=True):
        options.setdefault(i, []).append((trial, bool(fits), bool(ok), per_gpu))
    for i, tried in options.items():
        running = [(t, per_gpu) for t, fits, _, per_gpu in tried if fits]
        laid_out = [t for t, _, ok, _ in tried if ok]
        best = max(running, key=lambda tp: tp[1])[0] if running else (laid_out or [t for t, *_ in tried])[-1]
        ms[i] = noting_replicas(best)
    return ms


def _at_rates(closed: pl.LazyFrame, columns: list[str]) -> pl.LazyFrame:
    """Rows with a `request_rate` get the open-loop operating point at that rate (estimate/load.py)
    in the compared columns (and tpot_s, which DERIVED reads); the others keep the closed loop."""
    rate = pl.col("request_rate")
    opened = load.open_loop(closed, rate.fill_null(0.0))
    names = [n for n in dict.fromkeys([*columns, "tpot_s"]) if n in opened.collect_schema().names()]
    both = closed.with_row_index("_r").join(
        opened.select(pl.col(n).alias(f"_open_{n}") for n in names).with_row_index("_r"), on="_r", **_LEFT
    )
    return both.with_columns(
        pl.when(rate.is_not_null()).then(pl.col(f"_open_{n}")).otherwise(pl.col(n)).alias(n) for n in names
    )


def _meets_limits(trial: pl.LazyFrame) -> pl.Expr:
    """The scenario's limits at an open-loop operating point: p99 TTFT <= ttft_limit_s and TPOT <=
    tpot_limit_s (the mean: the estimator has no TPOT percentile); a blank limit holds."""
    ttft, tpot = pl.col("ttft_limit_s"), pl.col("tpot_limit_s")
    return (ttft.is_null() | (pl.col("ttft_p99_s") <= ttft)) & (tpot.is_null() | (pl.col("tpot_s") <= tpot))


def _at_limits(estimates: pl.LazyFrame) -> pl.LazyFrame:
    """Rows with latency limits (MLPerf server and interactive scenarios) get, as output_tokens_per_s,
    the largest Poisson rate per replica whose operating point meets them (load.max_rate: a
    bisection on all such rows at once) x output_tokens; null when no rate does."""
    frame = estimates.with_row_index("_r").collect()
    limited = frame.filter(pl.col("ttft_limit_s").is_not_null() | pl.col("tpot_limit_s").is_not_null())
    rate = load.max_rate(limited, _meets_limits)
    best = limited.select(
        "_r", _best=pl.when(rate > 0).then(rate * pl.col("output_tokens").cast(pl.Float64)).otherwise(None)
    )
    limit = pl.col("ttft_limit_s").is_not_null() | pl.col("tpot_limit_s").is_not_null()
    return (
        frame.join(best, on="_r", **_LEFT)
        .with_columns(output_tokens_per_s=pl.when(limit).then(pl.col("_best")).otherwise(pl.col("output_tokens_per_s")))
        .with_columns(
            output_tokens_per_s_per_gpu=pl.when(limit)
            .then(pl.col("output_tokens_per_s") / pl.col("gpus"))
            .otherwise(pl.col("output_tokens_per_s_per_gpu"))
        )
        .drop("_r", "_best")
        .lazy()
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
    columns, per GPU family and engine), and many profiles, on this evaluator or others, in one
    pass too (evaluate_many), so a fit can try thousands of parameter sets."""

    measurements: list[Measurement]  # as compared: rows without a tp at the layout llmsweep chose
    configs: pl.DataFrame  # one row per distinct configuration: facts + the starting profile's columns
    rows: pl.DataFrame  # one row per measurement: KEY, column, measured, scale, config (row of `configs`)

    @classmethod
    def build(cls, measurements: list[Measurement], profile: Profile, catalog: Catalog | None = None) -> Evaluator:
        catalog = catalog or load_catalog()
        measurements = choose_layouts(measurements, profile, catalog)
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

    @cached_property
    def pairs(self) -> tuple[list[tuple[str, str]], pl.Series]:
        """The distinct (GPU family, engine) pairs of the configurations, and each configuration's
        pair (its index in that list): the profile's parameters are looked up once per pair."""
        keys = self.configs.select(family=pl.col("gpu_family").cast(pl.String), engine=pl.col("engine").cast(pl.String))
        distinct = keys.unique(maintain_order=True)
        index = keys.join(distinct.with_row_index("pair"), on=["family", "engine"], **_LEFT)["pair"]
        return list(distinct.iter_rows()), index

    def evaluate(self, profile: Profile) -> pl.DataFrame:
        """Per measurement: `estimated` (SI units, for the measured system: the replica's estimate
        x `scale`; null where there is no finite estimate) and `fits`."""
        return evaluate_many([(self, profile)])[0]

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


def evaluate_many(requests: Sequence[tuple[Evaluator, Profile]]) -> list[pl.DataFrame]:
    """`ev.evaluate(profile)` for every (ev, profile) request, in one estimator pass: the
    configurations of all requests stacked, each with its own profile's parameters swapped in as
    columns (per GPU family and engine). A collect costs about 10 ms however few its rows and a
    thousand rows more cost under 1 ms, so a fit evaluates a Jacobian's columns, or many
    independent sub-fits, for the price of one. The estimator works row by row, so each request's
    rows come out as they would alone."""
    empty = pl.DataFrame(schema={"estimated": pl.Float64, "fits": pl.Boolean})
    live = [(ev, profile) for ev, profile in requests if ev.measurements]
    if not live:
        return [empty for _ in requests]
    values: list[dict] = []  # per request and (family, engine) pair: the profile's parameters
    index, configs, rows = [], [], []
    offset = 0  # the request's first row in the stacked configurations
    for ev, profile in live:
        pairs, pair_index = ev.pairs
        index.append(pair_index + len(values))
        rows.append(ev.rows.select(pl.col("config") + offset, "column", "scale"))
        configs.append(ev.configs)
        offset += ev.configs.height
        values += [profile.for_family(family, engine).model_dump() for family, engine in pairs]
    schema = live[0][0].configs.schema
    params = pl.DataFrame(values, schema={n: schema[n] for n in Efficiency.model_fields})
    stacked = without_front_end(pl.concat(configs).with_columns(params[pl.concat(index)].get_columns()))
    measured = pl.concat(rows)
    columns = measured["column"].unique().sort().to_list()
    derived = {k: v for k, v in DERIVED.items() if k in columns}
    estimates = modes.add_estimates(stacked).lazy()
    if stacked["request_rate"].is_not_null().any():  # open-loop rows: the point at their rate
        estimates = _at_rates(estimates, columns)
    if stacked.select(pl.any_horizontal(pl.col("ttft_limit_s", "tpot_limit_s").is_not_null()).any()).item():
        estimates = _at_limits(estimates)  # server/interactive scenarios: the best rate meeting the limits
    estimates = estimates.with_columns(**derived).select(*columns, "fits")
    picked = pl.coalesce([pl.when(pl.col("column") == c).then(_finite(c)) for c in columns])
    out = (
        measured.lazy()
        .join(estimates.with_row_index("config"), on="config", **_LEFT)
        .select(estimated=picked * pl.col("scale"), fits=pl.col("fits"))
        .collect()
    )
    starts = [0]
    for part in rows:
        starts.append(starts[-1] + part.height)
    parts = iter(out.slice(a, b - a) for a, b in zip(starts, starts[1:], strict=False))
    return [next(parts) if ev.measurements else empty for ev, _ in requests]


def comparison_frame(
    measurements: list[Measurement], estimated: Sequence[float | None] | pl.Series, base: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The comparison file's rows: id, metric, measured, estimated, ratio (estimated / measured),
    unit, the configuration (one replica's, and the number of replicas), whether it fits, the
    engine, the source and the assumptions made. `measured` and `estimated` are in the unit the
    row's metric names and `unit` states, as the input gives them (ttft_ms in ms, memory_gb in
    GB); `estimated` (SI, from Evaluator.evaluate) is converted with the measured value's factor."""
    ms = list(measurements)
    est = pl.Series("estimated", list(estimated) if not isinstance(estimated, pl.Series) else estimated, pl.Float64)
    est = est / pl.Series([m.si_factor for m in ms], dtype=pl.Float64)
    fits = (
        base["fits"] if base is not None and "fits" in base.columns else pl.Series([None] * len(ms), dtype=pl.Boolean)
    )
    frame = pl.DataFrame(
        {
            "id": [m.id for m in ms],
            "metric": [m.metric for m in ms],
            "measured": [m.stated for m in ms],
            "estimated": est,
            "unit": [m.unit for m in ms],
            **_layout(ms),
            # the serving mode as estimated: an MTP row drafts its engine's default number of tokens
            **{k: v for k, v in _serving(ms).items() if k in ("mode", "speculative", "draft_tokens")},
            "replicas": pl.Series([m.replicas for m in ms], dtype=pl.Int64),
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
