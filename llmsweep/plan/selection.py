"""Options at the largest batch that meets the targets: each hardware option (GPU x model x
precision x KV precision x tp x pp x lengths), once per offer of its GPU, at its `slo_batch` (only
the grid's own batches when it has no `max`), which is what `plan.csv` lists and what the reports
rank and recommend.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from llmsweep.columns import c, text
from llmsweep.estimate import add_batch_estimates
from llmsweep.plan.inputs import PlanInputs
from llmsweep.plan.sizing import (
    UNSIZABLE,
    _drop_private,
    add_plan_columns,
    at_traffic,
    peak_requests_per_s,
    unsizable,
)
from llmsweep.plan.slo import meets_slo, slo_miss
from llmsweep.spec import SloSpec


def slo_batch(options: pl.DataFrame, slo: SloSpec | None, iterations: int = 40) -> pl.Series:
    """Per option, the largest batch B <= max_batch that fits and meets every target (0 if none).
    TPOT and request latency rise with B, so a bisection on B finds it; all options at once."""
    lo = pl.Series("lo", [0] * options.height, dtype=pl.Int64)
    hi = options["max_batch"].clip(lower_bound=0).alias("hi")
    for _ in range(iterations):
        if (lo >= hi).all():
            break
        mid = ((lo + hi + 1) // 2).clip(lower_bound=1)
        trial = add_batch_estimates(options.lazy().with_columns(batch=mid, batch_is_max=pl.lit(False)))
        ok = trial.select(meets_slo(slo) & (pl.col("batch") <= pl.col("max_batch"))).collect().to_series()
        settled = lo >= hi
        lo = pl.select(pl.when(settled).then(lo).when(ok).then(mid).otherwise(lo)).to_series()
        hi = pl.select(pl.when(settled).then(hi).when(ok).then(hi).otherwise(mid - 1)).to_series()
    return lo.alias("slo_batch")


def listed_batch(options: pl.DataFrame, slo: SloSpec | None, batches: Sequence[int]) -> pl.Series:
    """Per option, the largest of the grid's `batches` that fits and meets every target (0 if none):
    a grid without `max` is the user's constraint (batch: [1] is a single-user plan)."""
    rows = options.with_row_index("_row")
    trials = pl.concat(
        [rows.with_columns(batch=pl.lit(b, dtype=pl.Int64), batch_is_max=pl.lit(False)) for b in batches]
    )
    ok = meets_slo(slo) & (pl.col("batch") <= pl.col("max_batch"))
    est = add_batch_estimates(trials.lazy()).select("_row", "batch", ok.alias("_ok")).collect()
    best = est.filter("_ok").group_by("_row").agg(pl.col("batch").max())
    picked = rows.select("_row").join(best, on="_row", how="left", maintain_order="left")
    return picked["batch"].fill_null(0).alias("slo_batch")


def options(lengths_frame: pl.LazyFrame, plan: PlanInputs) -> pl.DataFrame:
    """Each option at its slo_batch (or the smallest batch when none meets the targets), once per
    offer of its GPU, with every estimate and plan column, the cost components and the assumptions
    used (plan.csv's columns and more). A grid without `max` chooses among its own batches only."""
    base = lengths_frame.collect()
    if base.height == 0:
        return base
    if plan.batches:
        batch = listed_batch(base, plan.slo, plan.batches)
        shown = pl.when(batch > 0).then(batch).otherwise(min(plan.batches))
    else:
        batch = slo_batch(base, plan.slo)
        shown = pl.max_horizontal(batch, 1)
    at = base.with_columns(slo_batch=batch).with_columns(batch=shown, batch_is_max=pl.lit(False))
    out = add_plan_columns(add_batch_estimates(at.lazy()), plan, every_offer=True, keep_offer_parts=True).collect()
    if plan.workload is not None:
        out = at_traffic(out, plan)
    else:
        out = out.with_columns(
            concurrency=c.batch.cast(pl.Float64),
            offered_requests_per_s=c.requests_per_s_per_replica,
            capacity_requests_per_s=pl.when(c.meets_slo).then(c.requests_per_s_per_replica),
        )
    miss = slo_miss(plan.slo)
    if plan.workload is not None:  # a fleet that cannot be sized says so first
        miss = pl.when(unsizable()).then(text(UNSIZABLE)).otherwise(miss.cast(pl.String)).cast(pl.Categorical)
    out = _drop_private(out.lazy()).collect().with_columns(slo_miss=miss)
    slo, w = plan.slo, plan.workload
    peak = peak_requests_per_s(w)
    return out.with_columns(
        peak_requests_per_s=peak if peak is not None else pl.lit(None, dtype=pl.Float64),
        headroom=pl.lit(w.headroom if w else None, dtype=pl.Float64),
        redundancy=pl.lit(plan.redundancy if w else None, dtype=pl.Int64),
        ttft_target_s=pl.lit(slo.ttft_s if slo else None, dtype=pl.Float64),
        tpot_target_s=pl.lit(slo.tpot_s if slo else None, dtype=pl.Float64),
        request_latency_target_s=pl.lit(slo.request_latency_s if slo else None, dtype=pl.Float64),
        ttft_percentile=pl.lit(slo.percentile if slo else None, dtype=pl.Categorical),
    )
