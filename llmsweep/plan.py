"""Capacity and cost: from estimates to a procurement answer.

Price offers (the sweep's `costs`; dated example prices for data-centre GPUs when it gives none or
says `costs: example`; see finance.py), latency targets (`slo`) and traffic (`workload`) turn each
configuration into what it costs per hour and per million tokens, how many replicas, GPUs, servers
and racks the traffic needs, and its capex, opex and TCO over the sweep's `horizon_years`.
`options` then takes each hardware option (GPU x model x precision x KV precision x tp x pp x
lengths), once per offer of its GPU, at the largest batch that meets the targets (`slo_batch`; only
the grid's own batches when it has no `max`), which is what `plan.csv` lists and what the reports
rank and recommend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from llmsweep.catalog import Catalog
from llmsweep.columns import BY_NAME, c, higher_is_better, text
from llmsweep.estimate import add_batch_estimates, load
from llmsweep.finance import (
    DEFAULT_POWER_UTILIZATION,
    FLEET_COLUMNS,
    FLEET_FIELDS,
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    OFFER_COMPONENTS,
    RENT_24_7,
    Offer,
    example_offer,
    fleet_columns,
    offer_table,
    offers_from_costs,
    price_offers,
)
from llmsweep.spec import EVERY_GPU, CostSpec, SloSpec, Sweep, WorkloadSpec

__all__ = ["DEFAULT_POWER_UTILIZATION", "HOURS_PER_MONTH", "HOURS_PER_YEAR", "Offer"]
Price = Offer  # the older name


# -- prices ----------------------------------------------------------------------------------------------------
def price_from_costs(gpu: str, cost: CostSpec, tdp_w: float | None, gpus_per_node: int) -> Offer:
    """The first offer a `costs` entry makes (see finance.offers_from_costs)."""
    return offers_from_costs(gpu, cost, tdp_w, gpus_per_node)[0]


def example_price(catalog: Catalog, gpu: str) -> Offer | None:
    return example_offer(catalog, gpu)


# -- the plan's inputs --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlanInputs:
    prices: dict[str, Offer | tuple[Offer, ...]]  # per GPU: its offers (an Offer alone = one offer)
    slo: SloSpec | None
    workload: WorkloadSpec | None
    rank_by: str
    notes: tuple[str, ...] = field(default=())
    horizon_years: float = 3.0
    rent_paid: str = RENT_24_7
    batches: tuple[int, ...] | None = None  # the grid's batches when it has no `max`: the plan chooses among them
    rank_by_given: bool = True  # False when rank_by is the default (no note when it has no values)

    @property
    def offers(self) -> dict[str, tuple[Offer, ...]]:
        return {g: (p,) if isinstance(p, Offer) else tuple(p) for g, p in self.prices.items()}

    @property
    def redundancy(self) -> int:
        r = self.workload.redundancy if self.workload else 0
        return int(r.split("+")[1]) if isinstance(r, str) else int(r)


def plan_inputs(sweep: Sweep) -> PlanInputs:
    spec = sweep.spec
    every = EVERY_GPU in spec.costs
    costs = {sweep.catalog.resolve_gpu(name).id: cost for name, cost in spec.costs.items() if name != EVERY_GPU}
    batches = None if "max" in sweep.axes.batch else tuple(sorted(int(b) for b in sweep.axes.batch))
    return make_plan_inputs(
        sweep.catalog,
        sweep.axes.gpu,
        costs,
        spec.slo,
        spec.workload,
        spec.rank_by,
        every=every,
        horizon_years=spec.horizon_years,
        rent_paid=spec.rent_paid,
        batches=batches,
        rank_by_given="rank_by" in spec.model_fields_set,
    )


def make_plan_inputs(
    cat: Catalog,
    gpus: Sequence[str],
    costs: dict[str, list[CostSpec] | CostSpec] | None = None,
    slo: SloSpec | None = None,
    workload: WorkloadSpec | None = None,
    rank_by: str = "usd_per_million_output_tokens",
    *,
    every: bool = False,
    horizon_years: float = 3.0,
    rent_paid: str = RENT_24_7,
    batches: tuple[int, ...] | None = None,
    rank_by_given: bool = True,
) -> PlanInputs:
    """Offers for `gpus` (the sweep's costs; dated examples for data-centre GPUs when the sweep gives
    no prices or says `costs: example`), with the targets and traffic."""
    listed = {g: v if isinstance(v, list) else [v] for g, v in (costs or {}).items()}
    offers, notes = price_offers(cat, list(gpus), listed, every)
    return PlanInputs(
        dict(offers), slo, workload, rank_by, tuple(notes), horizon_years, rent_paid, batches, rank_by_given
    )


PRICE_COMPONENTS = OFFER_COMPONENTS


def price_table(plan: PlanInputs, components: bool = False, every: bool = False) -> pl.LazyFrame:
    """One row per priced GPU (its first offer), or per GPU x offer with `every`."""
    return offer_table(plan.offers, every=every, components=components)


# -- row-level columns --------------------------------------------------------------------------------------------
def slo_checks(slo: SloSpec | None) -> list[tuple[str, pl.Expr, float]]:
    """(column, value, target) for each latency target the sweep sets."""
    if slo is None:
        return []
    ttft = load.quantile_name(slo.percentile)
    pairs = [(ttft, slo.ttft_s), ("tpot_s", slo.tpot_s), ("request_latency_s", slo.request_latency_s)]
    return [(name, pl.col(name), target) for name, target in pairs if target is not None]


def meets_slo(slo: SloSpec | None) -> pl.Expr:
    ok = c.fits
    for _name, value, target in slo_checks(slo):
        ok = ok & (value <= target)
    return ok


def slo_miss(slo: SloSpec | None) -> pl.Expr:
    """The first target a row misses, with its value: 'tpot_s 0.0621 > 0.05 (+24%)'."""
    expr = pl.when(~c.fits).then(text("does not fit"))
    for name, value, target in slo_checks(slo):
        over = (value / target - 1) * 100
        expr = expr.when(value > target).then(
            pl.format(
                "{} {} > {} (+{}%)",
                pl.lit(name),
                value.round_sig_figs(3),
                pl.lit(target),
                over.round(0).clip(upper_bound=1e15).cast(pl.Int64),
            )
        )
    return expr.otherwise(None).cast(pl.Categorical)


def peak_requests_per_s(workload: WorkloadSpec | None) -> pl.Expr | None:
    """Peak traffic in requests/s: requests_per_s (or users / think_time_s, or tokens_per_day / 86,400 /
    output tokens) x peak_factor."""
    if workload is None:
        return None
    if workload.average_requests_per_s is not None:
        avg = pl.lit(workload.average_requests_per_s)
    else:
        out = workload.output_tokens if workload.output_tokens else c.output_tokens
        avg = pl.lit(workload.tokens_per_day) / 86_400 / out
    return avg * workload.peak_factor


def band_columns() -> dict[str, pl.Expr]:
    """Low and high ends of the key outputs: speeds x the profile's band factors, times / them."""
    out = {}
    for end, other in (("low", "high"), ("high", "low")):
        out[f"decode_tokens_per_s_per_seq_{end}"] = c.decode_tokens_per_s_per_seq * pl.col(f"band_decode_{end}")
        out[f"decode_tokens_per_s_{end}"] = c.decode_tokens_per_s * pl.col(f"band_decode_{end}")
        out[f"tpot_s_{end}"] = c.tpot_s / pl.col(f"band_decode_{other}")
        out[f"ttft_s_{end}"] = c.ttft_s / pl.col(f"band_prefill_{other}")
        out[f"output_tokens_per_s_{end}"] = c.output_tokens_per_s * pl.col(f"band_throughput_{end}")
        out[f"usd_per_million_output_tokens_{end}"] = c.usd_per_million_output_tokens / pl.col(
            f"band_throughput_{other}"
        )
    return out


