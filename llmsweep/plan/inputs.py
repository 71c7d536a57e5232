"""The plan's inputs: each GPU's price offers (the sweep's `costs`; dated example prices for
data-centre GPUs when it gives none or says `costs: example`; see finance.py), the latency targets
(`slo`), the traffic (`workload`), the ranking column, the horizon and how rent is paid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from llmsweep.catalog import Catalog
from llmsweep.finance import RENT_24_7, Offer, price_offers
from llmsweep.spec import EVERY_GPU, CostSpec, SloSpec, Sweep, WorkloadSpec


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
    # the worker counts the plan searches (plan/xpyd.py): prefill_workers and/or decode_workers
    worker_search: tuple[str, ...] = ()

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
        worker_search=searched_axes(sweep),
    )


def searched_axes(sweep: Sweep) -> tuple[str, ...]:
    """The worker counts a sweep leaves to the plan: prefill_workers without `grid.prefill.workers`,
    decode_workers without `grid.decode.workers` (plan/xpyd.py); none without a disaggregated mode."""
    if not sweep.axes.disaggregated:
        return ()
    grid = sweep.spec.grid
    out = []
    for key, axis in (("prefill", "prefill_workers"), ("decode", "decode_workers")):
        pool = getattr(grid, key, None)
        if pool is None or "workers" not in pool.model_fields_set:
            out.append(axis)
    return tuple(out)


def horizon_notes(offers: dict[str, tuple[Offer, ...]], horizon_years: float) -> list[str]:
    """A purchase written off over other than the horizon: TCO counts it whole within horizon_years, so
    the hardware's value left at the end (years > horizon) or its replacement (years < horizon) is not
    counted, while its cost per GPU-hour spreads it over its own years. Said once per such offer."""
    out = []
    for gpu, group in offers.items():
        for o in group:
            if o.kind == "buy" and o.years and o.years != horizon_years:
                left = (
                    f"its value left after {horizon_years:g} years is not counted (no resale)"
                    if o.years > horizon_years
                    else f"its replacement after {o.years:g} years is not counted"
                )
                out.append(
                    f"{gpu} {o.offer} is written off over {o.years:g} years but TCO covers {horizon_years:g} "
                    f"(horizon_years) and counts the whole purchase: {left}; its USD per GPU-hour spreads it over "
                    f"{o.years:g} years; set horizon_years: {o.years:g} to compare over the hardware's life"
                )
    return out


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
    worker_search: tuple[str, ...] = (),
) -> PlanInputs:
    """Offers for `gpus` (the sweep's costs; dated examples for data-centre GPUs when the sweep gives
    no prices or says `costs: example`), with the targets and traffic."""
    listed = {g: v if isinstance(v, list) else [v] for g, v in (costs or {}).items()}
    offers, notes = price_offers(cat, list(gpus), listed, every)
    notes += horizon_notes(offers, horizon_years)
    return PlanInputs(
        dict(offers),
        slo,
        workload,
        rank_by,
        tuple(notes),
        horizon_years,
        rent_paid,
        batches,
        rank_by_given,
        worker_search,
    )
