"""Serving modes (estimate/disaggregated.py, speculative.py, prefix.py): hand-derived cases, the
roofline limits, and Little's law in every mode, closed and open loop."""

from __future__ import annotations

import math

import polars as pl
import pytest

from llmsweep.estimate import disaggregated, load

from .conftest import estimate_row, estimate_rows
from .test_load import toy

R1 = "deepseek-ai/DeepSeek-R1"
L70, L8 = "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-8B"
MTP = dict(method="mtp", draft_tokens=1, acceptance=0.8)


def speculation(**kw):
    from llmsweep.grid import Speculation

    return Speculation(**kw)


# -- disaggregated: a toy 1P2D replica ------------------------------------------------------------------------------
def toy_disaggregated(**over) -> pl.DataFrame:
    """test_load.toy's replica as the decode worker (t_d(b) = 10 ms + 0.5 ms x b, k = 100 steps after
    the first token), one prefill worker of p = 100 ms, two decode workers, a KV transfer of
    tau = 11.5 ms, 8 GPUs per worker."""
    given = {k: over.pop(k) for k in ("prefill_workers", "decode_workers", "kv_transfer_s") if k in over}
    pools = {
        "prefill_workers": 1,
        "decode_workers": 2,
        "kv_transfer_s": 0.0115,
        "prefill_dp_attention": 1,
        "handoff_overhead_s": 0.0,
    } | given
    return toy(**over).with_columns(
        **{k: pl.lit(v) for k, v in pools.items()},
        prefill_pool_gpus=pl.lit(8) * pools["prefill_workers"],
        gpus=pl.lit(8) * (pools["prefill_workers"] + pools["decode_workers"]),
    )


def closed_disaggregated(frame: pl.DataFrame) -> dict:
    return disaggregated.closed_loop(frame.lazy()).collect().row(0, named=True)


def solve_by_hand(n: int, p: float, x: int, y: int, tau: float, k: float, a_: float, b_: float) -> float:
    """R from the module docstring's equation, by plain bisection (one memory-bound roof t = a_ + b_ b):
    R - tau - p (x - 1) / x - (p / x) R / (R - a) - max(c1 R / (R - c2), (1 + k)(a_ + b_)) = 0."""
    a, k1 = (n - 1) * p / x, 1 + k
    c1, c2 = k1 * (a_ + b_ / y), k1 * b_ * (n - 1) / y
    lo, hi = max(a, c2, tau), 100.0
    for _ in range(200):
        r = (lo + hi) / 2
        h = r - tau - p * (x - 1) / x - p / x * r / (r - a) - max(c1 * r / (r - c2), k1 * (a_ + b_))
        lo, hi = (r, hi) if h < 0 else (lo, r)
    return hi


def test_1p2d_at_concurrency_16_by_hand():
    # n = 16 clients, p = 0.1 s on x = 1 prefill worker, y = 2 decode workers, tau = 11.5 ms, k = 100:
    #   a = 15 x 0.1 = 1.5, c1 = 101 x (0.010 + 0.0005 / 2) = 1.03525, c2 = 101 x 0.0005 x 15 / 2 = 0.37875
    #   R - 0.0115 - 0.1 R / (R - 1.5) - 1.03525 R / (R - 0.37875) = 0  ->  R = 1.8466 s (prefill-bound:
    #   the prefill worker is busy rho = X p = 16 / R x 0.1 = 0.866 of the time)
    r = closed_disaggregated(toy_disaggregated(batch=16))
    big_r = solve_by_hand(16, 0.1, 1, 2, 0.0115, 100, 0.010, 0.0005)
    assert big_r == pytest.approx(1.8466, abs=1e-4)
    d = 1.03525 * big_r / (big_r - 0.37875)  # time in decode, first decode step included
    t_d = d / 101  # each decode step: 10 ms + 0.5 ms x b
    b = (1 + 15 * d / big_r) / 2  # the request's worker: itself and its half of the others decoding
    assert t_d == pytest.approx(0.010 + 0.0005 * b, rel=1e-9)
    assert r["request_latency_s"] == pytest.approx(big_r, rel=1e-9)
    assert r["tpot_s"] == pytest.approx(t_d, rel=1e-9)
    # TTFT = waiting for the prefill worker + p + tau + the first decode step = R - k t_d
    wait = 0.1 * big_r / (big_r - 1.5) - 0.1
    assert r["ttft_s"] == pytest.approx(wait + 0.1 + 0.0115 + t_d, rel=1e-9)
    assert r["ttft_s"] == pytest.approx(big_r - 100 * t_d, rel=1e-9)
    assert r["prefill_utilization"] == pytest.approx(16 / big_r * 0.1, rel=1e-9)
    assert r["requests_per_s_per_replica"] * r["request_latency_s"] == pytest.approx(16)
    # p90: an arrival finds the worker busy with the others' prompts 15/16 of rho = 0.8118 of the time
    # (Sakasegawa's exponent sqrt(2 x 2) - 1 = 1 at x = 1), and waits E[W] / busy x ln(busy / 0.1);
    # at most the 15 prompts ahead, 1.5 s, which does not bind here
    busy = 15 / 16 * 16 / big_r * 0.1
    p90_wait = wait / busy * math.log(busy / 0.1)
    assert p90_wait < 1.5
    assert r["ttft_p90_s"] == pytest.approx(0.1 + 0.0115 + t_d + p90_wait, rel=1e-9)


