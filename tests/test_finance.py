"""Offers, capex, opex, TCO, racks and rent-or-buy against arithmetic written out by hand."""

from __future__ import annotations

import pytest
import yaml

from llmsweep import finance, plan
from llmsweep.errors import SpecError
from llmsweep.spec import CostSpec, WorkloadSpec, load

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
    # servers ceil(34 / 8) = 5; racks ceil(5 / 3) = 2
    assert row["servers_needed"] == 5 and row["racks_needed"] == 2
    # IT power: 34 GPUs x 0.7 kW + 5 servers x 2.4 kW = 23.8 + 12 = 35.8 kW
    assert row["fleet_kw"] == pytest.approx(35.8)
    # capex: 34 x 30,000 + 5 x (40,000 + 10,000) = 1,020,000 + 250,000 = 1,270,000
    assert row["capex_usd"] == pytest.approx(1_270_000)
    # opex: power 35.8 kW x 1.25 x 0.8 x $0.10 x 8,760 h = 31,360.80; racks 2 x $2,000 x 12 = 48,000
    assert row["opex_usd_per_year"] == pytest.approx(31_360.8 + 48_000)
    # TCO over 3 years: 1,270,000 + 3 x 79,360.80 = 1,508,082.40
    assert row["tco_usd"] == pytest.approx(1_508_082.4)
    # amortised per month: (1,270,000 / 4 + 79,360.80) / 12 = 33,071.73
    assert row["fleet_usd_per_month"] == pytest.approx((317_500 + 79_360.8) / 12)
    # over 5 years: 1,270,000 + 5 x 79,360.80 = 1,666,804
    assert fleet_row(BUY, horizon=5)["tco_usd"] == pytest.approx(1_666_804)


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
    # one replica of 2 GPUs: 1 server, 1 rack; capex 2 x 30,000 + 50,000 = 110,000
    assert (row["servers_needed"], row["racks_needed"]) == (1, 1)
    assert row["capex_usd"] == pytest.approx(110_000)


def test_break_even_when_rent_is_paid_24_7():
    import polars as pl

    bought, rented = fleet_row(BUY), fleet_row(CostSpec(rent=2.5))
    rows = pl.DataFrame([bought, rented]).with_columns(
        model=pl.lit("m"), precision=pl.lit("fp8"), tp=pl.lit(2), meets_slo=pl.lit(True), horizon_years=pl.lit(3.0)
    )
    # rent 744,600 / 12 = 62,050 a month; the bought fleet runs for 79,360.80 / 12 = 6,613.40 a month:
    # 1,270,000 / (62,050 - 6,613.40) = 22.9 months
    assert plan.break_even(rows, "m") == (
        "Rented 24/7, h100-sxm rent (fp8, tp2) costs $62,050 a month; buying h100-sxm buy-4y (fp8, tp2) costs "
        "$1,270,000 up front and $6,613 a month to run, so it pays back after 22.9 months."
    )
    pricier = rows.with_columns(horizon_years=pl.lit(1.0))
    assert plan.break_even(pricier, "m").endswith(
        "22.9 months: longer than the 1-year horizon, so renting costs less over it."
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
    assert [o.offer for o in inputs.offers["h200-sxm"]] == ["rent", "rent-1y-reserved", "buy-5y", "neo-cloud", "example"]
    assert [o.offer for o in inputs.offers["rtx-4090"]] == ["rent", "rent-reserved"]


def test_repeated_offer_ids_are_an_error(tmp_path):
    with pytest.raises(SpecError, match="offer id 'rent' repeats offer 0: give each offer its own `name:`"):
        load(sweep_file(tmp_path, costs={"h200-sxm": [{"rent": 3.5}, {"rent": 3.0}]}))
    with pytest.raises(SpecError, match="an offer either rents or buys"):
        load(sweep_file(tmp_path, costs={"h200-sxm": {"rent": 3.5, "buy": 30_000}}))


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
