"""Serving under load (llmsweep/estimate/load.py): consistency, limits, monotonicity and hand-derived cases."""

from __future__ import annotations

import math

import polars as pl
import pytest

from llmsweep import pipeline
from llmsweep.estimate import load
from llmsweep.spec import load as load_sweep

from .conftest import ROOT, estimate_row, estimate_rows

EXAMPLES = sorted((ROOT / "sweeps").glob("*.yaml"))
L31_8B, L31_70B = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"
MIXTRAL, GEMMA2 = "mistralai/Mixtral-8x7B-v0.1", "google/gemma-2-9b"
R1 = "deepseek-ai/DeepSeek-R1"


# -- a replica with round numbers, for hand-derived cases -----------------------------------------------------------
def toy(**over) -> pl.DataFrame:
    """Memory-bound decode step t(b) = 10 ms + 0.5 ms x b (10 GB of weights and 0.5 GB of KV per
    sequence at 1 TB/s, no FLOP, communication or fixed cost), prefill p = 100 ms for a 1,000-token
    prompt taken in one chunk (K = 1,000), 101 output tokens (k = S_out - 1 = 100), no request
    overhead, no burst."""
    row = {
        "input_tokens": 1000,
        "output_tokens": 101,
        "batch": 8,
        "max_batch": 1000,
        "prefill_s": 0.1,
        # compute-bound, no fixed cost, no KV or expert traffic: the same alone or sharing an iteration
        "prefill_compute_s": 0.1,
        "kv_full_bytes_per_token": 0.0,
        "kv_window_bytes_per_token": 0.0,
        "sliding_window_tokens": None,
        "state_bytes_per_sequence": 0.0,
        "prefill_chunk_tokens": 1000,
        "decode_compute_s_per_sequence": 0.0,
        "decode_kv_bytes_per_sequence": 5e8,
        "seconds_per_byte": 1e-12,
        "model_weight_bytes": 1e10,
        "routed_expert_bytes": 0.0,
        # no embedding table to leave out, no rows to gather (tests/test_weight_terms.py has those)
        "embedding_table_bytes": 0.0,
        "embedding_row_bytes": 0.0,
        "expert_miss_log": 0.0,
        "comm_fixed_s": 0.0,
        "comm_s_per_token": 0.0,
        "routing_s_per_token": 0.0,
        "dp_attention": 1,
        "max_running_requests": 0.0,
        "expert_share": 1.0,
        "expert_spread": 0.0,
        "fixed_step_s": 0.0,
        "request_overhead_s": 0.0,
        "burst_share": 0.0,
        # no speculative decoding, no prefix cache (estimate/speculative.py, estimate/prefix.py)
        "draft_tokens": 0,
        "draft_fraction": 0.0,
        "spec_token_factor": 1.0,
        "spec_kv_factor": 1.0,
        "spec_fixed_s": 0.0,
        "tokens_per_step": 1.0,
    } | over
    frame = (
        pl.DataFrame([row])
        .with_columns(prefill_new_tokens=pl.col("input_tokens").cast(pl.Float64))
        .with_columns(**load.step_coefficients())
    )
    # the decode step's terms at `batch` (estimate/compute.py), as add_batch_estimates leaves them
    b = pl.col("batch").cast(pl.Float64)
    return frame.with_columns(
        decode_compute_s=b * pl.col("decode_compute_s_per_sequence"),
        decode_memory_s=(pl.col("model_weight_bytes") + b * pl.col("decode_kv_bytes_per_sequence"))
        * pl.col("seconds_per_byte"),
        decode_comm_s=pl.lit(0.0),
        decode_routing_s=pl.lit(0.0),
        decode_overhead_s=pl.lit(0.0),
    ).with_columns(
        decode_weight_fraction=pl.col("model_weight_bytes") * pl.col("seconds_per_byte") / pl.col("decode_memory_s")
    )


def t(b: float) -> float:
    return 0.010 + 0.0005 * b


def closed(frame: pl.DataFrame) -> dict:
    return load.closed_loop(frame.lazy()).collect().row(0, named=True)


def opened(frame: pl.DataFrame, rate: float) -> dict:
    return load.open_loop(frame.lazy(), pl.lit(rate)).collect().row(0, named=True)


def test_toy_at_concurrency_1_is_single_stream():
    r = closed(toy(batch=1))
    # TTFT = p = 0.1 s, ITL = t(1) = 10.5 ms, R = 0.1 + 100 x 0.0105 = 1.15 s
    assert r["ttft_s"] == pytest.approx(0.1)
    assert r["tpot_s"] == pytest.approx(0.0105)
    assert r["request_latency_s"] == pytest.approx(1.15)
    assert r["ttft_p90_s"] == r["ttft_p99_s"] == pytest.approx(0.1)
    assert r["decode_tokens_per_s_per_seq"] == pytest.approx(101 / 1.15)


