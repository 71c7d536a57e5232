"""Capacity and cost against arithmetic written out by hand."""

from __future__ import annotations

import math

import polars as pl
import pytest
import yaml

from llmsweep import finance, pipeline, plan
from llmsweep.columns import BAND_GROUPS
from llmsweep.spec import CostSpec, SloSpec, WorkloadSpec

from .conftest import ROOT, estimate_row


def frame(**over) -> pl.LazyFrame:
    """One estimated row with round numbers: 2 GPUs (tp 2) of 700 W serving 1,000 output tokens/s."""
    row = {
        "gpu": "h100-sxm",
        "gpus": 2,
        "gpus_per_node": 8,
        "scale_up_domain_gpus": 8,  # an HGX baseboard: bought 8 at a time
        "gpu_tdp_w": 700.0,
        "fits": True,
        "input_tokens": 1000,
        "output_tokens": 250,
        "output_tokens_per_s": 1000.0,
        "ttft_s": 0.5,
        "prefill_s": 0.05,
        "tpot_s": 0.04,
        "request_latency_s": 10.5,
        **over,
    }
    # the estimate's requests/s: output_tokens_per_s / output_tokens (1,000 / 250 = 4)
    row.setdefault("requests_per_s_per_replica", row["output_tokens_per_s"] / row["output_tokens"])
    # and the share of its time prompts take, as load.closed_loop gives it: 4 x 0.05 s = 0.2
    row.setdefault("prefill_fraction", row["requests_per_s_per_replica"] * row["prefill_s"])
    bands = {f"band_{g}_{e}": None for g in BAND_GROUPS for e in ("low", "high")}
    speeds = {"decode_tokens_per_s_per_seq": 25.0, "decode_tokens_per_s": 1000.0}
    frame = pl.LazyFrame([{**speeds, **row}]).with_columns(pl.col("gpu").cast(pl.Categorical))
    return frame.with_columns([pl.lit(v, dtype=pl.Float64).alias(k) for k, v in bands.items()])


def inputs(cost: CostSpec | None = None, slo=None, workload=None) -> plan.PlanInputs:
    price = plan.price_from_costs("h100-sxm", cost or CostSpec(usd_per_gpu_hour=2.5), 700.0, 8)
    return plan.PlanInputs({"h100-sxm": price}, slo, workload, "usd_per_million_output_tokens")


def test_the_prompt_share_of_the_hour_is_the_operating_points():
    """The input tokens' share of the hour is the loaded model's prefill_fraction, the same operating
    point's: each prompt charged what it adds to the decode iterations it rides in (p_mix), below its
    time alone (requests/s x prefill_s, the old upper bound) once others decode beside it. A 128-token
    prompt alone reads the 16 GB of weights (memory-bound); riding in a decode step, it adds its FLOPs."""
    est = estimate_row("default", gpu="h100-sxm", model="meta-llama/Llama-3.1-8B", batch=32, input_tokens=128)
    est = pl.LazyFrame([est]).with_columns(pl.col("gpu").cast(pl.Categorical))
    row = plan.add_plan_columns(est, inputs()).collect().row(0, named=True)
    per_hour = row["requests_per_s_per_replica"] * 3600 / 1e6
    share = row["usd_per_million_input_tokens"] * per_hour * row["input_tokens"] / row["usd_per_hour"]
    assert share == pytest.approx(row["prefill_fraction"], rel=1e-12)
    assert 0 < share < row["requests_per_s_per_replica"] * row["prefill_s"]
    hour = (
        row["usd_per_million_input_tokens"] * row["input_tokens"]
        + row["usd_per_million_decode_tokens"] * row["output_tokens"]
    ) * per_hour
    assert hour == pytest.approx(row["usd_per_hour"], rel=1e-12)


@pytest.mark.parametrize(("tokens_in", "tokens_out"), [(0, 256), (1024, 0)])
def test_without_prompt_or_output_the_other_tokens_pay_the_hour(tokens_in, tokens_out):
    # an empty prompt still costs its first forward pass (prefill_fraction > 0), but there are no
    # input tokens to charge it to: the decode tokens pay the whole hour; with no output tokens the
    # input tokens do, and there is no cost per output token (null, not infinite)
    est = estimate_row(
        "default",
        gpu="h100-sxm",
        model="meta-llama/Llama-3.1-8B",
        batch=32,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
    )
    est = pl.LazyFrame([est]).with_columns(pl.col("gpu").cast(pl.Categorical))
    row = plan.add_plan_columns(est, inputs()).collect().row(0, named=True)
    per_hour = row["requests_per_s_per_replica"] * 3600 / 1e6
    if tokens_in == 0:
        assert row["prefill_fraction"] > 0 and row["usd_per_million_input_tokens"] is None
        paid = row["usd_per_million_decode_tokens"] * tokens_out * per_hour
    else:
        assert row["usd_per_million_decode_tokens"] is None and row["usd_per_million_output_tokens"] is None
        paid = row["usd_per_million_input_tokens"] * tokens_in * per_hour
    assert paid == pytest.approx(row["usd_per_hour"], rel=1e-12)


def test_rented_cost_per_million_tokens():
    row = plan.add_plan_columns(frame(), inputs()).collect().row(0, named=True)
    # 2 GPUs x $2.50 = $5.00 per hour; 1,000 tok/s x 3,600 s = 3.6 M tokens per hour -> $1.3889 per M
    assert row["usd_per_hour"] == 5.0
    assert row["usd_per_million_output_tokens"] == pytest.approx(5.0 / (1000 * 3600) * 1e6)
    assert row["usd_per_million_output_tokens"] == pytest.approx(1.388889, abs=1e-6)
    # 1,000 / 250 = 4 requests/s x 1,000 prompt tokens = 4,000 input tokens/s; prompts hold the replica
    # 4 x 0.05 s = 20 % of the time: $5 x 0.2 / 14.4 M = $0.0694 per M (a share of the all-in output figure)
    assert row["requests_per_s_per_replica"] == 4.0
    assert row["usd_per_million_input_tokens"] == pytest.approx(5.0 * 0.2 / (4000 * 3600) * 1e6)
    # energy: 1,000 tok/s / (2 x 700 W x 0.7 average draw) = 1.0204 tokens per joule
    assert row["tokens_per_joule"] == pytest.approx(1000 / (2 * 700 * 0.7))


def test_on_demand_and_reserved_prices_are_two_offers():
    from llmsweep.finance import offers_from_costs

    offers = offers_from_costs("h100-sxm", CostSpec(usd_per_gpu_hour=2.9, usd_per_gpu_hour_reserved=2.1), 700.0, 8)
    assert [(o.offer, o.usd_per_gpu_hour, o.source) for o in offers] == [
        ("rent", 2.9, "sweep: rented (on-demand)"),
        ("rent-reserved", 2.1, "sweep: rented (reserved)"),
    ]


def test_bought_gpu_hourly_cost():
    cost = CostSpec(
        purchase_usd=35_000,
        amortization_years=4,
        power_usd_per_kwh=0.12,
        pue=1.3,
        power_utilization=0.7,
        hosting_usd_per_kw_month=150,
    )
    p = plan.price_from_costs("h200-sxm", cost, 700.0, 8)
    # amortised: 35,000 / (4 x 8,760 h) = $0.998858 per hour
    assert p.amortized == pytest.approx(35_000 / (4 * 8760))
    # power: 0.7 kW x 1.3 PUE x 0.7 utilisation x $0.12 = $0.07644 per hour
    assert p.power == pytest.approx(0.7 * 1.3 * 0.7 * 0.12)
    # hosting: $150 per kW-month x 0.91 kW / 730 h = $0.186986 per hour
    assert p.hosting == pytest.approx(150 * 0.91 / 730)
    assert p.usd_per_gpu_hour == pytest.approx(p.amortized + p.power + p.hosting)
    per_server = plan.price_from_costs("h200-sxm", CostSpec(purchase_usd_per_server=280_000), 700.0, 8)
    assert per_server.purchase_usd_per_gpu == 35_000  # 280,000 / 8 GPUs


