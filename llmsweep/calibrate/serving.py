"""Fitting what only the serving modes use: the acceptance of MTP drafts and the hand-off of a
disaggregated request between the pools (estimate/speculative.py, estimate/disaggregated.py).

Rows of those modes are compared like any other but are not fitted into the aggregated profile
(Measurement.fittable), except for the network's latency, which the disaggregated rows that decode
across servers tell with the aggregated ones (calibrate/network.py). With every parameter the
aggregated rows set held, the MTP rows' decode metrics fit one shared `mtp_acceptance`, then each
engine's disaggregated rows' TTFT fit its `handoff_overhead_s`, each pulled towards its starting
value like every fitted value (fitting._shrunk's prior, worth PRIOR_ROWS rows).
`kv_transfer_efficiency` stays at its prior: a prompt's KV cache crosses a 50 GB/s NIC in 1.4-12 ms
in these rows, too little of their TTFT to be told apart from the hand-off.
"""

from __future__ import annotations

from llmsweep.calibrate.comparison import Evaluator
from llmsweep.calibrate.measurement import GROUPS
from llmsweep.catalog import Profile

MIN_ROWS = 8  # as fitting.MIN_FAMILY_ROWS: fewer rows leave the starting value


def mtp_rows(ev: Evaluator, rows: list[int]) -> list[int]:
    """MTP rows of `rows` whose metric is a decode speed (TPOT): what the acceptance sets."""
    return [
        i for i in rows if ev.measurements[i].draft_tokens > 0 and GROUPS.get(ev.measurements[i].metric) == "decode"
    ]


def handoff_rows(ev: Evaluator, rows: list[int], engine: str) -> list[int]:
    """One engine's disaggregated TTFT rows of `rows`: what the hand-off sets."""
    return [
        i
        for i in rows
        if ev.measurements[i].disaggregated
        and ev.measurements[i].engine == engine
        and GROUPS.get(ev.measurements[i].metric) == "prefill"
        and ev.measurements[i].batch != "max"
    ]


def fit_serving(ev: Evaluator, profile: Profile, rows: list[int], init: Profile | None = None) -> Profile:
    """`profile` with mtp_acceptance and each engine's handoff_overhead_s fitted on the serving-mode
    rows among `rows` (unchanged where there are fewer than MIN_ROWS of them). The acceptance is
    fitted first (a disaggregated MTP row's TTFT holds its first decode step), then every engine's
    hand-off at once, as fitting.fit_engines fits engines."""
    from llmsweep.calibrate import fitting  # it calls this module: imported here, not at the top

    mtp = mtp_rows(ev, rows)
    if len(mtp) >= MIN_ROWS:
        profile = fitting.fit_shared(ev.subset(mtp), profile, ("mtp_acceptance",), init)
    engines = sorted({ev.measurements[i].engine for i in rows if ev.measurements[i].disaggregated})
    picked = {e: handoff_rows(ev, rows, e) for e in engines}
    fitted = [e for e in engines if len(picked[e]) >= MIN_ROWS]
    problems = [fitting._shrunk(ev.subset(picked[e]), profile, e, "", ("handoff_overhead_s",), init) for e in fitted]
    for engine, values in zip(fitted, fitting._minimise(problems), strict=True):
        profile = fitting._with(profile, {}, {"": values}, engine=engine)
    return profile
