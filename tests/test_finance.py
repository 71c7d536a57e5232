"""Offers, capex, opex, TCO, racks and rent-or-buy against arithmetic written out by hand."""

from __future__ import annotations

import math
import os
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from llmsweep import finance, plan
from llmsweep.columns import CAPACITY_LIMIT_LABELS
from llmsweep.errors import SpecError
from llmsweep.spec import CostSpec, WorkloadSpec, load

from .browser import dump_dom
from .conftest import ROOT
from .test_plan import frame

# A bought H200-like offer: 700 W GPUs, 8 per server.
BUY = CostSpec(
    buy=30_000,
    years=4,
    server_usd=40_000,
    network_usd_per_server=10_000,
    host_kw=2.4,
    rack_kw=30,
    servers_per_rack=4,
    rack_usd_per_month=2_000,
    power_usd_per_kwh=0.10,
    pue=1.25,
    power_utilization=0.8,
)
# 20 requests/s, peak x2, 20 % headroom, n+1; a replica (tp 2) serves 750 / 250 = 3 requests/s:
# replicas = ceil(40 / 3 x 1.2) + 1 = 17, GPUs = 34 (see test_plan.test_capacity)
LOAD = WorkloadSpec(requests_per_s=20, peak_factor=2, headroom=0.2, redundancy="n+1")


def fleet_row(cost: CostSpec, horizon: float = 3, rent_paid: str = "24/7", workload=LOAD) -> dict:
    offers = tuple(finance.offers_from_costs("h100-sxm", cost, 700.0, 8))
    inputs = plan.PlanInputs(
        {"h100-sxm": offers}, None, workload, "usd_per_million_output_tokens", (), horizon, rent_paid
    )
    return plan.add_plan_columns(frame(output_tokens_per_s=750.0), inputs).collect().row(0, named=True)


def test_bought_offer_per_gpu_hour():
    (o,) = finance.offers_from_costs("h200-sxm", BUY, 700.0, 8)
    assert o.offer == "buy-4y" and o.kind == "buy"
    # a server draws 8 x 0.7 + 2.4 = 8.0 kW: a 30 kW rack holds floor(30 / 8) = 3 (space allows 4)
    assert o.servers_per_rack == 3
    # amortised: (30,000 + (40,000 + 10,000) / 8) / (4 x 8,760 h) = 36,250 / 35,040 = $1.034532 per GPU-hour
    assert o.amortized == pytest.approx(36_250 / 35_040)
    # power: (0.7 + 2.4 / 8) kW x 1.25 PUE x 0.8 utilisation x $0.10 = $0.10 per GPU-hour
    assert o.power == pytest.approx(0.10)
    # hosting: $2,000 per rack-month / (3 servers x 8 GPUs x 730 h) = $0.114155 per GPU-hour
    assert o.hosting == pytest.approx(2_000 / (3 * 8 * 730))
    assert o.usd_per_gpu_hour == pytest.approx(36_250 / 35_040 + 0.10 + 2_000 / (3 * 8 * 730))


def test_bought_fleet_capex_opex_tco_racks_and_kw():
    row = fleet_row(BUY)
    assert row["gpus_needed"] == 34 and row["offer"] == "buy-4y"
    # bought in whole 8-GPU baseboards: ceil(34 / 8) x 8 = 40 GPUs in 5 servers; racks ceil(5 / 3) = 2
    assert row["gpus_bought"] == 40 and row["fleet_gpus"] == 34
    assert row["servers_needed"] == 5 and row["racks_needed"] == 2
    # IT power of the GPUs in use: 34 GPUs x 0.7 kW + their 5 servers x 2.4 kW = 23.8 + 12 = 35.8 kW
    assert row["fleet_kw"] == pytest.approx(35.8)
    # capex: 40 x 30,000 + 5 x (40,000 + 10,000) = 1,200,000 + 250,000 = 1,450,000
    assert row["capex_usd"] == pytest.approx(1_450_000)
    # opex: power 35.8 kW x 1.25 x 0.8 x $0.10 x 8,760 h = 31,360.80; racks 2 x $2,000 x 12 = 48,000
    assert row["opex_usd_per_year"] == pytest.approx(31_360.8 + 48_000)
    # TCO over 3 years: 1,450,000 + 3 x 79,360.80 = 1,688,082.40
    assert row["tco_usd"] == pytest.approx(1_688_082.4)
    # amortised per month: (1,450,000 / 4 + 79,360.80) / 12 = 36,821.73
    assert row["fleet_usd_per_month"] == pytest.approx((362_500 + 79_360.8) / 12)
    # over 5 years: 1,450,000 + 5 x 79,360.80 = 1,846,804
    assert fleet_row(BUY, horizon=5)["tco_usd"] == pytest.approx(1_846_804)


def test_purchases_pack_whole_replicas_into_whole_units():
    """Each replica sits inside one purchase unit where it fits, as its estimate assumes (its collectives
    on the unit's scale-up links). GB200 NVL72 (72 GPUs, trays of 4): 9 replicas of 16 GPUs fit
    floor(72 / 16) = 4 to a rack, so they buy ceil(9 / 4) = 3 racks = 216 GPUs in 54 trays (not
    ceil(144 / 72) = 2 racks); 9 of 8 buy ceil(9 / 9) = 1 rack. HGX (8 a baseboard): 5 replicas of tp 3
    fit 2 to a board, 3 boards = 24 GPUs (not ceil(15 / 8) x 8 = 16); 2 replicas of 16 GPUs cross 2
    boards each: 4 boards = 32. PCIe cards (scale-up domain 2 < 4 a server) one by one: 6 x 2 = 12."""
    rows = pl.DataFrame(
        {
            "scale_up_domain_gpus": [72, 72, 8, 8, 2],
            "gpus_per_node": [4, 4, 8, 8, 4],
            "gpus": [16, 8, 3, 16, 2],
            "fleet": [144, 72, 15, 32, 12],
        }
    )
    bought = rows.select(gpus=finance.purchase_units(pl.col("fleet")) * finance.purchase_unit())["gpus"]
    assert bought.to_list() == [216, 72, 24, 32, 12]


def test_the_answer_names_what_a_purchase_buys():
    """A purchase order is written from the headline: it gives the GPUs bought, not only those in use."""
    from llmsweep.answer import _named

    bought = {
        "gpus_needed": 28,
        "gpus_bought": 32,
        "gpu": "h200-sxm",
        "offer": "buy-4y",
        "price_source": "sweep: bought",
    }
    assert _named(bought) == "28 × h200-sxm (32 bought in whole units)"
    assert _named({**bought, "gpus_bought": 32, "gpus_needed": 32}) == "32 × h200-sxm bought"
    assert _named({"gpus_needed": 6, "gpus_bought": None, "gpu": "h100-sxm", "offer": "rent"}) == "6 × h100-sxm rented"
    # the weight format is said: an nvfp4 and an fp8 option of one GPU can cost the same
    assert _named({**bought, "precision": "nvfp4"}) == "28 × h200-sxm (nvfp4 weights, 32 bought in whole units)"


def test_the_answer_says_which_gpus_it_could_not_rank():
    """costs: that price some GPUs leave the others out of a ranking by cost: the answer says so, so it
    does not read as having beaten them."""
    from llmsweep.answer import answer

    def offer(gpu, offer, rank, usd):
        return {
            "gpu": gpu,
            "offer": offer,
            "rank": rank,
            "fits": True,
            "gpus_needed": 8,
            "gpus_bought": None,
            "precision": "fp8",
            "tco_usd_per_month": usd,
            "tco_usd": usd and usd * 36,
            "price_source": "sweep: rented",
        }

    offers = [offer("b300", "rent", 1, 1000.0), offer("gb300", None, None, None), offer("mi355x", None, None, None)]
    text = answer("org/m", 1000, 100, offers, {"requests_per_s": 1}, None, 3, True)
    assert text.endswith("$36,000 over 3 years. gb300 and mi355x have no price: not ranked."), text
    assert answer("org/m", 1000, 100, offers[:2], {"requests_per_s": 1}, None, 3, True).endswith(
        " gb300 has no price: not ranked."
    )
    # how fragile the pick is comes with the pick, before the GPUs it could not rank
    flips = [{"assumption": "traffic", "change": "+20%", "flips": True}]
    assert answer("org/m", 1000, 100, offers[:2], {"requests_per_s": 1}, None, 3, True, flips).endswith(
        '$36,000 over 3 years. A 20 % move reverses the ranking: traffic +20% (see "Does the top choice hold"). '
        "gb300 has no price: not ranked."
    )
    # the fleet the band's slow end needs is said beside the point estimate's (8 GPUs here)
    offers[0]["gpus_needed_high"] = 16
    assert "$36,000 over 3 years, or 16 GPUs if it runs at the slow end of its 80 % uncertainty band." in answer(
        "org/m", 1000, 100, offers[:1], {"requests_per_s": 1}, None, 3, True
    )


