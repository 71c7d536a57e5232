"""The serving modes side by side: one entry point per operating-point question that a frame mixing
aggregated and disaggregated rows can be asked (the plan's). Each mode's rows go to their own module
(estimate/load.py, estimate/disaggregated.py) and come back in their original order.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from llmsweep.columns import c
from llmsweep.estimate import add_batch_estimates, add_layout_estimates, add_length_estimates, disaggregated, load

_ROW = "_mode_row"


def is_disaggregated() -> pl.Expr:
    """Rows of a disaggregated replica (mode is set on every estimated row)."""
    return c.mode == disaggregated.DISAGGREGATED


def apply(frame: pl.DataFrame, fn: Callable[[pl.LazyFrame, bool], pl.LazyFrame]) -> pl.DataFrame:
    """fn(rows, disaggregated) on each mode's rows of `frame`, the results in the frame's row order.
    A frame of one mode is passed whole."""
    if frame.height == 0 or "mode" not in frame.columns:
        return fn(frame.lazy(), False).collect()
    flags = frame.select(is_disaggregated().fill_null(False)).to_series()
    if not flags.any() or flags.all():
        return fn(frame.lazy(), bool(flags.all())).collect()
    rows = frame.with_row_index(_ROW)
    parts = [fn(rows.filter(flags == flag).lazy(), flag).collect() for flag in (False, True)]
    return pl.concat(parts, how="diagonal_relaxed").sort(_ROW).drop(_ROW)


def add_estimates(frame: pl.DataFrame) -> pl.DataFrame:
    """Every estimate column for configurations of either mode, one row each (calibrate's): a
    disaggregated row names its worker counts and its prefill worker's layout (prefill_tp, ...)
    beside the decode worker's (tp, ...)."""

    def one_mode(rows: pl.LazyFrame, disagg: bool) -> pl.LazyFrame:
        if not disagg:
            return add_batch_estimates(add_length_estimates(add_layout_estimates(rows)))
        rows = rows.with_row_index("_pair")
        decode = add_length_estimates(add_layout_estimates(rows))
        prefill = add_length_estimates(add_layout_estimates(disaggregated.prefill_side(rows)))
        paired = disaggregated.pair(decode, prefill, ["_pair"])
        return add_batch_estimates(paired, disaggregated=True).drop("_pair")

    return apply(frame, one_mode)


def open_loop(frame: pl.LazyFrame, rate: pl.Expr, disaggregated_rows: bool) -> pl.LazyFrame:
    """The operating point at `rate` requests/s per replica, in the rows' mode."""
    return (disaggregated.open_loop if disaggregated_rows else load.open_loop)(frame, rate)


def max_rate(
    frame: pl.DataFrame, accept: Callable[[pl.LazyFrame], pl.Expr] | None = None, iterations: int = 40
) -> pl.Series:
    """Per row, the largest Poisson rate at which the replica is not saturated and `accept` holds
    (load.max_rate's bisection, in each row's mode: a disaggregated replica's prefill pool of x
    workers saturates at x / p rather than 1 / p)."""

    def one_mode(rows: pl.LazyFrame, disagg: bool) -> pl.LazyFrame:
        part = rows.collect()
        servers = part.select(disaggregated.prefill_servers()).to_series() if disagg else None
        loop = disaggregated.open_loop if disagg else load.open_loop
        cap = load.max_rate(part, accept, iterations, loop=loop, servers=servers)
        return part.with_columns(cap).lazy()

    return apply(frame, one_mode)["capacity_requests_per_s"]
