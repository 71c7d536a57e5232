"""Traffic from users who think between requests (plan/closed_loop.py): each option is sized for the
users' own rate, N' / (Z + R), R its request latency at the operating point its fleet runs at, so that
requests/s x latency = requests in flight <= users. Against arithmetic written out by hand."""

from __future__ import annotations

import math

import polars as pl
import pytest

from llmsweep import pipeline, plan
from llmsweep.answer import traffic_statement, users_rate_text
from llmsweep.estimate import load as loaded
from llmsweep.grid import Axes, grid_parts
from llmsweep.plan.robustness import moved_traffic
from llmsweep.report import workload_defaults
from llmsweep.spec import CostSpec, SloSpec, WorkloadSpec, load

P = 10.0  # s: the toy's prompt, prefilled alone


def toy(catalog) -> pl.DataFrame:
    """Llama-3.1-8B bf16 on one H100, 1,024 tokens in and 1 out, with its prefill set to P = 10 s and
    no request overhead. One output token means no decode phase (S_out - 1 = 0 steps), so the open
    loop's request latency is its TTFT, an M/D/1 prefill queue (load.open_loop, step 4: rho = lambda P,
    W = rho P / (2 (1 - rho))): R(lambda) = P + lambda P^2 / (2 (1 - lambda P))."""
    axes = Axes(
        gpu=["h100-sxm"],
        model=["meta-llama/Llama-3.1-8B"],
        precision=["bf16"],
        input_tokens=[1024],
        output_tokens=[1],
        batch=["max"],
    )
    base = grid_parts(catalog, axes, catalog.profile("default")).options().collect()
    return base.with_columns(prefill_s=pl.lit(P), first_token_s=pl.lit(P), request_overhead_s=pl.lit(0.0))


def md1(rate: float) -> float:
    """The toy's request latency at `rate` requests/s a replica, by hand."""
    return P + rate * P**2 / (2 * (1 - rate * P))


def toy_plan(workload: WorkloadSpec) -> plan.PlanInputs:
    """Mean TTFT <= 15 s, rented at $2 a GPU-hour."""
    price = plan.price_from_costs("h100-sxm", CostSpec(rent=2.0), 700.0, 8)
    return plan.PlanInputs({"h100-sxm": price}, SloSpec(ttft_s=15.0), workload, "tco_usd")


def test_the_toy_latency_is_an_md1_queue(catalog):
    """At 0.02 requests/s: rho = 0.2, R = 10 + 0.02 x 100 / (2 x 0.8) = 11.25 s; alone, 10 s."""
    rows = toy(catalog)
    for rate, want in ((0.0, 10.0), (0.02, 11.25)):
        got = loaded.open_loop(rows.lazy(), pl.lit(rate)).collect()["request_latency_s"].item()
        assert got == pytest.approx(want, rel=1e-12) and got == pytest.approx(md1(rate), rel=1e-12)


def test_users_are_sized_at_their_own_rate(catalog):
    """N = 200 users, Z = 5 s, headroom 0.2, no spare, on the toy (R(lambda) = 10 + 100 lambda / (2 (1 -
    10 lambda))):

    - capacity: TTFT <= 15 s holds up to lambda P = 1/2, 0.05 requests/s (10 + 0.05 x 100 / (2 x 0.5) =
      15); with headroom a replica runs at most 0.05 / 1.2 = 1/24 requests/s, where R = 10 + (100 / 24)
      / (2 x 7/12) = 10 + 25/7 = 95/7 = 13.571 s;
    - replicas: n of them carry the users when what the users send at that R, 200 / (5 + 95/7) = 1,400 /
      130 = 10.769 requests/s, is at most n / 24: n >= 258.46, so 259 (258 carry 10.75, too few);
    - the rate: with y = lambda P per replica, X = 259 y / 10 = 25.9 y and X (Z + R) = N:
      25.9 y (15 + 5 y / (1 - y)) = 200, i.e. 259 y^2 - 588.5 y + 200 = 0, y = (588.5 - sqrt(139,132.25))
      / 518 = 0.416015, X = 10.7748 requests/s, R = 10 (1 + y / (2 (1 - y))) = 13.5619 s;
    - in flight: X R = N - Z X = 200 - 53.87 = 146.13 <= 200."""
    r = plan.options(toy(catalog).lazy(), toy_plan(WorkloadSpec(users=200, think_time_s=5))).row(0, named=True)
    y = (588.5 - math.sqrt(588.5**2 - 4 * 259 * 200)) / 518
    x, latency = 25.9 * y, P * (1 + y / (2 * (1 - y)))
    assert r["capacity_requests_per_s"] == pytest.approx(0.05, rel=1e-6)
    assert r["meets_slo"] and r["replicas"] == 259 and r["gpus_needed"] == 259
    # (a) the rate sized for is the users' own at the latency the fleet runs at
    assert r["peak_requests_per_s"] == pytest.approx(x, rel=1e-9)
    assert r["request_latency_s"] == pytest.approx(latency, rel=1e-9)
    assert r["peak_requests_per_s"] == pytest.approx(200 / (5 + r["request_latency_s"]), rel=1e-9)
    # (c) Little's law at the operating point: each replica's rate x latency = its concurrency, and the
    # replicas share the peak
    assert r["offered_requests_per_s"] == pytest.approx(x / 259, rel=1e-9)
    assert r["request_latency_s"] == pytest.approx(md1(r["offered_requests_per_s"]), rel=1e-12)
    assert r["concurrency"] == pytest.approx(r["offered_requests_per_s"] * r["request_latency_s"], rel=1e-12)
    assert r["replicas"] * r["offered_requests_per_s"] == pytest.approx(r["peak_requests_per_s"], rel=1e-12)
    # (b) never more in flight than users: X R = 200 - 5 X
    in_flight = r["replicas"] * r["concurrency"]
    assert in_flight <= 200 and in_flight == pytest.approx(200 - 5 * x, rel=1e-9)
    assert in_flight == pytest.approx(146.13, abs=0.01)
    # average traffic = peak / peak_factor (1 here): utilisation = X / (259 x capacity)
    assert r["utilization"] == pytest.approx(x / (259 * r["capacity_requests_per_s"]), rel=1e-12)