def test_the_answer_says_the_price_a_rental_pays_and_what_a_purchase_pays_up_front():
    """A buyer checks the price first: a rental's per GPU-hour (with the listing when it is an example),
    a purchase's capex, which its monthly figure spreads over the horizon. The runner-up on the same
    offer is not priced again."""
    from llmsweep.answer import answer

    base = {"fits": True, "gpus_bought": None, "precision": "fp8", "gpus_needed": 8}
    example = {
        **base,
        "gpu": "gb200",
        "offer": "example",
        "rank": 1,
        "tco_usd_per_month": 26_520.0,  # 8 x $4.54 x 730 h = $26,513.60, rounded here by hand
        "tco_usd": 26_520.0 * 36,
        "usd_per_gpu_hour": 4.54,
        "price_source": "example: Spheron, 2026-03-17",
    }
    same = {**example, "rank": 2, "speculative": "mtp"}
    bought = {
        **base,
        "gpu": "h200-sxm",
        "offer": "buy-4y",
        "rank": 3,
        "tco_usd_per_month": 30_000.0,
        "tco_usd": 30_000.0 * 36,
        "usd_per_gpu_hour": 1.51,
        "capex_usd": 355_000.0,  # 8 x $35,000 + one server ($60,000 + $15,000 network)
        "price_source": "sweep: bought",
    }
    text = answer("org/m", 1000, 100, [example, same, bought], {"requests_per_s": 1}, None, 3, True)
    assert text == (
        "m at 1 requests/s with no latency targets (1,000 tokens in, 100 out): 8 × gb200 (fp8 weights) rented at "
        "$4.54 per GPU-hour "
        "(example: Spheron, 2026-03-17), $26,520 a month, $954,720 over 3 years; the cheapest purchase (#3), 8 × "
        "h200-sxm (fp8 weights) bought for $355,000 up front, costs $3,480 more a month."
    )
    text = answer("org/m", 1000, 100, [example, same], {"requests_per_s": 1}, None, 3, True)
    assert text.endswith("; the runner-up (#2), 8 × gb200 (fp8 weights, MTP), costs the same."), text


def test_the_answer_says_which_20_percent_move_reverses_the_ranking():
    """frontier-moe's pick (one 16-GPU GB200 replica at 18.9 of the 18 requests/s it must carry) needs a
    second replica if traffic grows 20 %: the answer says so beside the pick, not only in the table."""
    from llmsweep.answer import close_call

    rows = [
        {"assumption": "memory bandwidth reached (bandwidth efficiency)", "change": "-20%", "flips": True},
        {"assumption": "traffic", "change": "-20%", "flips": False},
        {
            "assumption": "price of gb200 example, against b200 example (the best option on another offer)",
            "change": "+20%",
            "flips": True,
        },
        {"assumption": "traffic", "change": "+20%", "flips": True},
        {"assumption": "drafted tokens accepted", "change": "+20%", "flips": None},
    ]
    assert close_call(rows) == (
        " A 20 % move reverses the ranking: memory bandwidth reached -20%, price of gb200 example +20% or "
        'traffic +20% (see "Does the top choice hold").'
    )
    assert close_call(rows[1:2]) == close_call([]) == ""


def test_the_sensitivity_table_is_open_where_the_answer_points_to_it(procurement):
    """In report.html the table sits in a <details>: open for each model whose answer says a 20 % move
    reverses its ranking (all four models in procurement), closed for the others (test_report: the
    example's answer says none)."""
    html = (procurement / "report.html").read_text()
    md = (procurement / "report.md").read_text()
    answers = [line for line in md.splitlines() if line.startswith("- ") and " out): " in line]
    pointed = sum("A 20 % move reverses the ranking" in line for line in answers)
    summary = "><summary>Does the top choice hold if an assumption moves by 20 %?</summary>"
    assert (len(answers), pointed) == (4, 4)
    assert (html.count("<details open" + summary), html.count("<details" + summary)) == (4, 0)


def test_break_even_without_a_workload_says_a_purchase_buys_whole_units():
    """Per token at full load, buying wins at any utilisation only while every GPU bought serves: a
    2-GPU replica bought on an 8-GPU baseboard pays for 8."""
    rows = pl.DataFrame(
        {
            "model": ["m", "m"],
            "meets_slo": [True, True],
            "usd_per_million_output_tokens": [0.34, 0.50],
            "price_source": ["sweep: bought", "sweep: rented (on-demand)"],
            "gpu": ["h200-sxm", "h200-sxm"],
            "offer": ["buy-4y", "rent"],
            "precision": ["fp8", "fp8"],
            "tp": [2, 2],
            "gpus": [2, 2],
            "gpus_bought": [8, None],
            "gpus_needed": [None, None],
        }
    )
    assert plan.break_even(rows, "m") == (
        "Both paid around the clock, buying h200-sxm buy-4y (fp8, tp2) costs less per token than renting "
        "h200-sxm rent (fp8, tp2) at any utilisation, as long as every GPU bought serves (a purchase buys whole "
        "baseboards or racks: 8 GPUs for this replica's 2, the rest idle unless other replicas use them); give a "
        "workload to size the fleet and see when the purchase pays back."
    )


def test_a_purchase_written_off_over_other_than_the_horizon_is_noted():
    """TCO counts a purchase whole within horizon_years: 4-year hardware over a 3-year horizon is charged
    with no resale value, 2-year hardware with no replacement; the note says which and how to compare."""
    from llmsweep.plan.inputs import horizon_notes

    offers = {"h200-sxm": tuple(finance.offers_from_costs("h200-sxm", BUY, 700.0, 8))}
    assert horizon_notes(offers, 3) == [
        "h200-sxm buy-4y is written off over 4 years but TCO covers 3 (horizon_years) and counts the whole "
        "purchase: its value left after 3 years is not counted (no resale); its USD per GPU-hour spreads it over "
        "4 years; set horizon_years: 4 to compare over the hardware's life"
    ]
    assert horizon_notes(offers, 4) == []
    assert "its replacement after 4 years is not counted" in horizon_notes(offers, 6)[0]
    rented = {"h100-sxm": tuple(finance.offers_from_costs("h100-sxm", CostSpec(rent=2.0), 700.0, 8))}
    assert horizon_notes(rented, 3) == []


def test_the_fleets_cost_per_token_band_costs_the_bands_fleets():
    """With a workload the cost per token shown is the fleet's, so its band is the fleet's too: the fleets
    of gpus_needed_low and gpus_needed_high GPUs, costed whole. Rented 24/7 at $2.50 a GPU-hour over 3
    years for 20 requests/s of 250 output tokens on average: n GPUs cost n x 2.5 x 8,760 x 3 over
    20 x 250 x 3,600 x 8,760 x 3 tokens, n x 2.5e6 / 18e6 = n x $0.13889 per M: 28 GPUs $3.8889, 40
    GPUs $5.5556."""
    from llmsweep.plan.sizing import fleet_cost_band

    inputs = plan.PlanInputs(
        {"h100-sxm": tuple(finance.offers_from_costs("h100-sxm", CostSpec(rent=2.5), 700.0, 8))},
        None,
        LOAD,
        "usd_per_million_output_tokens",
    )
    rows = plan.add_plan_columns(frame(output_tokens_per_s=750.0), inputs, keep_offer_parts=True).collect()
    rows = rows.with_columns(
        capacity_requests_per_s=pl.lit(3.0), gpus_needed_low=pl.lit(28), gpus_needed_high=pl.lit(40)
    )
    band = fleet_cost_band(rows, inputs, pl.lit(20.0))
    assert band["fleet_usd_per_million_output_tokens_low"].to_list() == pytest.approx([28 * 2.5e6 / 18e6])
    assert band["fleet_usd_per_million_output_tokens_high"].to_list() == pytest.approx([40 * 2.5e6 / 18e6])


def test_rented_fleet_under_each_assumption():
    rent = CostSpec(rent=2.5, term="1y-reserved")
    row = fleet_row(rent)
    assert row["offer"] == "rent-1y-reserved" and row["capex_usd"] == 0 and row["racks_needed"] is None
    # paid 24/7: 34 GPUs x $2.50 x 8,760 h = 744,600 a year; 3 years 2,233,800; 5 years 3,723,000
    assert row["opex_usd_per_year"] == pytest.approx(744_600)
    assert row["tco_usd"] == pytest.approx(2_233_800)
    assert row["fleet_usd_per_month"] == pytest.approx(62_050)  # 34 x 2.5 x 730 h
    assert fleet_row(rent, horizon=5)["tco_usd"] == pytest.approx(3_723_000)
    # paid per hour used: the fleet runs at 20 / (17 x 3) = 39.2 % on average: 744,600 x 20 / 51 = 292,000
    used = fleet_row(rent, rent_paid="per-hour-used")
    assert used["opex_usd_per_year"] == pytest.approx(292_000)
    assert used["tco_usd"] == pytest.approx(876_000)


def test_without_a_workload_the_fleet_is_one_replica():
    row = fleet_row(BUY, workload=None)
    assert row["gpus_needed"] is None
    # one replica of 2 GPUs buys a whole baseboard of 8: 1 server, 1 rack; capex 8 x 30,000 + 50,000 = 290,000
    assert (row["gpus_bought"], row["servers_needed"], row["racks_needed"]) == (8, 1, 1)
    assert row["capex_usd"] == pytest.approx(290_000)