def test_no_prompt_waits_for_a_prefill_worker_when_every_client_has_one():
    # 8 clients, 8 prefill workers, p = 1 s, 10 decode steps: a prompt always finds a free worker, so
    # TTFT = p + tau + t_d(1) = 1 + 0.0115 + 0.0105 = 1.022 s, its percentiles too (Seidmann's
    # a = 7 p / 8 would make it wait 0.24 s on average)
    slow = dict(prefill_s=1.0, prefill_compute_s=1.0, output_tokens=11)
    r = closed_disaggregated(toy_disaggregated(batch=8, prefill_workers=8, **slow))
    assert r["tpot_s"] == pytest.approx(0.0105, rel=1e-12)
    for name in ("ttft_s", "ttft_p90_s", "ttft_p99_s"):
        assert r[name] == pytest.approx(1.022, rel=1e-12)
    assert r["request_latency_s"] == pytest.approx(1.022 + 10 * 0.0105, rel=1e-12)
    # 9 clients: at most one service of p ahead (ceil((9 - 8) / 8) = 1), so p99 <= 2.022 s
    nine = closed_disaggregated(toy_disaggregated(batch=9, prefill_workers=8, **slow))
    assert 1.022 < nine["ttft_s"] < nine["ttft_p99_s"] <= 1.0115 + nine["tpot_s"] + 1.0 + 1e-12


def test_a_prefill_bound_pool_serves_no_more_than_x_prompts_per_p():
    # 64 clients on 4 prefill workers of p = 1 s, 10 decode steps: the pool completes at most
    # x / p = 4 prompts/s, so R >= 64 / 4 = 16 s (the queue ahead alone, a = (64 - 4) / 4 = 15 s,
    # would give R = 15 s + p / x + ... < 16 s); the requests/s are the pool's
    slow = dict(prefill_s=1.0, prefill_compute_s=1.0, output_tokens=11)
    r = closed_disaggregated(toy_disaggregated(batch=64, prefill_workers=4, **slow))
    assert r["request_latency_s"] == pytest.approx(16.0, rel=1e-12)
    assert r["requests_per_s_per_replica"] == pytest.approx(4.0, rel=1e-12)
    assert r["prefill_utilization"] == pytest.approx(1.0, rel=1e-12)
    assert r["ttft_s"] + 10 * r["tpot_s"] == pytest.approx(16.0, rel=1e-12)


def test_decode_pool_at_8_sequences_per_worker_when_prefill_is_short():
    # p = 1 ms: prompts barely queue, so 16 clients keep 8 sequences decoding on each of the 2 workers
    # and TPOT is t_d(8) = 10 ms + 8 x 0.5 ms = 14 ms (within the 1 % the 17 ms of TTFT take from D / R)
    r = closed_disaggregated(toy_disaggregated(batch=16, prefill_s=0.001, kv_transfer_s=0.0))
    assert r["tpot_s"] == pytest.approx(0.014, rel=0.01)
    assert r["decode_batch"] == pytest.approx(8, rel=0.01)


def test_a_decode_worker_never_runs_less_than_its_own_sequence():
    # 2 clients on 4 decode workers: each request decodes alone on its worker, t_d(1) = 10.5 ms, and
    # R = tau + p + 101 x 10.5 ms = 0.0115 + 0.1 + 1.0605 = 1.172 s (the two prompts rarely meet:
    # a = 0.1, so the prefill residence is 0.1 R / (R - 0.1))
    r = closed_disaggregated(toy_disaggregated(batch=2, decode_workers=4))
    assert r["tpot_s"] == pytest.approx(0.0105, rel=1e-12)
    big_r = solve_by_hand(2, 0.1, 1, 4, 0.0115, 100, 0.010, 0.0005)
    assert r["request_latency_s"] == pytest.approx(big_r, rel=1e-9)
    assert big_r == pytest.approx(0.0115 + 0.1 * big_r / (big_r - 0.1) + 1.0605, rel=1e-12)


