"""Fitting the scale-out network's collective latency (`network_latency_s`, the alpha of every
collective across servers: estimate/parallel.py).

Only a replica, or a disaggregated decode worker, that spans more GPUs than one server or NVLink
domain pays it: each of its decode steps pays it for every collective whose group crosses servers
(tp 16 on two HGX servers: two all-reduces a layer, 122 a step for DeepSeek-R1; attention data
parallelism across servers: the experts' all-to-alls; a pipeline: one send per stage boundary).
Those rows are few (48 of the 2,487 development measurements: TensorRT-LLM's H100 deployments of
measured-serving-dev.csv that decode at tp 16, and vLLM's MiniMax-M2.5 at tp 4 x dp_attention 4
on 16 GPUs in measured-load-dev.csv), so it is fitted on their decode metrics alone,
aggregated and disaggregated, shared by every engine (it is the network's, as NCCL's
small-message latency is), with everything else held and a prior towards its starting value
(fitting.fit_shared).
"""

from __future__ import annotations

from llmsweep.calibrate.comparison import Evaluator
from llmsweep.calibrate.measurement import GROUPS
from llmsweep.calibrate.serving import MIN_ROWS
from llmsweep.catalog import Profile
from llmsweep.columns import c
from llmsweep.estimate import parallel


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
    return fitting.fit_shared(ev.subset(picked), profile, ("network_latency_s",), init)