def test_cost_per_token_type_adds_up_to_the_hour():
    """One cost per token: input cost x input tokens + decode cost x output tokens = the replica's hour.

    Aggregated (test_plan.frame: 2 GPUs at $2.50 = $5 an hour, 4 requests/s of 1,000 in and 250 out, a
    prompt holding the replica 0.05 s): prompts take 4 x 0.05 = 20 % of the hour, $1 over 4 x 1,000 x
    3,600 = 14.4 M input tokens = $0.069444 per M; the other $4 over 3.6 M output tokens = $1.1111 per M;
    all-in $5 / 3.6 M = $1.3889 per M.
    Disaggregated: 1 prefill worker of 8 GPUs and 2 decode workers of 8 at $2.50 = $60 an hour, 10
    requests/s of 8,192 in and 1,024 out: the prefill pool's 8 / 24 of the hour, $20, over 294.912 M input
    tokens = $0.067817 per M; the decode pool's $40 over 36.864 M output tokens = $1.0851 per M; all-in
    $60 / 36.864 M = $1.6276 per M."""
    agg = plan.add_plan_columns(frame(), plan_inputs()).collect().row(0, named=True)
    assert agg["usd_per_million_input_tokens"] == pytest.approx(1.0 / 14.4)
    assert agg["usd_per_million_decode_tokens"] == pytest.approx(4.0 / 3.6)
    assert agg["usd_per_million_output_tokens"] == pytest.approx(5.0 / 3.6)
    assert agg["usd_per_million_input_tokens"] * 14.4 + agg["usd_per_million_decode_tokens"] * 3.6 == pytest.approx(5.0)
    pools = frame(
        mode="disaggregated",
        gpus=24,
        prefill_pool_gpus=8,
        input_tokens=8192,
        output_tokens=1024,
        output_tokens_per_s=10 * 1024.0,
        prefill_s=0.4,  # the prefill worker's: its pool is the share, whatever its utilisation
    ).with_columns(pl.col("mode").cast(pl.Categorical))
    dis = plan.add_plan_columns(pools, plan_inputs()).collect().row(0, named=True)
    assert dis["usd_per_hour"] == pytest.approx(60.0)
    assert dis["usd_per_million_input_tokens"] == pytest.approx(20.0 / 294.912)
    assert dis["usd_per_million_input_tokens"] == pytest.approx(0.067817, abs=1e-6)
    assert dis["usd_per_million_decode_tokens"] == pytest.approx(40.0 / 36.864)
    assert dis["usd_per_million_output_tokens"] == pytest.approx(60.0 / 36.864)
    hour = dis["usd_per_million_input_tokens"] * 294.912 + dis["usd_per_million_decode_tokens"] * 36.864
    assert hour == pytest.approx(60.0)


def test_options_split_the_cost_per_token_they_show():
    """options.csv and the report show one cost per token: with a workload the fleet's (TCO over the
    tokens it serves), and its input and decode shares on that basis, so that input x input tokens +
    decode x output tokens = all-in x output tokens (they were a replica's at capacity beside the fleet's
    all-in figure: a reader pricing from them recovered a third of the fleet's cost).

    A replica at capacity: $0.50 per M output tokens all-in at 8,192 in / 1,024 out, split $0.025 per M
    input (0.025 x 8,192 = 204.8) + $0.30 per M decode (0.30 x 1,024 = 307.2) = 512 = 0.50 x 1,024. The
    fleet costs $2.00 per M output tokens, 4x: its split is $0.10 per M input + $1.20 per M decode
    (0.10 x 8,192 + 1.20 x 1,024 = 819.2 + 1,228.8 = 2,048 = 2.00 x 1,024). Without a workload the
    replica's own split stays. The all-in figure and its band are on the same basis: the fleet's $2.00
    (band $1.80-$2.60, its band's fleets) with a workload, else the replica's $0.50 ($0.40-$0.70)."""
    rows = pl.DataFrame(
        {
            "usd_per_million_output_tokens": [0.5, 0.5],
            "usd_per_million_output_tokens_low": [0.4, 0.4],
            "usd_per_million_output_tokens_high": [0.7, 0.7],
            "usd_per_million_input_tokens": [0.025, 0.025],
            "usd_per_million_decode_tokens": [0.3, 0.3],
            "fleet_usd_per_million_output_tokens": [2.0, None],
            "fleet_usd_per_million_output_tokens_low": [1.8, None],
            "fleet_usd_per_million_output_tokens_high": [2.6, None],
        }
    )
    split = rows.select(**finance.cost_per_million())
    assert split["usd_per_million"].to_list() == [2.0, 0.5]
    assert split["usd_per_million_low"].to_list() == [1.8, 0.4]
    assert split["usd_per_million_high"].to_list() == [2.6, 0.7]
    assert split["usd_per_million_input"].to_list() == pytest.approx([0.1, 0.025])
    assert split["usd_per_million_decode"].to_list() == pytest.approx([1.2, 0.3])
    paid = split["usd_per_million_input"] * 8192 + split["usd_per_million_decode"] * 1024
    assert paid.to_list() == pytest.approx([2.0 * 1024, 0.5 * 1024])


def test_options_csv_costs_per_token_add_up(tmp_path):
    """The same, end to end: every option of a priced sweep with a workload."""
    run_sweep(
        tmp_path,
        {
            "name": "split",
            "grid": {"gpu": ["h200-sxm"], "model": ["meta-llama/Llama-3.1-8B"], "batch": [8, "max"]},
            "workload": {"requests_per_s": 5},
            "costs": {"h200-sxm": {"rent": 3.0}},
        },
        formats=("csv",),
    )
    options = pl.read_csv(tmp_path / "out" / "split" / "options.csv")
    assert options.height
    for r in options.iter_rows(named=True):
        paid = (
            r["USD per M input tokens"] * r["Input tokens"] + r["USD per M output tokens (decode)"] * r["Output tokens"]
        )
        # options.csv rounds costs per token to 3 significant figures
        assert paid == pytest.approx(r["USD per M output tokens"] * r["Output tokens"], rel=5e-3)


def plan_inputs() -> plan.PlanInputs:
    price = plan.price_from_costs("h100-sxm", CostSpec(usd_per_gpu_hour=2.5), 700.0, 8)
    return plan.PlanInputs({"h100-sxm": price}, None, None, "usd_per_million_output_tokens")


def test_break_even_when_rent_is_paid_24_7():
    import polars as pl

    bought, rented = fleet_row(BUY), fleet_row(CostSpec(rent=2.5))
    rows = pl.DataFrame([bought, rented]).with_columns(
        model=pl.lit("m"), precision=pl.lit("fp8"), tp=pl.lit(2), meets_slo=pl.lit(True), horizon_years=pl.lit(3.0)
    )
    # rent 744,600 / 12 = 62,050 a month; the bought fleet runs for 79,360.80 / 12 = 6,613.40 a month:
    # 1,450,000 / (62,050 - 6,613.40) = 26.2 months
    assert plan.break_even(rows, "m") == (
        "Rented 24/7, h100-sxm rent (fp8, tp2) costs $62,050 a month; buying h100-sxm buy-4y (fp8, tp2) costs "
        "$1,450,000 up front and $6,613 a month to run, so it pays back after 26.2 months, within the 3-year "
        "horizon: buying costs $545,718 less over it."  # TCO 2,233,800 - 1,688,082.40
    )
    # the sentence agrees with a ranking by TCO: bought first, as its TCO is the lower
    assert plan.break_even(rows, "m", "tco_usd").startswith("Rented 24/7, h100-sxm rent (fp8, tp2) costs $62,050")
    pricier = rows.with_columns(horizon_years=pl.lit(1.0))
    assert plan.break_even(pricier, "m").endswith(
        "26.2 months: longer than the 1-year horizon, so renting costs less over it."
    )
    # the best rental another GPU's (at $2.00 an hour: 744,600 x 2 / 2.5 / 12 = 49,640 a month, so
    # 1,450,000 / (49,640 - 6,613.40) = 33.7 months), renting the bought GPU itself is said too
    other = {**fleet_row(CostSpec(rent=2.0)), "gpu": "mi300x"}
    three = pl.concat([rows, pl.DataFrame([other]).with_columns(rows.select(pl.exclude(other.keys())).head(1))])
    assert plan.break_even(three.select(rows.columns), "m") == (
        "Rented 24/7, mi300x rent (fp8, tp2) costs $49,640 a month; buying h100-sxm buy-4y (fp8, tp2) costs "
        "$1,450,000 up front and $6,613 a month to run, so it pays back after 33.7 months, within the 3-year "
        "horizon: buying costs $98,958 less over it. Against renting h100-sxm itself (h100-sxm rent (fp8, tp2): "
        "$62,050 a month), buying it pays back after 26.2 months."  # TCO 595,680 x 3 - 1,688,082.40 = 98,957.60
    )


# -- the costs schema ------------------------------------------------------------------------------------------------
def sweep_file(tmp_path, **extra) -> str:
    data = {"name": "s", "grid": {"gpu": ["h200-sxm", "rtx-4090"], "model": ["llama-3.1-8b"]}, **extra}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_costs_forms_and_offer_ids(tmp_path, catalog):
    costs = {
        "h200-sxm": [
            {"rent": 3.5},
            {"rent": 2.6, "term": "1y-reserved"},
            {"buy": 35_000, "years": 5},
            {"rent": 3.0, "name": "neo-cloud"},
            "example",
        ],
        "rtx-4090": {"usd_per_gpu_hour": 0.5, "usd_per_gpu_hour_reserved": 0.4},  # today's form
    }
    sweep = load(sweep_file(tmp_path, costs=costs))
    inputs = plan.plan_inputs(sweep)
    assert [o.offer for o in inputs.offers["h200-sxm"]] == [
        "rent",
        "rent-1y-reserved",
        "buy-5y",
        "neo-cloud",
        "example",
    ]
    assert [o.offer for o in inputs.offers["rtx-4090"]] == ["rent", "rent-reserved"]