def test_capacity():
    w = WorkloadSpec(requests_per_s=20, peak_factor=2, headroom=0.2, redundancy="n+1")
    row = plan.add_plan_columns(frame(output_tokens_per_s=750.0), inputs(workload=w)).collect().row(0, named=True)
    # per replica 750 / 250 = 3 requests/s; peak 20 x 2 = 40 requests/s
    # replicas = ceil(40 / 3 x 1.2) + 1 = ceil(16.0) + 1 = 17; GPUs 17 x 2 = 34; servers ceil(34 / 8) = 5
    assert row["replicas"] == 17 and row["gpus_needed"] == 34 and row["servers_needed"] == 5
    assert row["utilization"] == pytest.approx(20 / (17 * 3))  # average load / fleet capacity
    assert row["fleet_usd_per_month"] == pytest.approx(34 * 2.5 * 730)
    assert row["tco_usd"] == pytest.approx(34 * 2.5 * 8760 * 3)  # rented 24/7 for 3 years, no capex
    assert row["capex_usd"] == 0 and row["opex_usd_per_year"] == pytest.approx(34 * 2.5 * 8760)
    # the fleet's cost over the tokens it serves: 34 x 2.5 / (20 x 250 x 3,600) x 1e6
    assert row["fleet_usd_per_million_output_tokens"] == pytest.approx(34 * 2.5 / (20 * 250 * 3600) * 1e6)


def test_tokens_per_day_workload():
    # 43,200,000 tokens a day / 86,400 s / 250 tokens per request = 2 requests/s average
    w = WorkloadSpec(tokens_per_day=43_200_000, output_tokens=250, headroom=0)
    row = plan.add_plan_columns(frame(output_tokens_per_s=500.0), inputs(workload=w)).collect().row(0, named=True)
    assert row["replicas"] == 1  # 2 requests/s per replica covers it exactly
    assert row["utilization"] == pytest.approx(1.0)
    # the tokens are the load: a row of 250-token answers serves them as 2 requests/s whatever length
    # the workload names (at its 1,000 it would be 0.5 requests/s, a quarter of the tokens)
    w = WorkloadSpec(tokens_per_day=43_200_000, output_tokens=1000, headroom=0)
    row = plan.add_plan_columns(frame(output_tokens_per_s=500.0), inputs(workload=w)).collect().row(0, named=True)
    assert row["utilization"] == pytest.approx(1.0)


def test_slo_columns():
    slo = SloSpec(ttft_s=1.0, tpot_s=0.03)
    with_miss = plan.add_plan_columns(frame(), inputs(slo=slo)).with_columns(slo_miss=plan.slo_miss(slo))
    row = with_miss.collect().row(0, named=True)
    assert row["meets_slo"] is False
    assert row["slo_miss"] == "TPOT 40 ms > 30 ms (+33%)"  # 0.04 s against 0.03 s: 40 / 30 - 1 = 33 %
    ok_frame = plan.add_plan_columns(frame(tpot_s=0.03), inputs(slo=slo)).with_columns(slo_miss=plan.slo_miss(slo))
    ok = ok_frame.collect().row(0, named=True)
    assert ok["meets_slo"] is True and ok["slo_miss"] is None
    # a target of a second or more reads in seconds: 12.345 s rounds to 3 figures, 12.3 / 10 - 1 = 23 %
    latency = SloSpec(request_latency_s=10.0)
    late = plan.add_plan_columns(frame(request_latency_s=12.345), inputs(slo=latency))
    assert late.select(plan.slo_miss(latency)).collect().item() == "request latency 12.3 s > 10 s (+23%)"


def test_example_prices_are_dated_and_labelled(catalog):
    p = plan.example_price(catalog, "h100-sxm")
    assert p.usd_per_gpu_hour == 3.78  # the latest dated on-demand listing in the catalog
    assert p.source == "example: Lambda 1x H100 SXM, 2026-05-07"
    assert p.citation.startswith("on-demand list; https://techbytes.app/")
    assert plan.example_price(catalog, "gaudi3") is None
    # H200's June 2026 listing, quoted in the same packet.ai source as B200's $3.75 (build_catalog.py
    # PRICE_ADDITIONS), not RunPod's March one at $6.35: both GPUs priced from the same month's list
    h200, b200 = plan.example_price(catalog, "h200-sxm"), plan.example_price(catalog, "b200")
    assert (h200.usd_per_gpu_hour, b200.usd_per_gpu_hour) == (2.25, 3.75)
    assert h200.source == "example: packet.ai H200 SXM, 2026-06"


def test_break_even_when_rent_is_paid_per_hour_used():
    options = pl.DataFrame(
        {
            "model": ["m", "m"],
            "gpu": ["a", "b"],
            "offer": ["buy-4y", "rent"],
            "precision": ["fp8", "fp8"],
            "tp": [1, 1],
            "meets_slo": [True, True],
            "price_source": ["sweep: bought", "sweep: rented (on-demand)"],
            "usd_per_million_output_tokens": [0.05, 0.20],
        }
    )
    # bought costs 0.05 at full load, 0.05 / u at utilisation u; rented 0.20 per hour used: equal at u = 25 %
    assert plan.break_even(options, "m", rent_paid="per-hour-used") == (
        "Buying a buy-4y (fp8, tp1) is cheaper than renting b rent (fp8, tp1) above 25% average utilisation "
        "(rented GPUs paid only for the hours used)."
    )


@pytest.fixture(scope="module")
def procurement(procurement_run):
    return procurement_run, pl.read_csv(procurement_run.folder / "plan.csv")


def test_procurement_ranking_checks_out_from_the_csv(procurement):
    # with a workload the options are ranked by what the fleet costs over the horizon (tco_usd); the
    # fleet's cost per token and its average cost per month order them the same way
    result, table = procurement
    assert any(
        n.startswith("with a workload, options are ranked by what the fleet costs: TCO over 3 years")
        for n in result.notes
    )
    for _model, group in table.group_by(["model"]):
        eligible = group.filter(pl.col("meets_slo") & pl.col("tco_usd").is_not_null())
        best = group.filter(pl.col("rank") == 1)
        assert best["tco_usd"].item() == eligible["tco_usd"].min()
        ranked = eligible.sort("rank")
        for col in ("tco_usd", "tco_usd_per_month", "fleet_usd_per_million_output_tokens"):
            assert ranked[col].is_sorted(), col
    assert table.filter(~pl.col("meets_slo"))["rank"].is_null().all()  # never recommended


def test_slo_batch_is_the_largest_that_meets_the_targets(procurement, tmp_path):
    _, table = procurement
    ok = table.filter(pl.col("meets_slo"))
    assert (ok["tpot_s"] <= 0.05).all() and (ok["ttft_s"] <= 2.0).all()
    assert (ok["slo_batch"] <= ok["max_batch"]).all() and (ok["batch"] == ok["slo_batch"]).all()
    # one batch more breaks a target or memory: re-estimate a held-back option at slo_batch + 1
    held = ok.filter(pl.col("slo_batch") < pl.col("max_batch")).head(1)
    if held.height:
        from llmsweep.pipeline import compute
        from llmsweep.spec import load

        r = held.row(0, named=True)
        sweep_yaml = yaml.safe_load((ROOT / "sweeps" / "procurement.yaml").read_text())
        sweep_yaml["grid"].update(
            {
                "gpu": [r["gpu"]],
                "model": [r["model"]],
                "precision": [r["precision"]],
                "tp": [r["tp"]],
                "batch": [r["slo_batch"] + 1],
            }
        )
        sweep_yaml["exclude"] = []
        path = tmp_path / "slo_check.yaml"
        path.write_text(yaml.safe_dump(sweep_yaml))
        row = compute(load(path)).collect().row(0, named=True)
        assert not row["meets_slo"]


def test_unpriced_gpu_and_notes(procurement):
    result, table = procurement
    assert "no price for gaudi3: give one under costs to see its cost columns" in result.notes
    assert table.filter(pl.col("gpu") == "gaudi3")["usd_per_million_output_tokens"].is_null().all()


def test_slo_that_nothing_meets(tmp_path):
    sweep = {
        "name": "strict",
        "grid": {"gpu": ["l4"], "model": ["llama-3.1-8b"], "batch": [1, 8]},
        "slo": {"tpot_s": 0.001},
        "costs": {"l4": {"usd_per_gpu_hour": 0.8}},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep))
    result = pipeline.run(path, tmp_path / "out", formats=["csv", "md"])
    assert (
        "no option for meta-llama/Llama-3.1-8B (1024 in, 256 out) meets the latency targets at any batch; "
        "none is recommended" in result.notes
    )
    md = (tmp_path / "out" / "strict" / "report.md").read_text()
    assert "**No option meets the targets.**" in md
    assert "Best by the ranking, but misses the targets: **l4 · bf16 · tp1**" in md and ": TPOT " in md


