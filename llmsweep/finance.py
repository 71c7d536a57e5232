"""Money: price offers per GPU, and what a fleet costs in cash (capex, opex) and amortised.

A sweep's `costs` give each GPU one or more offers (rented per GPU-hour, or bought with servers,
network, power, hosting and racks); `costs: example` (or no prices at all) uses the catalog's dated
example cloud prices for data-centre GPUs. Each offer is its own option in the plan (`offer`).

Two views, each labelled:
- cash: `capex_usd` (GPUs + servers + network, paid up front) and `opex_usd_per_year` (power and
  hosting for bought fleets, rent for rented ones); `tco_usd` = capex + horizon x opex.
- amortised: `usd_per_gpu_hour` = rent, or purchase / (years x 8,760 h) + power + hosting, which
  `usd_per_million_output_tokens` and `fleet_usd_per_month` use.

Rented GPUs are paid either around the clock (`rent_paid: 24/7`, the default) or only for the
GPU-hours the traffic uses (`per-hour-used`); the run states which, and fleet cost, TCO and the
rent-or-buy break-even all use that one assumption.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import polars as pl

from llmsweep.catalog import Catalog
from llmsweep.catalog.engines import _LOCAL_FAMILIES
from llmsweep.columns import c
from llmsweep.spec import CostSpec

HOURS_PER_MONTH = 730.0  # 8,760 h / 12
HOURS_PER_YEAR = 8760.0
DEFAULT_POWER_UTILIZATION = 0.7  # share of TDP drawn on average, when no offer says otherwise
RENT_24_7 = "24/7"
PER_HOUR_USED = "per-hour-used"
_DATED = re.compile(r"^\d{4}")


# -- offers -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Offer:
    """One way to pay for a GPU, with its amortised hourly cost and what a fleet of it needs."""

    gpu: str
    offer: str  # id in the plan: rent, rent-1y-reserved, buy-4y, example, or the sweep's `name`
    usd_per_gpu_hour: float  # amortised: rent, or purchase / (years x 8,760 h) + power + hosting
    source: str
    kind: str = "rent"  # rent or buy
    term: str = ""
    rent: float = 0.0
    amortized: float = 0.0
    power: float = 0.0
    hosting: float = 0.0
    purchase_usd_per_gpu: float | None = None
    server_usd: float = 0.0  # per server, without its GPUs
    network_usd_per_server: float = 0.0
    years: float | None = None
    power_usd_per_kwh: float = 0.0
    pue: float = 1.0
    power_utilization: float = DEFAULT_POWER_UTILIZATION
    hosting_usd_per_kw_month: float = 0.0
    rack_usd_per_month: float = 0.0
    host_kw: float = 0.0
    rack_kw: float | None = None
    servers_per_rack: int | None = None  # what one rack holds: min(space, floor(rack_kw / server kW))
    citation: str = ""  # where an example price was read (kept in manifest.json)


def is_data_centre(catalog: Catalog, gpu: str) -> bool:
    """Data-centre GPUs are the ones rented by the hour; desktop, workstation and Apple GPUs are not
    priced from cloud examples."""
    g = catalog.gpu(gpu)
    form = (g.form_factor or "").lower()
    return g.family not in _LOCAL_FAMILIES and not any(w in form for w in ("consumer", "workstation", "desktop"))


def servers_per_rack(cost: CostSpec, tdp_w: float | None, gpus_per_node: int) -> int | None:
    """Servers one rack holds: the tightest of the space limit and the power limit floor(rack_kw /
    server kW), where a server draws its GPUs' TDP + host_kw (CostSpec.rack_limits; a sweep whose
    limit holds no server is refused when it is read); None when the offer gives neither."""
    limits = cost.rack_limits(tdp_w, gpus_per_node)
    return max(1, min(limits.values())) if limits else None


def offers_from_costs(gpu: str, cost: CostSpec, tdp_w: float | None, gpus_per_node: int) -> list[Offer]:
    """The offers one `costs` entry makes.

    Rented: the hourly price. Bought: amortised = (purchase per GPU + (server + network) per server /
    GPUs per server) / (years x 8,760 h); power = (TDP + host_kw / GPUs per server) x utilisation x PUE x
    USD/kWh; hosting = USD per kW-month x kW x PUE / 730 h + USD per rack-month / (GPUs per rack x 730 h)."""
    if not cost.buys:
        return [
            Offer(gpu, oid, rate, f"sweep: rented ({term})", term=term, rent=rate) for oid, rate, term in cost.rents()
        ]
    per_gpu = cost.buy if cost.buy is not None else cost.purchase_usd
    if per_gpu is None:  # older form: the whole server, GPUs included
        per_gpu = (cost.purchase_usd_per_server or 0.0) / gpus_per_node
    years = cost.amortization
    kw = ((tdp_w or 0.0) / 1000 + cost.host_kw / gpus_per_node) * cost.pue
    racks = servers_per_rack(cost, tdp_w, gpus_per_node)
    amortized = (per_gpu + (cost.server_usd + cost.network_usd_per_server) / gpus_per_node) / (years * HOURS_PER_YEAR)
    power = kw * cost.power_utilization * cost.power_usd_per_kwh
    hosting = cost.hosting_usd_per_kw_month * kw / HOURS_PER_MONTH
    if racks and cost.rack_usd_per_month:
        hosting += cost.rack_usd_per_month / (racks * gpus_per_node * HOURS_PER_MONTH)
    source = "sweep: bought" + ("" if tdp_w else " (no TDP in the catalog: power and hosting not counted)")
    oid = cost.ids()[0]
    return [
        Offer(
            gpu,
            oid,
            amortized + power + hosting,
            source,
            kind="buy",
            term=f"{years:g} years",
            amortized=amortized,
            power=power,
            hosting=hosting,
            purchase_usd_per_gpu=per_gpu,
            server_usd=cost.server_usd,
            network_usd_per_server=cost.network_usd_per_server,
            years=years,
            power_usd_per_kwh=cost.power_usd_per_kwh,
            pue=cost.pue,
            power_utilization=cost.power_utilization,
            hosting_usd_per_kw_month=cost.hosting_usd_per_kw_month,
            rack_usd_per_month=cost.rack_usd_per_month,
            host_kw=cost.host_kw,
            rack_kw=cost.rack_kw,
            servers_per_rack=racks,
        )
    ]


def example_offer(catalog: Catalog, gpu: str, name: str = "example") -> Offer | None:
    """The catalog's example cloud price: the latest dated on-demand listing (else the first on-demand
    one), labelled with provider, date and source. An example, never the truth; data-centre GPUs only."""
    if not is_data_centre(catalog, gpu):
        return None
    listings = [p for p in catalog.gpu(gpu).cloud_prices if "on-demand" in str(p.get("type", ""))]
    if not listings:
        return None
    dated = [p for p in listings if _DATED.match(str(p.get("as_of", "")))]
    best = max(dated, key=lambda p: str(p["as_of"])) if dated else listings[0]
    source = f"example: {best['provider']}, {best.get('as_of', 'undated')}"
    citation = f"{best.get('type')}; {best.get('source')}"
    rate = float(best["usd_per_gpu_hour"])
    return Offer(gpu, name, rate, source, term="on-demand", rent=rate, citation=citation)


def price_offers(
    catalog: Catalog, gpus: list[str] | tuple[str, ...], costs: dict[str, list[CostSpec]] | None, every: bool = False
) -> tuple[dict[str, tuple[Offer, ...]], list[str]]:
    """Offers per GPU and the notes that go with them. With no costs at all (or `every`, from
    `costs: example`), data-centre GPUs get the catalog's dated example prices; consumer, workstation
    and Apple GPUs are never priced from examples."""
    costs = costs or {}
    use_examples = every or not costs
    offers: dict[str, tuple[Offer, ...]] = {}
    notes: list[str] = []
    for gid in gpus:
        gpu = catalog.gpu(gid)
        found: list[Offer] = []
        for cost in costs.get(gid, []):
            if cost.example:
                ex = example_offer(catalog, gid, cost.name or "example")
                if ex is None:
                    why = "it is not a data-centre GPU" if not is_data_centre(catalog, gid) else "the catalog has none"
                    notes.append(f"no example price for {gid} ({why}): give a price under costs")
                else:
                    found.append(ex)
            else:
                found.extend(offers_from_costs(gid, cost, gpu.tdp_w, gpu.gpus_per_node))
        if gid not in costs and use_examples and is_data_centre(catalog, gid):
            ex = example_offer(catalog, gid)
            if ex is not None:
                found.append(ex)
        if found:
            offers[gid] = tuple(_with_host_power(found))
        elif gid not in costs and is_data_centre(catalog, gid) and (use_examples or costs):
            notes.append(f"no price for {gid}: give one under costs to see its cost columns")
    hosted = sorted(g for g, os in offers.items() if any(o.host_kw for o in os))
    if hosted and len(hosted) < len(offers):
        alone = ", ".join(sorted(set(offers) - set(hosted)))
        notes.append(
            f"the fleets' kW count their servers' host power (host_kw) for {', '.join(hosted)}, whose purchase "
            f"states it, and the GPUs alone for {alone}: give host_kw under their costs to compare them; kWh per "
            "million tokens counts the GPUs alone for every option"
        )
    examples = sorted(g for g, os in offers.items() if any(o.source.startswith("example") for o in os))
    if examples:
        notes.append(
            f"example cloud prices (dated, from public listings) used for {', '.join(examples)}: "
            "put your own quotes under a sweep's costs"
        )
    return offers, notes


def _with_host_power(found: list[Offer]) -> list[Offer]:
    """A GPU's servers draw their host power (CPUs, fans, NICs) whoever pays for it: a rented offer of a
    GPU whose purchase states host_kw gets it too, for the fleet's kW and energy per token only (the
    rent pays the bill), so that rented and bought fleets of one GPU draw alike."""
    host = max((o.host_kw for o in found if o.kind == "buy"), default=0.0)
    return [replace(o, host_kw=host) if o.kind != "buy" and not o.host_kw else o for o in found]


OFFER_COMPONENTS = {  # plan.csv column <- Offer field
    "rent_usd_per_gpu_hour": "rent",
    "amortized_usd_per_gpu_hour": "amortized",
    "power_usd_per_gpu_hour": "power",
    "hosting_usd_per_gpu_hour": "hosting",
    "purchase_usd_per_gpu": "purchase_usd_per_gpu",
}
FLEET_FIELDS = {  # private columns the fleet arithmetic reads (dropped afterwards)
    "_kind": "kind",
    "_years": "years",
    "_server_usd": "server_usd",
    "_network_usd": "network_usd_per_server",
    "_purchase": "purchase_usd_per_gpu",
    "_kwh_usd": "power_usd_per_kwh",
    "_pue": "pue",
    "_power_utilization": "power_utilization",
    "_kw_month_usd": "hosting_usd_per_kw_month",
    "_rack_month_usd": "rack_usd_per_month",
    "_host_kw": "host_kw",
    "_servers_per_rack": "servers_per_rack",
}


def offer_table(offers: dict[str, tuple[Offer, ...]], every: bool = True, components: bool = False) -> pl.LazyFrame:
    """One row per GPU x offer (or per GPU's first offer when not `every`): the amortised hourly price,
    its source, the private fields the fleet arithmetic needs and (with `components`) its parts."""
    fields = {"offer": "offer", "price_source": "source", "usd_per_gpu_hour": "usd_per_gpu_hour", **FLEET_FIELDS}
    if components:
        fields |= OFFER_COMPONENTS
    rows = [
        {"gpu": o.gpu, **{col: getattr(o, attr) for col, attr in fields.items()}}
        for group in offers.values()
        for o in (group if every else group[:1])
    ]
    text = {"gpu", "offer", "price_source", "_kind"}
    schema = {col: pl.Categorical if col in text else pl.Float64 for col in ["gpu", *fields]}
    schema["_servers_per_rack"] = pl.Int64
    return pl.LazyFrame(rows, schema=schema)


# -- a fleet's cost ----------------------------------------------------------------------------------------------
# What fleet_columns writes (tests/test_plan.py checks the list against it).
FLEET_COLUMNS = (
    "fleet_gpus",
    "gpus_bought",
    "servers_needed",
    "racks_needed",
    "fleet_kw",
    "capex_usd",
    "opex_usd_per_year",
    "horizon_years",
    "tco_usd",
    "tco_usd_per_month",
    "fleet_usd_per_month",
    "fleet_usd_per_million_output_tokens",
    "kwh_per_million_output_tokens",
    "output_tokens_per_s_per_kw",
)


def purchase_unit() -> pl.Expr:
    """GPUs bought together: the scale-up domain where it fills a server or more (an 8-GPU HGX or OAM
    baseboard, a 72-GPU NVL72 rack), else one (a PCIe card, bridged or not)."""
    return pl.when(c.scale_up_domain_gpus >= c.gpus_per_node).then(c.scale_up_domain_gpus).otherwise(1)


def purchase_units(fleet: pl.Expr) -> pl.Expr:
    """Units a fleet of `fleet` GPUs in replicas of `gpus` buys, each replica inside one unit where it
    fits: floor(unit / gpus) replicas a unit (16-GPU replicas: 4 to an NVL72 rack, so 9 of them buy 3
    racks, not ceil(144 / 72) = 2; tp 3: 2 to an 8-GPU baseboard), else ceil(gpus / unit) units a
    replica (its layout crosses them over the network)."""
    unit, gpus = purchase_unit(), c.gpus
    replicas = (fleet / gpus).round(0)
    inside = (replicas / (unit / gpus).floor()).ceil()
    return pl.when(gpus <= unit).then(inside).otherwise(replicas * (gpus / unit).ceil()).cast(pl.Int64)


def fleet_columns(frame: pl.LazyFrame, horizon_years: float, rent_paid: str, avg_requests_per_s) -> pl.LazyFrame:
    """Servers, racks, kW, capex, opex, monthly cost, TCO and energy of the fleet: `gpus_needed` GPUs,
    or one replica (`gpus`) without a workload. Bought in whole units: a fleet of 5 GPUs on an 8-GPU
    HGX or OAM baseboard buys the baseboard's 8 (gpus_bought, purchase_units: 16 GB200s buy an NVL72
    rack's 72, each replica inside one unit; PCIe cards one by one) and their servers (and
    racks), whatever a GPU-hour's share of it is; the GPUs the traffic leaves idle are spare capacity
    and draw no counted power (fleet_kw: the GPUs in use and the servers that hold them). Nothing for
    rows that cannot run; no horizon where there is no price."""
    frame = frame.with_columns(fleet_gpus=pl.when(c.fits).then(pl.coalesce(c.gpus_needed, c.gpus)))
    fleet = c.fleet_gpus
    bought = pl.col("_kind") == "buy"
    priced = c.usd_per_gpu_hour.is_not_null() & c.fits
    # rented GPUs paid per hour used cost the GPU-hours the traffic uses: fleet x utilisation
    paid_share = pl.lit(1.0) if rent_paid == RENT_24_7 else pl.coalesce(c.utilization, pl.lit(1.0))
    in_use = (fleet / c.gpus_per_node).ceil()  # servers holding the GPUs in use
    frame = (
        frame.with_columns(
            gpus_bought=pl.when(bought & c.fits).then(purchase_units(fleet) * purchase_unit()),
            fleet_kw=pl.when(c.fits).then(fleet * c.gpu_tdp_w / 1000),
        )
        .with_columns(
            servers_needed=pl.when(c.fits)
            .then((pl.coalesce(c.gpus_bought, fleet) / c.gpus_per_node).ceil().cast(pl.Int64))
            .cast(pl.Int64),
            fleet_kw=c.fleet_kw + in_use * pl.col("_host_kw").fill_null(0.0),
        )
        .with_columns(
            racks_needed=pl.when(bought & c.fits)
            .then((c.servers_needed / pl.col("_servers_per_rack")).ceil().cast(pl.Int64))
            .cast(pl.Int64),
        )
    )
    # a GPU without a TDP in the catalog (Apple SoCs) draws no counted power: its offer says so
    kw = pl.coalesce(c.fleet_kw, pl.lit(0.0))
    power = kw * pl.col("_pue") * pl.col("_power_utilization") * pl.col("_kwh_usd") * HOURS_PER_YEAR
    hosting = (
        pl.col("_kw_month_usd") * kw * pl.col("_pue")
        + pl.col("_rack_month_usd") * pl.coalesce(c.racks_needed, pl.lit(0))
    ) * 12
    rent = fleet * c.usd_per_gpu_hour * HOURS_PER_YEAR * paid_share
    frame = frame.with_columns(
        capex_usd=pl.when(priced).then(
            pl.when(bought)
            .then(
                c.gpus_bought * pl.col("_purchase")
                + c.servers_needed * (pl.col("_server_usd") + pl.col("_network_usd"))
            )
            .otherwise(0.0)
        ),
        opex_usd_per_year=pl.when(priced).then(
            pl.when(bought).then(pl.coalesce(power, pl.lit(0.0)) + pl.coalesce(hosting, pl.lit(0.0))).otherwise(rent)
        ),
    ).with_columns(
        fleet_usd_per_month=(c.capex_usd / pl.coalesce(pl.col("_years"), pl.lit(1.0)) + c.opex_usd_per_year) / 12,
        tco_usd=c.capex_usd + horizon_years * c.opex_usd_per_year,
    )
    frame = frame.with_columns(
        tco_usd_per_month=c.tco_usd / (12 * horizon_years),
        horizon_years=pl.when(priced).then(pl.lit(float(horizon_years))),
    )
    if avg_requests_per_s is not None:  # the fleet's cost over the horizon, on the tokens it serves in it
        served = avg_requests_per_s * c.output_tokens * horizon_years * HOURS_PER_YEAR * 3600
        frame = frame.with_columns(fleet_usd_per_million_output_tokens=c.tco_usd / served * 1e6)
    else:
        frame = frame.with_columns(fleet_usd_per_million_output_tokens=pl.lit(None, dtype=pl.Float64))
    return frame.with_columns(**energy_columns(avg_requests_per_s))


def energy_columns(avg_requests_per_s: pl.Expr | None = None) -> dict[str, pl.Expr]:
    """Energy per token: the fleet's GPUs' power (fleet_gpus x TDP x the average share of it drawn,
    power_utilization; before PUE) against the output tokens/s it delivers on average (the workload's
    average requests/s x output tokens; without a workload, one replica's tokens/s at its operating
    point). The GPUs' alone, as tokens_per_joule: a sweep states host_kw for the servers it buys, and
    counting it for those GPUs only made them look less efficient than GPUs priced by rent (an H200
    fleet of 5 GPUs with a 3 kW host at 6.5 kW against an H100 fleet of 6 at 4.2 kW); the hosts are in
    fleet_kw and the opex."""
    gpus_kw = c.fleet_gpus * c.gpu_tdp_w / 1000
    draw = gpus_kw * pl.coalesce(pl.col("_power_utilization"), pl.lit(DEFAULT_POWER_UTILIZATION))
    if avg_requests_per_s is None:
        tokens = pl.coalesce(c.replicas, pl.lit(1)) * c.output_tokens_per_s
    else:
        tokens = avg_requests_per_s * c.output_tokens
    per_kw = pl.when(c.fits & (draw > 0) & (tokens > 0)).then(tokens / draw)
    return {
        "output_tokens_per_s_per_kw": per_kw,
        "kwh_per_million_output_tokens": 1e6 / (3600 * per_kw),
    }


def rent_statement(rent_paid: str, horizon_years: float) -> str:
    """The one assumption on rent, said once in the manifest and the report."""
    how = (
        "Rented GPUs are paid around the clock (730 h a month), busy or idle"
        if rent_paid == RENT_24_7
        else "Rented GPUs are paid only for the GPU-hours the traffic uses (fleet x average utilisation)"
    )
    return (
        f"{how} (the sweep's rent_paid: {rent_paid}); fleet cost, TCO and the rent-or-buy break-even all assume "
        f"it. TCO covers {horizon_years:g} years (the sweep's horizon_years): capex + {horizon_years:g} x opex per "
        "year."
    )


# -- options.csv: one row per GPU x offer ------------------------------------------------------------------------
OPTION_GROUP = ["model", "input_tokens", "output_tokens", "gpu", "offer"]
# With serving modes in the grid, each GPU x offer has a row per mode and speculative method: the
# best aggregated replica beside the best disaggregated one, MTP off beside on.
SERVING_GROUP = ["mode", "speculative"]


def option_rows(plan_frame: pl.DataFrame, column: str, higher: bool) -> pl.DataFrame:
    """Per model x lengths x GPU x offer (x serving mode x speculative method, SERVING_GROUP), the best
    layout under the targets: the best-ranked one that meets them (with its rank in plan.csv), else the
    best by `column` that misses them (it says by how much). Sorted per model: options that meet the
    targets by rank, then the ones that miss. Plan columns, SI units."""
    if plan_frame.height == 0:
        return plan_frame
    frame = plan_frame.filter(pl.col("fits")).with_row_index("_order")
    frame = frame.with_columns(pl.col(pl.Categorical).cast(pl.String))
    # the plan's rank first (its ties already go to capacity per GPU), then, for rows it leaves
    # unranked (they miss a target), the metric
    order = [
        pl.col("rank"),
        pl.col("meets_slo").not_(),
        pl.col(column),
        pl.col("output_tokens_per_s_per_gpu"),
        pl.col("_order"),
    ]
    group = [*OPTION_GROUP, *(k for k in SERVING_GROUP if k in frame.columns)]
    best = (
        frame.sort(order, descending=[False, False, higher, True, False], nulls_last=True)
        .group_by(group, maintain_order=True)
        .first()
    )
    # the KV format in force: `auto` resolved (the grid's kv_cache_format; else its width in bits)
    width = pl.format("{}-bit", (pl.col("kv_bytes_per_element") * 8).round(0).cast(pl.Int64))
    resolved = pl.when(pl.col("kv_precision") == "auto").then(width).otherwise(pl.col("kv_precision"))
    kv = pl.col("kv_cache_format") if "kv_cache_format" in best.columns else resolved
    targets = [t for t in ("ttft_target_s", "tpot_target_s", "request_latency_target_s") if t in best.columns]
    targeted = pl.any_horizontal(pl.col(t).is_not_null() for t in targets) if targets else pl.lit(False)
    best = best.with_columns(
        # a sweep without targets passes every option that fits (and can be sized): say so, not "yes"
        meets_targets=pl.when(~pl.col("meets_slo"))
        .then(pl.lit("no"))
        .when(targeted)
        .then(pl.lit("yes"))
        .otherwise(pl.lit("no targets")),
        kv_format=pl.coalesce(kv.cast(pl.String), pl.col("kv_precision").cast(pl.String)),
        usd_per_month=pl.col("tco_usd_per_month") if "tco_usd_per_month" in best.columns else pl.lit(None),
        **cost_per_million(),
    )
    if "mode" in best.columns and "prefill_workers" in best.columns:  # xPyD: the pools, and the prefill layout
        from llmsweep.charts import layout_text

        pooled = pl.col("mode") == "disaggregated"
        drafted = (pl.col("speculative") != "none") & (pl.col("draft_tokens") > 0)
        best = best.with_columns(
            xpyd=pl.when(pooled).then(pl.format("{}P{}D", "prefill_workers", "decode_workers")),
            prefill_layout=pl.when(pooled).then(layout_text("prefill_")),
            speculation=pl.when(drafted)
            .then(pl.format("{} k={}", "speculative", "draft_tokens"))
            .otherwise(pl.col("speculative")),
        )
    group = ["model", "input_tokens", "output_tokens"]
    # each row keeps its rank in plan.csv (the report's #), so a rank names one option in every file
    return best.sort(
        [*group, pl.col("rank"), pl.col("meets_slo").not_(), pl.col(column), pl.col("_order")],
        descending=[False, False, False, False, False, higher, False],
        nulls_last=True,
    ).drop("_order")


def cost_per_million() -> dict[str, pl.Expr]:
    """The cost per token options.csv and the reports show, one basis for all of it: with a workload the
    fleet's (TCO over the tokens it serves, with the band of the band's fleets), else one replica fully
    loaded (with its band); and its input and decode shares on that basis, so that input x input tokens +
    decode x output tokens = usd_per_million x output tokens: a replica's split at capacity
    (usd_per_million_input_tokens, usd_per_million_decode_tokens: its hour by the prompts' share of its
    time, or its prefill pool's GPUs) scaled by the fleet's all-in cost over the replica's (the headroom,
    spare replicas and idle hours the fleet pays for land on both shares alike)."""
    fleet, replica = pl.col("fleet_usd_per_million_output_tokens"), pl.col("usd_per_million_output_tokens")
    sized = fleet.is_not_null()
    scale = pl.when(~sized).then(1.0).when(replica > 0).then(fleet / replica)
    return {
        "usd_per_million": pl.coalesce(fleet, replica),
        **{
            f"usd_per_million_{end}": pl.when(sized)
            .then(pl.col(f"fleet_usd_per_million_output_tokens_{end}"))
            .otherwise(pl.col(f"usd_per_million_output_tokens_{end}"))
            for end in ("low", "high")
        },
        "usd_per_million_input": pl.col("usd_per_million_input_tokens") * scale,
        "usd_per_million_decode": pl.col("usd_per_million_decode_tokens") * scale,
    }


def options_table(plan_frame: pl.DataFrame, column: str, higher: bool, rounded: bool = True) -> pl.DataFrame:
    """options.csv: `option_rows` in human units and headers (columns.OPTION_COLUMNS), each number
    rounded as a person reads it; unrounded (`rounded` False) for a spreadsheet, whose number formats
    show it so while its cells keep every digit for the sums finance makes of them."""
    from llmsweep.columns import OPTION_COLUMNS

    rows = option_rows(plan_frame, column, higher)
    out = []
    for col in OPTION_COLUMNS:
        if col.source in rows.columns:
            expr = pl.col(col.source)
            if col.scale != 1.0:
                expr = expr * col.scale
            if col.labels:
                expr = expr.cast(pl.String).replace(dict(col.labels))
        else:
            expr = pl.lit(None, dtype=pl.Float64)
        out.append(expr.alias(col.header))
    frame = rows.select(out) if rows.height else pl.DataFrame({c.header: [] for c in OPTION_COLUMNS})
    if not rounded:
        return frame
    units = {col.header: col.unit for col in OPTION_COLUMNS}
    return frame.with_columns(_rounded(n, units[n]) for n, t in frame.schema.items() if t == pl.Float64)


def _rounded(name: str, unit: str) -> pl.Expr:
    """A number of options.csv as a person reads it: whole dollars and µs, times in ms to 0.1, speeds to 0.1,
    costs and energy per million tokens to 3 significant figures. Every number finite: no NaN or inf."""
    col = pl.col(name)
    finite = pl.when(col.is_finite())
    if unit in WHOLE_UNITS:
        return finite.then(col.round(0)).cast(pl.Int64).alias(name)
    if unit in SIG_FIG_UNITS:
        return finite.then(col.round_sig_figs(3)).alias(name)
    digits = OPTION_DIGITS.get(unit)
    return finite.then(col.round(digits) if digits is not None else col).alias(name)


WHOLE_UNITS = ("USD", "USD/year", "USD/month", "µs")  # 14443 µs, not 14443.0
SIG_FIG_UNITS = ("USD/M tokens", "kWh/M tokens")
OPTION_DIGITS = {
    "USD/h": 4,
    "ms": 1,
    "kW": 2,
    "tokens/s": 1,
    "tokens/s/kW": 1,
    "years": 2,
    "fraction": 3,
    "requests/s": 3,
    "requests": 1,
}