def test_repeated_offer_ids_are_an_error(tmp_path):
    with pytest.raises(SpecError, match="offer id 'rent' repeats offer 0: give each offer its own `name:`"):
        load(sweep_file(tmp_path, costs={"h200-sxm": [{"rent": 3.5}, {"rent": 3.0}]}))
    with pytest.raises(SpecError, match="an offer either rents or buys"):
        load(sweep_file(tmp_path, costs={"h200-sxm": {"rent": 3.5, "buy": 30_000}}))


def test_a_rack_price_needs_a_rack_limit(tmp_path):
    # without servers_per_rack or rack_kw no rack is counted, so its price would silently be dropped
    with pytest.raises(SpecError, match="rack_usd_per_month needs servers_per_rack or rack_kw"):
        load(sweep_file(tmp_path, costs={"h200-sxm": {"buy": 30_000, "rack_usd_per_month": 3000}}))
    load(sweep_file(tmp_path, costs={"h200-sxm": {"buy": 30_000, "rack_usd_per_month": 3000, "rack_kw": 40}}))


def test_a_rack_limit_holds_a_server_and_a_whole_nvlink_domain(tmp_path):
    # an H200 server draws 8 x 700 W + host_kw 2 = 7.6 kW: a 5 kW rack powers none of it (it was counted as
    # one server a rack)
    with pytest.raises(SpecError) as e:
        load(sweep_file(tmp_path, costs={"h200-sxm": {"buy": 30_000, "rack_kw": 5, "host_kw": 2}}))
    assert e.value.problems[0].path == "costs.h200-sxm.rack_kw"
    assert e.value.problems[0].message == (
        "5 kW cannot power one h200-sxm server (8 GPUs x 700 W + host_kw 2 kW = 7.6 kW): give the rack's real "
        "power limit, at least 7.6 kW"
    )
    load(sweep_file(tmp_path, costs={"h200-sxm": {"buy": 30_000, "rack_kw": 7.6, "host_kw": 2}}))
    # GB200 NVL72 is one NVLink domain of 72 GPUs, 18 servers (compute trays) of 4 in one rack: a server draws
    # 4 x 1,200 W + 1 kW = 5.8 kW, so 40 kW holds floor(40 / 5.8) = 6 of them and 18 need 18 x 5.8 = 104.4 kW
    gb200 = [{"buy": 60_000, "rack_kw": 40, "host_kw": 1}, {"name": "space", "buy": 60_000, "servers_per_rack": 8}]
    with pytest.raises(SpecError) as e:
        load(sweep_file(tmp_path, costs={"gb200": gb200}))
    assert [(p.path, p.message) for p in e.value.problems] == [
        (
            "costs.gb200[0].rack_kw",
            "a gb200 rack is one NVLink domain of 72 GPUs (18 servers of 4), which this limit splits (6 servers a "
            "rack): give at least 104.4 kW (18 x 5.8 kW), or price a GPU whose NVLink domain fits the rack",
        ),
        (
            "costs.gb200[1].servers_per_rack",
            "a gb200 rack is one NVLink domain of 72 GPUs (18 servers of 4), which this limit splits (8 servers a "
            "rack): give 18, or price a GPU whose NVLink domain fits the rack",
        ),
    ]
    load(sweep_file(tmp_path, costs={"gb200": {"buy": 60_000, "rack_kw": 104.4, "host_kw": 1}}))


def test_examples_only_for_data_centre_gpus(tmp_path):
    # no prices at all: the data-centre GPU gets its dated example, the desktop one nothing and no note
    inputs = plan.plan_inputs(load(sweep_file(tmp_path)))
    assert list(inputs.offers) == ["h200-sxm"] and inputs.offers["h200-sxm"][0].offer == "example"
    assert not any("rtx-4090" in n for n in inputs.notes)
    # `costs: example` says so explicitly
    assert list(plan.plan_inputs(load(sweep_file(tmp_path, costs="example"))).offers) == ["h200-sxm"]
    # prices for some GPUs: the others stay unpriced (no examples mixed in)
    inputs = plan.plan_inputs(load(sweep_file(tmp_path, costs={"rtx-4090": {"rent": 0.5}})))
    assert list(inputs.offers) == ["rtx-4090"]
    assert "no price for h200-sxm: give one under costs to see its cost columns" in inputs.notes
    # asking for an example price of a desktop GPU says why there is none
    inputs = plan.plan_inputs(load(sweep_file(tmp_path, costs={"rtx-4090": "example"})))
    assert "no example price for rtx-4090 (it is not a data-centre GPU): give a price under costs" in inputs.notes


# -- the grid is the user's constraint; desktop GPUs are not priced from examples -----------------------------------
def run_sweep(tmp_path, data: dict, formats=("csv", "parquet", "md")):
    from llmsweep import pipeline

    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data))
    return pipeline.run(path, tmp_path / "out", formats=list(formats))


def test_single_user_sweep_is_ranked_at_batch_one_by_per_user_speed(tmp_path):
    import json

    import polars as pl

    grid = {"gpu": ["rtx-4090", "m2-ultra"], "model": ["llama-3.1-8b"], "precision": ["q4_k_m", "q8_0"], "batch": [1]}
    result = run_sweep(tmp_path, {"name": "one-user", "grid": grid})
    table = pl.read_csv(result.folder / "plan.csv")
    assert (table["batch"] == 1).all() and table["rank"].is_not_null().all()
    manifest = json.loads((result.folder / "manifest.json").read_text())
    assert manifest["rank_by"] == "decode_tokens_per_s_per_seq"
    assert table.sort("rank")["decode_tokens_per_s_per_seq"].is_sorted(descending=True)
    md = (result.folder / "report.md").read_text()
    assert "Ranked by **Tokens/s per user** (higher is better)" in md
    assert "charts/cost.svg" not in md and "price" not in " ".join(result.notes) and "USD" not in md


def test_listed_batches_are_the_only_choices(tmp_path):
    import polars as pl

    from llmsweep.pipeline import compute
    from llmsweep.spec import load as load_spec

    data = {
        "name": "listed",
        "grid": {
            "gpu": ["h100-sxm", "l40s"],
            "model": ["llama-3.1-8b"],
            "precision": ["bf16", "fp8"],
            "batch": [1, 8, 64],
        },
        "slo": {"tpot_s": 0.02},
    }
    result = run_sweep(tmp_path, data, formats=("csv",))
    table = pl.read_csv(result.folder / "plan.csv")
    assert set(table["batch"]) <= {1, 8, 64}
    # each option runs at the largest listed batch that meets the targets (estimated row by row)
    rows = compute(load_spec(result.folder.parent.parent / "listed.yaml")).collect()
    best = rows.filter("meets_slo").group_by("gpu", "precision").agg(pl.col("batch").max().alias("best"))
    joined = table.filter("meets_slo").join(
        best.with_columns(pl.col(pl.Categorical).cast(pl.String)), on=["gpu", "precision"]
    )
    assert joined.height and (joined["batch"] == joined["best"]).all()


def test_consumer_sweep_without_prices_has_no_cost_chart_or_price_notes(tmp_path):
    sweep = yaml.safe_load((ROOT / "sweeps" / "consumer-gpus.yaml").read_text())
    sweep["grid"]["model"] = sweep["grid"]["model"][:1]
    result = run_sweep(tmp_path, sweep, formats=("parquet", "md"))
    md = (result.folder / "report.md").read_text()
    assert "charts/cost.svg" not in md and not (result.folder / "charts" / "cost.svg").exists()
    assert not any("price" in n for n in result.notes) and "price" not in md.lower().split("## method")[0]


# -- the procurement example: options.csv and the report's first table -------------------------------------------
GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def procurement(procurement_run):
    return procurement_run.folder


def first_tables(md: str) -> str:
    """The per-GPU x offer tables of report.md, with their model headings."""
    parts = []
    for section in md.split("\n### ")[1:]:
        if "One row per GPU" not in section:
            continue
        heading = section.splitlines()[0]
        table = section.split("One row per GPU")[1].split("\n\n")[1]
        parts.append(f"### {heading}\n\n{table}\n")
    return "\n".join(parts)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; if on purpose, rerun with UPDATE_GOLDEN=1"