@pytest.mark.parametrize(("l4_price", "named"), [(0.01, True), (100.0, False)])
def test_an_option_that_misses_is_named_only_if_it_beats_the_recommendation(tmp_path, l4_price, named):
    """L4 misses a 30 ms TPOT with Llama-3.1-8B at bf16 (16 GB read a step at 300 GB/s: 53 ms at the
    roofline alone); H100 meets it. At $0.01 an hour the L4 is cheaper per token than the
    recommended H100 at $3, which a buyer should hear (and why it is not recommended); at $100 an hour
    it is not, and naming it as 'the cheapest that misses' would only mislead."""
    sweep = {
        "name": "misses",
        "grid": {"gpu": ["h100-sxm", "l4"], "model": ["llama-3.1-8b"], "batch": [1, 8]},
        "slo": {"tpot_s": 0.03},
        "costs": {"h100-sxm": {"usd_per_gpu_hour": 3.0}, "l4": {"usd_per_gpu_hour": l4_price}},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep))
    pipeline.run(path, tmp_path / "out", formats=["csv", "md"])
    md = (tmp_path / "out" / "misses" / "report.md").read_text()
    assert "· **recommended**" in md
    line = "Better by the ranking than the recommendation, but misses the targets: **l4 · bf16 · tp1**"
    assert (line in md) is named and ("misses the targets:" in md) is named


def test_sensitivity_table(procurement):
    result, _ = procurement
    import json

    manifest = json.loads((result.folder / "manifest.json").read_text())
    rows = next(iter(manifest["sensitivity"].values()))
    # the efficiencies moved, named for a reader
    moved = {"memory bandwidth reached (bandwidth efficiency)", "compute reached (compute efficiency)"}
    assert {r["assumption"] for r in rows} >= moved
    assert {r["change"] for r in rows} == {"-20%", "+20%"}
    for r in rows:
        if r["column"] == "tco_usd" and r["top"] is not None and r["runner_up"] is not None:
            assert r["flips"] == (r["runner_up"] < r["top"])
    # the ranking metric is the fleet's TCO: traffic re-plans the fleet, and less traffic costs less
    traffic = {(r["column"], r["change"]): r["top"] for r in rows if r["assumption"].startswith("traffic")}
    assert set(traffic) == {("tco_usd", "-20%"), ("tco_usd", "+20%")}
    assert traffic[("tco_usd", "-20%")] < traffic[("tco_usd", "+20%")]
    # a rental's price is its rate; a purchase's 20 % moves every cost of it, and its label says so
    moved = {
        k.split("|")[0]: {r["assumption"] for r in v if r["assumption"].startswith(("price", "every cost"))}
        for k, v in manifest["sensitivity"].items()
    }
    assert moved["meta-llama/Llama-3.1-8B"] == {"price of mi300x rent"}
    assert moved["meta-llama/Llama-3.3-70B-Instruct"] == {
        "every cost of h200-sxm buy-4y (purchase, servers, power, hosting), "
        "against mi300x rent (the best option on another offer)"
    }


def test_a_price_is_weighed_against_the_best_option_on_another_offer(procurement):
    """Llama-3.3-70B's #1 and #2 are both H200s bought on the same offer: a 20 % dearer offer makes
    both dearer, so against #2 the order could never flip. The best option on another offer (MI300X
    rented) keeps its cost: #1's TCO x 1.2 is set against it, and here it overtakes."""
    import json

    result, plan_csv = procurement
    manifest = json.loads((result.folder / "manifest.json").read_text())
    rows = manifest["sensitivity"]["meta-llama/Llama-3.3-70B-Instruct|2048|512"]
    ranked = plan_csv.filter(pl.col("model") == "meta-llama/Llama-3.3-70B-Instruct", pl.col("rank").is_not_null()).sort(
        "rank"
    )
    top = ranked.row(0, named=True)
    assert (top["gpu"], top["offer"]) == ("h200-sxm", "buy-4y")
    assert (ranked["gpu"][1], ranked["offer"][1]) == ("h200-sxm", "buy-4y")  # the runner-up shares the offer
    rival = ranked.filter((pl.col("gpu") != "h200-sxm") | (pl.col("offer") != "buy-4y")).row(0, named=True)
    assert (rival["gpu"], rival["offer"]) == ("mi300x", "rent")
    price = {r["change"]: r for r in rows if r["assumption"].startswith("every cost")}
    for change, factor, flips in (("-20%", 0.8, False), ("+20%", 1.2, True)):
        assert price[change]["top"] == pytest.approx(top["tco_usd"] * factor, rel=1e-6)
        assert price[change]["runner_up"] == pytest.approx(rival["tco_usd"], rel=1e-6)
        assert price[change]["flips"] is flips


# -- capacity from the loaded figures at the traffic each replica gets (estimate/load.py, DESIGN.md §4) --
def issue_sweep(tmp_path, **slo) -> pl.DataFrame:
    """The issue's example: Llama-3.1-70B fp8 on H200 tp2 at 30 requests/s, TTFT 1.5 s / TPOT 60 ms."""
    sweep = {
        "name": "issue9",
        "grid": {
            "gpu": ["h200-sxm"],
            "model": ["meta-llama/Llama-3.1-70B"],
            "precision": ["fp8"],
            "tp": [2],
            "input_tokens": [2048],
            "output_tokens": [512],
            "batch": [1, "max"],
        },
        "workload": {"requests_per_s": 30, "headroom": 0.2},
        "slo": {"ttft_s": 1.5, "tpot_s": 0.06, **slo},
        "costs": {"h200-sxm": {"usd_per_gpu_hour": 3.5}},
    }
    path = tmp_path / "issue9.yaml"
    path.write_text(yaml.safe_dump(sweep))
    from llmsweep.spec import load

    return pipeline.compute_plan(load(path)).options


def test_plan_sizes_replicas_from_the_loaded_figures_at_their_traffic(tmp_path):
    (r,) = issue_sweep(tmp_path).to_dicts()
    assert r["meets_slo"]
    # replicas = ceil(30 x 1.2 / capacity) and each replica gets 30 / replicas requests/s
    assert r["replicas"] == pytest.approx(-(-30 * 1.2 // r["capacity_requests_per_s"]))
    assert r["offered_requests_per_s"] == pytest.approx(30 / r["replicas"])
    assert r["offered_requests_per_s"] * 1.2 <= r["capacity_requests_per_s"] * (1 + 1e-9)
    # the operating point is consistent: Little, tokens/s per user x concurrency = replica tokens/s
    assert r["concurrency"] == pytest.approx(r["offered_requests_per_s"] * r["request_latency_s"])
    assert r["decode_tokens_per_s_per_seq"] * r["concurrency"] == pytest.approx(r["output_tokens_per_s"])
    assert r["output_tokens_per_s"] == pytest.approx(r["offered_requests_per_s"] * 512)
    assert r["request_latency_s"] == pytest.approx(r["ttft_s"] + 511 * r["tpot_s"])
    # and it meets the targets it was sized for, at its share of the peak
    assert r["ttft_s"] <= 1.5 and r["tpot_s"] <= 0.06
    # cost per token is the replica's at capacity: USD/h / (capacity x 512 x 3,600) x 10^6
    assert r["usd_per_million_output_tokens"] == pytest.approx(7.0 / (r["capacity_requests_per_s"] * 512 * 3600) * 1e6)
    # tokens per joule at that same operating point: tokens/s / (2 GPUs x 700 W x 0.7 average draw)
    assert r["tokens_per_joule"] == pytest.approx(r["output_tokens_per_s"] / (2 * 700 * 0.7))


def test_a_percentile_target_needs_at_least_as_many_replicas(tmp_path):
    (mean,) = issue_sweep(tmp_path).to_dicts()
    (p99,) = issue_sweep(tmp_path, percentile="p99", ttft_s=0.5).to_dicts()
    (mean_tight,) = issue_sweep(tmp_path, ttft_s=0.5).to_dicts()
    assert p99["ttft_percentile"] == "p99" and p99["ttft_p99_s"] <= 0.5
    assert p99["capacity_requests_per_s"] <= mean_tight["capacity_requests_per_s"]
    assert p99["replicas"] >= mean_tight["replicas"] >= mean["replicas"]


def test_slo_percentile_is_validated(tmp_path):
    from llmsweep.errors import SpecError
    from llmsweep.spec import load

    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "bad",
                "grid": {"gpu": ["l4"], "model": ["llama-3.1-8b"]},
                "slo": {"ttft_s": 1, "percentile": "p95"},
            }
        )
    )
    with pytest.raises(SpecError) as e:
        load(path)
    assert "slo.percentile" in str(e.value) and "'mean', 'p90' or 'p99'" in str(e.value)