def _drop_private(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.drop(list(FLEET_FIELDS), strict=False)


def add_plan_columns(
    frame: pl.LazyFrame, plan: PlanInputs, every_offer: bool = False, keep_offer_parts: bool = False
) -> pl.LazyFrame:
    """Cost, SLO and capacity columns for every row (at the row's own batch). Each row is priced with
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
        tokens_per_joule=c.output_tokens_per_s
        / (c.gpus * c.gpu_tdp_w * pl.coalesce(pl.col("_power_utilization"), pl.lit(DEFAULT_POWER_UTILIZATION))),
    )
    frame = frame.with_columns(usd_per_hour=c.usd_per_gpu_hour * c.gpus).with_columns(
        usd_per_million_output_tokens=c.usd_per_hour / (c.output_tokens_per_s * 3600) * 1e6,
        # the prompt share of the hour: each request's prefill holds the replica for prefill_s
        usd_per_million_input_tokens=c.usd_per_hour
        * pl.min_horizontal(c.requests_per_s_per_replica * c.prefill_s, 1.0)
        / (c.requests_per_s_per_replica * c.input_tokens * 3600)
        * 1e6,
    )
    if peak is None:
        nulls = {
            "replicas": pl.Int64,
            "gpus_needed": pl.Int64,
            "utilization": pl.Float64,
            "gpus_needed_low": pl.Int64,
            "gpus_needed_high": pl.Int64,
        }
        frame = frame.with_columns(**band_columns())
        frame = frame.with_columns([pl.lit(None, dtype=t).alias(n) for n, t in nulls.items()])
        return done(fleet_columns(frame, plan.horizon_years, plan.rent_paid, None))
    avg = peak / w.peak_factor

    def replicas_at(per_replica: pl.Expr) -> pl.Expr:
        count = (peak / per_replica * (1 + w.headroom)).ceil() + plan.redundancy
        # more than 10^12 replicas is no plan (and would overflow Int64 once multiplied by GPUs)
        return pl.when((per_replica > 0) & (count <= MAX_REPLICAS)).then(count).cast(pl.Int64)

    frame = frame.with_columns(
        **band_columns(),
        replicas=replicas_at(c.requests_per_s_per_replica),
        # more throughput (the band's high end) needs fewer GPUs: low GPUs from high throughput
        gpus_needed_low=replicas_at(c.requests_per_s_per_replica * pl.col("band_throughput_high")) * c.gpus,
        gpus_needed_high=replicas_at(c.requests_per_s_per_replica * pl.col("band_throughput_low")) * c.gpus,
    ).with_columns(
        gpus_needed=c.replicas * c.gpus,
        utilization=avg / (c.replicas * c.requests_per_s_per_replica),
    )
    frame = fleet_columns(frame, plan.horizon_years, plan.rent_paid, avg)
    return done(unsized(frame))


MAX_REPLICAS = 1e12  # more is no plan (and would overflow Int64 once multiplied by GPUs)
UNSIZABLE = "no fleet: the workload needs more than 10^12 replicas of this layout"


def unsizable() -> pl.Expr:
    """A row that can run but whose fleet for the workload could not be sized (replicas beyond
    MAX_REPLICAS, or no throughput to divide the traffic by)."""
    return c.fits & c.replicas.is_null()


# What sizing a fleet adds: replicas, GPUs, servers, power, costs, TCO.
SIZED_COLUMNS = ("replicas", "gpus_needed", "gpus_needed_low", "gpus_needed_high", "utilization", *FLEET_COLUMNS)


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


# -- options at the largest batch that meets the targets ----------------------------------------------------------
WORKLOAD_KEYS = ["model", "input_tokens", "output_tokens"]


def slo_batch(options: pl.DataFrame, slo: SloSpec | None, iterations: int = 40) -> pl.Series:
    """Per option, the largest batch B <= max_batch that fits and meets every target (0 if none).
    TPOT and request latency rise with B, so a bisection on B finds it; all options at once."""
    lo = pl.Series("lo", [0] * options.height, dtype=pl.Int64)
    hi = options["max_batch"].clip(lower_bound=0).alias("hi")
    for _ in range(iterations):
        if (lo >= hi).all():
            break
        mid = ((lo + hi + 1) // 2).clip(lower_bound=1)
        trial = add_batch_estimates(options.lazy().with_columns(batch=mid, batch_is_max=pl.lit(False)))
        ok = trial.select(meets_slo(slo) & (pl.col("batch") <= pl.col("max_batch"))).collect().to_series()
        settled = lo >= hi
        lo = pl.select(pl.when(settled).then(lo).when(ok).then(mid).otherwise(lo)).to_series()
        hi = pl.select(pl.when(settled).then(hi).when(ok).then(hi).otherwise(mid - 1)).to_series()
    return lo.alias("slo_batch")


def listed_batch(options: pl.DataFrame, slo: SloSpec | None, batches: Sequence[int]) -> pl.Series:
    """Per option, the largest of the grid's `batches` that fits and meets every target (0 if none):
    a grid without `max` is the user's constraint (batch: [1] is a single-user plan)."""
    rows = options.with_row_index("_row")
    trials = pl.concat(
        [rows.with_columns(batch=pl.lit(b, dtype=pl.Int64), batch_is_max=pl.lit(False)) for b in batches]
    )
    ok = meets_slo(slo) & (pl.col("batch") <= pl.col("max_batch"))
    est = add_batch_estimates(trials.lazy()).select("_row", "batch", ok.alias("_ok")).collect()
    best = est.filter("_ok").group_by("_row").agg(pl.col("batch").max())
    picked = rows.select("_row").join(best, on="_row", how="left", maintain_order="left")
    return picked["batch"].fill_null(0).alias("slo_batch")


def at_traffic(out: pl.DataFrame, plan: PlanInputs) -> pl.DataFrame:
    """Options sized for the workload (open loop, DESIGN.md §4): each replica's capacity is the largest
    Poisson request rate at which the loaded figures still meet the targets (`capacity_requests_per_s`,
    load.max_rate); replicas = ceil(peak x (1 + headroom) / capacity) + redundancy; and the operating
    point shown (TTFT mean and percentiles, TPOT, latency, concurrency, tokens/s per user and per
    replica) is the one at the share of the peak each replica then gets, peak / replicas. Cost per
    million tokens is the replica's at capacity; utilisation is average traffic / fleet capacity.
    Options with no such rate (not even a trickle meets the targets) keep their closed-loop figures
    and do not meet the SLO."""
    w = plan.workload
    checks = slo_checks(plan.slo)

    def accept(_: pl.LazyFrame) -> pl.Expr:
        ok = pl.lit(True)
        for _name, value, target in checks:
            ok = ok & (value <= target)
        return ok

    cap = load.max_rate(out, accept, iterations=30)
    frame = out.with_columns(capacity_requests_per_s=cap, _peak=peak_requests_per_s(w)).with_columns(
        _ok=c.fits & (c.capacity_requests_per_s > 0)
    )
    count = (pl.col("_peak") / c.capacity_requests_per_s * (1 + w.headroom)).ceil() + plan.redundancy
    frame = frame.with_columns(_replicas=pl.when(pl.col("_ok") & (count <= MAX_REPLICAS)).then(count).cast(pl.Int64))
    frame = frame.with_columns(_rate=pl.col("_peak") / pl.col("_replicas"))
    served = load.open_loop(frame.lazy(), pl.col("_rate").fill_null(0.0)).collect()
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
        "load_note",
    ]
    ok = pl.col("_ok")
    frame = frame.with_columns(
        [pl.when(ok).then(served[n]).otherwise(pl.col(n)).alias(n) for n in point]
        + [
            pl.when(ok).then(served["concurrency"]).otherwise(c.batch.cast(pl.Float64)).alias("concurrency"),
            pl.when(ok).then(pl.col("_rate")).otherwise(c.requests_per_s_per_replica).alias("offered_requests_per_s"),
        ]
    )
    avg = pl.col("_peak") / w.peak_factor
    at_capacity = c.capacity_requests_per_s * c.output_tokens  # output tokens/s of a replica at capacity

    def replicas_at(rate: pl.Expr) -> pl.Expr:
        count = (pl.col("_peak") / rate * (1 + w.headroom)).ceil() + plan.redundancy
        return pl.when(count <= MAX_REPLICAS).then(count).cast(pl.Int64)

    frame = frame.with_columns(
        output_tokens_per_s_per_gpu=c.output_tokens_per_s / c.gpus,
        meets_slo=ok & meets_slo(plan.slo),
        replicas=pl.when(ok).then(pl.col("_replicas")).otherwise(c.replicas),
        gpus_needed_low=pl.when(ok)
        .then(replicas_at(c.capacity_requests_per_s * pl.col("band_throughput_high")) * c.gpus)
        .otherwise(c.gpus_needed_low),
        gpus_needed_high=pl.when(ok)
        .then(replicas_at(c.capacity_requests_per_s * pl.col("band_throughput_low")) * c.gpus)
        .otherwise(c.gpus_needed_high),
        usd_per_million_output_tokens=pl.when(ok)
        .then(c.usd_per_hour / (at_capacity * 3600) * 1e6)
        .otherwise(c.usd_per_million_output_tokens),
        # the prompt share of the hour at capacity (already inside the output figure: never add the two)
        usd_per_million_input_tokens=pl.when(ok)
        .then(
            c.usd_per_hour
            * pl.min_horizontal(c.capacity_requests_per_s * c.prefill_s, 1.0)
            / (c.capacity_requests_per_s * c.input_tokens * 3600)
            * 1e6
        )
        .otherwise(c.usd_per_million_input_tokens),
    ).with_columns(
        gpus_needed=c.replicas * c.gpus,
        utilization=pl.when(ok).then(avg / (c.replicas * c.capacity_requests_per_s)).otherwise(c.utilization),
    )
    frame = unsized(fleet_columns(frame.lazy(), plan.horizon_years, plan.rent_paid, avg).collect())
    return frame.with_columns(**band_columns()).drop("_peak", "_ok", "_replicas", "_rate")


