"""Capacity and cost: from estimates to a procurement answer.

Prices (the sweep's `costs`, else the catalog's dated example prices), latency targets (`slo`) and
traffic (`workload`) turn each configuration into what it costs per hour, per million tokens and
over three years, and how many replicas, GPUs and servers the traffic needs. `options` then takes
each hardware option (GPU x model x precision x KV precision x tp x pp x lengths) at the largest
batch that meets the targets (`slo_batch`), which is what `plan.csv` lists and what the reports
rank and recommend.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from llmsweep.catalog import Catalog
from llmsweep.columns import c, higher_is_better, text
from llmsweep.estimate import add_batch_estimates, load
from llmsweep.spec import CostSpec, SloSpec, Sweep, WorkloadSpec

HOURS_PER_MONTH = 730.0  # 8,760 h / 12
HOURS_PER_YEAR = 8760.0
DEFAULT_POWER_UTILIZATION = 0.7  # share of TDP drawn on average, when no cost entry says otherwise
_DATED = re.compile(r"^\d{4}")


# -- prices ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Price:
    """One GPU's hourly cost and its parts (USD per GPU-hour)."""

    gpu: str
    usd_per_gpu_hour: float
    source: str
    rent: float = 0.0
    amortized: float = 0.0
    power: float = 0.0
    hosting: float = 0.0
    purchase_usd_per_gpu: float | None = None
    power_utilization: float = DEFAULT_POWER_UTILIZATION
    citation: str = ""  # where an example price was read (kept in manifest.json)


def price_from_costs(gpu: str, cost: CostSpec, tdp_w: float | None, gpus_per_node: int) -> Price:
    """Rented: the hourly price (the reserved one when given: it is what a committed buyer pays).
    Bought: purchase / (years x 8,760 h) + power (TDP x utilisation x PUE x USD/kWh) + hosting
    (USD per kW-month x TDP x PUE / 730 h)."""
    rent = cost.usd_per_gpu_hour_reserved if cost.usd_per_gpu_hour_reserved is not None else cost.usd_per_gpu_hour
    if rent is not None:
        kind = "sweep: rented (reserved)" if cost.usd_per_gpu_hour_reserved is not None else "sweep: rented"
        return Price(gpu, rent, kind, rent=rent, power_utilization=cost.power_utilization)
    purchase = cost.purchase_usd if cost.purchase_usd is not None else cost.purchase_usd_per_server / gpus_per_node
    kw = (tdp_w or 0.0) / 1000 * cost.pue
    amortized = purchase / (cost.amortization_years * HOURS_PER_YEAR)
    power = kw * cost.power_utilization * cost.power_usd_per_kwh
    hosting = cost.hosting_usd_per_kw_month * kw / HOURS_PER_MONTH
    source = "sweep: bought" + ("" if tdp_w else " (no TDP in the catalog: power and hosting not counted)")
    return Price(
        gpu,
        amortized + power + hosting,
        source,
        amortized=amortized,
        power=power,
        hosting=hosting,
        purchase_usd_per_gpu=purchase,
        power_utilization=cost.power_utilization,
    )


def example_price(catalog: Catalog, gpu: str) -> Price | None:
    """The catalog's example cloud price: the latest dated on-demand listing (else the first on-demand
    one), labelled with provider, date and source. An example, never the truth."""
    listings = [p for p in catalog.gpu(gpu).cloud_prices if "on-demand" in str(p.get("type", ""))]
    if not listings:
        return None
    dated = [p for p in listings if _DATED.match(str(p.get("as_of", "")))]
    best = max(dated, key=lambda p: str(p["as_of"])) if dated else listings[0]
    source = f"example: {best['provider']}, {best.get('as_of', 'undated')}"
    citation = f"{best.get('type')}; {best.get('source')}"
    return Price(gpu, float(best["usd_per_gpu_hour"]), source, rent=float(best["usd_per_gpu_hour"]), citation=citation)


# -- the plan's inputs --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlanInputs:
    prices: dict[str, Price]
    slo: SloSpec | None
    workload: WorkloadSpec | None
    rank_by: str
    notes: tuple[str, ...] = field(default=())

    @property
    def redundancy(self) -> int:
        r = self.workload.redundancy if self.workload else 0
        return int(r.split("+")[1]) if isinstance(r, str) else int(r)


def plan_inputs(sweep: Sweep) -> PlanInputs:
    spec = sweep.spec
    costs = {sweep.catalog.resolve_gpu(name).id: cost for name, cost in spec.costs.items()}
    return make_plan_inputs(sweep.catalog, sweep.axes.gpu, costs, spec.slo, spec.workload, spec.rank_by)