def test_toy_closed_loop_at_concurrency_8_by_hand():
    # The fixed point of closed_loop's steps 1-4 with n = 8, p = 0.1 s, k = 100, n_c = 1, solved by hand
    # (iterating the lines below to convergence). At 8 clients the train binds: each request but the
    # first waits for the whole iteration carrying the prompt ahead of it, p_it = p + t(b_o):
    #   b_o = 7 D / R = 7 x 1.99925 / 2.21143 = 6.328 others decoding
    #   u = 7 p / R = 0.7 / 2.21143 = 0.3165 of the time on their prefill
    #   ITL = t(1 + b_o) / (1 - u) = (10 + 0.5 x 7.328) ms / 0.6835 = 13.664 / 0.6835 = 19.99 ms, D = 100 ITL
    #   p_eff = p_it = p + t(b_o) = 0.1 + 0.013164 = 0.113164 s
    #   TTFT = p_eff + 7/8 p_it = 15/8 x 0.113164 = 0.21218 s, R = TTFT + D = 0.21218 + 1.99925 = 2.21143 s
    # Mean-value analysis alone would wait less: a = 7 p_eff = 0.79215 s, T_q = p_eff R / (R - a) =
    # 0.113164 x 2.21143 / 1.41928 = 0.17633 s, + s = ITL / 2 = 10.0 ms: 0.18633 s < 0.21218 s.
    r = closed(toy(batch=8))
    assert r["request_latency_s"] == pytest.approx(2.21143, rel=1e-4)
    assert r["tpot_s"] == pytest.approx(0.0199925, rel=1e-4)
    assert r["ttft_s"] == pytest.approx(0.21218, rel=1e-3)
    assert r["decode_batch"] == pytest.approx(7.328, rel=1e-3)
    # and the equations hold on the result
    R, itl = r["request_latency_s"], r["tpot_s"]
    D, b_o = 100 * itl, 7 * 100 * itl / r["request_latency_s"]
    assert itl == pytest.approx(t(1 + b_o) / (1 - 0.7 / R), rel=1e-3)
    p_eff = 0.1 + t(b_o)
    assert r["ttft_s"] == pytest.approx(15 / 8 * p_eff, rel=1e-3)
    assert p_eff * R / (R - 7 * p_eff) + itl / 2 < r["ttft_s"]
    # Little: requests/s = 8 / R = 3.618, output tokens/s = 101 x 8 / R = 365.4, per user = 101 / R = 45.67
    assert r["requests_per_s_per_replica"] == pytest.approx(8 / R)
    assert r["output_tokens_per_s"] == pytest.approx(808 / R)
    assert r["decode_tokens_per_s_per_seq"] == pytest.approx(101 / R)
    assert D + r["ttft_s"] == pytest.approx(R)
    # percentiles: 7 of 8 wait p_it, so p90 >= p_eff + p_it = 0.22633 s; the queue's tail is longer here:
    # busy = 7 p_eff / R = 0.35821, E[W] / busy = T_q = 0.17633 s, s + p_eff + 0.17633 ln(0.35821 / 0.1)
    # = 0.0100 + 0.11316 + 0.17633 x 1.27596 = 0.34816 s
    assert r["ttft_p90_s"] == pytest.approx(0.34816, rel=2e-3)


def test_toy_closed_loop_at_concurrency_2_the_second_of_the_train_waits_for_the_first():
    # n = 2: one of the two arrives while the other's prompt is prefilled. By hand (iterating):
    #   b_o = D / R = 1.18174 / 1.34550 = 0.8783 others decoding (less than one: the step riding in a
    #   prompt's iteration is scaled by min(b_o, 1), as in p_eff)
    #   p_eff = p_it = 0.1 + 0.8783 x t(0.8783) = 0.1 + 0.8783 x 0.010439 = 0.109169 s
    #   TTFT = p_eff + 1/2 p_it = 0.163753 s, D = 100 x t(1 + b_o) / (1 - p / R) = 1.18174 s, R = 1.34550 s
    # and the p90 is the second's, p_eff + p_it = 0.218337 s, above the mean (the queue's exponential
    # tail alone put it below: busy = p_eff / R = 0.081 < 0.1, so no wait at all at the 90th percentile)
    r = closed(toy(batch=2))
    assert r["request_latency_s"] == pytest.approx(1.34550, rel=1e-3)
    assert r["ttft_s"] == pytest.approx(0.163753, rel=5e-3)
    assert r["tpot_s"] == pytest.approx(0.0118174, rel=1e-3)
    assert r["ttft_p90_s"] == pytest.approx(0.218337, rel=5e-3)
    assert r["ttft_p90_s"] > r["ttft_s"]
    # p99: at most the one prompt ahead, s + p_eff + 1 x p_eff, s = min(b_o, 1) ITL / 2 = 0.8783 x
    # 11.8174 ms / 2 = 5.1896 ms: 0.0051896 + 2 x 0.109169 = 0.223527 s. The exponential tail alone
    # would give T_q = p_eff R / (R - p_eff) = 0.118812 s, x ln(0.08114 / 0.01) = 2.0937: 0.36313 s,
    # a wait longer than the whole queue ahead of it
    assert r["ttft_p99_s"] == pytest.approx(0.223527, rel=5e-3)


