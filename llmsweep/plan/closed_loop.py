"""Traffic from users (workload `users` with `think_time_s`): a closed loop of N users, each sending
a question, waiting R seconds for the answer, thinking Z seconds and asking again.

By the interactive response time law (Little's law over a user's whole cycle of Z + R seconds;
Denning and Buzen, "The Operational Analysis of Queueing Network Models", ACM Computing Surveys,
1978), N users send X = N / (Z + R) requests/s and keep X x R = N x R / (Z + R) < N requests in
flight. At the peak, N' = users x peak_factor users are thinking and waiting (the peak multiplies
the users, not their think time): X = N' / (Z + R).

R is the request latency at the operating point the fleet runs at, and that depends on X: sized for
X, an option has n(X) = ceil(X x (1 + headroom) / capacity) + redundancy replicas, each at X / n(X)
requests/s (at_traffic's open loop). So each option is sized at the fixed point

    X = N' / (Z + R(X / n(X)))

(`solve`), where requests/s x latency = requests in flight <= N' holds for the fleet as it holds for
each replica. Rows planned at their own batch (estimates.csv, add_plan_columns) run at that batch's
closed-loop latency, which does not move with X: there X = N' / (Z + the row's request_latency_s).
"""

from __future__ import annotations

import polars as pl

from llmsweep.estimate import modes
from llmsweep.plan.replicas import rate_carried, replicas_needed
from llmsweep.spec import WorkloadSpec

SOLVE_STEPS = 80  # at most; a safeguarded false position, which at least halves the bracket every 2 steps
TOLERANCE = 1e-12  # relative: the answer X is within X x TOLERANCE of N' / (Z + R(X))


def peak_users(workload: WorkloadSpec) -> float:
    """N' = users x peak_factor: the users thinking and waiting at the peak."""
    return workload.users * workload.peak_factor


def users_rate(workload: WorkloadSpec, latency: pl.Expr) -> pl.Expr:
    """X = N' / (Z + R): the requests/s N' users who think Z seconds send when each answer takes
    `latency` (R) seconds."""
    return pl.lit(peak_users(workload)) / (workload.think_time_s + latency)