def test_procurement_options_csv_has_one_row_per_gpu_and_offer(procurement):
    import polars as pl

    table = pl.read_csv(procurement / "options.csv")
    sweep = yaml.safe_load((ROOT / "sweeps" / "procurement.yaml").read_text())
    offers = {(g, o) for g, os in sweep["costs"].items() for o in finance_ids(os)} | {("gaudi3", None)}
    for _model, group in table.group_by("Model"):
        assert sorted(zip(group["GPU"], group["Offer"], strict=True), key=str) == sorted(offers, key=str)
    # no option that misses a target is recommended (ranked)
    assert table.filter(pl.col("Meets targets") == "no")["Rank"].is_null().all()
    assert table["Rank"].drop_nulls().min() == 1
    # the limits and misses read in words and human units, not column names and seconds
    saturated = "saturated (replica full)"  # what stops it when no target does: KV slots or pool time
    assert set(table["Capacity limit"].drop_nulls()) <= {"TPOT target", "p90 TTFT target", saturated}
    assert dict(CAPACITY_LIMIT_LABELS)["saturated"] == saturated
    assert not table["Misses by"].drop_nulls().str.contains(r"_s |tpot_s|ttft_").any()
    check_golden("procurement-options.csv", (procurement / "options.csv").read_text())


def test_an_options_rank_is_its_rank_in_plan_csv(procurement):
    """options.csv keeps the best layout of each GPU x offer with the rank plan.csv (and the report's
    #) gives that layout, so "rank 4" names one configuration in every file: Qwen3-30B's second row is
    H100 reserved at rank 3 (rank 2 is MI300X rented at int4, not a row here)."""
    import polars as pl

    table = pl.read_csv(procurement / "options.csv").filter(pl.col("Rank").is_not_null())
    plan_csv = pl.read_csv(procurement / "plan.csv").filter(pl.col("rank").is_not_null())
    keys = {"Model": "model", "GPU": "gpu", "Offer": "offer", "TP": "tp", "Weights": "precision", "Rank": "rank"}
    joined = table.rename(keys).join(plan_csv, on=list(keys.values()), how="left", suffix="_plan")
    assert joined["tco_usd"].is_not_null().all()  # every (option, rank) is a row of plan.csv
    assert (joined["TCO (USD)"] == joined["tco_usd"].round(0).cast(pl.Int64)).all()
    qwen = table.filter(pl.col("Model") == "Qwen/Qwen3-30B-A3B")
    assert qwen["Rank"].to_list()[:2] == [1, 3] and qwen["GPU"][1] == "h100-sxm"


def test_rented_and_bought_fleets_of_one_gpu_draw_alike(procurement):
    """Procurement's H200 purchase states host_kw 3.0 (CPUs, fans, NICs of each 8-GPU server); its
    rentals sit in the same servers. Qwen3-30B on 5 H200s: 5 x 0.7 kW TDP + 1 server x 3.0 kW = 6.5 kW
    rented or bought (the rentals had 3.5 kW, 45 % under); the rent, which pays that power, is unchanged
    (5 x $3.50 x 8,760 h = $153,300 a year)."""
    import polars as pl

    table = pl.read_csv(procurement / "options.csv")
    h200 = table.filter((pl.col("GPU") == "h200-sxm") & (pl.col("Model") == "Qwen/Qwen3-30B-A3B"))
    assert h200["GPUs"].to_list() == [5, 5, 5] and set(h200["Servers"]) == {1}
    assert set(h200["Power (kW)"]) == {5 * 0.7 + 3.0}
    assert len(set(h200["kWh per M output tokens"])) == 1
    rent = h200.filter(pl.col("Offer") == "rent")
    assert rent["Opex (USD per year)"].to_list() == [5 * 3.5 * 8760]
    # energy per token counts the GPUs alone, for every GPU: only the H200's purchase states a host_kw,
    # so with it H200 read 0.123 kWh per M tokens against H100's 0.0798 (6.5 against 4.2 kW), where its 5
    # GPUs draw 5/6 of what the 6 H100s draw for the same tokens (0.0665)
    h100 = table.filter((pl.col("GPU") == "h100-sxm") & (pl.col("Model") == "Qwen/Qwen3-30B-A3B"))
    assert h100["GPUs"].to_list() == [6, 6] and h100["Power (kW)"].to_list() == [pytest.approx(6 * 0.7)] * 2
    ratio = h200["kWh per M output tokens"][0] / h100["kWh per M output tokens"][0]
    assert ratio == pytest.approx(5 / 6, rel=0.01)  # the CSV rounds to 3 significant figures
    report = (procurement / "report.md").read_text()
    assert (
        "the fleets' kW count their servers' host power (host_kw) for h200-sxm, whose purchase states it, and the "
        "GPUs alone for a100-80gb-sxm, b200, h100-sxm, l40s, mi300x" in report
    )


def test_options_without_targets_say_so(tmp_path):
    """A sweep without slo ranks every option that fits: options.csv says 'no targets', not 'yes'."""
    import polars as pl

    result = run_sweep(tmp_path, {"name": "free", "grid": {"gpu": ["h100-sxm"], "model": ["llama-3.1-8b"]}})
    table = pl.read_csv(result.folder / "options.csv")
    assert table["Meets targets"].to_list() == ["no targets"] and table["Rank"].to_list() == [1]


def finance_ids(entries) -> list[str]:
    return [oid for e in (entries if isinstance(entries, list) else [entries]) for oid in CostSpec(**e).ids()]


def test_procurement_report_first_table_lists_every_priced_option(procurement):
    md = (procurement / "report.md").read_text()
    tables = first_tables(md)
    sweep = yaml.safe_load((ROOT / "sweeps" / "procurement.yaml").read_text())
    for section in tables.split("### ")[1:]:
        for gpu, entries in sweep["costs"].items():
            for oid in finance_ids(entries):
                assert f"| **{gpu}** · {oid} · $" in section  # and its price per GPU-hour
        recommended = [line for line in section.splitlines() if "**recommended**" in line]
        assert len(recommended) == 1 and "| yes · **recommended** |" in recommended[0]
    html = (procurement / "report.html").read_text()
    assert html.index('class="options"') < html.index('class="recs"')  # the first table of each model
    check_golden("procurement-first-table.md", tables)
    # the plan sizes for random arrivals: a reader running a fixed-client load test is told it will differ
    loops = "its requests arriving at random (an open loop, as from many independent users); a load test that "
    for text in (md, html):
        assert loops + "keeps a fixed number of clients busy (a closed loop) sends its requests in step" in text


def report_charts(report: Path) -> dict[str, dict]:
    """The vega-lite specs report.html embeds, by chart id."""
    import json

    html = report.read_text()
    specs, ids = (json.loads(re.search(rf"const {name} = (.*);", html).group(1)) for name in ("specs", "ids"))
    return dict(zip(ids, specs, strict=True))


def chart_rows(spec: dict) -> pl.DataFrame:
    """The rows a faceted chart draws (its inline dataset)."""
    return pl.DataFrame(spec["datasets"][spec["data"]["name"]])


def test_each_models_cost_bars_are_in_its_own_order_cheapest_first(procurement):
    """'What is cheapest?' sorts each model's panel by its own bars (one order shared by the panels put
    h200-sxm buy-4y third for Qwen3-30B, where Mixtral ranks it, above four cheaper bars). Qwen3-30B
    a month (730 h): mi300x 5 x $2.49 x 730 = $9,088.50; h100 reserved 6 x $2.10 x 730 = $9,198; h200
    reserved 5 x $2.60 x 730 = $9,490; h100 6 x $2.69 x 730 = $11,782.20; h200 5 x $3.50 x 730 = $12,775;
    b200 3 x $5.99 x 730 = $13,118.10; h200 bought (4-year write-off, power, racks) $13,379.27; a100 12 x
    $1.89 x 730 = $16,556.40; l40s 27 x $0.86 x 730 = $16,950.60. The recommended one (rank 1) is outlined."""
    spec = report_charts(procurement / "report.html")["cost"]
    rows = chart_rows(spec)
    order = spec["spec"]["layer"][0]["encoding"]["y"]["sort"]
    assert order == {"field": "_order", "op": "min"} and spec["resolve"]["scale"]["y"] == "independent"
    qwen = rows.filter(pl.col("model") == "Qwen/Qwen3-30B-A3B").sort("_order")
    assert qwen["option"].to_list() == [
        "mi300x · rent · fp8 · tp1",
        "h100-sxm · rent-1y-reserved · int4 · tp1",
        "h200-sxm · rent-1y-reserved · fp8 · tp1",
        "h100-sxm · rent · int4 · tp1",
        "h200-sxm · rent · fp8 · tp1",
        "b200 · rent · fp8 · tp1",
        "h200-sxm · buy-4y · fp8 · tp1",
        "a100-80gb-sxm · rent · int4 · tp1",
        "l40s · rent · int4 · tp1",
    ]
    assert qwen["usd"].to_list()[:6] == pytest.approx([9088.5, 9198.0, 9490.0, 11782.2, 12775.0, 13118.1])
    assert qwen["usd"][6] == pytest.approx(13_379.27, abs=0.01)
    assert qwen["usd"].to_list()[7:] == pytest.approx([16556.4, 16950.6])
    for _, panel in rows.group_by("model"):
        assert panel.sort("_order")["usd"].is_sorted()  # every panel: no bar above a shorter one
    # the recommended option (rank 1) of every model is drawn and outlined, with its legend entry
    outline = spec["spec"]["layer"][1]
    assert outline["mark"]["fillOpacity"] == 0 and {"filter": "(datum.rank === 1)"} in outline["transform"]
    assert outline["encoding"]["stroke"]["scale"]["domain"] == ["recommended (rank 1)"]
    assert rows.filter(pl.col("rank") == 1)["model"].n_unique() == rows["model"].n_unique() == 4


