"""How many replicas carry a traffic, and how much traffic a number of replicas carries: the one
sizing rule the plan (sizing.py, closed_loop.py, xpyd.py) and the traffic chart (money_charts.py)
read, so a chart never draws a count the plan would not give.

Each replica runs at most at capacity / (1 + headroom) requests/s (`capacity`, the largest Poisson
rate at which it meets the targets; the headroom is kept spare) and `redundancy` replicas more stand
by (n+1: one). The arguments are polars expressions or numbers, the rate or the capacity an
expression; rates and capacities in requests/s.
"""

from __future__ import annotations

import polars as pl

Number = pl.Expr | float | int


def replicas_needed(rate: Number, capacity: Number, headroom: Number, redundancy: Number) -> pl.Expr:
    """n(X) = ceil(X / capacity x (1 + headroom)) + redundancy: the fewest replicas that carry X
    requests/s."""
    return (rate / capacity * (1 + headroom)).ceil() + redundancy


def rate_carried(replicas: Number, capacity: Number, headroom: Number, redundancy: Number) -> pl.Expr:
    """B_n = (n - redundancy) x capacity / (1 + headroom): the most requests/s n replicas carry, where
    replicas_needed steps from n to n + 1 (it is n on (B_(n-1), B_n])."""
    return (replicas - redundancy) * capacity / (1 + headroom)