def solve(rows: pl.DataFrame, workload: WorkloadSpec, redundancy: int, most_replicas: float) -> pl.DataFrame:
    """Per row of `rows` (options that fit, with their capacity_requests_per_s > 0): `x`, the peak
    requests/s X = N' / (Z + R(X / n)), and `replicas`, the fewest n that carry it, n = ceil(X (1 +
    headroom) / capacity) + redundancy, R being the open loop's request latency at X / n requests/s a
    replica (estimate/modes.py). Both Float64; n is `most_replicas` + 1 where more than `most_replicas`
    would be needed (no fleet: at_traffic says so).

    The replicas. With n replicas (a = n - redundancy of them counted against capacity) the users'
    rate is the root X_n of X - N' / (Z + R(X / n)), which rises with X; n carries it when X_n <= B_n
    = a x capacity / (1 + headroom), i.e. when N' / (Z + R(B_n / n)) <= B_n: one evaluation of R, no
    root. More replicas run each at a lower rate and never carry less, so the n that do form an
    interval, and a bisection on the integers finds its least. Each replica runs at most at capacity /
    (1 + headroom) and at least at 0, and R rises with the rate, so X lies between N' / (Z +
    R(capacity / (1 + headroom))) and N' / (Z + R(0)): n lies between the replicas these need.

    The rate. X_n by false position with the Illinois modification (the end kept twice in a row has its
    value halved: Dowell and Jarratt, BIT 11, 1971), halving the bracket instead whenever it did not
    halve over the two steps before, between N' / (Z + R(B_n / n)) and B_n (0 and N' / Z, where the
    signs are sure, if R does not rise with the rate). The answer is the low end, where X (Z + R) <= N':
    the users can send it and X R < N' are in flight; it is within X x TOLERANCE of N' / (Z + R)."""
    out = {"x": pl.Float64, "replicas": pl.Float64}
    n_rows = rows.height
    if n_rows == 0:
        return pl.DataFrame(schema=out)
    users, think, spare = peak_users(workload), workload.think_time_s, float(redundancy)
    capacity = rows["capacity_requests_per_s"]

    def latencies(*per_replica: pl.Series) -> list[pl.Series]:
        """R per row at each of these per-replica rates, all in one evaluation of the open loop."""
        trial = pl.concat([rows.with_columns(_try=rate.alias("_try")) for rate in per_replica])
        loop = modes.apply(trial, lambda part, disagg: modes.open_loop(part, pl.col("_try"), disagg))
        latency = loop["request_latency_s"]
        return [latency.slice(i * n_rows, n_rows) for i in range(len(per_replica))]

    def series(expr: pl.Expr) -> pl.Series:
        return pl.select(expr).to_series()

    def where(cond: pl.Series, yes, no) -> pl.Series:
        return series(pl.when(cond).then(yes).otherwise(no))

    def sent(latency: pl.Series) -> pl.Series:  # N' / (Z + R); null where the replica saturates
        return series(users / (think + pl.lit(latency)))

    def carried(n: pl.Series) -> pl.Series:  # B_n: the most n replicas carry, (n - spare) capacity / (1 + h)
        return series(rate_carried(pl.lit(n), pl.lit(capacity), workload.headroom, spare))

    def needed(x: pl.Series) -> pl.Series:  # the replicas `x` requests/s need (at_traffic's count)
        return series(replicas_needed(pl.lit(x), pl.lit(capacity), workload.headroom, spare))

    idle, full = latencies(pl.Series([0.0] * n_rows), series(pl.lit(capacity) / (1 + workload.headroom)))
    most = sent(idle)
    # beyond most_replicas + 1 the count only says "too many" (and the integers stay exact in Float64)
    high_n = needed(most).clip(upper_bound=most_replicas + 1)
    low_n = needed(sent(full).fill_null(0.0)).clip(lower_bound=spare + 1)
    low_n = where(low_n < high_n, low_n, high_n)
    while (open_ := low_n < high_n).any():  # high_n carries it (or is too many); low_n - 1 never does
        mid = where(open_, ((low_n + high_n) / 2).floor(), high_n)
        bound = carried(mid)
        (latency,) = latencies(series(pl.lit(bound) / pl.lit(mid)))
        fits = open_ & (sent(latency) <= bound).fill_null(False)
        high_n = where(fits, mid, high_n)
        low_n = where(open_ & ~fits, mid + 1, low_n)
    n = high_n
    bound = carried(n)

    def excess(*xs: pl.Series) -> list[pl.Series]:
        """X - N' / (Z + R(X / n)) per row at each of these rates X (+inf where a replica would saturate)."""
        found = latencies(*(series(pl.lit(x) / pl.lit(n)) for x in xs))
        return [series((pl.lit(x) - pl.lit(sent(r))).fill_null(float("inf"))) for x, r in zip(xs, found, strict=True)]

    (top,) = latencies(series(pl.lit(bound) / pl.lit(n)))
    lo, hi = sent(top).fill_null(0.0), where(most < bound, most, bound)
    e_lo, e_hi = excess(lo, hi)
    # R not rising with the rate would leave a sign wrong: then the ends where it is sure
    lo, e_lo = where(e_lo <= 0, lo, 0.0), where(e_lo <= 0, e_lo, -most)
    hi, e_hi = where(e_hi >= 0, hi, users / think), where(e_hi >= 0, e_hi, float("inf"))
    w_lo, w_hi = e_lo, e_hi  # the values false position uses (Illinois-halved)
    kept = pl.Series([0] * n_rows)  # the end the last step moved: -1 the low one, +1 the high one
    last = older = pl.Series([float("inf")] * n_rows)  # the bracket's width one and two steps ago
    for _ in range(SOLVE_STEPS):
        done = (-e_lo <= TOLERANCE * lo) | (hi - lo <= TOLERANCE * hi)
        if done.all():
            break
        width = hi - lo
        falsi = hi - w_hi * width / (w_hi - w_lo)
        fair = w_hi.is_finite() & (falsi > lo) & (falsi < hi) & (width <= older / 2)
        x = where(done, lo, where(fair, falsi, (lo + hi) / 2))
        (e_x,) = excess(x)
        low, high = ~done & (e_x <= 0), ~done & (e_x > 0)
        w_hi = where(low & (kept == -1), w_hi / 2, w_hi)
        w_lo = where(high & (kept == 1), w_lo / 2, w_lo)
        lo, e_lo, w_lo = where(low, x, lo), where(low, e_x, e_lo), where(low, e_x, w_lo)
        hi, w_hi = where(high, x, hi), where(high, e_x, w_hi)
        kept = where(low, -1, where(high, 1, kept))
        last, older = width, last
    return pl.DataFrame({"x": lo, "replicas": n})