def make_plan_inputs(
    cat: Catalog,
    gpus: Sequence[str],
    costs: dict[str, CostSpec] | None = None,
    slo: SloSpec | None = None,
    workload: WorkloadSpec | None = None,
    rank_by: str = "usd_per_million_output_tokens",
) -> PlanInputs:
    """Prices for `gpus` (given costs first, else dated examples), with the targets and traffic."""
    costs = costs or {}
    prices, notes = {}, []
    for gid in gpus:
        gpu = cat.gpu(gid)
        price = (
            price_from_costs(gid, costs[gid], gpu.tdp_w, gpu.gpus_per_node) if gid in costs else example_price(cat, gid)
        )
        if price is None:
            notes.append(f"no price for {gid}: give one under costs to see its cost columns")
        else:
            prices[gid] = price
    examples = sorted(g for g, p in prices.items() if p.source.startswith("example"))
    if examples:
        notes.append(
            f"example cloud prices (dated, from public listings) used for {', '.join(examples)}: "
            "put your own quotes under a sweep's costs"
        )
    return PlanInputs(prices, slo, workload, rank_by, tuple(notes))


PRICE_COMPONENTS = {  # plan.csv column <- Price field
    "rent_usd_per_gpu_hour": "rent",
    "amortized_usd_per_gpu_hour": "amortized",
    "power_usd_per_gpu_hour": "power",
    "hosting_usd_per_gpu_hour": "hosting",
    "purchase_usd_per_gpu": "purchase_usd_per_gpu",
}


def price_table(plan: PlanInputs, components: bool = False) -> pl.LazyFrame:
    """One row per priced GPU: the hourly price, its source and (with `components`) its parts."""
    fields = {"usd_per_gpu_hour": "usd_per_gpu_hour", "_power_utilization": "power_utilization"}
    if components:
        fields |= PRICE_COMPONENTS
    rows = [
        {"gpu": p.gpu, "price_source": p.source, **{col: getattr(p, attr) for col, attr in fields.items()}}
        for p in plan.prices.values()
    ]
    schema = {"gpu": pl.Categorical, "price_source": pl.Categorical, **{col: pl.Float64 for col in fields}}
    return pl.LazyFrame(rows, schema=schema)


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
    """Peak traffic in requests/s: requests_per_s (or tokens_per_day / 86,400 / output tokens) x peak_factor."""
    if workload is None:
        return None
    if workload.requests_per_s is not None:
        avg = pl.lit(workload.requests_per_s)
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


def add_plan_columns(frame: pl.LazyFrame, plan: PlanInputs) -> pl.LazyFrame:
    """Cost, SLO and capacity columns for every row (at the row's own batch)."""
    w = plan.workload
    peak = peak_requests_per_s(w)
    frame = frame.join(price_table(plan), on="gpu", how="left", maintain_order="left").with_columns(
        usd_per_hour=c.usd_per_gpu_hour * c.gpus,
        meets_slo=meets_slo(plan.slo),
        tokens_per_joule=c.output_tokens_per_s / (c.gpus * c.gpu_tdp_w * pl.col("_power_utilization")),
    )
    frame = frame.with_columns(
        usd_per_million_output_tokens=c.usd_per_hour / (c.output_tokens_per_s * 3600) * 1e6,
        usd_per_million_input_tokens=c.usd_per_hour / (c.requests_per_s_per_replica * c.input_tokens * 3600) * 1e6,
    )
    if peak is None:
        nulls = {
            "replicas": pl.Int64,
            "gpus_needed": pl.Int64,
            "servers_needed": pl.Int64,
            "utilization": pl.Float64,
            "fleet_usd_per_month": pl.Float64,
            "fleet_usd_per_million_output_tokens": pl.Float64,
            "tco_3y_usd": pl.Float64,
            "gpus_needed_low": pl.Int64,
            "gpus_needed_high": pl.Int64,
        }
        frame = frame.with_columns(**band_columns())
        return frame.with_columns([pl.lit(None, dtype=t).alias(n) for n, t in nulls.items()]).drop("_power_utilization")
    avg = peak / w.peak_factor

    def replicas_at(per_replica: pl.Expr) -> pl.Expr:
        count = (peak / per_replica * (1 + w.headroom)).ceil() + plan.redundancy
        # more than 10^12 replicas is no plan (and would overflow Int64 once multiplied by GPUs)
        return pl.when((per_replica > 0) & (count <= 1e12)).then(count).cast(pl.Int64)

    frame = (
        frame.with_columns(
            **band_columns(),
            replicas=replicas_at(c.requests_per_s_per_replica),
            # more throughput (the band's high end) needs fewer GPUs: low GPUs from high throughput
            gpus_needed_low=replicas_at(c.requests_per_s_per_replica * pl.col("band_throughput_high")) * c.gpus,
            gpus_needed_high=replicas_at(c.requests_per_s_per_replica * pl.col("band_throughput_low")) * c.gpus,
        )
        .with_columns(
            gpus_needed=c.replicas * c.gpus,
            utilization=avg / (c.replicas * c.requests_per_s_per_replica),
        )
        .with_columns(
            servers_needed=(c.gpus_needed / c.gpus_per_node).ceil().cast(pl.Int64),
            fleet_usd_per_month=c.gpus_needed * c.usd_per_gpu_hour * HOURS_PER_MONTH,
            fleet_usd_per_million_output_tokens=c.gpus_needed
            * c.usd_per_gpu_hour
            / (avg * c.output_tokens * 3600)
            * 1e6,
            tco_3y_usd=c.gpus_needed * c.usd_per_gpu_hour * HOURS_PER_YEAR * 3,
        )
    )
    return frame.drop("_power_utilization")