def test_users_never_have_more_in_flight_than_there_are_users(catalog):
    """The review's case: sized at lambda = N / Z = 200 / 5 = 40 requests/s, the toy needed ceil(40 x
    1.2 / 0.05) = 960 replicas (961 at the bisected capacity, just under 0.05), each at 1/24
    requests/s and R = 13.57 s: 40 x 13.57 = 543 requests in flight for 200 users, which R > Z makes
    impossible. Sized at the users' own rate, X R <= N and X = N / (Z + R) < N / Z."""
    r = plan.options(toy(catalog).lazy(), toy_plan(WorkloadSpec(users=200, think_time_s=5))).row(0, named=True)
    assert r["request_latency_s"] > 5  # R > Z: where N / Z overstated the rate most
    assert r["replicas"] * r["concurrency"] <= 200
    assert r["peak_requests_per_s"] * r["request_latency_s"] <= 200
    assert r["peak_requests_per_s"] < 200 / 5 and r["replicas"] < 960


def test_the_fewest_replicas_that_carry_the_peak_users(catalog):
    """200 users x peak_factor 1.5 = 300 at the peak, Z = 5 s, one spare (redundancy 1). n replicas
    (n - 1 counted against capacity) carry the users when 300 / (5 + R(b / n)) <= b, b = (n - 1) x
    capacity / 1.2: n is the least that does (scanned here with the toy's R by hand), and the plan's
    figures are the users' own rate at it; the average is the peak / 1.5, 200 / (5 + R)."""
    w = WorkloadSpec(users=200, think_time_s=5, peak_factor=1.5, redundancy=1)
    r = plan.options(toy(catalog).lazy(), toy_plan(w)).row(0, named=True)
    cap = r["capacity_requests_per_s"]

    def carries(n: int) -> bool:
        b = (n - 1) * cap / 1.2
        return 300 / (5 + md1(b / n)) <= b

    least = next(n for n in range(2, 10_000) if carries(n))
    assert r["replicas"] == least and not carries(least - 1)
    assert r["peak_requests_per_s"] == pytest.approx(300 / (5 + r["request_latency_s"]), rel=1e-9)
    assert r["request_latency_s"] == pytest.approx(md1(r["peak_requests_per_s"] / least), rel=1e-12)
    assert r["replicas"] * r["concurrency"] <= 300
    assert r["utilization"] == pytest.approx(200 / (5 + r["request_latency_s"]) / (least * cap), rel=1e-9)


def test_every_mode_is_sized_at_the_users_rate(catalog):
    """Aggregated and disaggregated DeepSeek-R1 options (with and without MTP), 2,000 users x 1.5 who
    think 10 s: each option's rate is 3,000 / (10 + its R), and its fleet holds fewer in flight."""
    from .test_plan import modes_inputs, modes_options

    w = WorkloadSpec(users=2000, think_time_s=10, peak_factor=1.5, headroom=0.2)
    out = modes_options(catalog, inputs=modes_inputs(workload=w))
    assert sorted(out["mode"].cast(pl.String).unique()) == ["aggregated", "disaggregated"]
    for r in out.filter(pl.col("meets_slo")).iter_rows(named=True):
        assert r["peak_requests_per_s"] == pytest.approx(3000 / (10 + r["request_latency_s"]), rel=1e-9)
        assert r["concurrency"] == pytest.approx(r["offered_requests_per_s"] * r["request_latency_s"], rel=1e-9)
        assert r["replicas"] * r["concurrency"] <= 3000


