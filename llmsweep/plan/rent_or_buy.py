"""Rent or buy: whether, and after how long, buying a model's best bought option pays back against
renting its best rented one."""

from __future__ import annotations

import polars as pl

from llmsweep.columns import higher_is_better
from llmsweep.finance import RENT_24_7


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
    Without fleets: paid 24/7, the cheaper per token wins at any utilisation, as long as every GPU
    bought serves (a purchase buys whole units: a replica of 2 GPUs a baseboard of 8); paid per hour used, a
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
        units = b.get("gpus_bought")
        whole = (
            f" (a purchase buys whole baseboards or racks: {units:,} GPUs for this replica's {b['gpus']:,}, "
            "the rest idle unless other replicas use them)"
            if units and b.get("gpus") and units > b["gpus"]
            else ""
        )
        return (
            f"Both paid around the clock, buying {name(b)} costs less per token than renting {name(r)} "
            f"at any utilisation, as long as every GPU bought serves{whole}; give a workload to size the fleet "
            "and see when the purchase pays back."
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
        text += f": longer than the {horizon:g}-year horizon, so renting costs less over it."
    elif horizon and b.get("tco_usd") is not None and r.get("tco_usd") is not None:
        saved = r["tco_usd"] - b["tco_usd"]
        text += f", within the {horizon:g}-year horizon: buying costs ${saved:,.0f} less over it."
    else:
        text += "."
    return text + _same_gpu(b, rented, name, b_month)


def _same_gpu(b: dict, rented: pl.DataFrame, name, b_month: float) -> str:
    """' Against renting h200-sxm itself (h200-sxm rent (fp8, tp1): $12,775 a month), buying it pays back
    after 42.9 months.' when the best rental is another GPU: rent or buy is also a choice about one GPU."""
    same = rented.filter(pl.col("gpu").cast(pl.String) == str(b["gpu"]))
    if same.height == 0 or str(rented["gpu"][0]) == str(b["gpu"]):
        return ""
    s = same.row(0, named=True)
    if s.get("opex_usd_per_year") is None:
        return ""
    s_month = s["opex_usd_per_year"] / 12
    head = f" Against renting {b['gpu']} itself ({name(s)}: ${s_month:,.0f} a month), buying it"
    if s_month <= b_month:
        return head + " never pays back."
    return head + f" pays back after {b['capex_usd'] / (s_month - b_month):,.1f} months."