def test_procurement_recommendations_read_consistently(procurement):
    # plan.csv's operating point: tokens/s per user x concurrency = the replica's output tokens/s,
    # = offered requests/s x output tokens; requests in flight = offered requests/s x latency (Little)
    _, table = procurement
    ok = table.filter(pl.col("meets_slo"))
    assert ok.height > 0
    per_user = ok["decode_tokens_per_s_per_seq"] * ok["concurrency"] / ok["output_tokens_per_s"]
    assert per_user.is_between(0.999, 1.001).all()
    assert (ok["output_tokens_per_s"] / (ok["offered_requests_per_s"] * 512)).is_between(0.999, 1.001).all()
    assert (ok["concurrency"] / (ok["offered_requests_per_s"] * ok["request_latency_s"])).is_between(0.999, 1.001).all()
    # each replica gets its share of the peak (20 x 2 = 40 requests/s), within its capacity
    assert (ok["offered_requests_per_s"] * ok["replicas"] / 40).is_between(0.999, 1.001).all()
    assert (ok["offered_requests_per_s"] * 1.2 <= ok["capacity_requests_per_s"] * 1.000001).all()
    assert (ok["ttft_s"] <= 2.0).all() and (ok["tpot_s"] <= 0.05).all()


# -- with a workload the ranking is by what the fleet costs, and every figure agrees with it ---------------------
def test_rank_one_is_the_cheapest_fleet_that_meets_the_targets():
    """Three options built by hand, each replica one GPU serving 1 request/s (250 tokens/s), 4 requests/s
    of traffic (no peak factor, headroom or redundancy): every fleet is 4 GPUs.

    h200-sxm bought: $30,000 a GPU, a $40,000 server + $10,000 network per 8 GPUs, 4 years, a $3,000
    rack-month for 4 servers, power $0.10/kWh at PUE 1.25 and 80 % draw, host 2.4 kW per server.
      a GPU-hour: (30,000 + 50,000 / 8) / 35,040 h + (0.7 + 2.4 / 8) kW x 1.25 x 0.8 x $0.10
                  + 3,000 / (4 x 8 x 730 h) = 1.034532 + 0.1 + 0.128425 = $1.262957
      per M tokens of a full replica: 1.262957 / (250 x 3,600) x 10^6 = $1.4033 (it pays 4/8 of a server)
      the fleet: capex 4 x 30,000 + 1 whole server x 50,000 = $170,000; opex: (4 x 0.7 + 2.4) kW x 1.25 x 0.8
                 x $0.10 x 8,760 h = $4,555.20 + 1 whole rack x $3,000 x 12 = $36,000 -> $40,555.20 a year;
                 TCO 3 y = 170,000 + 3 x 40,555.20 = $291,665.60
    h100-sxm rented at $2.00: per M tokens 2 / 0.9 = $2.2222; TCO 4 x 2 x 8,760 x 3 = $210,240
    l40s rented at $0.50 misses the TPOT target (0.2 s > 0.05 s): cheapest of all, never ranked.
    Ranked by TCO the rental is first; per token of a full replica the purchase looked cheaper."""
    w = WorkloadSpec(requests_per_s=4, peak_factor=1, headroom=0, redundancy=0)
    slo = SloSpec(tpot_s=0.05)
    buy = CostSpec(
        buy=30_000,
        years=4,
        server_usd=40_000,
        network_usd_per_server=10_000,
        host_kw=2.4,
        servers_per_rack=4,
        rack_usd_per_month=3_000,
        power_usd_per_kwh=0.10,
        pue=1.25,
        power_utilization=0.8,
    )
    offers = {
        "h200-sxm": tuple(finance.offers_from_costs("h200-sxm", buy, 700.0, 8)),
        "h100-sxm": tuple(finance.offers_from_costs("h100-sxm", CostSpec(rent=2.0), 700.0, 8)),
        "l40s": tuple(finance.offers_from_costs("l40s", CostSpec(rent=0.5), 350.0, 8)),
    }
    common = {"gpus": 1, "output_tokens_per_s": 250.0, "tpot_s": 0.04}
    rows = pl.concat(
        [
            frame(gpu=g, **{**common, **over}).with_columns(pl.col("gpu").cast(pl.String))
            for g, over in (("h200-sxm", {}), ("h100-sxm", {}), ("l40s", {"tpot_s": 0.2, "gpu_tdp_w": 350.0}))
        ]
    ).with_columns(pl.col("gpu").cast(pl.Categorical))
    inputs = plan.PlanInputs(offers, slo, w, "usd_per_million_output_tokens")
    out = plan.add_plan_columns(rows, inputs, every_offer=True).collect()
    out = out.with_columns(model=pl.lit("m"), precision=pl.lit("fp8"), tp=pl.lit(1), slo_miss=pl.lit(None))
    by_gpu = {r["gpu"]: r for r in out.to_dicts()}
    assert by_gpu["h200-sxm"]["usd_per_gpu_hour"] == pytest.approx(36_250 / 35_040 + 0.1 + 3_000 / (4 * 8 * 730))
    assert by_gpu["h200-sxm"]["usd_per_million_output_tokens"] == pytest.approx(1.4033, abs=1e-4)
    assert by_gpu["h100-sxm"]["usd_per_million_output_tokens"] == pytest.approx(2.2222, abs=1e-4)
    assert by_gpu["h200-sxm"]["gpus_needed"] == by_gpu["h100-sxm"]["gpus_needed"] == 4
    assert (by_gpu["h200-sxm"]["servers_needed"], by_gpu["h200-sxm"]["racks_needed"]) == (1, 1)
    # bought a whole HGX baseboard of 8 for the 4 GPUs in use: 8 x 30,000 + 1 x (40,000 + 10,000) = 290,000
    assert by_gpu["h200-sxm"]["gpus_bought"] == 8
    assert by_gpu["h200-sxm"]["capex_usd"] == pytest.approx(290_000)
    assert by_gpu["h200-sxm"]["opex_usd_per_year"] == pytest.approx(4_555.2 + 36_000)
    assert by_gpu["h200-sxm"]["tco_usd"] == pytest.approx(411_665.6)  # 290,000 + 3 x 40,555.20
    assert by_gpu["h100-sxm"]["tco_usd"] == pytest.approx(210_240)

    column, note = plan.rank_column(out, inputs.rank_by, inputs)
    assert column == "tco_usd" and note.startswith("with a workload, options are ranked by what the fleet costs")
    ranked = {r["gpu"]: r["rank"] for r in plan.rank(out, column).to_dicts()}
    assert ranked == {"h100-sxm": 1, "h200-sxm": 2, "l40s": None}  # the cheapest fleet that meets the targets
    # every figure the reports show orders the options the same way: monthly over the horizon, per token
    assert by_gpu["h100-sxm"]["tco_usd_per_month"] == pytest.approx(210_240 / 36)  # $5,840
    assert by_gpu["h200-sxm"]["tco_usd_per_month"] == pytest.approx(411_665.6 / 36)  # $11,435.16
    # the fleet's cost per token: TCO over 4 requests/s x 250 tokens x 3 years x 8,760 h x 3,600 s
    served = 4 * 250 * 3 * 8760 * 3600 / 1e6
    assert by_gpu["h100-sxm"]["fleet_usd_per_million_output_tokens"] == pytest.approx(210_240 / served)
    assert by_gpu["h200-sxm"]["fleet_usd_per_million_output_tokens"] == pytest.approx(411_665.6 / served)
    # and the break-even sentence says the same: rent $5,840 a month, run the purchase for 40,555.20 / 12 =
    # $3,379.60: 290,000 / (5,840 - 3,379.60) = 117.9 months, beyond the 3-year horizon
    assert plan.break_even(plan.rank(out, column), "m", column) == (
        "Rented 24/7, h100-sxm rent (fp8, tp1) costs $5,840 a month; buying h200-sxm buy-4y (fp8, tp1) costs "
        "$290,000 up front and $3,380 a month to run, so it pays back after 117.9 months: longer than the "
        "3-year horizon, so renting costs less over it."
    )
    # the report's first sentence says the same: the rental first, the purchase $11,435.16 - $5,840 a month dearer
    from llmsweep.answer import answer
    from llmsweep.finance import option_rows

    ranked_rows = plan.rank(out, column).with_columns(
        fits=pl.lit(True),
        output_tokens_per_s_per_gpu=pl.lit(250.0),
        kv_precision=pl.lit("fp8"),
        kv_bytes_per_element=pl.lit(1.0),
    )
    table = option_rows(ranked_rows, column, False).to_dicts()
    workload = {"requests_per_s": 4, "peak_factor": 1}
    assert answer("org/m", 1000, 250, table, workload, {"tpot_s": 0.05}, 3, True) == (
        # the purchase's up-front cost: its 8 GPUs bought in one baseboard, 8 x $30,000 + one server $50,000
        "m at 4 requests/s with TPOT ≤ 50 ms (1,000 tokens in, 250 out): 4 × h100-sxm (fp8 weights) rented at "
        "$2.00 per GPU-hour, $5,840 a month, $210,240 over 3 years; the cheapest purchase (#2), 4 × h200-sxm (fp8 "
        "weights, 8 bought in whole units for $290,000 up front), costs $5,595 more a month."
    )
    # without a workload a replica fully loaded is what is ranked, per token: then the purchase comes first
    alone = plan.PlanInputs(offers, slo, None, "usd_per_million_output_tokens")
    single = plan.add_plan_columns(rows, alone, every_offer=True).collect().with_columns(model=pl.lit("m"))
    assert plan.rank_column(single, alone.rank_by, alone) == ("usd_per_million_output_tokens", None)
    firsts = plan.rank(single, "usd_per_million_output_tokens").filter(pl.col("rank") == 1)
    assert firsts["gpu"].cast(pl.String).to_list() == ["h200-sxm"]


