"""Latency targets (`slo`): whether a row meets them, and the first one it misses."""

from __future__ import annotations

import polars as pl

from llmsweep.columns import TARGET_NAMES, c, text
from llmsweep.estimate import load
from llmsweep.spec import SloSpec


def slo_checks(slo: SloSpec | None) -> list[tuple[str, pl.Expr, float]]:
    """(column, value, target) for each latency target the sweep sets."""
    if slo is None:
        return []
    ttft = load.quantile_name(slo.percentile)
    pairs = [(ttft, slo.ttft_s), ("tpot_s", slo.tpot_s), ("request_latency_s", slo.request_latency_s)]
    return [(name, pl.col(name), target) for name, target in pairs if target is not None]


def within_targets(slo: SloSpec | None) -> pl.Expr:
    """Every latency target holds (the loaded figures only: no memory check)."""
    ok = pl.lit(True)
    for _name, value, target in slo_checks(slo):
        ok = ok & (value <= target)
    return ok


def meets_slo(slo: SloSpec | None) -> pl.Expr:
    ok = c.fits
    for _name, value, target in slo_checks(slo):
        ok = ok & (value <= target)
    return ok


def slo_miss(slo: SloSpec | None) -> pl.Expr:
    """The first target a row misses, its value against the target in the target's unit (ms below a
    second): 'TPOT 62.1 ms > 50 ms (+24%)', 'p90 TTFT 2.41 s > 2 s (+21%)'."""
    expr = pl.when(~c.fits).then(text("does not fit"))
    for name, value, target in slo_checks(slo):
        scale, unit = (1e3, "ms") if target < 1 else (1.0, "s")
        over = (value / target - 1) * 100
        expr = expr.when(value > target).then(
            pl.format(
                f"{TARGET_NAMES[name]} {{}} {unit} > {target * scale:g} {unit} (+{{}}%)",
                (value * scale).round_sig_figs(3).cast(pl.String).str.strip_suffix(".0"),
                over.round(0).clip(upper_bound=1e15).cast(pl.Int64),
            )
        )
    return expr.otherwise(None).cast(pl.Categorical)