# -- options at the largest batch that meets the targets ----------------------------------------------------------
OPTION_KEYS = [
    "gpu",
    "engine",
    "model",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "dp_attention",
    "input_tokens",
    "output_tokens",
]
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
    frame = frame.with_columns(_replicas=pl.when("_ok").then(count).cast(pl.Int64))
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
        return ((pl.col("_peak") / rate * (1 + w.headroom)).ceil() + plan.redundancy).cast(pl.Int64)

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
        usd_per_million_input_tokens=pl.when(ok)
        .then(c.usd_per_hour / (c.capacity_requests_per_s * c.input_tokens * 3600) * 1e6)
        .otherwise(c.usd_per_million_input_tokens),
    ).with_columns(
        gpus_needed=c.replicas * c.gpus,
        utilization=pl.when(ok).then(avg / (c.replicas * c.capacity_requests_per_s)).otherwise(c.utilization),
    )
    frame = frame.with_columns(
        servers_needed=(c.gpus_needed / c.gpus_per_node).ceil().cast(pl.Int64),
        fleet_usd_per_month=c.gpus_needed * c.usd_per_gpu_hour * HOURS_PER_MONTH,
        fleet_usd_per_million_output_tokens=c.gpus_needed * c.usd_per_gpu_hour / (avg * c.output_tokens * 3600) * 1e6,
        tco_3y_usd=c.gpus_needed * c.usd_per_gpu_hour * HOURS_PER_YEAR * 3,
    )
    return frame.with_columns(**band_columns()).drop("_peak", "_ok", "_replicas", "_rate")