def test_energy_per_option_at_its_operating_point():
    """4 replicas of one 700 W GPU, each at 250 tokens/s. Rented: 4 x 0.7 kW x 0.7 (the default average
    draw) = 1.96 kW for 1,000 tokens/s: 510.2 tokens/s per kW, 1.96 kW x 10^6 / (1,000 x 3,600) = 0.5444 kWh
    per million tokens. Bought with 2.4 kW of host per server and 80 % draw: the fleet draws 2.8 + 2.4 = 5.2 kW
    at full load (fleet_kw, and the opex bills it), but its energy per token counts the GPUs alone, as the
    rented one's and every other GPU's, so that they compare: 2.8 x 0.8 = 2.24 kW for 1,000 tokens/s, 446.4
    tokens/s per kW, 2.24 x 10^6 / (1,000 x 3,600) = 0.6222 kWh per million tokens."""
    w = WorkloadSpec(requests_per_s=4, peak_factor=1, headroom=0, redundancy=0)
    buy = CostSpec(buy=30_000, host_kw=2.4, power_utilization=0.8)
    offers = {
        "h100-sxm": (
            *finance.offers_from_costs("h100-sxm", CostSpec(rent=2.0), 700.0, 8),
            *finance.offers_from_costs("h100-sxm", buy, 700.0, 8),
        )
    }
    out = plan.add_plan_columns(
        frame(gpus=1, output_tokens_per_s=250.0), plan.PlanInputs(offers, None, w, "tco_usd"), every_offer=True
    ).collect()
    rent, bought = out.sort("offer").to_dicts()[1], out.sort("offer").to_dicts()[0]
    assert rent["offer"] == "rent" and bought["offer"].startswith("buy")
    assert rent["output_tokens_per_s_per_kw"] == pytest.approx(1000 / 1.96)
    assert rent["kwh_per_million_output_tokens"] == pytest.approx(1.96 * 1e6 / (1000 * 3600))
    assert rent["kwh_per_million_output_tokens"] == pytest.approx(0.5444, abs=1e-4)
    assert bought["fleet_kw"] == pytest.approx(5.2)
    assert bought["output_tokens_per_s_per_kw"] == pytest.approx(1000 / 2.24)
    assert bought["kwh_per_million_output_tokens"] == pytest.approx(0.6222, abs=1e-4)


def test_concurrent_users_become_requests_per_s():
    """500 users, each thinking Z = 30 s between an answer and the next question, on a row whose own
    request latency is R = 10.5 s: by the interactive response time law they send N / (Z + R) = 500 /
    40.5 = 12.346 requests/s (not 500 / 30 = 16.667: that would keep 16.667 x 10.5 = 175 in flight
    where X R = 500 x 10.5 / 40.5 = 129.6 are). Peak x 2: 1,000 users, 1,000 / 40.5 = 24.691
    requests/s; a replica serving 750 / 250 = 3 requests/s: replicas = ceil(24.691 / 3 x 1.2) =
    ceil(9.877) = 10 (no spare: redundancy 0 is the default), 20 GPUs; utilisation = average / fleet
    capacity = 12.346 / (10 x 3) = 0.4115."""
    w = WorkloadSpec(users=500, think_time_s=30, peak_factor=2, headroom=0.2)
    assert pl.select(plan.peak_requests_per_s(w, pl.lit(10.5))).item() == pytest.approx(1000 / 40.5, rel=1e-12)
    row = plan.add_plan_columns(frame(output_tokens_per_s=750.0), inputs(workload=w)).collect().row(0, named=True)
    assert row["request_latency_s"] == 10.5
    assert row["replicas"] == 10 and row["gpus_needed"] == 20
    assert row["utilization"] == pytest.approx((500 / 40.5) / (10 * 3), rel=1e-12)
    with pytest.raises(ValueError, match="users and think_time_s go together"):
        WorkloadSpec(users=500)
    with pytest.raises(ValueError, match="give exactly one of requests_per_s, tokens_per_day or users"):
        WorkloadSpec(users=500, think_time_s=30, requests_per_s=2)


def test_the_fleet_columns_are_what_fleet_columns_writes(monkeypatch):
    """plan.unsized empties exactly these for a workload no fleet can serve: the declared list must
    be what finance.fleet_columns adds to a frame."""
    from llmsweep.spec import load

    added: set[str] = set()
    real = finance.fleet_columns

    def recording(frame, *args):
        out = real(frame, *args)
        added.update(set(out.collect_schema().names()) - set(frame.collect_schema().names()))
        return out

    monkeypatch.setattr(plan.sizing, "fleet_columns", recording)  # where add_plan_columns and at_traffic look it up
    pipeline.compute_plan(load(ROOT / "sweeps" / "procurement.yaml"))
    assert added == set(finance.FLEET_COLUMNS)
    band = {"fleet_usd_per_million_output_tokens_low", "fleet_usd_per_million_output_tokens_high"}  # fleet_cost_band
    assert (
        set(plan.SIZED_COLUMNS)
        == {"replicas", "gpus_needed", "gpus_needed_low", "gpus_needed_high", "utilization"} | added | band
    )


# -- serving modes: every mode planned by its own model, the xPyD search (plan/selection.py, sizing.py, xpyd.py) --
R1 = "deepseek-ai/DeepSeek-R1"
SEARCHED = ("prefill_workers", "decode_workers")


def modes_axes(**over):
    """DeepSeek-R1 fp8 on B200, 8k in / 1k out: aggregated tp8 ep8, and disaggregated decode workers of
    tp8 ep8 beside prefill workers of the same layout; MTP off and on."""
    from llmsweep.grid import Axes, Speculation

    axes = dict(
        gpu=["b200"],
        model=[R1],
        precision=["fp8"],
        tp=[8],
        ep=[8],
        input_tokens=[8192],
        output_tokens=[1024],
        batch=["max"],
        mode=["aggregated", "disaggregated"],
        prefill_workers=[1],
        decode_workers=[2],
        speculative=[Speculation(), Speculation("mtp", 1)],
    )
    return Axes(**{**axes, **over})


