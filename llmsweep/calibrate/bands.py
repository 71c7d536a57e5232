"""Uncertainty bands: the spread of out-of-sample errors per metric group."""

from __future__ import annotations

import polars as pl

from llmsweep.calibrate.measurement import GROUPS, TIME_METRICS
from llmsweep.columns import BAND_GROUPS
from llmsweep.grid import MAX


def bands(out_of_sample: pl.DataFrame) -> dict[str, list[float]]:
    """Per metric group, factors [low, high] such that estimate x factor covers the middle 80 % of
    the out-of-sample errors: measured / estimated at its 10th and 90th percentiles. For
    time-like metrics (TTFT, TPOT) the same factors apply inverted. Disaggregated rows (`mode`)
    get groups of their own (`disaggregated_prefill`, ...: catalog/profiles.py BAND_GROUPS), as
    their errors differ from the aggregated rows' (docs/fidelity.md, serving modes)."""
    out = {}
    # rows whose batch the source did not state are errors of missing information, not of the model
    frame = out_of_sample.filter(pl.col("ratio").is_not_null() & (pl.col("ratio") > 0) & (pl.col("batch") != MAX))
    group = pl.col("metric").replace_strict(GROUPS, default=None)
    if "mode" in frame.columns:
        group = pl.when(pl.col("mode") == "disaggregated").then(pl.lit("disaggregated_") + group).otherwise(group)
    frame = frame.with_columns(
        group=group,
        # speed metrics: measured/estimated = 1/ratio; time metrics: estimated/measured = ratio
        speed_factor=pl.when(pl.col("metric").is_in(sorted(TIME_METRICS)))
        .then(pl.col("ratio"))
        .otherwise(1 / pl.col("ratio")),
    )
    for (group,), rows in frame.group_by(["group"]):
        if group not in BAND_GROUPS or rows.height < 5:
            continue
        out[str(group)] = [round(rows["speed_factor"].quantile(0.1), 4), round(rows["speed_factor"].quantile(0.9), 4)]
    return dict(sorted(out.items()))