def test_an_empty_prompt_has_no_train_to_wait_in():
    # No prefill: the first token is one more sequence in the step the others decode in, which grows by
    # t(1 + b_o) - t(b_o) = 0.5 ms (not a whole t(1) = 10.5 ms that stalls them); it rides in the running
    # step (own = t(b_o)), and the wait is the queue's alone: TTFT = T_q + ITL / 2 + t(b_o), T_q =
    # p_eff R / (R - 7 p_eff) with p_eff = 0.5 ms, and ITL = t(1 + b_o) / (1 - 7 x 0.5 ms / R)
    r = closed(toy(batch=8, input_tokens=0))
    R, itl = r["request_latency_s"], r["tpot_s"]
    b_o = 7 * 100 * itl / R
    p_eff = 0.0005
    assert r["ttft_s"] == pytest.approx(p_eff * R / (R - 7 * p_eff) + itl / 2 + t(b_o), rel=5e-3)
    assert itl == pytest.approx(t(1 + b_o) / (1 - 7 * p_eff / R), rel=5e-3)
    # so at 1,000 clients decoding runs at about the bare step t(1,000) = 510 ms, not 20 % above it
    crowd = closed(toy(batch=1000, input_tokens=0))
    assert crowd["tpot_s"] == pytest.approx(t(crowd["decode_batch"]), rel=0.02)


def test_toy_closed_loop_at_concurrency_16_queues_behind_more_than_one_prompt():
    # At 16 clients prompts meet often enough that the queue of step 4 waits longer than the train
    # (15/16 p_it): TTFT = T_q + s on the result, and more than p_eff + 15/16 p_it
    r = closed(toy(batch=16))
    R, itl = r["request_latency_s"], r["tpot_s"]
    b_o = 15 * 100 * itl / R
    p_eff = 0.1 + t(b_o)
    t_q = p_eff * R / (R - 15 * p_eff)
    assert r["ttft_s"] == pytest.approx(t_q + itl / 2, rel=5e-3)
    assert r["ttft_s"] > p_eff + 15 / 16 * p_eff
    assert r["request_latency_s"] == pytest.approx(16 / r["requests_per_s_per_replica"])


def open_by_hand(lam: float, p_mix: float = 0.1) -> dict:
    """open_loop's formulas written out for the toy replica (t(b) = A + B b, A = 10 ms, B = 0.5 ms);
    p_mix is what a prompt adds to an iteration others decode in (p = 0.1 s alone)."""
    A, B, k, p = 0.010, 0.0005, 100, 0.1
    u = lam * p_mix
    D = k * (A + B) / (1 - u - k * lam * B)  # decode fixed point, memory roof
    others = lam * D
    itl = t(1 + others) / (1 - u)
    p_eff = p + min(others, 1) * (p_mix - p) + 1 * min(others, 1) * t(max(others, 1))
    s = min(others, 1) * itl / 2
    rho = lam * p_eff
    wait = rho * p_eff / (2 * (1 - rho))  # M/D/1, Pollaczek-Khinchine
    ttft = p_eff + s + wait
    p90 = p_eff + s + (wait / rho * math.log(rho / 0.1) if rho > 0.1 else 0.0)
    return {"D": D, "itl": itl, "ttft": ttft, "p90": p90, "R": ttft + D, "rho": rho}