def modes_inputs(**over) -> plan.PlanInputs:
    w = WorkloadSpec(requests_per_s=10, peak_factor=1.5, headroom=0.2, redundancy=0)
    price = plan.price_from_costs("b200", CostSpec(rent=5.0), 1000.0, 8)
    kw = dict(prices={"b200": price}, slo=SloSpec(ttft_s=2.0, tpot_s=0.05, percentile="p90"), workload=w)
    return plan.PlanInputs(**{**kw, "rank_by": "usd_per_million_output_tokens", **over})


def modes_options(catalog, axes=None, inputs=None) -> pl.DataFrame:
    from llmsweep.grid import grid_parts

    parts = grid_parts(catalog, axes or modes_axes(), catalog.profile("default"))
    return plan.options(parts.options(), inputs or modes_inputs())


def test_each_mode_is_planned_by_its_own_model(catalog):
    """A frame mixing modes: each row's operating point is its mode's (estimate/modes.py), the same as
    planning its mode's rows alone; a disaggregated replica holds y x max_batch sequences."""
    from llmsweep.grid import grid_parts

    mixed = modes_options(catalog)
    assert sorted(mixed["mode"].cast(pl.String).unique()) == ["aggregated", "disaggregated"]
    for mode in ("aggregated", "disaggregated"):
        alone = modes_options(catalog, modes_axes(mode=[mode]))
        got = mixed.filter(pl.col("mode") == mode).sort("speculative")
        want = alone.sort("speculative")
        for col in ("slo_batch", "capacity_requests_per_s", "ttft_p90_s", "tpot_s", "replicas", "tco_usd"):
            assert got[col].to_list() == want[col].to_list(), col
    dis = mixed.filter(pl.col("mode") == "disaggregated").row(0, named=True)
    # 8 + 2 x 8 GPUs span three HGX B200 servers: the KV cache crosses the NICs
    assert dis["prefill_utilization"] is not None and dis["kv_link"] == "scale-out"
    # the largest batch that meets the targets, up to the replica's KV capacity (2 decode workers x max_batch)
    base = grid_parts(catalog, modes_axes(mode=["disaggregated"]), catalog.profile("default")).options().collect()
    holds = base.select(plan.selection.replica_max_batch()).to_series()
    assert holds.to_list() == (base["max_batch"] * 2).to_list()
    batch = plan.slo_batch(base, modes_inputs().slo)
    assert (batch <= holds).all() and (batch > 0).all()


def test_a_disaggregated_option_sized_at_the_workload(catalog):
    """1P2D of tp8 ep8 workers on B200 at $5 a GPU-hour: 8 + 2 x 8 = 24 GPUs, $120 an hour. Its capacity is
    the largest Poisson rate at which the disaggregated open loop meets p90 TTFT 2 s and TPOT 50 ms;
    replicas = ceil(10 x 1.5 x 1.2 / capacity); each replica then gets 15 / replicas requests/s, and its
    prefill pool is busy that x p / (1 prefill worker x 1 attention group). The hour splits by pool:
    8 / 24 of it prices the input tokens, 16 / 24 the output tokens (at capacity)."""
    from llmsweep.estimate import disaggregated

    out = modes_options(catalog).filter((pl.col("mode") == "disaggregated") & (pl.col("speculative") == "none"))
    (r,) = out.to_dicts()
    assert (r["prefill_workers"], r["decode_workers"], r["prefill_pool_gpus"], r["decode_pool_gpus"]) == (1, 2, 8, 16)
    assert r["gpus"] == 24 and r["usd_per_hour"] == pytest.approx(120.0)
    assert r["meets_slo"]
    cap = r["capacity_requests_per_s"]
    assert r["replicas"] == math.ceil(15 * 1.2 / cap) and r["gpus_needed"] == 24 * r["replicas"]
    assert r["fleet_gpus"] == r["gpus_needed"] and r["tco_usd"] == pytest.approx(r["gpus_needed"] * 5 * 8760 * 3)
    assert r["offered_requests_per_s"] == pytest.approx(15 / r["replicas"])
    assert r["prefill_utilization"] == pytest.approx(r["offered_requests_per_s"] * r["prefill_first_token_s"])
    # capacity is where the targets stop holding: met just below it, missed (or saturated) just above
    row = out.drop("saturated", strict=False)
    for rate, meets in ((cap * 0.999, True), (cap * 1.001, False)):
        at = disaggregated.open_loop(row.lazy(), pl.lit(rate)).collect().row(0, named=True)
        ok = not at["saturated"] and at["ttft_p90_s"] <= 2.0 and at["tpot_s"] <= 0.05
        assert ok == meets
    # the cost per token type, at capacity: input 120 x 8/24 / (cap x 8,192 x 3,600) x 10^6, decode
    # 120 x 16/24 / (cap x 1,024 x 3,600) x 10^6, and the two add up to the hour
    per_hour = cap * 3600 / 1e6
    assert r["usd_per_million_input_tokens"] == pytest.approx(40.0 / (per_hour * 8192))
    assert r["usd_per_million_decode_tokens"] == pytest.approx(80.0 / (per_hour * 1024))
    assert r["usd_per_million_output_tokens"] == pytest.approx(120.0 / (per_hour * 1024))
    hour = (r["usd_per_million_input_tokens"] * 8192 + r["usd_per_million_decode_tokens"] * 1024) * per_hour
    assert hour == pytest.approx(120.0)


def toy_pairs(pairs) -> pl.DataFrame:
    """test_serving_modes' toy replica (decode step 10 ms + 0.5 ms x b per worker, k = 100 steps after the
    first token, prefill p = 100 ms, no KV transfer, 8 GPUs a worker, room for a million sequences a
    worker) with each (x, y) of `pairs`."""
    from .test_serving_modes import toy_disaggregated

    rows = [
        toy_disaggregated(prefill_workers=x, decode_workers=y, kv_transfer_s=0.0, max_batch=10**6) for x, y in pairs
    ]
    text = {"gpu": "toy", "engine": "vllm", "model": "m", "precision": "fp8", "kv_precision": "auto"}
    text |= {"mode": "disaggregated", "speculative": "none", "layout_reason": None, "draft_model": None}
    return pl.concat(rows, how="diagonal_relaxed").with_columns(
        *(pl.lit(v, pl.Categorical).alias(k) for k, v in text.items()),
        tp=pl.lit(8),
        pp=pl.lit(1),
        ep=pl.lit(1),
        prefill_dp_attention=pl.lit(1),
        prefill_memory_per_gpu_bytes=pl.lit(0.0),
        prefill_usable_memory_bytes=pl.lit(1.0),
        context_tokens=pl.col("input_tokens") + pl.col("output_tokens"),
        max_context_tokens=pl.lit(None, pl.Int64),
        acceptance_rate=pl.lit(None, pl.Float64),
        given_tokens_per_step=pl.lit(None, pl.Float64),
        prefix_hit_rate=pl.lit(0.0),
        prefix_shared=pl.lit(False),
    )


def test_the_xpyd_search_picks_the_cheapest_ratio_by_hand():
    """Without latency targets a replica's capacity is where a pool saturates: x prefill workers of
    p = 0.1 s take x / p = 10 x requests/s; y decode workers, each step 10 ms + 0.5 ms per sequence and
    101 steps a request, take y / (101 x 0.0005 s) = 19.80 y. For 48 requests/s (no peak, headroom or
    spare) a fleet is ceil(48 / min(10 x, 19.80 y)) replicas of 8 (x + y) GPUs, x + y <= 9 (72 GPUs):
      1P1D 5 x 16 = 80, 2P1D 3 x 24 = 72, 3P2D 2 x 40 = 80, 4P2D 2 x 48 = 96, 5P3D 1 x 64 = 64,
      6P3D 1 x 72 = 72, 5P4D 1 x 72 = 72: 5P3D is the cheapest fleet (balanced pools, 50 and 59.4
      requests/s, in one replica)."""
    pairs = [(x, y) for x in range(1, 17) for y in range(1, 17) if 8 * (x + y) <= 72]
    frame = toy_pairs(pairs)
    w = WorkloadSpec(requests_per_s=48, peak_factor=1, headroom=0, redundancy=0)
    inputs = plan.PlanInputs({}, None, w, "tco_usd", worker_search=SEARCHED)
    bound = frame.select(plan.capacity_bound(None)).to_series()
    cap = {p: min(10 * p[0], p[1] / (101 * 0.0005)) for p in pairs}
    assert bound.to_list() == pytest.approx([cap[p] for p in pairs], rel=1e-12)  # tight here: pools apart
    fleet = {p: math.ceil(48 / c) * 8 * sum(p) for p, c in cap.items()}
    assert min(fleet, key=lambda p: (fleet[p], sum(p), p)) == (5, 3)
    chosen, stats = plan.search(frame, inputs)
    assert chosen.select("prefill_workers", "decode_workers").rows() == [(5, 3)]
    assert (stats.decode_options, stats.candidates) == (1, len(pairs)) == (1, 36)
    assert stats.evaluated < stats.candidates  # candidates whose bound exceeds 64 GPUs are never evaluated
    # and its exact capacity is the prefill pool's 50 requests/s (bisected: within 2^-30 of x / p)
    assert plan.xpyd.disaggregated_capacity(chosen, None).item() == pytest.approx(50.0, rel=1e-6)
    # rent paid per hour used costs GPU-seconds: 8 (x + y) / capacity, least at the balanced 2:1 pools,
    # 24 / 19.80 = 1.212 (4P2D and 6P3D tie with it; the smaller replica wins), so that pair is kept too
    from dataclasses import replace

    hourly, _ = plan.search(frame, replace(inputs, rent_paid="per-hour-used"))
    assert sorted(hourly.select("prefill_workers", "decode_workers").rows()) == [(2, 1), (5, 3)]