def options(lengths_frame: pl.LazyFrame, plan: PlanInputs) -> pl.DataFrame:
    """Each option at its slo_batch (or batch 1 when none meets the targets), with every estimate and
    plan column, the cost components and the assumptions used (plan.csv's columns and more). With a
    workload, the operating point is the one at the traffic the plan assigns each replica
    (at_traffic); without one, it is the closed loop at slo_batch."""
    base = lengths_frame.collect()
    if base.height == 0:
        return base
    batch = slo_batch(base, plan.slo)
    at = base.with_columns(slo_batch=batch, batch=pl.max_horizontal(batch, 1), batch_is_max=pl.lit(False))
    out = add_plan_columns(add_batch_estimates(at.lazy()), plan).collect()
    if plan.workload is not None:
        out = at_traffic(out, plan)
    else:
        out = out.with_columns(
            concurrency=c.batch.cast(pl.Float64),
            offered_requests_per_s=c.requests_per_s_per_replica,
            capacity_requests_per_s=pl.when(c.meets_slo).then(c.requests_per_s_per_replica),
        )
    out = out.with_columns(slo_miss=slo_miss(plan.slo))
    parts = price_table(plan, components=True).select("gpu", *PRICE_COMPONENTS).collect()
    slo, w = plan.slo, plan.workload
    peak = peak_requests_per_s(w)
    return out.join(parts, on="gpu", how="left", maintain_order="left").with_columns(
        peak_requests_per_s=peak if peak is not None else pl.lit(None, dtype=pl.Float64),
        headroom=pl.lit(w.headroom if w else None, dtype=pl.Float64),
        redundancy=pl.lit(plan.redundancy if w else None, dtype=pl.Int64),
        ttft_target_s=pl.lit(slo.ttft_s if slo else None, dtype=pl.Float64),
        ttft_percentile=pl.lit(slo.percentile if slo else None, dtype=pl.Categorical),
        tpot_target_s=pl.lit(slo.tpot_s if slo else None, dtype=pl.Float64),
        request_latency_target_s=pl.lit(slo.request_latency_s if slo else None, dtype=pl.Float64),
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


def rank_column(frame: pl.DataFrame, rank_by: str) -> tuple[str, str | None]:
    """The column to rank by: `rank_by`, or output tokens/s per GPU when it has no values (no
    prices, no workload) — and the note that says so."""
    if rank_by in frame.columns and frame[rank_by].is_not_null().any():
        return rank_by, None
    return FALLBACK_RANK, f"{rank_by} has no values (it needs prices or a workload); ranked by {FALLBACK_RANK} instead"


# -- sensitivity: which assumption, moved by 20 %, changes the top recommendation? ---------------------------------
SENSITIVITY_STEP = 0.2


TRAFFIC_DEPENDENT = (
    "replicas",
    "gpus_needed",
    "servers_needed",
    "utilization",
    "fleet_usd_per_month",
    "fleet_usd_per_million_output_tokens",
    "tco_3y_usd",
)


def _metrics(frames: list[pl.DataFrame], plan: PlanInputs, column: str) -> list[float | None]:
    """`column` for every row of the stacked `frames` (layout x lengths rows) after re-estimating them
    all at once."""
    from llmsweep.estimate import add_layout_estimates, add_length_estimates

    stacked = pl.concat(frames, how="vertical_relaxed")
    rows = add_length_estimates(add_layout_estimates(stacked.lazy()))
    return options(rows, plan)[column].to_list()


def sensitivity(pairs: dict[str, pl.DataFrame], plan: PlanInputs, column: str) -> dict[str, list[dict]]:
    """Each value of `pairs` holds two options (the top one, then the runner-up) as layout x lengths
    rows. For each assumption moved by -20 % and +20 %: the metric of both and whether their order
    flips. Efficiencies are re-estimated (all pairs and cases in one frame); a price change scales the
    cost of the top option's GPU exactly; traffic changes only fleet-sized metrics."""
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
    cost = column.startswith(("usd", "fleet_usd", "tco"))
    out: dict[str, list[dict]] = {}
    for i, key in enumerate(keys):
        rows = []
        top_gpu, runner_gpu = (str(g) for g in pairs[key]["gpu"])
        block = 1
        for factor in factors:
            cases = []
            for param in params:
                cases.append((param, pair_at(block, i)))
                block += 1
            top, runner = pair_at(0, i)
            if cost and top_gpu in plan.prices and top is not None and runner is not None:
                scaled = (top * factor, runner * factor if runner_gpu == top_gpu else runner)
                cases.append((f"price of {top_gpu}", scaled))
            if plan.workload is not None and plan.workload.requests_per_s is not None:
                if column in TRAFFIC_DEPENDENT:
                    load = plan.workload.model_copy(update={"requests_per_s": plan.workload.requests_per_s * factor})
                    moved = _metrics([pairs[key]], replace(plan, workload=load), column)
                    cases.append(("traffic", (moved[0], moved[1])))
                else:
                    cases.append(("traffic", (top, runner)))  # per-token metrics do not depend on traffic
            for name, (t, r) in cases:
                flips = None if t is None or r is None else (r > t if higher else r < t)
                rows.append(
                    {"assumption": name, "change": f"{factor - 1:+.0%}", "top": t, "runner_up": r, "flips": flips}
                )
        out[key] = rows
    return out


def break_even(options_frame: pl.DataFrame, model: str, column: str = "usd_per_million_output_tokens") -> str | None:
    """For a model whose best option is bought and whose best rented option costs more per token: the
    average utilisation above which buying is cheaper. A bought GPU costs the same idle or busy, so its
    cost per token at utilisation u is cost(full) / u; a rented one is assumed paid only while used."""
    rows = options_frame.filter((pl.col("model") == model) & pl.col("meets_slo") & pl.col(column).is_not_null())
    bought = rows.filter(pl.col("price_source").cast(pl.String).str.starts_with("sweep: bought")).sort(column)
    rented = rows.filter(~pl.col("price_source").cast(pl.String).str.starts_with("sweep: bought")).sort(column)
    if bought.height == 0 or rented.height == 0:
        return None
    b, r = bought.row(0, named=True), rented.row(0, named=True)
    u = b[column] / r[column]
    if u >= 1:
        return None
    return (
        f"Buying {b['gpu']} ({b['precision']}, tp{b['tp']}) is cheaper than renting {r['gpu']} "
        f"({r['precision']}, tp{r['tp']}) above {u:.0%} average utilisation."
    )