def test_toy_open_loop_capacity_and_points_at_50_and_90_percent():
    # Capacity: rho = lambda (0.1 + t(lambda D)) reaches 1 where D = 1.05 / (1 - 0.15 lambda):
    # lambda = 6.2 -> D = 15.0, lambda D = 93, t = 56.5 ms, rho = 6.2 x 0.1565 = 0.970 (below);
    # lambda = 6.25 -> D = 16.8, lambda D = 105, rho = 6.25 x 0.1625 = 1.016 (above).
    cap = load.max_rate(toy())[0]
    assert 6.2 < cap < 6.25
    for share in (0.5, 0.9):
        lam = share * cap
        r, h = opened(toy(), lam), open_by_hand(lam)
        assert not r["saturated"]
        assert r["tpot_s"] == pytest.approx(h["itl"], rel=1e-9)
        assert r["ttft_s"] == pytest.approx(h["ttft"], rel=1e-9)
        assert r["ttft_p90_s"] == pytest.approx(h["p90"], rel=1e-9)
        assert r["request_latency_s"] == pytest.approx(h["R"], rel=1e-9)
        assert r["concurrency"] == pytest.approx(lam * h["R"])  # Little
        assert r["output_tokens_per_s"] == pytest.approx(lam * 101)
    # at 50 %: lambda = 3.117, u = 0.312, D = 1.05 / (1 - 0.312 - 0.156) = 1.972 s, lambda D = 6.15 decoding,
    # ITL = t(7.15) / 0.688 = 19.7 ms, p_eff = 0.1 + t(6.15) = 0.1131 s, rho = 3.117 x 0.1131 = 0.352,
    # W = rho p_eff / (2 (1 - rho)) = 0.0308 s, TTFT = 0.1131 + 0.0099 + 0.0308 = 0.1537 s
    half = open_by_hand(0.5 * cap)
    assert half["D"] == pytest.approx(1.972, rel=1e-3) and half["rho"] == pytest.approx(0.352, rel=2e-3)
    assert half["ttft"] == pytest.approx(0.1537, rel=1e-3)
    # at 90 %: lambda = 5.610, D = 6.62 s, lambda D = 37.2 decoding, rho = 0.721: TTFT = 0.328 s, twice that at 50 %
    near = open_by_hand(0.9 * cap)
    assert near["rho"] == pytest.approx(0.721, rel=2e-3) and near["ttft"] == pytest.approx(0.328, rel=2e-3)


def test_a_prompt_sharing_an_iteration_adds_its_compute_not_the_weight_read():
    # The toy's prompt alone takes p = 0.1 s; say half of it is reading the weights, so its FLOPs take
    # 0.05 s (no KV, expert, communication or fixed cost): riding in an iteration others decode in,
    # whose step reads the weights anyway, it adds p_mix = 0.05 s. At lambda = 2: u = 2 x 0.05 = 0.1,
    # D = 100 x 0.0105 / (1 - 0.1 - 100 x 2 x 0.0005) = 1.05 / 0.8 = 1.3125 s, lambda D = 2.625 decoding,
    # p_eff = 0.05 + t(2.625) = 0.05 + 0.011313 = 0.061313 s, rho = 0.122625,
    # W = 0.122625 x 0.061313 / (2 x 0.877375) = 0.004285 s, s = ITL / 2 = 0.0065625 s,
    # TTFT = 0.061313 + 0.0065625 + 0.004285 = 0.072160 s. Charged p = 0.1 s instead: u = 0.2,
    # D = 1.05 / 0.7 = 1.5 s, p_eff = 0.1 + t(3) = 0.1115, rho = 0.223, W = 0.0160, s = t(4) / 0.8 / 2
    # = 0.0075: TTFT = 0.1350 s
    r, h = opened(toy(prefill_compute_s=0.05), 2.0), open_by_hand(2.0, p_mix=0.05)
    assert h["D"] == pytest.approx(1.3125) and h["rho"] == pytest.approx(0.122625, rel=1e-4)
    assert h["ttft"] == pytest.approx(0.072160, rel=1e-4)
    assert r["ttft_s"] == pytest.approx(h["ttft"], rel=1e-9)
    assert r["tpot_s"] == pytest.approx(h["itl"], rel=1e-9)
    assert open_by_hand(2.0)["ttft"] == pytest.approx(0.1350, rel=1e-3)
    # alone (C = 1) it still takes p: no step to share
    assert closed(toy(prefill_compute_s=0.05, batch=1))["ttft_s"] == pytest.approx(0.1)


def test_toy_open_loop_saturates_above_capacity():
    cap = load.max_rate(toy())[0]
    r = opened(toy(), 1.01 * cap)
    assert r["saturated"] and r["load_note"] == load.SATURATED
    assert all(r[k] is None for k in ("ttft_s", "tpot_s", "request_latency_s", "concurrency", "ttft_p99_s"))
    below = opened(toy(), 0.99 * cap)
    assert not below["saturated"] and all(
        math.isfinite(below[k]) for k in ("ttft_s", "ttft_p99_s", "tpot_s", "request_latency_s")
    )
    # beyond the decode capacity (1 - 0.1 lambda - 0.05 lambda <= 0, lambda >= 6.67) too
    assert opened(toy(), 7.0)["saturated"]