def gpu_colours(spec: dict) -> list[dict]:
    """Every colour encoding of a chart's GPUs, in any layer."""
    return [colour for colour in all_colours(spec) if colour["field"] == "gpu"]


def all_colours(spec: dict) -> list[dict]:
    """Every colour encoding of a chart, whatever its field, in any layer."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            colour = (node.get("encoding") or {}).get("color")
            if colour and "field" in colour:
                found.append(colour)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return found


def test_a_gpu_has_one_colour_in_every_chart_of_a_report(procurement):
    """The colours come from the report's seven GPUs in alphabetical order, whatever GPUs a chart
    shows: the traffic chart has no gaudi3 (no price), so a domain of its own GPUs gave h100-sxm
    gaudi3's red there and teal in the frontier chart. tableau10 in domain order: a100-80gb-sxm blue,
    b200 orange, gaudi3 red, h100-sxm teal, h200-sxm green, l40s yellow, mi300x purple, in every chart.
    No chart colours by anything else in those colours: rent-or-buy coloured its fleets by offer (h200-sxm
    bought orange, b200's colour; mi300x rented teal, green or yellow), cost-speed by GPU x offer in a palette
    of its own, the cost bars meeting the targets in a blue like a100's, the memory parts in tableau's blue,
    orange, red: now a GPU's colour in each, its offers told by shape (cost-speed) or dash (rent or buy),
    whether it meets the targets by opacity, the memory parts in greys."""
    from llmsweep.charts import MEMORY_PARTS

    gpus = ["a100-80gb-sxm", "b200", "gaudi3", "h100-sxm", "h200-sxm", "l40s", "mi300x"]
    specs = report_charts(procurement / "report.html")
    coloured = {name: gpu_colours(spec) for name, spec in specs.items()}
    assert {n for n, c in coloured.items() if c} == set(specs) - {"memory"}
    for name, colours in coloured.items():
        for colour in colours:
            assert colour["scale"] == {"domain": gpus, "scheme": "tableau10"}, name
    others = {name: [c for c in all_colours(spec) if c["field"] != "gpu"] for name, spec in specs.items()}
    assert {n: [c["field"] for c in cs] for n, cs in others.items() if cs} == {"memory": ["component"]}
    assert others["memory"][0]["scale"]["range"] == list(MEMORY_PARTS.values())
    assert all(v.startswith("#") and v[1:3] == v[3:5] == v[5:7] for v in MEMORY_PARTS.values())  # greys
    # one GPU's offers: shapes in cost-speed (the same offer the same shape), dashes in rent or buy
    shape = specs["cost-speed"]["spec"]["layer"][1]["encoding"]["shape"]
    assert shape["field"] == "offer" and shape["scale"]["domain"] == ["buy-4y", "rent", "rent-1y-reserved"]
    dash = specs["rent-buy"]["spec"]["layer"][0]["encoding"]["strokeDash"]
    assert dash["field"] == "kind" and dash["scale"]["domain"] == ["buy", "rent"]
    assert specs["cost"]["spec"]["layer"][0]["encoding"]["opacity"]["field"] == "meets"
    # each legend lists the chart's own GPUs alone: no gaudi3 in the traffic chart (it has no price)
    shown = [g for g in gpus if g != "gaudi3"]
    assert [c["legend"]["values"] for c in coloured["gpus-traffic"]] == [shown, shown]  # its lines and dots
    assert set(chart_rows(specs["gpus-traffic"])["gpu"]) == set(shown)


def layers(spec: dict) -> list[dict]:
    """A chart's layers (a faceted chart's inner ones)."""
    return (spec.get("spec") or spec)["layer"]


def target_layers(spec: dict) -> list[tuple[dict, dict]]:
    """(rule, label) layer pairs of the targets a chart draws: a target's value and label are computed fields."""

    def calc(layer: dict) -> dict:
        return {t["as"]: t["calculate"] for t in layer.get("transform", []) if "calculate" in t}

    rules = [x for x in layers(spec) if x["mark"]["type"] == "rule" and "target" in calc(x)]
    texts = [x for x in layers(spec) if x["mark"]["type"] == "text" and "target" in calc(x)]
    return [(calc(r), t) for r, t in zip(rules, texts, strict=True)]


def test_charts_draw_the_latency_targets_the_verdicts_are_judged_against(procurement):
    """procurement.yaml: TTFT 2 s (the mean: no percentile) and TPOT 50 ms. The TTFT chart (mean bars,
    p90 ticks) draws 'mean TTFT target 2 s' at 2,000 ms on its x axis, which reaches it (it stopped at its
    longest p90, under 1,000 ms); the decode chart's per-user panels, the frontier and cost-speed (tokens/s
    per user) the TPOT target at 1 / 50 ms = 20 tokens/s, labelled as such, with a note that tokens/s per user
    (output tokens / request latency) runs a little under 1 / TPOT."""
    specs = report_charts(procurement / "report.html")
    ((rule, text),) = target_layers(specs["ttft"])
    assert rule == {"target": "2000.0", "label": "'mean TTFT target 2 s'"}
    assert layers(specs["ttft"])[-2]["encoding"]["x"]["field"] == "target"  # on the x axis, with its label
    assert layers(specs["ttft"])[-1]["encoding"]["text"]["field"] == "label"
    svg = (procurement / "charts" / "ttft.svg").read_text()
    assert ">2,000</text>" in svg and "mean TTFT target 2 s" in svg  # the axis reaches the target, labelled
    for name, channel in (("decode", "y"), ("frontier", "x"), ("cost-speed", "x")):
        ((rule, text),) = target_layers(specs[name])
        assert rule == {"target": "20.0", "label": "'TPOT target 50 ms = 20 tokens/s'"}, name
        assert layers(specs[name])[-2]["encoding"][channel]["field"] == "target", name
        assert "TPOT target 50 ms = 20 tokens/s" in (procurement / "charts" / f"{name}.svg").read_text()
    # the decode chart's TPOT line is on its per-user panels alone (not stretching the per-replica axes)
    assert {"filter": "(datum.measure === 'per user')"} in layers(specs["decode"])[-2]["transform"]
    md = (procurement / "report.md").read_text()
    assert md.count("tokens/s per user counts the wait for the first token") == 3  # decode, frontier, cost-speed


def test_ttft_ticks_and_target_are_at_the_percentile_the_target_bounds():
    """A p99 TTFT target: the ticks are p99 (not p90) and the rule says 'p99 TTFT target 1.5 s'; the axis
    unit holds the target too (12 s target over 9 s of TTFT: seconds, not an axis to 12,000 ms)."""
    from llmsweep import charts

    data = pl.DataFrame(
        {
            "model": ["m", "m"],
            "option": ["a", "b"],
            "gpu": ["h100-sxm", "l40s"],
            "_n": [0, 1],
            "_rank": [1, 2],
            "input_tokens": [2048, 2048],
            "ttft_ms": [120.0, 80.0],
            "ttft_p90_ms": [300.0, 200.0],
            "ttft_p99_ms": [900.0, 700.0],
            "ttft_target_s": [1.5, 1.5],
            "ttft_percentile": ["p99", "p99"],
            "tpot_target_s": [None, None],
        }
    )
    spec = charts.ttft_chart(data).to_dict()
    assert spec["spec"]["layer"][0]["encoding"]["x"]["title"].endswith("mean, | p99")
    assert spec["spec"]["layer"][1]["encoding"]["x"]["field"] == "ttft_tick"
    ticks = pl.DataFrame(spec["datasets"][spec["data"]["name"]])
    assert ticks["ttft_tick"].to_list() == [900.0, 700.0]
    ((rule, _),) = target_layers(spec)
    assert rule == {"target": "1500.0", "label": "'p99 TTFT target 1.5 s'"}
    assert not any(c.startswith("ttft_target") for c in ticks.columns)  # read, then dropped from the chart's data
    slow = data.with_columns(ttft_ms=pl.Series([9_000.0, 8_000.0]), ttft_target_s=pl.lit(12.0))
    ((rule, _),) = target_layers(charts.ttft_chart(slow).to_dict())
    assert rule["target"] == "12.0"  # seconds