def options(lengths_frame: pl.LazyFrame, plan: PlanInputs) -> pl.DataFrame:
    """Each option at its slo_batch (or the smallest batch when none meets the targets), once per
    offer of its GPU, with every estimate and plan column, the cost components and the assumptions
    used (plan.csv's columns and more). A grid without `max` chooses among its own batches only."""
    base = lengths_frame.collect()
    if base.height == 0:
        return base
    if plan.batches:
        batch = listed_batch(base, plan.slo, plan.batches)
        shown = pl.when(batch > 0).then(batch).otherwise(min(plan.batches))
    else:
        batch = slo_batch(base, plan.slo)
        shown = pl.max_horizontal(batch, 1)
    at = base.with_columns(slo_batch=batch).with_columns(batch=shown, batch_is_max=pl.lit(False))
    out = add_plan_columns(add_batch_estimates(at.lazy()), plan, every_offer=True, keep_offer_parts=True).collect()
    if plan.workload is not None:
        out = at_traffic(out, plan)
    else:
        out = out.with_columns(
            concurrency=c.batch.cast(pl.Float64),
            offered_requests_per_s=c.requests_per_s_per_replica,
            capacity_requests_per_s=pl.when(c.meets_slo).then(c.requests_per_s_per_replica),
        )
    miss = slo_miss(plan.slo)
    if plan.workload is not None:  # a fleet that cannot be sized says so first
        miss = pl.when(unsizable()).then(text(UNSIZABLE)).otherwise(miss.cast(pl.String)).cast(pl.Categorical)
    out = _drop_private(out.lazy()).collect().with_columns(slo_miss=miss)
    slo, w = plan.slo, plan.workload
    peak = peak_requests_per_s(w)
    return out.with_columns(
        peak_requests_per_s=peak if peak is not None else pl.lit(None, dtype=pl.Float64),
        headroom=pl.lit(w.headroom if w else None, dtype=pl.Float64),
        redundancy=pl.lit(plan.redundancy if w else None, dtype=pl.Int64),
        ttft_target_s=pl.lit(slo.ttft_s if slo else None, dtype=pl.Float64),
        tpot_target_s=pl.lit(slo.tpot_s if slo else None, dtype=pl.Float64),
        request_latency_target_s=pl.lit(slo.request_latency_s if slo else None, dtype=pl.Float64),
        ttft_percentile=pl.lit(slo.percentile if slo else None, dtype=pl.Categorical),
    )