def test_a_synchronised_wave_prefills_back_to_back_then_decodes_together():
    # burst_share 1 (SGLang: waiting prefills run before the next decode batch), 8 clients, one
    # prompt per chunk (K = S_in): prompt j gets its first token at j x 0.1 s, mean (8 + 1) / 2 x 0.1
    # = 0.45 s; every request ends together after all 8 prefills (0.8 s) and 100 steps of
    # t(8) = 10 ms + 8 x 0.5 ms = 14 ms (1.4 s): R = 2.2 s, TPOT = (2.2 - 0.45) / 100 = 17.5 ms.
    r = closed(toy(batch=8, burst_share=1.0))
    assert r["ttft_s"] == pytest.approx(0.45)
    assert r["request_latency_s"] == pytest.approx(2.2)
    assert r["tpot_s"] == pytest.approx(0.0175)
    assert r["requests_per_s_per_replica"] == pytest.approx(8 / 2.2)
    assert r["decode_batch"] == pytest.approx(8)
    # the last prompt waits for all 8 prefills: p90 = p99 = 0.8 s
    assert r["ttft_p90_s"] == pytest.approx(0.8) and r["ttft_p99_s"] == pytest.approx(0.8)
    # four prompts per chunk (K = 4,000): they complete at 0.4 s and 0.8 s, mean 0.6 s; R is the same
    # work, 2.2 s, so TPOT = (2.2 - 0.6) / 100 = 16 ms
    chunked = closed(toy(batch=8, burst_share=1.0, prefill_chunk_tokens=4000))
    assert chunked["ttft_s"] == pytest.approx(0.6)
    assert chunked["request_latency_s"] == pytest.approx(2.2)
    assert chunked["tpot_s"] == pytest.approx(0.016)
    # a lone request is the single stream in either mode: TTFT = p, ITL = t(1) = 10.5 ms
    alone = closed(toy(batch=1, burst_share=1.0))
    assert alone["ttft_s"] == pytest.approx(0.1) and alone["tpot_s"] == pytest.approx(0.0105)
    # 2.5 prompts per chunk (K = 2,500): the 90th-percentile prompt, the 8th (ceil(0.9 x 8)), completes
    # with the 4th chunk, which is partial and ends when all 8 prefills do, at 0.8 s
    assert closed(toy(batch=8, burst_share=1.0, prefill_chunk_tokens=2500))["ttft_p90_s"] == pytest.approx(0.8)


def test_a_wave_packs_the_prompt_tokens_computed_not_the_prompt():
    # a prefix cache leaves 250 of the 1,000 prompt tokens to compute (p = 0.1 s as given): a
    # 1,000-token chunk holds r = 1,000 / 250 = 4 prompts, which complete at 0.4 s and 0.8 s, mean
    # 0.6 s, as the 4,000-token chunk of full prompts above; the last at 0.8 s
    frame = toy(batch=8, burst_share=1.0).with_columns(prefill_new_tokens=pl.lit(250.0))
    r = closed(frame.with_columns(**load.step_coefficients()))
    assert r["ttft_s"] == pytest.approx(0.6)
    assert r["ttft_p90_s"] == pytest.approx(0.8)
    assert r["request_latency_s"] == pytest.approx(2.2)


def test_a_wave_of_empty_prompts_gets_its_first_tokens_in_one_step():
    # no prompt: the first token of all 8 comes from one batched step t(8) = 14 ms, then 100 more
    # steps: TTFT = 14 ms, R = 101 x 14 ms = 1.414 s, TPOT = 14 ms
    r = closed(toy(batch=8, burst_share=1.0, input_tokens=0))
    assert r["ttft_s"] == pytest.approx(0.014)
    assert r["request_latency_s"] == pytest.approx(1.414)
    assert r["tpot_s"] == pytest.approx(0.014)
    assert r["ttft_p90_s"] == pytest.approx(0.014)


def test_without_a_decode_phase_requests_are_not_kept_in_step():
    # S_out = 1: every request ends at its first token, so nothing synchronises them and the steady
    # mode applies whatever burst_share says: the replica serves at most 1 / p = 10 prompts/s
    steady = closed(toy(batch=8, output_tokens=1))
    for share in (0.2, 1.0):
        r = closed(toy(batch=8, output_tokens=1, burst_share=share))
        assert r["request_latency_s"] == pytest.approx(steady["request_latency_s"])
        assert r["requests_per_s_per_replica"] <= 10.0 * (1 + 1e-9)
        assert r["prefill_fraction"] <= 1 + 1e-9


def test_one_output_token_has_no_interval_to_stretch():
    # S_out = 1: no request decodes (D = 0, b = 0), so tpot_s is the step a next token would take,
    # t(1) = 10 ms + 0.5 ms = 10.5 ms, however many prompts queue (not t(1) / (1 - u), u the share of
    # time on prompts: at 1,000 clients that was 10.5 s); the open loop near capacity the same
    for batch in (8, 1000):
        assert closed(toy(batch=batch, output_tokens=1))["tpot_s"] == pytest.approx(0.0105, rel=1e-12)
    assert opened(toy(output_tokens=1), 9.0)["tpot_s"] == pytest.approx(0.0105, rel=1e-12)


def test_the_wave_share_mixes_both_modes_with_littles_law():
    # half the requests in waves: TTFT, R and so TPOT are the means of the two modes
    steady, wave = closed(toy(batch=8)), closed(toy(batch=8, burst_share=1.0))
    half = closed(toy(batch=8, burst_share=0.5))
    for key in ("ttft_s", "request_latency_s"):
        assert half[key] == pytest.approx((steady[key] + wave[key]) / 2)
    assert half["tpot_s"] == pytest.approx((half["request_latency_s"] - half["ttft_s"]) / 100)
    assert half["requests_per_s_per_replica"] * half["request_latency_s"] == pytest.approx(8)