def test_kv_transfer_of_an_8k_deepseek_r1_prompt_over_a_50_gb_s_nic():
    # 1 prefill + 2 decode workers of 8 H200 (24 GPUs > the 8 of one NVLink domain: the NICs carry
    # the KV cache). DeepSeek-R1 caches a 512 + 64 latent per layer, 61 layers, 2 bytes (vLLM keeps
    # 16 bits for fp8 weights): 61 x 576 x 2 = 70,272 bytes per token, 8,192 tokens: 575,668,224 bytes.
    # The latent is one "KV head", replicated on the tp ranks: one shard, one sender, one 50 GB/s
    # ConnectX-7 NIC: 575,668,224 / 50e9 = 11.513 ms (ideal: efficiency 1, no latency).
    (row,) = [
        r
        for r in estimate_rows(
            gpu="h200-sxm",
            model=R1,
            precision="fp8",
            input_tokens=8192,
            output_tokens=1024,
            batch=16,
            tp=8,
            ep=8,
            mode="disaggregated",
            prefill_workers=1,
            decode_workers=2,
        )
    ]
    assert row["kv_transfer_bytes"] == 61 * 576 * 2 * 8192 == 575_668_224
    # the decode workers' tp 8 replicates the latent too: each receiving GPU takes the whole of it
    assert row["prefill_kv_shard_bytes"] == row["decode_kv_shard_bytes"] == 575_668_224
    assert row["kv_link"] == "scale-out"
    assert row["kv_transfer_s"] == pytest.approx(575_668_224 / 50e9, rel=1e-12)
    assert row["gpus"] == 24 and row["prefill_pool_gpus"] == 8 and row["decode_pool_gpus"] == 16
    assert row["fits"]
    # TTFT holds the transfer and the first decode step on top of the prefill and its wait
    assert row["ttft_s"] > row["prefill_s"] + row["kv_transfer_s"]


def test_pools_inside_one_nvlink_domain_move_the_kv_cache_over_nvlink():
    # GB200 NVL72: 1 prefill + 2 decode workers of 8 GPUs = 24 <= 72, the KV cache stays on NVLink
    row = estimate_row(
        gpu="gb200",
        model=R1,
        precision="fp8",
        input_tokens=8192,
        output_tokens=1024,
        batch=16,
        tp=8,
        ep=8,
        mode="disaggregated",
    )
    assert row["kv_link"] == "scale-up"
    assert row["kv_transfer_s"] == pytest.approx(575_668_224 / 900e9, rel=1e-12)


def test_each_prefill_gpu_sends_its_own_shard_of_a_recurrent_state():
    # Qwen3.5-397B-A17B at bf16 KV (test_estimate.py): 30,720 B per token in 15 full-attention layers
    # of 2 KV heads, and a 192,061,440 B Gated DeltaNet state. A prefill worker at tp 8 holds each KV
    # head on 4 GPUs (2 shards) but splits the state's 64 value heads 8 ways, so its busiest GPU sends
    # 30,720 x 8,192 / 2 + 192,061,440 / 8 = 125,829,120 + 24,007,680 = 149,836,800 B; over one
    # 50 GB/s NIC at efficiency 1 that is 2.997 ms (the whole state over 2 senders would be 4.44 ms).
    (row,) = estimate_rows(
        gpu="h200-sxm",
        model="Qwen/Qwen3.5-397B-A17B",
        precision="fp8",
        kv_precision="bf16",
        input_tokens=8192,
        output_tokens=1024,
        batch=16,
        tp=8,
        mode="disaggregated",
        prefill_workers=1,
        decode_workers=2,
    )
    assert row["kv_link"] == "scale-out"
    assert row["kv_transfer_bytes"] == 30_720 * 8192 + 192_061_440
    assert row["prefill_kv_shard_bytes"] == 30_720 * 8192 / 2 + 192_061_440 / 8 == 149_836_800
    assert row["decode_kv_shard_bytes"] == 149_836_800  # the decode worker's tp 8 splits it alike
    assert row["kv_transfer_s"] == pytest.approx(149_836_800 / 50e9, rel=1e-12)