def test_a_users_sweep_end_to_end(tmp_path):
    """200 users x 1.5 thinking 5 s, 1,024 tokens in and out on an H100: the old plan sized it at 300 / 5
    = 60 requests/s and showed 969 requests in flight (fp8) for 300 users. Every sized option now holds
    at most 300, at 300 / (5 + R); and the sensitivity moves the users by 20 %: fewer users never need
    more GPUs."""
    sweep = tmp_path / "users.yaml"
    sweep.write_text(
        "name: users\ngrid: {gpu: [h100-sxm], model: [meta-llama/Llama-3.1-8B-Instruct], precision: [bf16, fp8],\n"
        "  input_tokens: [1024], output_tokens: [1024], batch: [max]}\n"
        "workload: {users: 200, think_time_s: 5, peak_factor: 1.5}\nslo: {ttft_s: 2.0, tpot_s: 0.05}\n"
    )
    result = pipeline.compute_plan(load(sweep))
    sized = result.options.filter(pl.col("replicas").is_not_null() & pl.col("meets_slo"))
    assert sized.height == 2
    for r in sized.iter_rows(named=True):
        assert r["peak_requests_per_s"] == pytest.approx(300 / (5 + r["request_latency_s"]), rel=1e-9)
        assert r["replicas"] * r["concurrency"] <= 300
    (rows,) = result.sensitivity.values()
    traffic = {row["change"]: row for row in rows if row["assumption"].startswith("traffic")}
    assert set(traffic) == {"-20%", "+20%"}
    assert traffic["-20%"]["top"] <= traffic["+20%"]["top"]
    # "what if traffic grows" counts users: both options at 300 users (the dashed line), each at its own rate
    from llmsweep.money_charts import gpus_traffic_data

    chart = gpus_traffic_data(pl.LazyFrame(), result.options)
    assert set(chart["traffic"]) == {"peak users"} and set(chart["sweep_peak"]) == {300.0}
    at_peak = chart.filter(pl.col("peak") == 300.0)
    # one line a GPU (its best option): at the sweep's users, the plan's fleet
    assert at_peak.height == 1 and at_peak["gpus_at"][0] in sized["gpus_needed"].to_list()


def test_moving_the_traffic_moves_the_users():
    """Sensitivity: users x 0.8 (the same think time, solved again), requests/s x 1.2; tokens/day none."""
    users = moved_traffic(WorkloadSpec(users=200, think_time_s=5, peak_factor=1.5), 0.8)
    assert (users.users, users.think_time_s, users.peak_factor, users.requests_per_s) == (160, 5, 1.5, None)
    rate = moved_traffic(WorkloadSpec(requests_per_s=10), 1.2)
    assert rate.requests_per_s == pytest.approx(12.0) and rate.users is None
    assert moved_traffic(WorkloadSpec(tokens_per_day=1e9), 1.2) is None and moved_traffic(None, 1.2) is None


def test_the_report_states_the_rate_used():
    """The traffic paragraph gives the formula; each answer its numbers: 300 users, Z = 5 s, R = 13.5619 s:
    lambda = 300 / 18.5619 = 16.162 requests/s, 16.162 x 13.5619 = 219 of them in flight."""
    w = {"users": 200, "think_time_s": 5, "peak_factor": 1.5}
    assert traffic_statement(w, workload_defaults()) == (
        "Traffic: 200 concurrent users, each thinking 5 s between an answer and the next question and waiting R "
        "seconds for each answer, so each sends one request every think time + R; at the peak, 200 × 1.5 = 300 "
        "users send λ = users ÷ (think time + R) = 300 ÷ (5 s + R) requests/s, sized for each option with R its "
        "request latency at the operating point its fleet runs at (so never more requests in flight, λ × R, than "
        "users; each model's answer gives R and λ for its recommendation); 20% headroom on top; 0 spare replicas "
        "(redundancy 0, the default: n+1 adds one)."
    )
    option = {"peak_requests_per_s": 300 / (5 + 13.5619), "request_latency_s": 13.5619, "peak_users": 300.0}
    assert users_rate_text(option, w) == (
        "sized for λ = 300 users ÷ (5 s + 13.6 s) = 16.2 requests/s at the peak, 219 of them in flight"
    )
    assert users_rate_text(option, {"requests_per_s": 3}) == ""


def test_the_ranking_statement_does_not_claim_cost_per_token_orders_users_fleets():
    """The same users send a faster option more requests: its cost per token may be the lower while its
    TCO is the higher (the review's Llama-8B: l40s $1,883 a month at $0.254 per M against h100 $1,964 at
    $0.230), so with users only the monthly figure is said to order options as TCO does."""
    from llmsweep.report import rank_statement

    users = rank_statement("tco_usd", True, 3, users=True)
    assert "USD per month is TCO ÷ 36 months, which orders the options the same way;" in users
    assert "so a fleet that costs more can cost less per token." in users
    assert "both order the options the same way" in rank_statement("tco_usd", True, 3)