def test_more_clients_than_slots_wait_for_one():
    # max_batch 4, 8 clients: 4 run (R_4), the others wait R_4 (8 / 4 - 1) = R_4 for a slot
    four = closed(toy(batch=4))
    eight = closed(toy(batch=8, max_batch=4))
    assert eight["request_latency_s"] == pytest.approx(2 * four["request_latency_s"])
    assert eight["ttft_s"] == pytest.approx(four["ttft_s"] + four["request_latency_s"])
    assert eight["requests_per_s_per_replica"] == pytest.approx(four["requests_per_s_per_replica"])
    assert eight["load_note"] == load.SLOT_WAIT


def test_the_engines_limit_on_running_requests_queues_like_a_full_kv_cache():
    # max_running_requests 4 (max_batch 1,000): the same operating point as 4 KV slots, said as the
    # engine's limit; per attention data-parallel rank: 2 ranks of 2 slots are 4 slots too
    four = closed(toy(batch=4))
    limited = closed(toy(batch=8, max_running_requests=4.0))
    assert limited["request_latency_s"] == pytest.approx(2 * four["request_latency_s"])
    assert limited["ttft_s"] == pytest.approx(four["ttft_s"] + four["request_latency_s"])
    assert limited["load_note"] == load.ADMISSION_WAIT
    per_rank = load.admission_slots()
    assert toy(max_running_requests=2.0, dp_attention=2).select(per_rank).item() == 4.0
    assert toy(max_running_requests=0.0).select(per_rank).item() == 1000.0  # 0: the KV cache alone
    assert closed(toy(batch=4, max_running_requests=4.0))["load_note"] is None


# -- the catalog's models ------------------------------------------------------------------------------------------
CASES = [
    dict(gpu="h100-sxm", model=L31_8B, input_tokens=1024, output_tokens=256),
    dict(gpu="h200-sxm", model=L31_70B, precision="fp8", tp=2, input_tokens=4096, output_tokens=512),
    dict(gpu="a100-80gb-sxm", model=MIXTRAL, tp=4, input_tokens=2048, output_tokens=128),
    dict(gpu="l40s", model=GEMMA2, input_tokens=8192, output_tokens=64),
    dict(gpu="h100-sxm", model=L31_8B, input_tokens=0, output_tokens=512),  # llama-bench tg512
]


