"""Options at the largest batch that meets the targets: each hardware option (GPU x model x
precision x KV precision x layout x lengths x serving mode), once per offer of its GPU, at its
`slo_batch` (only the grid's own batches when it has no `max`), which is what `plan.csv` lists and
what the reports rank and recommend. A frame may mix aggregated and disaggregated options: each
mode's rows are estimated by their own module (estimate/modes.py) and come back in their order.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from llmsweep.columns import SCHEMA, c, text
from llmsweep.estimate import add_batch_estimates, modes
from llmsweep.plan.closed_loop import peak_users
from llmsweep.plan.inputs import PlanInputs
from llmsweep.plan.sizing import (
    AT_CAPACITY,
    UNSIZABLE,
    _drop_private,
    add_plan_columns,
    at_traffic,
    unsizable,
)
from llmsweep.plan.slo import meets_slo, slo_miss
from llmsweep.spec import SloSpec


def replica_max_batch() -> pl.Expr:
    """The most sequences a replica holds: max_batch (one worker's KV cache) x its decode workers
    (1 for an aggregated replica)."""
    return c.max_batch.clip(lower_bound=0) * c.decode_workers.fill_null(1)


def _holds() -> pl.Expr:
    """The batch fits the replica's KV cache: each decode worker holds its share of it."""
    return pl.col("worker_batch") <= c.max_batch


def slo_batch(options: pl.DataFrame, slo: SloSpec | None, iterations: int = 40) -> pl.Series:
    """Per option, the largest batch B <= the replica's max batch (max_batch x decode workers) that
    fits and meets every target (0 if none). TPOT and request latency rise with B, so a bisection on B
    finds it; all options of a serving mode at once."""

    def one_mode(rows: pl.LazyFrame, disaggregated: bool) -> pl.LazyFrame:
        frame = rows.collect()
        lo = pl.Series("lo", [0] * frame.height, dtype=pl.Int64)
        hi = frame.select(replica_max_batch()).to_series().alias("hi")
        for _ in range(iterations):
            if (lo >= hi).all():
                break
            mid = ((lo + hi + 1) // 2).clip(lower_bound=1)
            trial = add_batch_estimates(
                frame.lazy().with_columns(batch=mid, batch_is_max=pl.lit(False)), disaggregated=disaggregated
            )
            ok = trial.select(meets_slo(slo) & _holds()).collect().to_series()
            settled = lo >= hi
            lo = pl.select(pl.when(settled).then(lo).when(ok).then(mid).otherwise(lo)).to_series()
            hi = pl.select(pl.when(settled).then(hi).when(ok).then(hi).otherwise(mid - 1)).to_series()
        return frame.with_columns(slo_batch=lo).lazy()

    return modes.apply(options, one_mode)["slo_batch"]


def listed_batch(options: pl.DataFrame, slo: SloSpec | None, batches: Sequence[int]) -> pl.Series:
    """Per option, the largest of the grid's `batches` that fits and meets every target (0 if none):
    a grid without `max` is the user's constraint (batch: [1] is a single-user plan)."""

    def one_mode(rows: pl.LazyFrame, disaggregated: bool) -> pl.LazyFrame:
        indexed = rows.with_row_index("_row")
        trials = pl.concat(
            [indexed.with_columns(batch=pl.lit(b, dtype=pl.Int64), batch_is_max=pl.lit(False)) for b in batches]
        )
        ok = meets_slo(slo) & _holds()
        est = add_batch_estimates(trials, disaggregated=disaggregated).select("_row", "batch", ok.alias("_ok"))
        best = est.filter("_ok").group_by("_row").agg(pl.col("batch").max())
        picked = indexed.join(best.rename({"batch": "slo_batch"}), on="_row", how="left", maintain_order="left")
        return picked.drop("_row").with_columns(pl.col("slo_batch").fill_null(0))

    return modes.apply(options, one_mode)["slo_batch"]


def estimate_at_batch(frame: pl.DataFrame) -> pl.DataFrame:
    """add_batch_estimates on a frame that may mix serving modes (each mode's rows by its own model)."""
    return modes.apply(frame, lambda rows, disaggregated: add_batch_estimates(rows, disaggregated=disaggregated))


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
    out = add_plan_columns(estimate_at_batch(at).lazy(), plan, every_offer=True, keep_offer_parts=True).collect()
    if plan.workload is not None:
        out = at_traffic(out, plan)
    else:
        out = out.with_columns(
            concurrency=c.batch.cast(pl.Float64),
            offered_requests_per_s=c.requests_per_s_per_replica,
            capacity_requests_per_s=pl.when(c.meets_slo).then(c.requests_per_s_per_replica),
            # what limits a replica's capacity is read in the open loop, at a workload only
            **{n: pl.lit(None, SCHEMA[n]) for n in AT_CAPACITY},
        )
    miss = slo_miss(plan.slo)
    if plan.workload is not None:  # a fleet that cannot be sized says so first
        miss = pl.when(unsizable()).then(text(UNSIZABLE)).otherwise(miss.cast(pl.String)).cast(pl.Categorical)
    out = _drop_private(out.lazy()).collect().with_columns(slo_miss=miss)
    slo, w = plan.slo, plan.workload
    # the rate at_traffic sized each option for (with `users`, each option's own), after the others
    peak = out["peak_requests_per_s"] if w is not None else pl.lit(None, dtype=pl.Float64)
    return out.drop("peak_requests_per_s", strict=False).with_columns(
        peak_requests_per_s=peak,
        peak_users=pl.lit(peak_users(w) if w and w.users is not None else None, dtype=pl.Float64),
        headroom=pl.lit(w.headroom if w else None, dtype=pl.Float64),
        redundancy=pl.lit(plan.redundancy if w else None, dtype=pl.Int64),
        ttft_target_s=pl.lit(slo.ttft_s if slo else None, dtype=pl.Float64),
        tpot_target_s=pl.lit(slo.tpot_s if slo else None, dtype=pl.Float64),
        request_latency_target_s=pl.lit(slo.request_latency_s if slo else None, dtype=pl.Float64),
        ttft_percentile=pl.lit(slo.percentile if slo else None, dtype=pl.Categorical),
    )