def test_one_decode_gpu_receives_the_whole_prompt_from_eight_prefill_gpus():
    # Llama-3.1-8B, 4,096-token prompts at 16 bits: 2 x 32 layers x 8 KV heads x 128 x 2 bytes =
    # 131,072 bytes per token, 536,870,912 bytes a prompt. The prefill worker at tp 8 splits the 8 KV
    # heads one per GPU: each of its 8 GPUs sends 536,870,912 / 8 = 67,108,864 bytes (1.34 ms on its
    # 50 GB/s NIC). The decode worker at tp 1 holds the whole cache on one GPU, whose one NIC receives
    # all 536,870,912 bytes: tau = max(67,108,864, 536,870,912) / 50e9 = 10.737 ms (ideal: efficiency
    # 1, no latency), not the sender's 1.34 ms. The replica's 8 + 1 = 9 GPUs are more than one HGX
    # server's 8, so the NICs carry it.
    pools = dict(gpu="h100-sxm", model=L8, input_tokens=4096, output_tokens=512, batch=64, mode="disaggregated")
    pools.update(prefill_workers=1, decode_workers=1)
    (row,) = estimate_rows(**pools, tp=1, prefill_tp=8)
    assert row["kv_link"] == "scale-out"
    assert row["kv_transfer_bytes"] == 131_072 * 4096 == 536_870_912
    assert row["prefill_kv_shard_bytes"] == 536_870_912 / 8 == 67_108_864
    assert row["decode_kv_shard_bytes"] == 536_870_912
    assert row["kv_transfer_s"] == pytest.approx(536_870_912 / 50e9, rel=1e-12)
    assert row["kv_transfer_s"] == pytest.approx(0.010737, abs=1e-6)
    # the other way round (prefill tp 1, decode tp 8) the one prefill GPU sends it all: the same 10.7 ms
    (back,) = estimate_rows(**pools, tp=8, prefill_tp=1)
    assert back["prefill_kv_shard_bytes"] == 536_870_912 and back["decode_kv_shard_bytes"] == 67_108_864
    assert back["kv_transfer_s"] == pytest.approx(row["kv_transfer_s"], rel=1e-12)


def test_open_loop_disaggregated_x1_is_md1():
    # lambda = 5 /s on x = 1 prefill worker of p = 0.1 s: rho = 0.5, Pollaczek-Khinchine
    # W = rho p / (2 (1 - rho)) = 0.05 s. Decode: D = 101 (0.010 + 0.0005 / 2) / (1 - 101 x 5 x 0.0005 / 2)
    # = 1.03525 / 0.87375 = 1.18484 s (b = (1 + lambda D) / 2 = 3.462 > 1).
    frame = toy_disaggregated()
    r = disaggregated.open_loop(frame.lazy(), pl.lit(5.0)).collect().row(0, named=True)
    d = 1.03525 / 0.87375
    assert r["ttft_s"] == pytest.approx(0.05 + 0.1 + 0.0115 + d / 101, rel=1e-9)
    assert r["tpot_s"] == pytest.approx(d / 101, rel=1e-9)
    assert r["request_latency_s"] == pytest.approx(0.05 + 0.1 + 0.0115 + d, rel=1e-9)
    assert r["concurrency"] == pytest.approx(5 * r["request_latency_s"])
    # the hand-off between the pools (profile handoff_overhead_s) adds to TTFT and latency as it is
    handed = disaggregated.open_loop(frame.with_columns(handoff_overhead_s=pl.lit(0.05)).lazy(), pl.lit(5.0))
    handed = handed.collect().row(0, named=True)
    assert handed["ttft_s"] == pytest.approx(r["ttft_s"] + 0.05, rel=1e-12)
    assert handed["tpot_s"] == pytest.approx(r["tpot_s"], rel=1e-12)
    saturated = disaggregated.open_loop(frame.lazy(), pl.lit(10.0)).collect().row(0, named=True)
    assert saturated["saturated"] and saturated["ttft_s"] is None  # rho = 1: the prefill pool is full


def test_open_loop_two_prefill_workers_by_hand():
    # lambda = 10 /s on x = 2 prefill workers of p = 0.1 s: rho = 10 x 0.1 / 2 = 0.5; Sakasegawa's P(wait)
    # = 0.5^(sqrt(2 x 3) - 1) = 0.5^1.44949 = 0.36615; Allen-Cunneen (deterministic service, half the
    # M/M/2 wait) W = 0.36615 x 0.1 / (2 x 2 x 0.5) = 0.018308 s. Decode on 2 workers:
    # D = 101 (0.010 + 0.0005 / 2) / (1 - 101 x 10 x 0.0005 / 2) = 1.03525 / 0.7475 = 1.384950 s.
    r = disaggregated.open_loop(toy_disaggregated(prefill_workers=2).lazy(), pl.lit(10.0)).collect().row(0, named=True)
    wait = 0.5 ** (6**0.5 - 1) * 0.1 / (2 * 2 * 0.5)
    assert wait == pytest.approx(0.018308, abs=1e-6)
    d = 1.03525 / 0.7475
    assert r["ttft_s"] == pytest.approx(wait + 0.1 + 0.0115 + d / 101, rel=1e-9)
    assert r["request_latency_s"] == pytest.approx(wait + 0.1 + 0.0115 + d, rel=1e-9)
    assert r["prefill_utilization"] == pytest.approx(0.5)