def search_sweep(catalog):
    """DeepSeek-R1 fp8 on H200 (8-GPU NVLink, NICs between servers) and GB200 NVL72, decode and prefill
    workers of tp8 ep8 or dp-attn8 ep8, at 10 requests/s (peak x 1.5, 20 % headroom), p90 TTFT 2 s, TPOT 50 ms."""
    from llmsweep.grid import Axes, grid_parts

    axes = Axes(
        gpu=["h200-sxm", "gb200"],
        model=[R1],
        precision=["fp8"],
        tp=[1, 8],
        dp_attention=[1, 8],
        ep=[8],
        input_tokens=[8192],
        output_tokens=[1024],
        batch=["max"],
        mode=["disaggregated"],
    )
    exclude = ({"tp": (1,), "dp_attention": (1,)}, {"tp": (8,), "dp_attention": (8,)})
    parts = grid_parts(catalog, plan.search_axes(axes, SEARCHED), catalog.profile("default"), exclude)
    price = {g: plan.price_from_costs(g, CostSpec(rent=5.0), 1000.0, 8) for g in ("h200-sxm", "gb200")}
    w = WorkloadSpec(requests_per_s=10, peak_factor=1.5, headroom=0.2, redundancy=0)
    slo = SloSpec(ttft_s=2.0, tpot_s=0.05, percentile="p90")
    inputs = plan.PlanInputs(price, slo, w, "usd_per_million_output_tokens", worker_search=SEARCHED)
    return plan.candidates(parts, SEARCHED).collect(), inputs


def test_the_xpyd_search_finds_what_evaluating_every_pair_finds(catalog):
    """Branch and bound against brute force: every candidate planned, the fewest fleet GPUs per decode
    option (then the smaller replica, then fewer prefill workers) is the pair the search keeps."""
    from dataclasses import replace

    cands, inputs = search_sweep(catalog)
    every = plan.options(cands.drop("_decode_option").lazy(), replace(inputs, worker_search=()))
    every = every.filter(pl.col("offer").is_not_null())
    key = ["gpu", "tp", "dp_attention"]
    want = (
        every.filter(pl.col("meets_slo"))
        .sort([*key, "gpus_needed", "gpus", "prefill_workers", "decode_workers"])
        .group_by(key, maintain_order=True)
        .first()
        .select(*key, "gpus_needed", "gpus", "prefill_workers", "decode_workers")
    )
    chosen, stats = plan.search(cands, inputs)
    got = plan.options(chosen.lazy(), inputs).filter(pl.col("meets_slo")).sort(key)
    got = got.select(*key, "gpus_needed", "gpus", "prefill_workers", "decode_workers")
    assert want.height >= 3 and got.equals(want.sort(key))
    assert stats.evaluated < stats.candidates
    # no pair beyond the budget, and the searched pairs do exist (e.g. more than 3 prefill workers)
    assert (cands["gpus"] <= plan.MAX_REPLICA_GPUS).all() and cands["prefill_workers"].max() >= 4


def test_the_capacity_bound_is_never_below_the_capacity(catalog):
    """Pruning is safe only if capacity_bound is an upper bound: checked against the bisected capacity
    of every candidate, with and without latency targets."""
    cands, inputs = search_sweep(catalog)
    for slo in (inputs.slo, None, SloSpec(ttft_s=1.0, request_latency_s=30.0)):
        rows = cands.filter(plan.xpyd.runnable())
        exact = plan.xpyd.disaggregated_capacity(rows, slo)
        bound = rows.select(plan.capacity_bound(slo)).to_series()
        assert (exact <= bound * (1 + 1e-9)).all()
        assert (exact > 0).any() and ((bound == 0) <= (exact == 0)).all()


def test_the_worker_counts_a_sweep_leaves_to_the_plan(tmp_path):
    """Each worker count the grid does not list is searched (1..16 within 72 GPUs); listed ones are used
    as given; a grid without mode disaggregated searches nothing."""
    from llmsweep.spec import load

    def searched(**grid) -> tuple[str, ...]:
        sweep = {"name": "s", "grid": {"gpu": ["b200"], "model": [R1], "precision": ["fp8"], "tp": [8], **grid}}
        path = tmp_path / "s.yaml"
        path.write_text(yaml.safe_dump(sweep))
        return plan.plan_inputs(load(path)).worker_search

    assert searched() == ()
    assert searched(mode=["aggregated", "disaggregated"]) == SEARCHED
    assert searched(mode=["disaggregated"], prefill={"workers": [1]}) == ("decode_workers",)
    assert searched(mode=["disaggregated"], prefill={"tp": [8]}) == SEARCHED  # a layout, no worker list
    assert searched(mode=["disaggregated"], prefill={"workers": [1, 2]}, decode={"workers": [2]}) == ()


def test_a_disaggregated_option_estimated_again_from_its_own_facts(catalog):
    """Sensitivity re-estimates options of both modes (robustness.reestimated): unmoved, a disaggregated
    option comes back with the same pools, prefill worker and KV transfer; a slower GPU slows its prefill."""
    from llmsweep.grid import grid_parts
    from llmsweep.plan.robustness import reestimated

    axes = modes_axes(prefill_workers=[2], decode_workers=[3])
    base = grid_parts(catalog, axes, catalog.profile("default")).options().collect()
    again = reestimated(base)
    cols = ["mode", "gpus", "prefill_pool_gpus", "prefill_first_token_s", "kv_transfer_s", "first_token_s", "max_batch"]
    assert again.select(cols).equals(base.select(cols))
    slower = reestimated(base.with_columns(pl.col("compute_efficiency") * 0.8))
    dis = pl.col("mode") == "disaggregated"
    assert (slower.filter(dis)["prefill_first_token_s"] > base.filter(dis)["prefill_first_token_s"]).all()


def test_a_disaggregated_row_takes_its_own_band_and_an_aggregated_one_the_aggregated_band():
    # TTFT 0.5 s. Aggregated prefill band [0.5, 2]: TTFT from 0.25 s to 1 s. Disaggregated band
    # [0.1, 2.5]: TTFT from 0.2 s to 5 s. A disaggregated row of a profile without its own band uses
    # the aggregated one.
    bands = {"band_prefill_low": 0.5, "band_prefill_high": 2.0}
    own = {"band_disaggregated_prefill_low": 0.1, "band_disaggregated_prefill_high": 2.5}

    def ttft(mode: str, with_own: bool) -> tuple[float, float]:
        values = {**bands, **(own if with_own else {})}
        f = frame(mode=mode, prefill_pool_gpus=1).with_columns(
            pl.col("mode").cast(pl.Categorical), *[pl.lit(v).alias(k) for k, v in values.items()]
        )
        row = plan.add_plan_columns(f, inputs()).collect().row(0, named=True)
        return row["ttft_s_low"], row["ttft_s_high"]

    assert ttft("aggregated", True) == pytest.approx((0.25, 1.0))
    assert ttft("disaggregated", True) == pytest.approx((0.2, 5.0))
    assert ttft("disaggregated", False) == pytest.approx((0.25, 1.0))