def rank(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Stable ranking by `column` per model and lengths among options that meet the SLO (others get
    no rank). Ties keep the sweep's order."""
    higher = higher_is_better(column)
    ordered = frame.with_row_index("_order").with_columns(_eligible=c.meets_slo & pl.col(column).is_not_null())
    ranked = ordered.filter("_eligible").sort([column, "_order"], descending=[higher, False])
    ranked = ranked.with_columns(rank=pl.int_range(1, pl.len() + 1).over(WORKLOAD_KEYS).cast(pl.Int64))
    rest = ordered.filter(~pl.col("_eligible")).with_columns(rank=pl.lit(None, dtype=pl.Int64))
    return pl.concat([ranked, rest], how="diagonal").drop("_eligible", "_order")


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


# -- sensitivity: which assumption, moved by 20 %, changes the top recommendation? ---------------------------------
SENSITIVITY_STEP = 0.2


TRAFFIC_DEPENDENT = (
    "replicas",
    "gpus_needed",
    "servers_needed",
    "racks_needed",
    "fleet_kw",
    "utilization",
    "capex_usd",
    "opex_usd_per_year",
    "fleet_usd_per_month",
    "fleet_usd_per_million_output_tokens",
    "tco_usd",
)
TRAFFIC_SHOWN = ("gpus_needed", "fleet_usd_per_month")  # what traffic moves, shown when the ranking metric is per token
WANT_OFFER = "_want_offer"  # a pair row's offer: the re-estimated metrics are read for that offer only


def _metrics(frames: list[pl.DataFrame], plan: PlanInputs, column: str) -> list[float | None]:
    """`column` for every row of the stacked `frames` (layout x lengths rows, each with the offer it
    is priced with in WANT_OFFER) after re-estimating them all at once."""
    from llmsweep.estimate import add_layout_estimates, add_length_estimates

    stacked = pl.concat(frames, how="vertical_relaxed")
    rows = add_length_estimates(add_layout_estimates(stacked.lazy()))
    out = options(rows, plan)
    if WANT_OFFER in out.columns:
        same = pl.col("offer").cast(pl.String) == pl.col(WANT_OFFER)
        out = out.filter(same.fill_null(False) | (pl.col("offer").is_null() & pl.col(WANT_OFFER).is_null()))
    return out[column].to_list()


def sensitivity(pairs: dict[str, pl.DataFrame], plan: PlanInputs, column: str) -> dict[str, list[dict]]:
    """Each value of `pairs` holds two options (the top one, then the runner-up) as layout x lengths
    rows with their offer (WANT_OFFER). For each assumption moved by -20 % and +20 %: the metric of
    both and whether their order flips. Efficiencies are re-estimated (all pairs and cases in one
    frame); a price change scales the cost of the top option's offer exactly; traffic moves the
    fleet: a fleet-sized metric is re-planned, and for a per-token metric the rows show what traffic
    does move (GPUs needed, fleet USD per month)."""
    from dataclasses import replace

    keys = list(pairs)
    factors = (1 - SENSITIVITY_STEP, 1 + SENSITIVITY_STEP)
    params = ("bandwidth_efficiency", "compute_efficiency")
    frames = [pairs[k] for k in keys]  # unmoved first
    for factor in factors:
        for param in params:
            frames += [pairs[k].with_columns((pl.col(param) * factor).clip(upper_bound=1.0)) for k in keys]
    values = _metrics(frames, plan, column)
    n = len(keys)

    def pair_at(block: int, i: int) -> tuple[float | None, float | None]:
        return values[2 * (block * n + i)], values[2 * (block * n + i) + 1]

    higher = higher_is_better(column)
    cost = column.startswith(("usd", "fleet_usd", "tco", "capex", "opex"))
    out: dict[str, list[dict]] = {}
    for i, key in enumerate(keys):
        rows = []
        pair = pairs[key]
        wanted = pair[WANT_OFFER].to_list() if WANT_OFFER in pair.columns else [None, None]
        top_gpu, runner_gpu = (str(g) for g in pair["gpu"])
        top_offer = f"{top_gpu} {wanted[0]}" if wanted[0] else top_gpu
        block = 1
        for factor in factors:
            cases: list[tuple[str, str, tuple]] = []
            for param in params:
                cases.append((param, column, pair_at(block, i)))
                block += 1
            top, runner = pair_at(0, i)
            if cost and top_gpu in plan.prices and top is not None and runner is not None:
                same = runner_gpu == top_gpu and wanted[1] == wanted[0]
                cases.append((f"price of {top_offer}", column, (top * factor, runner * factor if same else runner)))
            if plan.workload is not None and plan.workload.average_requests_per_s is not None:
                rate = plan.workload.average_requests_per_s * factor
                load = plan.workload.model_copy(update={"requests_per_s": rate, "users": None, "think_time_s": None})
                moved_plan = replace(plan, workload=load)
                for shown in (column,) if column in TRAFFIC_DEPENDENT else TRAFFIC_SHOWN:
                    moved = _metrics([pair], moved_plan, shown)
                    name = "traffic" if shown == column else f"traffic: {BY_NAME[shown].label}"
                    cases.append((name, shown, (moved[0], moved[1])))
            for name, shown, (t, r) in cases:
                t = None if t is None else float(t)
                r = None if r is None else float(r)
                flips = None if t is None or r is None or shown != column else (r > t if higher else r < t)
                rows.append(
                    {
                        "assumption": name,
                        "column": shown,
                        "change": f"{factor - 1:+.0%}",
                        "top": t,
                        "runner_up": r,
                        "flips": flips,
                    }
                )
        out[key] = rows
    return out


def break_even(
    options_frame: pl.DataFrame,
    model: str,
    column: str = "usd_per_million_output_tokens",
    rent_paid: str = RENT_24_7,
) -> str | None:
    """Rent or buy, for a model whose best bought option (by `column`, the ranking) competes with its
    best rented one, under the run's one assumption on how rent is paid.

    With fleets (a workload): the bought fleet's capex pays back after capex / (rent per month -
    bought opex per month) months, rent per month being what the rented fleet is paid (around the
    clock, or x its utilisation when paid per hour used). Buying costs less over horizon_years
    exactly when that is within the horizon, so the sentence agrees with a ranking by tco_usd.
    Without fleets: paid 24/7, the cheaper per token wins at any utilisation; paid per hour used, a
    bought GPU's cost per token at average utilisation u is cost(full) / u, a rented one's stays, so
    buying is cheaper above u = bought / rented."""
    rows = options_frame.filter((pl.col("model") == model) & pl.col("meets_slo") & pl.col(column).is_not_null())
    src = pl.col("price_source").cast(pl.String).str.starts_with("sweep: bought")
    higher = higher_is_better(column)
    bought = rows.filter(src).sort(column, descending=higher)
    rented = rows.filter(~src).sort(column, descending=higher)
    if bought.height == 0 or rented.height == 0:
        return None
    b, r = bought.row(0, named=True), rented.row(0, named=True)

    def name(row: dict) -> str:
        offer = f" {row['offer']}" if row.get("offer") else ""
        return f"{row['gpu']}{offer} ({row['precision']}, tp{row['tp']})"

    per_token = "usd_per_million_output_tokens"
    fleets = b.get("gpus_needed") is not None and r.get("gpus_needed") is not None
    if not fleets:  # no workload: compare a fully loaded replica's cost per token
        if b.get(per_token) is None or r.get(per_token) is None:
            return None
        if rent_paid != RENT_24_7:
            u = b[per_token] / r[per_token]
            if u >= 1:
                return None
            return (
                f"Buying {name(b)} is cheaper than renting {name(r)} above {u:.0%} average utilisation "
                "(rented GPUs paid only for the hours used)."
            )
        if b[per_token] >= r[per_token]:
            return None
        return (
            f"Both paid around the clock, buying {name(b)} costs less per token than renting {name(r)} "
            "at any utilisation; give a workload to see when the purchase pays back."
        )
    capex, b_year, r_year = b.get("capex_usd"), b.get("opex_usd_per_year"), r.get("opex_usd_per_year")
    if capex is None or b_year is None or r_year is None:
        return None
    b_month, r_month = b_year / 12, r_year / 12
    paid = "24/7" if rent_paid == RENT_24_7 else f"and paid per hour used ({r.get('utilization') or 0:.0%} busy)"
    if r_month <= b_month:
        return f"Rented {paid}, {name(r)} costs less each month than running {name(b)}: buying never pays back."
    months = capex / (r_month - b_month)
    text = (
        f"Rented {paid}, {name(r)} costs ${r_month:,.0f} a month; buying {name(b)} costs ${capex:,.0f} up front "
        f"and ${b_month:,.0f} a month to run, so it pays back after {months:,.1f} months"
    )
    horizon = b.get("horizon_years")
    if horizon and months > horizon * 12:
        return text + f": longer than the {horizon:g}-year horizon, so renting costs less over it."
    if horizon and b.get("tco_usd") is not None and r.get("tco_usd") is not None:
        saved = r["tco_usd"] - b["tco_usd"]
        return text + f", within the {horizon:g}-year horizon: buying costs ${saved:,.0f} less over it."
    return text + "."