def test_the_recommended_option_is_marked_in_every_chart_that_shows_options(procurement):
    """Every chart of options or operating points draws each model's recommended option (rank 1) and
    marks it, in black, with the legend entry 'recommended (rank 1)': the decode chart drew grid lines
    alone, so the recommended option's operating point (its requests in flight and tokens/s per user in
    plan.csv) was in no chart; now every option's operating point is there, the recommended one ringed."""
    plan = pl.read_parquet(procurement / "plan.parquet").filter(pl.col("rank") == 1)
    specs = report_charts(procurement / "report.html")
    for name in ("memory", "decode", "ttft", "cost", "frontier", "cost-speed", "gpus-traffic"):
        marks = [x for x in layers(specs[name]) if "stroke" in x.get("encoding", {})]
        assert marks, name
        assert marks[0]["encoding"]["stroke"]["scale"] == {"domain": ["recommended (rank 1)"], "range": ["black"]}
        flag = "_rank" if name in ("memory", "ttft") else "rank"
        assert {"filter": f"(datum.{flag} === 1)"} in marks[0]["transform"], name
        rows = chart_rows(specs[name])
        assert set(rows.filter(pl.col(flag) == 1)["model"]) == set(plan["model"].cast(pl.String)), name
    decode = chart_rows(specs["decode"]).filter((pl.col("rank") == 1) & (pl.col("measure") == "per user"))
    for best in plan.iter_rows(named=True):
        point = decode.filter(pl.col("model") == best["model"]).row(0, named=True)
        assert point["operating_point"] and point["option"].startswith(f"{best['gpu']} · {best['precision']}")
        assert point["batch"] == pytest.approx(best["concurrency"])
        assert point["tokens_per_s"] == pytest.approx(best["decode_tokens_per_s_per_seq"])
    frontier = chart_rows(specs["frontier"]).filter(pl.col("rank") == 1)
    assert frontier["per_user"].to_list() == pytest.approx(
        [plan.filter(pl.col("model") == m)["decode_tokens_per_s_per_seq"].item() for m in frontier["model"]]
    )
    # the traffic chart rings the recommended fleet at the sweep's peak: 5 mi300x for Qwen3-30B (40 requests/s)
    traffic = chart_rows(specs["gpus-traffic"]).filter(pl.col("rank") == 1)
    qwen = traffic.filter(pl.col("model") == "Qwen/Qwen3-30B-A3B").row(0, named=True)
    assert (qwen["gpu"], qwen["peak"], qwen["gpus_at"]) == ("mi300x", 40.0, 5)
    # rent or buy names the recommended fleet where it is one of the two it compares
    fleets = chart_rows(specs["rent-buy"]).filter(pl.col("rank") == 1)["fleet"].unique().to_list()
    assert fleets and all(f.endswith(" (recommended)") for f in fleets)


def test_the_rent_or_buy_chart_spans_one_range_past_every_payback_and_marks_the_horizon(procurement):
    """Its panels ended at 36 months (Llama-3.3-70B, paying back after 34.0) and 72 (Qwen3-30B, paying
    back after 94.6, not reached), with no mark of the 3-year horizon. Now every panel runs to the next
    whole year past the latest payback (Qwen3-30B's and Llama-3.1-8B's, 63.7 months: 0 to 72), the horizon
    a rule at 36 months labelled 'horizon 3 years', each payback a rule labelled with its month."""
    spec = report_charts(procurement / "report.html")["rent-buy"]
    rows = chart_rows(spec)
    ends = rows.group_by("model").agg(pl.col("month").max())
    assert set(ends["month"]) == {72}
    assert spec["spec"]["layer"][0]["encoding"]["x"]["scale"] == {"domain": [0, 72], "nice": False}
    paybacks = dict(rows.group_by("model").agg(pl.col("break_even").first()).rows())
    assert paybacks["Qwen/Qwen3-30B-A3B"] == pytest.approx(63.7, abs=0.05)
    assert paybacks["meta-llama/Llama-3.3-70B-Instruct"] == pytest.approx(34.0, abs=0.05)
    assert all(p is None or p <= 72 for p in paybacks.values())
    said = dict(rows.group_by("model").agg(pl.col("payback").first()).rows())
    assert said["Qwen/Qwen3-30B-A3B"] == "buying pays back after 63.7 months"
    assert set(rows["horizon_months"]) == {36.0}
    horizon = [x for x in layers(spec) if x["encoding"].get("x", {}).get("field") == "horizon_months"]
    assert [x["mark"]["type"] for x in horizon] == ["rule", "text"]
    assert {"calculate": "'horizon ' + datum.horizon_months / 12 + ' years'", "as": "text"} in horizon[1]["transform"]
    assert "horizon 3 years" in (procurement / "charts" / "rent-buy.svg").read_text()


def test_each_limit_has_one_shape_in_every_report():
    """The roofline's shapes came from the limits a sweep has, in their order: 'memory' a triangle in a
    sweep with communication, compute and memory, a square in one with compute and memory. Now each limit
    has its own shape whichever others there are, and no offer shape is a limit's."""
    from llmsweep import charts

    def shapes(bounds: list[str]) -> dict:
        points = pl.DataFrame(
            {
                "gpu": ["b200"] * len(bounds),
                "model": ["m"] * len(bounds),
                "precision": ["fp8"] * len(bounds),
                "batch": list(range(1, len(bounds) + 1)),
                "bound": bounds,
                "intensity": [10.0 * (i + 1) for i in range(len(bounds))],
                "flops_per_s": [1e12] * len(bounds),
                "peak_flops_per_s": [2e15] * len(bounds),
                "memory_bandwidth_bytes_per_s": [8e12] * len(bounds),
                "kind": ["configuration"] * len(bounds),
            }
        )
        scale = charts.roofline_chart(points).to_dict()["layer"][1]["encoding"]["shape"]["scale"]
        return dict(zip(scale["domain"], scale["range"], strict=True))

    one, other = shapes(["communication", "compute", "memory"]), shapes(["compute", "memory"])
    assert one == other == charts.LIMIT_SHAPES
    assert one["memory"] == "triangle-up" and one["compute"] == "square"
    assert not set(charts.LIMIT_SHAPES.values()) & set(charts.OFFER_SHAPES)


def test_the_cost_speed_chart_rings_the_recommended_option_and_says_why_it_is_off_the_line(procurement):
    """Qwen3-30B: mi300x rented at fp8 (rank 1, 55.4 tokens/s per user) and at int4 (rank 2, 73.1) both
    need 5 GPUs, 5 x $2.49 x 730 h = $9,088.50 a month; the tie goes to fp8, the more capacity per GPU,
    so int4 is on the line (nothing cheaper and faster) and the recommended fp8 is not. The chart rings
    it and its title says why, so it does not read as a mistake."""
    spec = report_charts(procurement / "report.html")["cost-speed"]
    rows = chart_rows(spec)
    qwen = rows.filter((pl.col("model") == "Qwen/Qwen3-30B-A3B") & pl.col("rank").is_in([1, 2])).sort("rank")
    assert qwen["option"].to_list() == ["mi300x · rent · fp8 · tp1", "mi300x · rent · int4 · tp1"]
    assert qwen["usd"].to_list() == pytest.approx([5 * 2.49 * 730] * 2)
    assert qwen["per_user"].to_list() == pytest.approx([55.4, 73.1], abs=0.05)
    assert qwen["frontier"].to_list() == [False, True]
    ring = spec["spec"]["layer"][2]
    assert ring["mark"] == {"type": "point", "filled": False, "size": 220, "strokeWidth": 2}
    assert {"filter": "(datum.rank === 1)"} in ring["transform"]
    assert ring["encoding"]["stroke"]["scale"] == {"domain": ["recommended (rank 1)"], "range": ["black"]}
    assert rows.filter(pl.col("rank") == 1)["model"].n_unique() == 4  # every model's recommended one is drawn
    html = (procurement / "report.html").read_text()
    assert (
        "(the line: the options no other beats on both cost and speed; ringed: the recommended one, off the line "
        "where an option of the same cost is faster: the ranking gives a tie on cost to the option with the most "
        "capacity per GPU, not to the fastest)"
    ) in html


def step_before(points: pl.DataFrame, rate: float) -> int:
    """A step-before line's value at `rate`: the count of the first point at or after it."""
    return points.filter(pl.col("peak") >= rate).sort("peak")["gpus_at"][0]


