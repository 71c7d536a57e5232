"""Row-level plan columns and fleet sizing: what each configuration costs per hour and per million
tokens, and for a workload how many replicas, GPUs, servers and racks the traffic needs, with their
capex, opex and TCO over the sweep's `horizon_years` (finance.fleet_columns); `at_traffic` sizes the
options for the workload in an open loop (traffic from `users` at their own rate there:
closed_loop.py).
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import METRIC_GROUPS, c
from llmsweep.estimate import modes
from llmsweep.estimate.disaggregated import DISAGGREGATED
from llmsweep.finance import DEFAULT_POWER_UTILIZATION, FLEET_COLUMNS, FLEET_FIELDS, fleet_columns
from llmsweep.plan import closed_loop
from llmsweep.plan.closed_loop import users_rate
from llmsweep.plan.inputs import PlanInputs
from llmsweep.plan.prices import price_table
from llmsweep.plan.replicas import replicas_needed
from llmsweep.plan.slo import meets_slo, slo_checks, within_targets
from llmsweep.spec import WorkloadSpec


def peak_requests_per_s(workload: WorkloadSpec | None, latency: pl.Expr | None = None) -> pl.Expr | None:
    """Peak traffic in requests/s: requests_per_s (or tokens_per_day / 86,400 / the row's output
    tokens, so that every row serves the stated tokens whatever its lengths) x peak_factor; or for
    `users`, what users x peak_factor users who think think_time_s (Z) send when each answer takes
    `latency` (R, default the row's request_latency_s), N' / (Z + R) (plan/closed_loop.py; at_traffic
    solves it at the latency the sized fleet runs at)."""
    if workload is None:
        return None
    if workload.users is not None:
        return users_rate(workload, c.request_latency_s if latency is None else latency)
    if workload.requests_per_s is not None:
        avg = pl.lit(workload.requests_per_s)
    else:
        avg = pl.lit(workload.tokens_per_day) / 86_400 / c.output_tokens
    return avg * workload.peak_factor


def band(group: str, end: str, modes_known: bool = True) -> pl.Expr:
    """The profile's band factor of `group` (decode, prefill, throughput) at `end` (low, high): a
    disaggregated row's own, from the disaggregated deployments' out-of-sample errors
    (calibrate/bands.py), where the profile has it, else the aggregated rows'."""
    aggregated = pl.col(f"band_{group}_{end}")
    if not modes_known:  # a frame without serving-mode columns is aggregated
        return aggregated
    own = pl.coalesce(pl.col(f"band_{DISAGGREGATED}_{group}_{end}"), aggregated)
    return pl.when(c.mode == DISAGGREGATED).then(own).otherwise(aggregated)


def band_columns(modes_known: bool = True) -> dict[str, pl.Expr]:
    """Low and high ends of the key outputs: speeds x the profile's band factors, times / them."""
    out = {}
    for end, other in (("low", "high"), ("high", "low")):
        # speed factors at this end; times divide by those at the other
        same, opposite = ({g: band(g, e, modes_known) for g in METRIC_GROUPS} for e in (end, other))
        out[f"decode_tokens_per_s_per_seq_{end}"] = c.decode_tokens_per_s_per_seq * same["decode"]
        out[f"decode_tokens_per_s_{end}"] = c.decode_tokens_per_s * same["decode"]
        out[f"tpot_s_{end}"] = c.tpot_s / opposite["decode"]
        out[f"ttft_s_{end}"] = c.ttft_s / opposite["prefill"]
        out[f"output_tokens_per_s_{end}"] = c.output_tokens_per_s * same["throughput"]
        out[f"usd_per_million_output_tokens_{end}"] = c.usd_per_million_output_tokens / opposite["throughput"]
    return out


def prompt_share(busy: pl.Expr, modes_known: bool = True) -> pl.Expr:
    """The share of a replica's hour that serves prompts: a disaggregated replica's prefill pool,
    prefill_pool_gpus / gpus (its GPUs do nothing else, busy or not); an aggregated replica's time
    spent prefilling at the operating point, `busy` (the loaded model's prefill_fraction: each
    prompt charged what it adds to the iterations it rides in, p_mix, or p when it runs alone;
    estimate/load.py), at most 1. Without a prompt the share is 0, without output tokens 1: the
    hour is paid by the tokens there are."""
    prompts = pl.when(c.input_tokens == 0).then(0.0).when(c.output_tokens == 0).then(1.0).otherwise(busy.clip(0.0, 1.0))
    if not modes_known:  # a frame without serving-mode columns is aggregated
        return prompts
    pool = c.prefill_pool_gpus.cast(pl.Float64) / c.gpus
    return pl.when(c.mode == DISAGGREGATED).then(pool).otherwise(prompts)


def token_costs(rate: pl.Expr, busy: pl.Expr, modes_known: bool = True) -> dict[str, pl.Expr]:
    """USD per million tokens of each type at `rate` requests/s per replica, one price per token:
    input = the prompt share of the hour (prompt_share, at the same operating point: `busy`) over
    the input tokens served in it, decode = the rest of the hour over the output tokens, so input
    cost x input tokens + decode cost x output tokens = the hour; and the all-in figure, the whole
    hour over the output tokens (never add it to the other two)."""
    hour = c.usd_per_hour
    share = prompt_share(busy, modes_known)
    per_hour = rate * 3600 / 1e6  # millions of requests an hour
    return {
        "usd_per_million_output_tokens": pl.when(c.output_tokens > 0).then(hour / (per_hour * c.output_tokens)),
        "usd_per_million_input_tokens": pl.when(c.input_tokens > 0).then(hour * share / (per_hour * c.input_tokens)),
        "usd_per_million_decode_tokens": pl.when(c.output_tokens > 0).then(
            hour * (1 - share) / (per_hour * c.output_tokens)
        ),
    }


def _drop_private(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.drop(list(FLEET_FIELDS), strict=False)


def add_plan_columns(
    frame: pl.LazyFrame, plan: PlanInputs, every_offer: bool = False, keep_offer_parts: bool = False
) -> pl.LazyFrame:
    """Cost, SLO and capacity columns for every row (at the row's own batch: with `users`, sized for
    N' / (Z + the row's request_latency_s), peak_requests_per_s). Each row is priced with
    its GPU's first offer, or (with `every_offer`) repeated once per offer. `keep_offer_parts` keeps
    the offer's private columns so that at_traffic can cost the fleet again."""
    done = (lambda f: f) if keep_offer_parts else _drop_private
    w = plan.workload
    peak = peak_requests_per_s(w)
    how = "inner" if every_offer else "left"
    prices = price_table(plan, every=every_offer, components=every_offer)
    if every_offer:  # unpriced GPUs stay, with no offer
        unpriced = frame.select("gpu").unique().join(prices.select("gpu"), on="gpu", how="anti")
        prices = pl.concat([prices, unpriced], how="diagonal")
    frame = frame.join(prices, on="gpu", how=how, maintain_order="left").with_columns(
        usd_per_gpu_hour=pl.when(c.fits).then(c.usd_per_gpu_hour),
        meets_slo=meets_slo(plan.slo),
        tokens_per_joule=tokens_per_joule(),
    )
    modes_known = "mode" in frame.collect_schema().names()
    frame = frame.with_columns(usd_per_hour=c.usd_per_gpu_hour * c.gpus).with_columns(
        **token_costs(c.requests_per_s_per_replica, c.prefill_fraction, modes_known)
    )
    if peak is None:
        nulls = {
            "replicas": pl.Int64,
            "gpus_needed": pl.Int64,
            "utilization": pl.Float64,
            "gpus_needed_low": pl.Int64,
            "gpus_needed_high": pl.Int64,
        }
        frame = frame.with_columns(**band_columns(modes_known))
        frame = frame.with_columns([pl.lit(None, dtype=t).alias(n) for n, t in nulls.items()])
        return done(fleet_columns(frame, plan.horizon_years, plan.rent_paid, None).with_columns(**NO_FLEET_BAND))
    avg = peak / w.peak_factor

    def replicas_at(per_replica: pl.Expr) -> pl.Expr:
        count = replicas_needed(peak, per_replica, w.headroom, plan.redundancy)
        # more than 10^12 replicas is no plan (and would overflow Int64 once multiplied by GPUs)
        return pl.when((per_replica > 0) & (count <= MAX_REPLICAS)).then(count).cast(pl.Int64)

    frame = frame.with_columns(
        **band_columns(modes_known),
        replicas=replicas_at(c.requests_per_s_per_replica),
        # more throughput (the band's high end) needs fewer GPUs: low GPUs from high throughput
        gpus_needed_low=replicas_at(c.requests_per_s_per_replica * band("throughput", "high", modes_known)) * c.gpus,
        gpus_needed_high=replicas_at(c.requests_per_s_per_replica * band("throughput", "low", modes_known)) * c.gpus,
    ).with_columns(
        gpus_needed=c.replicas * c.gpus,
        utilization=avg / (c.replicas * c.requests_per_s_per_replica),
    )
    frame = fleet_columns(frame, plan.horizon_years, plan.rent_paid, avg).with_columns(**NO_FLEET_BAND)
    return done(unsized(frame))


CAPACITY_BISECTIONS = 30  # halvings of [0, prefill servers / p] when finding a replica's capacity
MAX_REPLICAS = 1e12  # more is no plan (and would overflow Int64 once multiplied by GPUs)
UNSIZABLE = "no fleet: the workload needs more than 10^12 replicas of this layout"


def unsizable() -> pl.Expr:
    """A row that can run but whose fleet for the workload could not be sized (replicas beyond
    MAX_REPLICAS, or no throughput to divide the traffic by)."""
    return c.fits & c.replicas.is_null()


# What sizing a fleet adds: replicas, GPUs, servers, power, costs, TCO.
SIZED_COLUMNS = (
    "replicas",
    "gpus_needed",
    "gpus_needed_low",
    "gpus_needed_high",
    "utilization",
    *FLEET_COLUMNS,
    "fleet_usd_per_million_output_tokens_low",
    "fleet_usd_per_million_output_tokens_high",
)


def unsized(frame):
    """Rows whose fleet could not be sized meet no target, are never ranked and have no fleet: every
    replica, GPU, cost and power figure of the fleet is empty, never the one replica that stands
    for the fleet when there is no workload."""
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    fleet = [n for n in names if n in SIZED_COLUMNS]
    return frame.with_columns(
        [pl.when(~unsizable()).then(pl.col(n)).alias(n) for n in fleet],
        meets_slo=pl.when(unsizable()).then(False).otherwise(c.meets_slo),
    )


AT_CAPACITY = ("capacity_limit", "capacity_decode_batch", "capacity_tpot_s", "capacity_ttft_s", "capacity_prefill_busy")
SATURATED = "saturated"  # capacity_limit when a pool or the KV-cache slots are full, no target first
_ABOVE = 1.001  # just above capacity: where the first target to fail is read


def at_capacity(frame: pl.DataFrame, plan: PlanInputs) -> dict[str, pl.Series]:
    """What a replica does at its capacity (`capacity_requests_per_s`) and what stops it doing more:
    the decode batch, TPOT, TTFT (the targets' statistic) and the share of time prompts take there,
    and `capacity_limit`, the first target missed (or saturation) at 1.001 x capacity. Empty for
    options with no capacity."""
    ok = c.fits & (c.capacity_requests_per_s > 0)
    checks = slo_checks(plan.slo)
    ttft = checks[0][0] if checks and checks[0][0].startswith("ttft") else "ttft_s"

    def loop(factor: float) -> pl.DataFrame:
        rate = c.capacity_requests_per_s.fill_null(0.0) * factor
        return modes.apply(frame, lambda rows, disagg: modes.open_loop(rows, rate, disagg))

    at, above = loop(1.0), loop(_ABOVE)
    busy = at["prefill_utilization"] if "prefill_utilization" in at.columns else None
    busy = pl.coalesce(busy, at["prefill_fraction"]) if busy is not None else at["prefill_fraction"]
    limit = pl.when(above["saturated"]).then(pl.lit(SATURATED))
    for name, _value, target in checks:
        limit = limit.when(pl.lit(above[name]) > target).then(pl.lit(name))
    limit = pl.select(limit.otherwise(None).cast(pl.Categorical)).to_series()
    fits = frame.select(ok.fill_null(False)).to_series()
    return {
        name: pl.select(pl.when(fits).then(values)).to_series().alias(name)
        for name, values in {
            "capacity_limit": limit,
            "capacity_decode_batch": at["decode_batch"],
            "capacity_tpot_s": at["tpot_s"],
            "capacity_ttft_s": at[ttft],
            "capacity_prefill_busy": busy,
        }.items()
    }


# a row at its own batch has no fleet band (at_traffic costs the band's fleets of the plan's options)
NO_FLEET_BAND = {
    f"fleet_usd_per_million_output_tokens_{end}": pl.lit(None, dtype=pl.Float64) for end in ("low", "high")
}


def fleet_cost_band(frame: pl.DataFrame, plan: PlanInputs, avg: pl.Expr) -> dict[str, pl.Series]:
    """The fleet's cost per token at the ends of the throughput band: the fleet of gpus_needed_low GPUs
    (each replica's capacity x the band's high factor) and of gpus_needed_high (x its low factor), each
    costed whole as fleet_columns costs the sized one, its utilisation the average traffic over that
    fleet's capacity."""
    out = {}
    for end, gpus, other in (("low", c.gpus_needed_low, "high"), ("high", c.gpus_needed_high, "low")):
        capacity = gpus / c.gpus * c.capacity_requests_per_s * band("throughput", other, "mode" in frame.columns)
        moved = frame.lazy().with_columns(gpus_needed=gpus, utilization=avg / capacity)
        costed = fleet_columns(moved, plan.horizon_years, plan.rent_paid, avg)
        out[f"fleet_usd_per_million_output_tokens_{end}"] = costed.select(
            pl.col("fleet_usd_per_million_output_tokens")
        ).collect()["fleet_usd_per_million_output_tokens"]
    return out


def tokens_per_joule() -> pl.Expr:
    """A replica's output tokens per joule at its operating point: tokens/s / (GPUs x TDP x
    power_utilization)."""
    utilization = pl.coalesce(pl.col("_power_utilization"), pl.lit(DEFAULT_POWER_UTILIZATION))
    return c.output_tokens_per_s / (c.gpus * c.gpu_tdp_w * utilization)


def at_traffic(out: pl.DataFrame, plan: PlanInputs) -> pl.DataFrame:
    """Options sized for the workload (open loop, DESIGN.md §4): each replica's capacity is the largest
    Poisson request rate at which the loaded figures still meet the targets (`capacity_requests_per_s`,
    load.max_rate); replicas = ceil(peak x (1 + headroom) / capacity) + redundancy; and the operating
    point shown (TTFT mean and percentiles, TPOT, latency, concurrency, tokens/s per user and per
    replica) is the one at the share of the peak each replica then gets, peak / replicas. With
    `users`, the peak is their own rate at that operating point, N' / (Z + R), with the fewest
    replicas that carry it (closed_loop.solve), so that replicas x concurrency = peak x R <= N'
    requests are in flight; the average traffic is the peak / peak_factor, N / (Z + R) at the peak's
    R. Cost per million tokens is the replica's at capacity; utilisation is average traffic / fleet
    capacity.
    Options with no such rate (not even a trickle meets the targets) keep their closed-loop figures
    and do not meet the SLO. A grid that lists its batches without `max` admits at most the largest of
    them per replica (`batch: [1]` serves one user at a time); `max_running_requests` keeps the
    engine's own limit, which the reports show beside the grid's. Adds `peak_requests_per_s`, the
    rate each option is sized for."""
    w = plan.workload
    engine_limit = out["max_running_requests"]
    if plan.batches:  # a grid without `max` states the batches its engines may run: no more are admitted
        per_rank = max(plan.batches) / c.dp_attention
        out = out.with_columns(
            max_running_requests=pl.when(c.max_running_requests > 0)
            .then(pl.min_horizontal(c.max_running_requests, per_rank))
            .otherwise(per_rank)
        )
    cap = modes.max_rate(out, lambda _: within_targets(plan.slo), iterations=CAPACITY_BISECTIONS)
    frame = out.with_columns(capacity_requests_per_s=cap).with_columns(_ok=c.fits & (c.capacity_requests_per_s > 0))
    if w.users is None:
        frame = frame.with_columns(_peak=peak_requests_per_s(w))
        count = replicas_needed(pl.col("_peak"), c.capacity_requests_per_s, w.headroom, plan.redundancy)
    else:  # the users' own rate at the latency of the fleet sized for it (closed_loop.solve)
        sizable = frame.select(pl.col("_ok").fill_null(False)).to_series()
        solved = closed_loop.solve(frame.filter(sizable), w, plan.redundancy, MAX_REPLICAS)
        at = {
            name: pl.Series([None] * frame.height, dtype=pl.Float64).scatter(sizable.arg_true(), solved[name])
            for name in solved.columns
        }
        # options with no capacity keep their closed-loop figures: the rate at their own latency
        frame = frame.with_columns(_peak=pl.when(pl.col("_ok")).then(at["x"]).otherwise(peak_requests_per_s(w)))
        count = pl.lit(at["replicas"])
    frame = frame.with_columns(_replicas=pl.when(pl.col("_ok") & (count <= MAX_REPLICAS)).then(count).cast(pl.Int64))
    frame = frame.with_columns(_rate=pl.col("_peak") / pl.col("_replicas"))
    frame = frame.with_columns(**at_capacity(frame, plan))
    rate = pl.col("_rate").fill_null(0.0)
    served = modes.apply(frame, lambda rows, disagg: modes.open_loop(rows, rate, disagg))
    point = [
        "decode_step_s",
        "decode_batch",
        "tpot_s",
        "ttft_s",
        "ttft_wait_s",
        "ttft_p90_s",
        "ttft_p99_s",
        "request_latency_s",
        "requests_per_s_per_replica",
        "output_tokens_per_s",
        "decode_tokens_per_s_per_seq",
        "prefill_fraction",
        "prefill_utilization",
        "load_note",
    ]
    point = [n for n in point if n in served.columns and n in frame.columns]
    ok = pl.col("_ok")
    frame = frame.with_columns(
        [pl.when(ok).then(served[n]).otherwise(pl.col(n)).alias(n) for n in point]
        + [
            pl.when(ok).then(served["concurrency"]).otherwise(c.batch.cast(pl.Float64)).alias("concurrency"),
            pl.when(ok).then(pl.col("_rate")).otherwise(c.requests_per_s_per_replica).alias("offered_requests_per_s"),
        ]
    )
    avg = pl.col("_peak") / w.peak_factor

    def replicas_at(rate: pl.Expr) -> pl.Expr:
        count = replicas_needed(pl.col("_peak"), rate, w.headroom, plan.redundancy)
        return pl.when(count <= MAX_REPLICAS).then(count).cast(pl.Int64)

    frame = frame.with_columns(
        output_tokens_per_s_per_gpu=c.output_tokens_per_s / c.gpus,
        tokens_per_joule=tokens_per_joule(),
        meets_slo=ok & meets_slo(plan.slo),
        replicas=pl.when(ok).then(pl.col("_replicas")).otherwise(c.replicas),
        gpus_needed_low=pl.when(ok)
        .then(replicas_at(c.capacity_requests_per_s * band("throughput", "high")) * c.gpus)
        .otherwise(c.gpus_needed_low),
        gpus_needed_high=pl.when(ok)
        .then(replicas_at(c.capacity_requests_per_s * band("throughput", "low")) * c.gpus)
        .otherwise(c.gpus_needed_high),
        # per token at capacity: the all-in figure, and the prompt and decode shares of the hour
        **{
            name: pl.when(ok).then(cost).otherwise(pl.col(name))
            for name, cost in token_costs(
                c.capacity_requests_per_s, c.capacity_prefill_busy, "mode" in frame.columns
            ).items()
        },
    ).with_columns(
        gpus_needed=c.replicas * c.gpus,
        utilization=pl.when(ok).then(avg / (c.replicas * c.capacity_requests_per_s)).otherwise(c.utilization),
    )
    sized = fleet_columns(frame.lazy(), plan.horizon_years, plan.rent_paid, avg).collect()
    frame = unsized(sized.with_columns(**fleet_cost_band(frame, plan, avg)))
    frame = frame.drop("peak_requests_per_s", strict=False).rename({"_peak": "peak_requests_per_s"})
    return frame.with_columns(**band_columns(), max_running_requests=engine_limit).drop("_ok", "_replicas", "_rate")