def test_more_prefill_workers_cut_the_wait():
    one = closed_disaggregated(toy_disaggregated(batch=16))
    two = closed_disaggregated(toy_disaggregated(batch=16, prefill_workers=2))
    assert two["ttft_s"] < one["ttft_s"] and two["requests_per_s_per_replica"] > one["requests_per_s_per_replica"]


# -- speculative decoding ----------------------------------------------------------------------------------------------
def test_mtp_at_batch_1_divides_the_memory_bound_step_by_the_expected_tokens():
    # Dense 70B, batch 1 (memory-bound): the step verifying 2 tokens reads the weights once, the KV once,
    # and the draft layer (1/80 of the model) once: step x (1 + 1/80). E = (1 - 0.8^2) / (1 - 0.8) = 1.8,
    # so TPOT = step x 1.0125 / 1.8 (ideal: no fixed costs). (The verifying pass also gathers one more
    # embedding row a sequence, 8,192 bytes against 140 GB: rel 1e-7.)
    kw = dict(gpu="h100-sxm", model=L70, precision="fp8", input_tokens=1024, output_tokens=256, batch=1)
    plain = estimate_row(**kw)
    mtp = estimate_row(**kw, speculative=speculation(**MTP))
    assert mtp["tokens_per_step"] == pytest.approx(1.8)
    assert mtp["decode_memory_s"] == pytest.approx(plain["decode_memory_s"] * (1 + 1 / 80), rel=1e-6)
    assert mtp["decode_compute_s"] == pytest.approx(plain["decode_compute_s"] * (2 + 1 / 80), rel=1e-9)
    assert mtp["bound"] == "memory"
    assert mtp["tpot_s"] == pytest.approx(plain["tpot_s"] * (1 + 1 / 80) / 1.8, rel=1e-6)
    # Little's law and the tokens: R = TTFT + (S_out - 1) TPOT
    assert mtp["request_latency_s"] == pytest.approx(mtp["ttft_s"] + 255 * mtp["tpot_s"], rel=1e-9)


def test_mtp_stops_paying_where_the_step_is_compute_bound():
    # Llama-3.1-8B bf16, 32-token contexts, batch 2,048 on an H100: 2,048 x 1.6e10 FLOPs against 16 GB of
    # weights and 8.6 GB of KV, 1,330 FLOP/byte > the ridge (295): compute-bound. Verifying 2 tokens
    # costs (2 + 1/32) x the FLOPs, which E = 1.8 does not repay: TPOT x 2.03125 / 1.8 = 1.128 x.
    kw = dict(gpu="h100-sxm", model=L8, input_tokens=16, output_tokens=16, batch=2048)
    plain = estimate_row(**kw)
    mtp = estimate_row(**kw, speculative=speculation(method="eagle", draft_tokens=1, acceptance=0.8))
    assert plain["bound"] == mtp["bound"] == "compute"
    assert mtp["decode_step_s"] == pytest.approx(plain["decode_step_s"] * (2 + 1 / 32), rel=1e-9)
    assert mtp["decode_tokens_per_s"] < plain["decode_tokens_per_s"]  # fewer tokens per second of GPU
    # where it stops paying comes out of the roofline: the batch at which the two decode rates cross
    batches = [1, 8, 64, 256, 512, 1024, 2048]
    rows = estimate_rows(gpu="h100-sxm", model=L8, input_tokens=16, output_tokens=16, batch=batches)
    spec = estimate_rows(
        gpu="h100-sxm",
        model=L8,
        input_tokens=16,
        output_tokens=16,
        batch=batches,
        speculative=speculation(method="eagle", draft_tokens=1, acceptance=0.8),
    )
    pays = [s["decode_tokens_per_s"] > p["decode_tokens_per_s"] for p, s in zip(rows, spec, strict=True)]
    assert pays[0] and not pays[-1] and pays == sorted(pays, reverse=True)


