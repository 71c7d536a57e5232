"""Prices: a plan's offers as a table to join onto rows by GPU (finance.py makes and costs the
offers), and the older names for them.
"""

from __future__ import annotations

import polars as pl

from llmsweep.catalog import Catalog
from llmsweep.finance import OFFER_COMPONENTS, Offer, example_offer, offer_table, offers_from_costs
from llmsweep.plan.inputs import PlanInputs
from llmsweep.spec import CostSpec

Price = Offer  # the older name


def price_from_costs(gpu: str, cost: CostSpec, tdp_w: float | None, gpus_per_node: int) -> Offer:
    """The first offer a `costs` entry makes (see finance.offers_from_costs)."""
    return offers_from_costs(gpu, cost, tdp_w, gpus_per_node)[0]


def example_price(catalog: Catalog, gpu: str) -> Offer | None:
    return example_offer(catalog, gpu)


PRICE_COMPONENTS = OFFER_COMPONENTS


def price_table(plan: PlanInputs, components: bool = False, every: bool = False) -> pl.LazyFrame:
    """One row per priced GPU (its first offer), or per GPU x offer with `every`."""
    return offer_table(plan.offers, every=every, components=components)
