"""Fitting the scale-out network's collective latency (`network_latency_s`, the alpha of every
collective across servers: estimate/parallel.py).

Only a replica, or a disaggregated decode worker, that spans more GPUs than one server or NVLink
domain pays it, and a decode step pays it on every layer: the H100 deployments of
measured-serving-dev.csv that decode at tp 16 over two HGX servers (two all-reduces a layer, 122
a step), and aggregated ones with attention data parallelism across servers (the experts'
all-to-alls). So it is fitted on those rows' decode metrics alone, shared by every engine (it is
the network's, as NCCL's small-message latency is), with everything else held and a prior
towards its starting value (fitting._shrunk); the shared fit on every row leaves it where it
starts, as the few rows that tell it are lost among those that do not.
"""

from __future__ import annotations

from llmsweep.calibrate.comparison import Evaluator
from llmsweep.calibrate.measurement import GROUPS
from llmsweep.catalog import Profile
from llmsweep.columns import c
from llmsweep.estimate import parallel

MIN_ROWS = 8  # as fitting.MIN_FAMILY_ROWS: fewer rows leave the starting value


def network_rows(ev: Evaluator, rows: list[int]) -> list[int]:
    """The decode-metric rows of `rows` (TPOT, decode speed; not at `max` batch, not drafting: the
    MTP acceptance is fitted after) whose worker, tp x pp x dp_attention GPUs (a disaggregated
    row's decode worker), spans more than one network unit."""
    if not rows:
        return []
    spans = ev.subset(rows).base.select((c.tp * c.pp * c.dp_attention) > parallel.network_unit_gpus()).to_series()
    return [
        i
        for i, across in zip(rows, spans.to_list(), strict=True)
        if across
        and GROUPS.get(ev.measurements[i].metric) == "decode"
        and ev.measurements[i].batch != "max"
        and ev.measurements[i].draft_tokens == 0
    ]


def fit_network(ev: Evaluator, profile: Profile, rows: list[int], init: Profile | None = None) -> Profile:
    """`profile` with network_latency_s fitted on the network_rows among `rows` (unchanged where
    there are fewer than MIN_ROWS of them)."""
    from llmsweep.calibrate import fitting  # it calls this module: imported here, not at the top

    picked = network_rows(ev, rows)
    if len(picked) < MIN_ROWS:
        return profile
    (values,) = fitting._minimise(
        [fitting._shrunk(ev.subset(picked), profile, "", "", ("network_latency_s",), init, True)]
    )
    return fitting._with(profile, values, {})