def test_tokens_per_step_from_acceptance():
    # i.i.d. alpha = 0.7, k = 3: (1 - 0.7^4) / 0.3 = 2.533; per-position rates 0.9, 0.8, 0.5 (given as
    # tokens_per_step by the spec): 1 + 0.9 + 0.72 + 0.36 = 2.98; alpha = 1: k + 1.
    kw = dict(gpu="h100-sxm", model=L8, input_tokens=128, output_tokens=128)
    assert estimate_row(**kw, speculative=speculation(method="eagle", draft_tokens=3, acceptance=0.7))[
        "tokens_per_step"
    ] == pytest.approx((1 - 0.7**4) / 0.3)
    assert estimate_row(**kw, speculative=speculation(method="eagle", draft_tokens=3, tokens_per_step=2.98))[
        "tokens_per_step"
    ] == pytest.approx(2.98)
    assert estimate_row(**kw, speculative=speculation(method="eagle", draft_tokens=2, acceptance=1.0))[
        "tokens_per_step"
    ] == pytest.approx(3.0)
    # no acceptance stated: the profile's for the method (literature: MTP 0.85, DeepSeek-V3 §5.4.3;
    # default: fitted on InferenceX's random-token prompts, calibrate/serving.py)
    for profile in ("literature", "default"):
        from llmsweep.catalog import load_catalog

        expected = load_catalog().profile(profile).defaults.mtp_acceptance
        assert estimate_row(profile, **kw, speculative=speculation(method="mtp", draft_tokens=1))[
            "acceptance_rate"
        ] == pytest.approx(expected)
    assert load_catalog().profile("literature").defaults.mtp_acceptance == 0.85


def test_speculation_adds_the_draft_weights_to_memory():
    kw = dict(gpu="h100-sxm", model=L70, precision="fp8", tp=2, input_tokens=1024, output_tokens=256)
    plain, mtp = estimate_row(**kw), estimate_row(**kw, speculative=speculation(**MTP))
    assert mtp["draft_weight_bytes"] == pytest.approx(plain["model_weight_bytes"] / 80)
    assert mtp["weight_bytes"] == pytest.approx(plain["weight_bytes"] * (1 + 1 / 80))
    assert mtp["max_batch"] < plain["max_batch"]


def test_a_draft_models_kv_cache_is_its_own_not_its_parameter_share():
    # Llama-3.1-70B drafted by Llama-3.1-8B, k = 3, tp 4, 32 sequences of 8,192 + 1,024 tokens, 16-bit
    # KV. The draft's parameters are f = 8.03e9 / 70.55e9 = 0.114 of the target's, but its cache is
    # 2 x 32 x 8 x 128 x 2 = 131,072 bytes per token against the target's 2 x 80 x 8 x 128 x 2 =
    # 327,680: r = 0.40. Both split their 8 KV heads over tp 4, so each GPU holds
    # 32 x 9,216 x (327,680 + 131,072) / 4 = 32 x 9,216 x 114,688 = 33,822,867,456 bytes
    # = 24,159,191,040 (the target's) x 1.40, not x 1.114 (26.9e9).
    kw = dict(gpu="h100-sxm", model=L70, tp=4, batch=32, input_tokens=8192, output_tokens=1024)
    plain = estimate_row(**kw)
    draft = estimate_row(**kw, speculative=speculation(method="draft", draft_tokens=3, draft_model=L8))
    assert draft["draft_fraction"] == pytest.approx(8_030_261_248 / 70_553_706_496, rel=1e-12)  # 0.1138
    assert draft["draft_kv_ratio"] == 131_072 / 327_680 == 0.4
    assert plain["kv_cache_bytes"] == 32 * 9216 * 327_680 / 4 == 24_159_191_040
    assert draft["kv_cache_bytes"] == pytest.approx(32 * 9216 * 114_688, rel=1e-12)
    assert draft["kv_cache_bytes"] == pytest.approx(plain["kv_cache_bytes"] * 1.4, rel=1e-12)
    # KV reads: the target reads its cache once, each of the 3 draft passes its own, 0.4 of it:
    # 1 + 3 x 0.4 = 2.2 times the target's 32 x 8,704 (mean context) x 327,680 = 91,268,055,040 bytes
    # (the step's bytes less its weights, decode_weight_fraction; the weights stay at f)
    assert draft["spec_kv_factor"] == pytest.approx(2.2, rel=1e-12)

    def kv_reads(row):
        return row["decode_bytes_per_step"] * (1 - row["decode_weight_fraction"])

    assert kv_reads(plain) == pytest.approx(32 * 8704 * 327_680, rel=1e-9)
    assert kv_reads(draft) == pytest.approx(32 * 8704 * 327_680 * 2.2, rel=1e-9)


def test_a_draft_with_fewer_kv_heads_than_tp_holds_them_replicated():
    # Qwen2.5-32B (64 layers, 8 KV heads: 262,144 bytes per token at 16 bits) drafted by Qwen2.5-7B
    # (28 layers, 4 KV heads: 2 x 28 x 4 x 128 x 2 = 57,344 bytes), k = 3, tp 8: the target's heads
    # are split 8 ways, the draft's 4 only (a KV head is never split), so each GPU holds
    # 262,144 / 8 + 57,344 / 4 = 32,768 + 14,336 = 47,104 bytes per token. r = 57,344 / 262,144 =
    # 0.21875, and the draft's heads are read on twice as many ranks: r' = 0.21875 x 8 / 4 = 0.4375.
    kw = dict(gpu="h100-sxm", model="Qwen/Qwen2.5-32B", tp=8, batch=8, input_tokens=4096, output_tokens=1024)
    draft = estimate_row(**kw, speculative=speculation(method="draft", draft_tokens=3, draft_model="Qwen/Qwen2.5-7B"))
    assert draft["draft_kv_ratio"] == pytest.approx(0.21875, rel=1e-12)
    assert draft["kv_cache_bytes"] == pytest.approx(8 * 5120 * 47_104, rel=1e-12)
    assert draft["spec_kv_factor"] == pytest.approx(1 + 3 * 0.4375, rel=1e-12)