def test_the_serving_docs_example_is_what_the_plan_gives(tmp_path):
    """docs/serving.md quotes this plan's figures by hand; a refit must not leave them behind."""
    import re

    from .conftest import ROOT

    text = " ".join((ROOT / "docs" / "serving.md").read_text().split())
    m = re.search(
        r"holds the targets up to ([\d.]+) requests/s, (\d+) replicas \((\d+) GPUs\).*? runs ([\d.]+) requests at "
        r"once: TTFT ([\d.]+) s \(p90 ([\d.]+) s\), (\d+) ms per token, ([\d.]+) tokens/s per user",
        text,
    )
    assert m, "docs/serving.md: the plan example's sentence is not found"
    (r,) = issue_sweep(tmp_path).to_dicts()
    got = (
        f"{r['capacity_requests_per_s']:.2f}",
        str(r["replicas"]),
        str(r["gpus_needed"]),
        f"{r['concurrency']:.1f}",
        f"{r['ttft_s']:.2f}",
        f"{r['ttft_p90_s']:.2f}",
        f"{r['tpot_s'] * 1e3:.0f}",
        f"{r['decode_tokens_per_s_per_seq']:.1f}",
    )
    assert m.groups() == got


def test_energy_per_token_is_billed_on_the_average_traffic():
    """The fleet is sized for the peak but draws its average power around the clock, as the opex bills
    it. 2 requests/s on average, peak x 2 = 4: 4 replicas of one 700 W GPU (each 1 request/s = 250
    tokens/s) draw 4 x 0.7 kW x 0.7 = 1.96 kW for the 2 x 250 = 500 tokens/s they serve on average:
    255.1 tokens/s per kW, 1.96 x 10^6 / (500 x 3,600) = 1.0889 kWh per million tokens (at the peak's
    1,000 tokens/s it would read half that). A year: 1.96 kW x 8,760 h = 17,169.6 kWh for
    500 x 3,600 x 8,760 = 15,768 M tokens, the same 1.0889."""
    w = WorkloadSpec(requests_per_s=2, peak_factor=2, headroom=0, redundancy=0)
    offers = {"h100-sxm": finance.offers_from_costs("h100-sxm", CostSpec(rent=2.0), 700.0, 8)}
    (row,) = (
        plan.add_plan_columns(
            frame(gpus=1, output_tokens_per_s=250.0), plan.PlanInputs(offers, None, w, "tco_usd"), every_offer=True
        )
        .collect()
        .to_dicts()
    )
    assert row["replicas"] == 4
    assert row["output_tokens_per_s_per_kw"] == pytest.approx(500 / 1.96)
    assert row["kwh_per_million_output_tokens"] == pytest.approx(1.96 * 8760 / (500 * 3600 * 8760 / 1e6))
    assert row["kwh_per_million_output_tokens"] == pytest.approx(1.0889, abs=1e-4)


def test_the_verdict_says_when_the_runner_up_costs_less():
    """Ranked by speed, the runner-up may be the cheaper fleet: 4 x h200 at $10,220 a month first, the
    runner-up 5 x h100 at $9,818 costs $402 less, not "the same"."""
    from llmsweep.answer import answer

    def option(gpu, n, month, rank):
        return {
            "gpu": gpu,
            "gpus_needed": n,
            "gpus": n,
            "rank": rank,
            "offer": "rent",
            "tco_usd_per_month": month,
            "tco_usd": month * 36,
            "price_source": "sweep: rented",
            "usd_per_million_output_tokens": 1.0,
        }

    offers = [option("h200-sxm", 4, 10_220.0, 1), option("h100-sxm", 5, 9_818.0, 2)]
    text = answer("m", 1000, 250, offers, {"requests_per_s": 4}, None, 3, fleets=True)
    assert text.endswith("the runner-up (#2), 5 × h100-sxm rented, costs $402 less a month."), text
    offers[1]["tco_usd_per_month"] = 10_220.0
    assert answer("m", 1000, 250, offers, {"requests_per_s": 4}, None, 3, fleets=True).endswith("costs the same.")


def test_without_a_workload_the_month_is_on_the_per_token_basis():
    """One bought GPU at $1.512 an hour (its share of the server and rack) fully loaded: the sentence's
    month is 1.512 x 730 = $1,104, the basis of its cost per token, not the $6,351 a fleet of one whole
    server and rack would cost."""
    from llmsweep.answer import answer

    best = {
        "gpu": "h100-sxm",
        "gpus": 1,
        "rank": 1,
        "offer": "buy-4y",
        "price_source": "sweep: bought",
        "usd_per_hour": 1.512,
        "usd_per_million_output_tokens": 0.0473,
        "tco_usd_per_month": 6_351.0,
    }
    text = answer("m", 1000, 250, [best], None, None, 3, fleets=False)
    assert "$0.0473 per million output tokens with one replica fully loaded ($1,104 a month)" in text, text


def test_a_grid_without_max_admits_no_more_than_its_batches(tmp_path):
    """`batch: [1]` is a single-user plan: with a workload each replica runs at most one request at a
    time, so its capacity is at most 1 / request latency (Little, 1 in flight), not the dozens in flight
    the open loop would otherwise admit."""
    sweep = {
        "name": "single",
        "grid": {"gpu": ["h100-sxm"], "model": ["meta-llama/Llama-3.1-8B"], "precision": ["fp8"], "batch": [1]},
        "workload": {"requests_per_s": 10, "headroom": 0.2},
        "slo": {"tpot_s": 0.05},
        "costs": {"h100-sxm": {"usd_per_gpu_hour": 2.0}},
    }
    path = tmp_path / "single.yaml"
    path.write_text(yaml.safe_dump(sweep))
    from llmsweep.spec import load

    (r,) = pipeline.compute_plan(load(path)).options.to_dicts()
    assert r["concurrency"] <= 1 + 1e-9
    assert r["capacity_requests_per_s"] * r["request_latency_s"] <= 1 + 1e-6
    assert r["replicas"] == pytest.approx(-(-10 * 1.2 // r["capacity_requests_per_s"]))
    assert r["replicas"] >= 10 * 1.2 * r["request_latency_s"]  # 12 requests/s x latency in flight, one a replica


def test_the_grid_cap_leaves_the_engine_limit_in_plan_csv(tmp_path):
    """The grid's cap sizes the plan but is not the engine's limit: plan.csv's `max_running_requests`
    (an integer per attention-DP rank) stays the profile's, here vLLM's 1,024 on H100 — a capped
    1 / dp_attention would be written 0.125 and read by the report as "KV cache only"."""
    sweep = {
        "name": "single",
        "grid": {
            "gpu": ["h100-sxm"],
            "model": ["meta-llama/Llama-3.1-8B"],
            "precision": ["fp8"],
            "batch": [1],
            "engine": ["vllm"],
        },
        "workload": {"requests_per_s": 10},
    }
    path = tmp_path / "single.yaml"
    path.write_text(yaml.safe_dump(sweep))
    from llmsweep.spec import load

    options = pipeline.compute_plan(load(path)).options
    assert options.schema["max_running_requests"] == pl.Int64
    assert options["max_running_requests"].to_list() == [1024]
    assert options["concurrency"][0] <= 1 + 1e-9


def test_a_tie_in_cost_goes_to_the_option_with_more_capacity_per_gpu():
    """Two 8-GPU fleets at the same TCO (rack-scale: b200 dp-attn8 ep1 at 13.54 requests/s a replica
    against ep8 at 16.45): the one with more capacity per GPU, 16.45 / 8 = 2.06 against 1.69, ranks
    first whatever the sweep's order; without capacity the sweep's order stands."""
    rows = pl.DataFrame(
        {
            "model": ["m"] * 3,
            "input_tokens": [1024] * 3,
            "output_tokens": [256] * 3,
            "meets_slo": [True] * 3,
            "tco_usd": [2_518_675.0, 2_518_675.0, 3_000_000.0],
            "capacity_requests_per_s": [13.54, 16.45, 40.0],
            "gpus": [8, 8, 16],
            "ep": [1, 8, 8],
        }
    )
    ranked = plan.rank(rows, "tco_usd").sort("rank")
    assert ranked["ep"].to_list() == [8, 1, 8] and ranked["gpus"].to_list() == [8, 8, 16]
    assert plan.rank(rows.drop("capacity_requests_per_s"), "tco_usd").sort("rank")["ep"].to_list() == [1, 8, 8]
