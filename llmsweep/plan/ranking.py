"""Ranking: the options that meet the targets ordered per model and lengths, and the column that
orders them (with the note that says why when it is not the sweep's `rank_by`).
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c, higher_is_better
from llmsweep.plan.inputs import PlanInputs

WORKLOAD_KEYS = ["model", "input_tokens", "output_tokens"]


def rank(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Stable ranking by `column` per model and lengths among options that meet the SLO (others get
    no rank). Ties (fleets of the same GPUs cost the same) go to the option with more capacity per GPU,
    the headroom bought at that price, then keep the sweep's order."""
    higher = higher_is_better(column)
    spare = c.capacity_requests_per_s / c.gpus if "capacity_requests_per_s" in frame.columns else pl.lit(None)
    ordered = frame.with_row_index("_order").with_columns(
        _eligible=c.meets_slo & pl.col(column).is_not_null(), _spare=spare
    )
    ranked = ordered.filter("_eligible").sort(
        [column, "_spare", "_order"], descending=[higher, True, False], nulls_last=True
    )
    ranked = ranked.with_columns(rank=pl.int_range(1, pl.len() + 1).over(WORKLOAD_KEYS).cast(pl.Int64))
    rest = ordered.filter(~pl.col("_eligible")).with_columns(rank=pl.lit(None, dtype=pl.Int64))
    return pl.concat([ranked, rest], how="diagonal").drop("_eligible", "_order", "_spare")


FALLBACK_RANK = "output_tokens_per_s_per_gpu"
SINGLE_USER_RANK = "decode_tokens_per_s_per_seq"
FLEET_RANK = "tco_usd"  # with a workload: what the fleet costs over the horizon
PER_TOKEN_RANK = "usd_per_million_output_tokens"


def rank_column(frame: pl.DataFrame, rank_by: str, plan: PlanInputs | None = None) -> tuple[str, str | None]:
    """The column to rank by, and the note that says why when it is not `rank_by`.

    With a workload and prices, the per-token default (`usd_per_million_output_tokens`, one replica
    fully loaded, a GPU-hour carrying only its share of a server and a rack) gives way to `tco_usd`:
    what each fleet costs over horizon_years, whole servers and racks, headroom and redundancy
    included, which is what a buyer pays. The fleet's cost per token and its average cost per month
    order the options the same way, and so does the rent-or-buy break-even. Without values (no prices,
    no workload): tokens/s per user for a single-user grid (batch: [1]), else output tokens/s per GPU
    (with a note only when the sweep chose rank_by itself)."""
    has = lambda name: name in frame.columns and frame[name].is_not_null().any()  # noqa: E731
    if plan is not None and plan.workload is not None and rank_by == PER_TOKEN_RANK and has(FLEET_RANK):
        return FLEET_RANK, (
            f"with a workload, options are ranked by what the fleet costs: TCO over {plan.horizon_years:g} years "
            "(capex + opex; whole servers and racks, headroom and redundancy included), not by the cost per token "
            "of one fully loaded replica"
        )
    if has(rank_by):
        return rank_by, None
    single = plan is not None and plan.batches == (1,)
    fallback = SINGLE_USER_RANK if single else FALLBACK_RANK
    if plan is not None and not plan.rank_by_given:
        return fallback, None
    return fallback, f"{rank_by} has no values (it needs prices or a workload); ranked by {fallback} instead"
