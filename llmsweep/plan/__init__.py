"""Capacity and cost: from estimates to a procurement answer.

Price offers (the sweep's `costs`; dated example prices for data-centre GPUs when it gives none or
says `costs: example`; see finance.py), latency targets (`slo`) and traffic (`workload`) turn each
configuration into what it costs per hour and per million tokens, how many replicas, GPUs, servers
and racks the traffic needs, and its capex, opex and TCO over the sweep's `horizon_years`.
`options` then takes each hardware option (GPU x model x precision x KV precision x tp x pp x
lengths), once per offer of its GPU, at the largest batch that meets the targets (`slo_batch`; only
the grid's own batches when it has no `max`), which is what `plan.csv` lists and what the reports
rank and recommend.

    inputs.py       PlanInputs: offers, targets, traffic, ranking column (plan_inputs from a sweep)
    prices.py       the offers as a table joined onto rows by GPU
    slo.py          meets_slo, slo_miss
    replicas.py     the sizing rule: replicas_needed for a rate, rate_carried by a number of replicas
    sizing.py       row-level cost and fleet columns (add_plan_columns), at_traffic, unsized
    closed_loop.py  traffic from users who think between requests: their rate users / (think + latency)
    selection.py    options at the largest batch that meets the targets (slo_batch, listed_batch)
    xpyd.py         the xPyD search: each disaggregated option's prefill layout and worker counts
    ranking.py      rank, rank_column
    robustness.py   sensitivity: which assumption, moved by 20 %, changes the top recommendation
    rent_or_buy.py  break_even
"""

from __future__ import annotations

from llmsweep.finance import DEFAULT_POWER_UTILIZATION, HOURS_PER_MONTH, HOURS_PER_YEAR, Offer
from llmsweep.plan.inputs import PlanInputs, make_plan_inputs, plan_inputs
from llmsweep.plan.prices import PRICE_COMPONENTS, Price, example_price, price_from_costs, price_table
from llmsweep.plan.ranking import (
    FALLBACK_RANK,
    FLEET_RANK,
    PER_TOKEN_RANK,
    SINGLE_USER_RANK,
    WORKLOAD_KEYS,
    rank,
    rank_column,
)
from llmsweep.plan.rent_or_buy import break_even
from llmsweep.plan.robustness import (
    SENSITIVITY_STEP,
    TRAFFIC_DEPENDENT,
    TRAFFIC_SHOWN,
    WANT_OFFER,
    rival,
    sensitivity,
)
from llmsweep.plan.selection import listed_batch, options, slo_batch
from llmsweep.plan.sizing import (
    MAX_REPLICAS,
    SIZED_COLUMNS,
    UNSIZABLE,
    add_plan_columns,
    at_traffic,
    band_columns,
    peak_requests_per_s,
    unsizable,
    unsized,
)
from llmsweep.plan.slo import meets_slo, slo_checks, slo_miss, within_targets
from llmsweep.plan.xpyd import (
    MAX_REPLICA_GPUS,
    OPTION_IDENTITY,
    SEARCH_WORKERS,
    SearchStats,
    candidates,
    capacity_bound,
    search,
    search_axes,
)

__all__ = [
    "DEFAULT_POWER_UTILIZATION",
    "FALLBACK_RANK",
    "FLEET_RANK",
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "MAX_REPLICAS",
    "MAX_REPLICA_GPUS",
    "OPTION_IDENTITY",
    "SEARCH_WORKERS",
    "SearchStats",
    "PER_TOKEN_RANK",
    "PRICE_COMPONENTS",
    "SENSITIVITY_STEP",
    "SINGLE_USER_RANK",
    "SIZED_COLUMNS",
    "TRAFFIC_DEPENDENT",
    "TRAFFIC_SHOWN",
    "UNSIZABLE",
    "WANT_OFFER",
    "WORKLOAD_KEYS",
    "Offer",
    "PlanInputs",
    "Price",
    "add_plan_columns",
    "at_traffic",
    "band_columns",
    "break_even",
    "candidates",
    "capacity_bound",
    "example_price",
    "listed_batch",
    "make_plan_inputs",
    "meets_slo",
    "options",
    "peak_requests_per_s",
    "plan_inputs",
    "price_from_costs",
    "price_table",
    "rank",
    "rank_column",
    "search",
    "search_axes",
    "rival",
    "sensitivity",
    "slo_batch",
    "slo_checks",
    "slo_miss",
    "unsizable",
    "unsized",
    "within_targets",
]