def test_mtp_and_eagle_draft_kv_stays_one_layer_of_the_targets():
    # One decoder layer of the target's shape: r = f = 1 / 80 for Llama-3.1-70B, its cache 1/80 of the
    # target's on each GPU, its reads 1/80 per draft pass.
    kw = dict(gpu="h100-sxm", model=L70, precision="fp8", tp=2, batch=16, input_tokens=2048, output_tokens=256)
    plain = estimate_row(**kw)
    for method in ("mtp", "eagle"):
        row = estimate_row(**kw, speculative=speculation(method=method, draft_tokens=2, acceptance=0.8))
        assert row["draft_kv_ratio"] == pytest.approx(1 / 80, rel=1e-12)
        assert row["draft_fraction"] == pytest.approx(1 / 80, rel=1e-12)
        assert row["kv_cache_bytes"] == pytest.approx(plain["kv_cache_bytes"] * (1 + 1 / 80), rel=1e-12)
        assert row["spec_kv_factor"] == pytest.approx(1 + 2 / 80, rel=1e-12)


# -- prefix caching ----------------------------------------------------------------------------------------------
def test_prefix_hit_rate_075_cuts_the_new_tokens_prefill_flops_to_a_quarter():
    # Llama-3.1-8B, 8,192-token prompts, h = 0.75: 2,048 new tokens. Linear FLOPs 2 P_a x 2,048 = a quarter
    # of 2 P_a x 8,192; attention: the new tokens attend to every key before them,
    # 4 L h_q d_h (8192^2 / 2 - 6144^2 / 2) = 4 x 32 x 32 x 128 x 14,680,064 against 8192^2 / 2 = 33,554,432.
    kw = dict(gpu="h100-sxm", model=L8, input_tokens=8192, output_tokens=128)
    full, cached = estimate_row(**kw), estimate_row(**kw, prefix_hit_rate=0.75)
    per_key = 4 * 32 * 32 * 128
    assert cached["prefill_new_tokens"] == 2048
    linear_full = full["prefill_flops"] - per_key * 8192**2 / 2
    linear_cached = cached["prefill_flops"] - per_key * (8192**2 - 6144**2) / 2
    # (the LM head runs once a prompt either way, at its last position: 2 x 525,336,576)
    head = 2 * 525_336_576
    assert linear_cached - head == pytest.approx((linear_full - head) / 4, rel=1e-12)
    assert cached["prefill_s"] < full["prefill_s"] / 3
    assert cached["tpot_s"] == pytest.approx(full["tpot_s"], rel=1e-12)  # decode is unchanged


def test_a_shared_prefix_is_held_once():
    kw = dict(gpu="h100-sxm", model=L8, input_tokens=8000, output_tokens=192, batch=32, prefix_hit_rate=0.5)
    own, shared = estimate_row(**kw), estimate_row(**kw, prefix_shared=True)
    # 32 sequences of 8,192 tokens, 4,000 of them a common prefix: 31 x 4,000 tokens fewer, 131,072 B each
    assert own["kv_cache_bytes"] - shared["kv_cache_bytes"] == pytest.approx(31 * 4000 * 131072, rel=1e-12)
    assert shared["max_batch"] > own["max_batch"]