# vLLM (steady-state mode with a 20 % wave share) and SGLang (every wave synchronised)
ENGINES = ["vllm", "sglang"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("profile", ["default", "ideal"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c['model'].split('/')[1]}-{c['input_tokens']}" for c in CASES])
def test_concurrency_1_equals_single_stream(case, profile, engine):
    (r,) = estimate_rows(profile, batch=1, engine=engine, **case)
    # + the request overhead of the row's engine (the profile's; 0 in ideal)
    first = (r["prefill_s"] if case["input_tokens"] else r["decode_step_s"]) + r["request_overhead_s"]
    assert r["ttft_s"] == pytest.approx(first)
    assert r["ttft_p90_s"] == r["ttft_p99_s"] == pytest.approx(r["ttft_s"])
    assert r["tpot_s"] == pytest.approx(r["decode_step_s"])
    assert r["decode_batch"] == 1
    assert r["request_latency_s"] == pytest.approx(r["ttft_s"] + (case["output_tokens"] - 1) * r["decode_step_s"])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[f"{c['model'].split('/')[1]}-{c['input_tokens']}" for c in CASES])
def test_latencies_do_not_fall_as_concurrency_rises(case, engine):
    batches = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
    rows = estimate_rows("default", batch=batches, engine=engine, **case)
    for key in ("ttft_s", "ttft_p90_s", "ttft_p99_s", "tpot_s", "request_latency_s"):
        values = [r[key] for r in rows]
        assert all(b >= a * (1 - 1e-9) for a, b in zip(values, values[1:], strict=False)), key
    throughput = [r["requests_per_s_per_replica"] for r in rows]
    assert all(b >= a * (1 - 1e-9) for a, b in zip(throughput, throughput[1:], strict=False))


@pytest.mark.parametrize("case", CASES[:4], ids=[c["model"].split("/")[1] for c in CASES[:4]])
def test_latencies_do_not_fall_as_the_rate_rises(case):
    (base,) = [pl.DataFrame(estimate_rows("default", batch=1, **case))]
    cap = load.max_rate(base)[0]
    assert cap > 0
    rates = [cap * f for f in (0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)]
    frame = pl.concat([base] * len(rates)).with_columns(_rate=pl.Series(rates))
    out = load.open_loop(frame.lazy(), pl.col("_rate")).collect()
    assert not out["saturated"].any()
    for key in ("ttft_s", "ttft_p90_s", "ttft_p99_s", "tpot_s", "request_latency_s", "concurrency"):
        values = out[key].to_list()
        assert all(b >= a for a, b in zip(values, values[1:], strict=False)), key
    assert load.open_loop(base.lazy(), pl.lit(cap * 1.02)).collect()["saturated"].all()


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_littles_law_on_every_example_sweep(path):
    rows = pipeline.compute(load_sweep(path)).filter(pl.col("fits")).collect()
    assert rows.height > 0
    check = rows.select(
        little=pl.col("requests_per_s_per_replica") * pl.col("request_latency_s") / pl.col("batch"),
        tokens=pl.col("requests_per_s_per_replica") * pl.col("output_tokens") / pl.col("output_tokens_per_s"),
        per_user=pl.col("decode_tokens_per_s_per_seq") * pl.col("batch") / pl.col("output_tokens_per_s"),
        parts=(pl.col("ttft_s") + (pl.col("output_tokens") - 1) * pl.col("tpot_s")) / pl.col("request_latency_s"),
    )
    for name in check.columns:
        assert check[name].is_between(0.99, 1.01).all(), name
    numeric = rows.select(pl.selectors.float())
    assert not numeric.select(pl.any_horizontal(pl.all().is_nan() | pl.all().is_infinite()).any()).item()


def test_percentiles_come_from_the_modes_that_carry_the_tail():
    # no waves (burst_share 0): p90 is the steady-state queue's alone. From the C = 8 case above:
    # busy share rho = 7 p_eff / R = 0.7924 / 2.1977 = 0.3606, mean wait E[W] = T_q - p_eff = 0.0638 s,
    # p90 = s + p_eff + E[W] / rho x ln(rho / 0.1) = 0.01005 + 0.1132 + 0.1769 x 1.2826 = 0.3502 s
    steady = closed(toy(batch=8))
    assert steady["ttft_p90_s"] == pytest.approx(0.3502, rel=5e-3)
    # a 20 % wave share carries the top 10 % at the wave's median (q' = 1 - 0.1 / 0.2 = 0.5): the
    # 4th of 8 prompts, 0.4 s, unless the steady-state queue's own 87.5th percentile is larger
    # (about 0.31 s here, so the wave decides; 1 - 0.1 / 0.2 rounds to 0.5000000000000001 in floating
    # point, which must not make it the 5th prompt)
    mixed = closed(toy(batch=8, burst_share=0.2))
    assert mixed["ttft_p90_s"] == pytest.approx(0.4)
    # only waves (burst_share 1): p90 is the wave's, the 8th prompt at 0.8 s
    assert closed(toy(batch=8, burst_share=1.0))["ttft_p90_s"] == pytest.approx(0.8)


def test_more_bandwidth_never_slows_a_prefill_bound_closed_loop():
    """Found by tests/test_properties.py: 147 clients of 44-token prompts and 2-token answers on an
    M2 Ultra (ideal) are deep in the prefill-bound regime, where two fixed-point solves left TPOT
    1.05 s at the datasheet bandwidth and 1.38 s at twice it; the third solve keeps it monotone."""
    from llmsweep.catalog import load_catalog
    from llmsweep.estimate import add_estimates
    from llmsweep.grid import Axes, expand

    cat = load_catalog()
    axes = Axes(gpu=["m2-ultra"], model=["meta-llama/Llama-2-7b-hf"], input_tokens=[44], output_tokens=[2], batch=[147])
    base = expand(cat, axes, cat.profile("ideal"))
    slow, fast = (
        add_estimates(base.with_columns(pl.col("memory_bandwidth_bytes_per_s") * f)).collect().row(0, named=True)
        for f in (1.0, 2.0)
    )
    assert fast["tpot_s"] <= slow["tpot_s"] and fast["prefill_s"] <= slow["prefill_s"]


def test_attention_groups_prefill_side_by_side():
    """With dp_attention = 2 each group prefills its own half of the prompts: at 12 requests/s of
    p = 0.1 s prompts one group-less replica is saturated (u = lambda p = 1.2), two groups are not
    (u = 0.6; each group's M/D/1 queue has rho = 6 x p_eff < 1); at C = 2 each group holds one
    request, so no prompt waits behind another (a = (n / 2 - 1) p_eff = 0)."""
    one = opened(toy(), 12.0)
    two = opened(toy(dp_attention=2), 12.0)
    assert one["saturated"] and not two["saturated"]
    assert two["concurrency"] == pytest.approx(12.0 * two["request_latency_s"])
    alone = closed(toy(dp_attention=2, batch=2))
    shared = closed(toy(batch=2))
    assert alone["ttft_s"] < shared["ttft_s"]


def test_a_short_prompt_mixed_into_decoding_costs_its_flops():
    # Llama-3.1-8B bf16 on one H100, ideal, a 128-token prompt: alone it reads its 15.01 GB of
    # weights (all but the 1.05 GB embedding table, which it looks up), 4.5 ms at 3.35 TB/s; in an
    # iteration others decode in it adds its FLOPs only: 2 x (8,030,261,248 - 1,050,673,152) x 128
    # + the LM head at the last position 2 x 525,336,576 + 524,288 x 128^2 / 2
    # = 1,786,774,552,576 + 1,050,673,152 + 4,294,967,296 = 1,792,120,193,024 FLOPs / 989e12
    # = 1.812 ms (its 16.8 MB of KV take 5 us).
    row = estimate_row(gpu="h100-sxm", model="meta-llama/Llama-3.1-8B", input_tokens=128, output_tokens=64, batch=1)
    assert row["prefill_flops_per_token"] == 2 * (8_030_261_248 - 1_050_673_152)
    assert row["prefill_flops"] == 1_786_774_552_576 + 1_050_673_152 + 4_294_967_296 == 1_792_120_193_024
    mixed = pl.DataFrame([row]).select(load.mixed_first_token_s(pl.lit(1.0))).item()
    assert mixed == pytest.approx(1_792_120_193_024 / 989e12, rel=1e-9)
    assert row["prefill_s"] == pytest.approx((row["model_weight_bytes"] - 1_050_673_152) / 3.35e12, rel=1e-2)
    assert mixed < row["prefill_s"] / 2


def test_a_prompt_under_load_never_gets_its_first_token_sooner_than_alone():
    # ideal, Llama-3.1-8B on an H100, 128 tokens in: alone the prompt takes p = 4.8 ms (its weight
    # read); mixed into decoding it adds only its FLOPs, but its first token comes when the whole
    # iteration ends, decode step and all
    rows = estimate_rows(
        gpu="h100-sxm", model="meta-llama/Llama-3.1-8B", input_tokens=128, output_tokens=64, batch=[1, 2, 3, 4, 8, 64]
    )
    ttft = [r["ttft_s"] for r in sorted(rows, key=lambda r: r["batch"])]
    assert ttft == sorted(ttft) and all(r["ttft_wait_s"] >= 0 for r in rows)
    frame = pl.DataFrame([r for r in rows if r["batch"] == 1])
    opened_ttft = [opened(frame, lam)["ttft_s"] for lam in (0.001, 5.0, 20.0, 60.0)]
    assert opened_ttft == sorted(opened_ttft) and opened_ttft[0] >= rows[0]["prefill_s"] * (1 - 1e-9)


def test_prefill_fraction_is_each_groups_share_of_time_on_prompts():
    # steady mode (burst_share 0), the C = 8 case above: X = 8 / R = 8 / 2.21143 = 3.6176 requests/s,
    # each prompt adding p_mix = p = 0.1 s (compute-bound): 0.36176 of the replica's time
    steady = closed(toy(batch=8))
    assert steady["prefill_fraction"] == pytest.approx(8 / steady["request_latency_s"] * 0.1, rel=1e-12)
    assert steady["prefill_fraction"] == pytest.approx(0.36176, rel=1e-3)
    # a wave (burst_share 1): R_w = n p + k t(n) = 0.8 + 100 x 0.014 = 2.2 s, 8 / 2.2 x 0.1 = 0.36364
    assert closed(toy(batch=8, burst_share=1.0))["prefill_fraction"] == pytest.approx(0.8 / 2.2, rel=1e-12)
    # clients beyond the slots wait outside: the replica serves the same requests/s, so the same share
    # (it was n / C times too small when divided by the latency including the wait)
    assert closed(toy(batch=16, max_batch=8))["prefill_fraction"] == pytest.approx(
        closed(toy(batch=8, max_batch=8))["prefill_fraction"], rel=1e-12
    )


@pytest.mark.parametrize(("tp", "dp"), [(1, 8), (8, 1)])
def test_prefill_fraction_agrees_with_the_open_loop_at_the_same_rate(tp, dp):
    # DeepSeek-R1 fp8 on 8 B200s at 256 clients (ideal: no waves): the closed loop's share of each
    # attention group's time on prompts is the open loop's at the request rate the closed loop serves,
    # u = lambda p_mix / dp_attention; with 8 attention groups it is not 8 times the group's share
    row = estimate_row(
        gpu="b200",
        model=R1,
        precision="fp8",
        tp=tp,
        ep=8,
        dp_attention=dp,
        batch=256,
        input_tokens=1024,
        output_tokens=1024,
    )
    rate = row["requests_per_s_per_replica"]
    opened_row = load.open_loop(pl.LazyFrame([row]), pl.lit(rate)).collect().row(0, named=True)
    assert 0 < row["prefill_fraction"] < 1
    assert row["prefill_fraction"] == pytest.approx(opened_row["prefill_fraction"], rel=1e-9)