def test_the_traffic_chart_never_shows_fewer_gpus_than_needed_between_its_samples(procurement):
    """Qwen3-30B on mi300x (fp8, tp1: 1 GPU a replica): capacity 15.8965 requests/s a replica, 20 %
    headroom, n+1, so n replicas carry (n - 1) x 15.8965 / 1.2 = (n - 1) x 13.2471 requests/s. From
    0.25 to 3 x the 40 requests/s peak (10 to 120): 2 GPUs up to 13.247, 3 to 26.494, 4 to 39.741, 5 to
    52.988, 6 to 66.236, 7 to 79.483, 8 to 92.730, 9 to 105.977, 10 to 119.224, 11 to 120. Step-after from
    the samples (every 10 requests/s) would draw 4 GPUs on (39.741, 40), where 5 are needed."""
    spec = report_charts(procurement / "report.html")["gpus-traffic"]
    line = spec["spec"]["layer"][0]
    assert line["mark"] == {"type": "line", "interpolate": "step-before"}
    assert line["transform"] == [{"filter": "(datum.kind === 'step')"}]
    rows = chart_rows(spec).filter((pl.col("model") == "Qwen/Qwen3-30B-A3B") & (pl.col("gpu") == "mi300x"))
    steps = rows.filter(pl.col("kind") == "step").sort("peak")
    per_replica = 15.8965 / 1.2
    assert steps["peak"].to_list() == pytest.approx([10.0, *(per_replica * k for k in range(1, 10)), 120.0], abs=2e-3)
    assert steps["gpus_at"].to_list() == [2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    samples = rows.filter(pl.col("kind") == "sample").sort("peak")
    assert samples["peak"].to_list() == pytest.approx([10.0 * k for k in range(1, 13)])
    assert samples.filter(pl.col("peak") == 40.0)["gpus_at"].to_list() == [5]  # the plan's fleet at the peak
    capacity = 15.896527324405934  # plan.csv's capacity_requests_per_s for this option

    def needed(rate: float) -> int:  # ceil(rate x 1.2 / capacity) + 1, written out here
        return math.ceil(rate * 1.2 / capacity) + 1

    rates = [10 + 0.05 * i for i in range(1, 2200)]
    assert all(step_before(steps, r) == needed(r) for r in rates)  # the exact steps: neither more nor fewer
    assert step_before(steps, 45.0) == 5 and needed(45.0) == 5
    # a line of more than MAX_STEPS steps steps every k-th count, rounded up: n0 = 2 to n1 = 11 replicas
    # with 3 steps at most, every ceil(9 / 3) = 3rd: 2 up to 13.247, 5 up to 52.988, 8 up to 92.730, 11
    from unittest import mock

    from llmsweep import money_charts

    with mock.patch.object(money_charts, "MAX_STEPS", 3):
        coarse = money_charts.gpus_traffic_data(pl.LazyFrame(), pl.read_parquet(procurement / "plan.parquet"))
    coarse = coarse.filter(
        (pl.col("model") == "Qwen/Qwen3-30B-A3B") & (pl.col("gpu") == "mi300x") & (pl.col("kind") == "step")
    ).sort("peak")
    assert coarse["gpus_at"].to_list() == [2, 2, 5, 8, 11]
    expected = [10.0, per_replica, 4 * per_replica, 7 * per_replica, 120.0]
    assert coarse["peak"].to_list() == pytest.approx(expected, abs=2e-3)
    assert all(step_before(coarse, r) >= needed(r) for r in rates)  # more than needed, never fewer


LAYOUT_PROBE = """<script>window.addEventListener('load', function () {
  var tries = 0, wait = setInterval(function () {
  var b = document.body.dataset;
  if (+b.rendered < +b.charts && +b.errors === 0 && ++tries < 100) return;
  clearInterval(wait);
  var out = {view: window.innerWidth, tables: [], hidden: [], charts: [], rendered: +b.rendered, errors: +b.errors};
  document.querySelectorAll('table.options, table.recs').forEach(function (t) {
    var box = t.parentNode;
    if (box.scrollWidth > box.clientWidth + 1) out.tables.push([t.className, box.scrollWidth, box.clientWidth]);
    t.querySelectorAll('th.key').forEach(function (th) {
      var r = th.getBoundingClientRect();
      if (th.offsetParent === null || r.right > window.innerWidth + 1) out.hidden.push(th.textContent);
    });
  });
  out.page = document.documentElement.scrollWidth;
  document.querySelectorAll('.chart').forEach(function (d) {
    var svg = d.querySelector('svg');
    if (!svg) { out.charts.push([d.id, 'not drawn']); return; }
    var w = svg.getBoundingClientRect().width, design = svg.viewBox.baseVal.width;
    // scaled to its container, but not below 70 % of its design size: wider, its figure scrolls
    var ok = w <= d.clientWidth + 1 ? w >= Math.min(d.clientWidth, 0.7 * design) - 1
      : Math.abs(w - 0.7 * design) <= 1 && getComputedStyle(d).overflowX === 'auto';
    if (!ok) out.charts.push([d.id, w, d.clientWidth, design]);
  });
  parent.postMessage(JSON.stringify(out), '*');
}, 200); });</script></body>"""
FRAME = """<html><head><title>waiting</title></head><body style="margin:0">
<iframe src="report.html" style="border:0" width="{width}" height="1000"></iframe>
<script>window.addEventListener('message', function (e) {{ document.title = 'probe=' + e.data; }});</script>
</body></html>"""


def layout_in_browser(report: Path, tmp_path: Path, width: int) -> dict:
    """Load report.html at `width` px in headless Chromium and measure it. Headless windows are at least
    500 px wide, so the page is loaded in an iframe of that width, whose viewport (and media queries) it
    sets; a script in the page posts what it measured to the frame around it."""
    import html
    import json

    folder = tmp_path / f"w{width}"
    folder.mkdir()
    head, tail = report.read_text().rsplit("</body>", 1)  # the last one: the vega bundle has its own "</body>"
    (folder / "report.html").write_text(head + LAYOUT_PROBE + tail)
    (folder / "frame.html").write_text(FRAME.format(width=width))
    url = (folder / "frame.html").resolve().as_uri()
    dom = dump_dom(url, tmp_path, budget_ms=30_000, window=f"{max(width, 500)},1000", timeout=180)
    return json.loads(html.unescape(re.search(r"<title>probe=(.*?)</title>", dom).group(1)))


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
@pytest.mark.parametrize("width", [1280, 400])
def test_key_columns_and_charts_fit_a_laptop_and_a_phone(procurement, tmp_path, width):
    """At 1,280 px and at 400 px: the first table and the ranked table need no sideways scrolling, their
    key columns (USD per month, USD per M tokens, TPOT, TTFT) are on screen, and every chart
    is drawn within its container, scaled down to at most 70 % of its design size (11 px labels stay at
    8 px or more); on a phone a wider one scrolls sideways in its figure, never the page."""
    got = layout_in_browser(procurement / "report.html", tmp_path, width)
    assert got["view"] == width
    assert got["rendered"] == 9  # every chart drawn (the probe runs after they are)
    assert got["tables"] == [] and got["hidden"] == []
    assert got["charts"] == [] and got["page"] <= width


# -- answers that read well -------------------------------------------------------------------------------------------
def test_charts_choose_units_marks_and_formats():
    import polars as pl

    from llmsweep import charts

    assert charts.time_unit(pl.Series([12.0, 9_999.0])) == (1.0, "ms")
    assert charts.time_unit(pl.Series([12.0, 350_000.0])) == (1000.0, "s")  # never an axis to 350,000 ms
    one_length = pl.DataFrame(
        {"model": ["m", "m"], "option": ["a", "b"], "input_tokens": [2048, 2048], "ttft_ms": [120.0, 80.0]}
    )
    spec = charts.ttft_chart(one_length).to_dict()
    bars = spec["spec"]["layer"][0]
    assert bars["mark"]["type"] == "bar"  # one prompt length: bars, not a column of dots
    assert bars["encoding"]["x"]["title"] == "time to first token (ms), 2,048-token prompt: mean, | p90"
    assert charts._ttft_title(one_length) == "Time to first token at each option's operating point"
    decode = pl.DataFrame(
        {
            "model": ["m"] * 4,
            "option": ["a"] * 4,
            "gpu": ["h100-sxm"] * 4,
            "_n": [0] * 4,
            "batch": [1, 1, 8, 8],
            "measure": ["per replica (under load)", "per user"] * 2,
            "tokens_per_s": [50.0, 50.0, 380.0, 47.5],
        }
    )
    spec = charts.decode_chart(decode).to_dict()
    assert spec["facet"]["column"]["field"] == "measure"  # one panel per measure: no dashes or shapes to decode
    line = spec["spec"]["layer"][0]
    enc = line["encoding"]
    # the legend shows filled circles, as the lines' points are drawn; one colour per GPU
    assert line["mark"]["point"]["filled"] is True and enc["color"]["legend"]["symbolType"] == "circle"
    assert enc["color"]["field"] == "gpu" and "shape" not in enc and "strokeDash" not in enc
    assert enc["x"]["title"] == "concurrency (requests in flight)"
    assert enc["y"]["axis"]["format"] == "~s"  # log axis: 20, 200, 2k, not 1e+15 beside 200,000,000,000
    assert charts._decode_title(decode) == "Decode speed against concurrency"


def test_why_does_not_suggest_an_fp8_kv_cache_twice():
    from llmsweep.report import _why, f_bytes

    row = {
        "bound": "memory",
        "decode_weight_fraction": 0.2,
        "bytes_per_weight": 1.0,
        "batch": 64,
        "max_batch": 128,
        "slo_batch": 64,
        "kv_precision": "fp8",
        "kv_bytes_per_element": 1.0,
    }
    assert "an fp8 KV cache halves it" not in _why(row)
    assert "(already fp8)" in _why(row)
    assert "an fp8 KV cache halves it" in _why({**row, "kv_precision": "auto", "kv_bytes_per_element": 2.0})
    # `auto` names the format the engine chose (vLLM caches an NVFP4 checkpoint's KV in fp8), not "auto"
    assert "(already fp8)" in _why({**row, "kv_precision": "auto", "kv_cache_format": "fp8"})
    assert f_bytes(80 * 2**30) == "80.0 GiB"  # memory in GiB, in tables as in charts


def test_cost_errors_name_the_offer_as_written(tmp_path):
    with pytest.raises(SpecError) as e:
        load(sweep_file(tmp_path, costs={"h200-sxm": [{"rent": float("nan")}, {"buy": 1e300}]}, horizon_years=0))
    text = str(e.value)
    assert "costs.h200-sxm[0].rent: Input should be a finite number (got nan)" in text
    assert "costs.h200-sxm[1].buy: Input should be less than or equal to 100000000 (got 1e+300)" in text
    assert "horizon_years: Input should be greater than or equal to 0.1 (got 0)" in text
    with pytest.raises(SpecError, match=r"costs.h200-sxm: Input should be a valid dictionary or instance of CostSpec"):
        load(sweep_file(tmp_path, costs={"h200-sxm": 5}))  # one offer, written without a list
    with pytest.raises(SpecError, match=r"costs: give price offers per GPU, or `example` \(got 'exampel'\)"):
        load(sweep_file(tmp_path, costs="exampel"))