# -- every mode keeps the operating point consistent -------------------------------------------------------------
MODES = {
    "aggregated": {},
    "disaggregated": dict(mode="disaggregated", prefill_workers=[1, 2], decode_workers=[1, 3]),
    "mtp": dict(speculative=[speculation(**MTP)]),
    "prefix": dict(prefix_hit_rate=0.6),
    "all": dict(mode="disaggregated", speculative=[speculation(**MTP)], prefix_hit_rate=0.6),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_littles_law_in_every_mode(mode):
    rows = estimate_rows(
        "default",
        gpu="h200-sxm",
        model=R1,
        precision="fp8",
        tp=8,
        ep=8,
        input_tokens=[1024, 8192],
        output_tokens=1024,
        batch=[1, 16, 256],
        **MODES[mode],
    )
    for r in rows:
        assert r["requests_per_s_per_replica"] * r["request_latency_s"] == pytest.approx(r["batch"], rel=1e-9)
        assert r["output_tokens_per_s"] == pytest.approx(r["requests_per_s_per_replica"] * 1024, rel=1e-9)
        assert r["decode_tokens_per_s_per_seq"] * r["batch"] == pytest.approx(r["output_tokens_per_s"], rel=1e-9)
        assert r["request_latency_s"] == pytest.approx(r["ttft_s"] + 1023 * r["tpot_s"], rel=1e-9)
        assert r["ttft_s"] <= r["ttft_p90_s"] * (1 + 1e-9) or r["ttft_p90_s"] >= r["prefill_s"]


def test_littles_law_open_loop_in_every_mode():
    from llmsweep.catalog import load_catalog

    cat = load_catalog()
    frame = estimate_frame_at_batch(cat)
    for disagg, rate in ((False, 0.5), (True, 0.5)):
        part = frame.filter(pl.col("mode") == ("disaggregated" if disagg else "aggregated"))
        loop = disaggregated.open_loop if disagg else load.open_loop
        out = loop(part.lazy(), pl.lit(rate)).collect()
        assert out.height and not out["saturated"].any()
        for r in out.iter_rows(named=True):
            assert r["concurrency"] == pytest.approx(rate * r["request_latency_s"], rel=1e-12)
            assert r["output_tokens_per_s"] == pytest.approx(rate * 512, rel=1e-12)
            assert r["request_latency_s"] == pytest.approx(r["ttft_s"] + 511 * r["tpot_s"], rel=1e-9)


def estimate_frame_at_batch(cat) -> pl.DataFrame:
    from llmsweep.grid import Axes, grid_parts

    axes = Axes(
        gpu=["h200-sxm"],
        model=[R1],
        precision=["fp8"],
        tp=[8],
        ep=[8],
        input_tokens=[1024],
        output_tokens=[512],
        mode=["aggregated", "disaggregated"],
        speculative=[speculation(), speculation(**MTP)],
    )
    return grid_parts(cat, axes, cat.profile("default")).estimate().collect()


def test_a_disaggregated_replicas_capacity_is_the_edge_of_saturation():
    # The bisection runs between 0 and x / p, p the prefill worker's (tp 8): the capacity it finds is
    # served and 2 % more is not. The decode worker (tp 1 with 8 attention groups) would prefill a
    # prompt far slower than the prefill pool does, so a bound taken from its layout would cap the
    # capacity below the truth.
    from llmsweep.catalog import load_catalog
    from llmsweep.estimate import modes
    from llmsweep.grid import Axes, grid_parts

    cat = load_catalog()
    axes = Axes(
        gpu=["b200"],
        model=[R1],
        precision=["fp8"],
        tp=[1],
        dp_attention=[8],
        ep=[8],
        input_tokens=[8192],
        output_tokens=[1024],
        mode=["disaggregated"],
        prefill_workers=[3],
        decode_workers=[1],
        prefill_tp=[8],
        prefill_dp_attention=[1],
    )
    frame = grid_parts(cat, axes, cat.profile("default")).estimate().collect()
    cap = modes.max_rate(frame)
    assert frame.height == 1 and cap[0] > 0
    assert cap[0] <= frame.select(disaggregated.prefill_servers() / pl.col("first_token_s")).item()
    for share, saturated in ((0.99, False), (1.02, True)):
        out = disaggregated.open_loop(frame.lazy(), pl.lit(cap[0] * share)).collect()
        assert out["saturated"][0] == saturated


def test_a_draft_models_weights_are_counted_as_a_targets():
    """Llama-3.1-8B in int4 drafting Llama-3.1-70B: its weights are 6,979,588,096 x 0.515625 (int4 g128,
    4.125 bits) + its 16-bit embedding and LM head 2 x 128,256 x 4,096 = 1,050,673,152 x 2 =
    3,598,850,112 + 2,101,346,304 = 5,700,196,416 bytes, what it weighs as a target, not its 8.03e9
    parameters x 0.515625 = 4.14e9."""
    kw = dict(gpu="h100-sxm", precision="int4", tp=1, input_tokens=1024, output_tokens=256)
    drafted = estimate_row(model=L70, **kw, speculative=speculation(method="draft", draft_tokens=3, draft_model=L8))
    assert drafted["draft_unquantized_params"] == 2 * 128_256 * 4_096 == 1_050_673_152
    assert drafted["draft_weight_bytes"] == pytest.approx(5_700_196_416, rel=1e-12)
    assert drafted["draft_weight_bytes"] == pytest.approx(estimate_row(model=L8, **kw)["model_weight_bytes"], rel=1e-12)
