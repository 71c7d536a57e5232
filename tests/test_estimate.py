"""The estimator against values derived by hand (the arithmetic is in each test)."""

from __future__ import annotations

import pytest

from .conftest import estimate_row, estimate_rows

L2_7B, L31_8B, L31_70B = "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"
GIB = 2**30


def test_llama2_7b_fp16_weights():
    # 6,738,415,616 parameters x 2 bytes = 13,476,831,232 bytes, about 13.5 GB
    row = estimate_row(gpu="a100-80gb-sxm", model=L2_7B, precision="fp16")
    assert row["model_weight_bytes"] == 13_476_831_232
    assert row["weight_bytes"] == 13_476_831_232


def test_int4_weights_keep_half_bytes():
    # int4 g128 = 4.125 bits = 0.515625 bytes for the decoder layers; the embedding and LM head
    # (2 x 32,000 x 4,096 = 262,144,000) stay 16-bit (tests/test_weight_terms.py):
    # 6,476,271,616 x 0.515625 + 262,144,000 x 2 = 3,339,327,552 + 524,288,000 = 3,863,615,552 bytes
    row = estimate_row(gpu="a100-80gb-sxm", model=L2_7B, precision="int4")
    assert row["weight_bytes"] == 3_863_615_552


def test_llama2_7b_decode_on_a100_ideal():
    # batch 1, no prompt, one output token: mean context 0.5 tokens.
    # bytes per step = 13,476,831,232 weights - the embedding table 32,000 x 4,096 x 2 = 262,144,000
    # (a lookup of one row, 4,096 x 2 = 8,192 bytes) + 0.5 x 524,288 KV = 13,214,957,568
    # time = 13,214,957,568 / 2,039e9 B/s = 6.4811 ms -> 154.3 tokens/s (the ~150 tok/s roofline)
    row = estimate_row(gpu="a100-80gb-sxm", model=L2_7B, precision="fp16", input_tokens=0, output_tokens=1)
    assert row["decode_bytes_per_step"] == 13_476_831_232 - 262_144_000 + 8_192 + 262_144 == 13_214_957_568
    assert row["decode_tokens_per_s_per_seq"] == pytest.approx(2.039e12 / 13_214_957_568)
    assert row["decode_tokens_per_s_per_seq"] == pytest.approx(154.3, abs=0.1)
    assert row["bound"] == "memory"


def test_llama31_8b_prefill_on_h100_ideal():
    # FLOPs = 2 x (8,030,261,248 - 2 x 525,336,576 embedding and LM head) x 2048 + the LM head at the
    # last position 2 x 525,336,576 + 2 x 32 layers x 2048^2 x 32 heads x 128
    #       = 28,588,392,841,216 + 1,050,673,152 + 1,099,511,627,776 = 29,688,955,142,144 (about 3.0e13)
    # time = 2.969e13 / 989e12 FLOP/s = 30.02 ms (compute-bound: the weights take 4.5 ms to read)
    row = estimate_row(gpu="h100-sxm", model=L31_8B, precision="bf16", input_tokens=2048, output_tokens=1)
    assert row["prefill_flops"] == 28_588_392_841_216 + 1_050_673_152 + 1_099_511_627_776 == 29_688_955_142_144
    assert row["prefill_s"] == pytest.approx(29_688_955_142_144 / 989e12)
    assert row["ttft_s"] == pytest.approx(0.03002, abs=1e-5)
    assert row["prefill_tokens_per_s"] == pytest.approx(2048 / row["prefill_s"])


@pytest.mark.parametrize("profile", ["ideal", "default"])
def test_llama31_70b_needs_two_h100(profile):
    # 70,553,706,496 x 2 bytes = 141.1 GB > one H100's 80 GiB (85.9 GB); at tp=2 each holds 70.55 GB
    one, two = estimate_rows(profile, gpu="h100-sxm", model=L31_70B, precision="bf16", tp=[1, 2])
    assert not one["fits"] and one["max_batch"] == 0
    assert one["reason"] == "does not fit: memory_per_gpu_bytes exceeds usable_memory_bytes"
    assert two["fits"] and two["weight_bytes"] == 70_553_706_496
    assert two["max_batch"] >= 1


def test_kv_cache_bytes():
    # Llama-3.1-8B, 4 sequences at 1024 + 1024 tokens: 131,072 B x 2048 x 4 = 1,073,741,824 (1 GiB)
    row = estimate_row(gpu="h100-sxm", model=L31_8B, batch=4, input_tokens=1024, output_tokens=1024)
    assert row["kv_cache_bytes"] == 1_073_741_824
    # tp=2 splits the 8 KV heads: half per GPU
    row = estimate_row(gpu="h100-sxm", model=L31_8B, batch=4, input_tokens=1024, output_tokens=1024, tp=2)
    assert row["kv_cache_bytes"] == 536_870_912


def test_mla_latent_is_replicated_across_tp():
    # DeepSeek-V3 caches one latent per layer: 70,272 B/token, on every tp rank (8 x 1000 x 70,272)
    row = estimate_row(
        gpu="h200-sxm",
        model="deepseek-ai/DeepSeek-V3",
        precision="fp8",
        tp=8,
        batch=8,
        input_tokens=900,
        output_tokens=100,
    )
    assert row["kv_cache_bytes"] == 8 * 1000 * 70_272


@pytest.mark.parametrize(("tp", "kv_split"), [(1, 1), (2, 2), (8, 2)])
def test_a_recurrent_state_is_split_over_tp_and_written_back_each_step(tp, kv_split):
    # Qwen3.5-397B-A17B: 15 full-attention layers of 2 KV heads x 256 dims, 2 x 2 x 256 x 15 x 2 B =
    # 30,720 B per token at bf16, and 45 Gated DeltaNet layers with a fixed 192,061,440 B state per
    # sequence (test_architecture.py). tp splits the state's 64 value heads but only 2 KV heads, so at
    # tp 8 each KV head sits on 4 GPUs while each GPU holds 1/8 of the state.
    kv_token, state = 30_720, 192_061_440
    row = estimate_row(
        gpu="h200-sxm",
        model="Qwen/Qwen3.5-397B-A17B",
        precision="fp8",
        kv_precision="bf16",
        tp=tp,
        batch=8,
        input_tokens=8000,
        output_tokens=192,
    )
    # one GPU, 8 sequences at 8,192 tokens; tp 8: 8 x (30,720 x 8,192 / 2 + 192,061,440 / 8)
    # = 8 x (125,829,120 + 24,007,680) = 1,198,694,400 B
    assert row["kv_cache_bytes"] == 8 * (kv_token * 8192 / kv_split + state / tp)
    # a decode step at the mean context 8,000 + 96 reads each KV head on every GPU holding it
    # (tp / kv_split copies) and reads and writes the whole state once: tp 8,
    # 30,720 x 8,096 x 4 + 2 x 192,061,440 = 994,836,480 + 384,122,880 = 1,378,959,360 B a sequence
    assert row["decode_kv_bytes_per_sequence"] == kv_token * 8096 * (tp / kv_split) + 2 * state


def test_sliding_window_caps_kv():
    # Mistral-7B-v0.1: every layer has a 4096-token window, so at 8192 tokens a sequence holds
    # 131,072 B x 4096 = 536,870,912 bytes, not 131,072 x 8192
    row = estimate_row(gpu="h100-sxm", model="mistralai/Mistral-7B-v0.1", input_tokens=8000, output_tokens=192)
    assert row["kv_cache_bytes"] == 131_072 * 4096


@pytest.mark.parametrize(("tp", "kv_cache_bytes"), [(1, 23_152_558_080), (4, 11_156_848_640), (8, 10_947_133_440)])
def test_each_kind_of_layer_attends_and_splits_at_its_own_shape(tp, kv_cache_bytes):
    # gemma-4-26B-A4B (test_architecture.py): 25 window layers (W 1,024) of 8 KV heads x 256 dims,
    # 204,800 B per token at bf16, and 5 full layers of 2 global KV heads x 512 dims, 20,480 B; 16
    # query heads. 8 sequences at 131,072 tokens; tp splits each kind over its own KV heads, at
    # tp 4 the full layers' 2 heads 2 ways (each on 2 GPUs), the window layers' 8 heads 4 ways:
    # 8 x (20,480 x 131,072 / 2 + 204,800 x 1,024 / 4) = 8 x (1,342,177,280 + 52,428,800) = 11,156,848,640
    gemma = "google/gemma-4-26B-A4B"
    row = estimate_row(
        gpu="h100-sxm", model=gemma, precision="bf16", tp=tp, batch=8, input_tokens=130_048, output_tokens=1024
    )
    assert row["kv_cache_bytes"] == 8 * (20_480 * 131_072 / min(tp, 2) + 204_800 * 1_024 / min(tp, 8))
    assert row["kv_cache_bytes"] == kv_cache_bytes
    # a decode step reads the full layers' heads on every GPU holding them: tp 4, mean context 130,560,
    # 20,480 x 130,560 x 4/2 + 204,800 x 1,024 x 4/4 = 5,347,737,600 + 209,715,200 bytes a sequence
    expected = 20_480 * 130_560 * tp / min(tp, 2) + 204_800 * 1_024 * tp / min(tp, 8)
    assert row["decode_kv_bytes_per_sequence"] == expected
    # attention FLOPs per key at each kind's head dim: 4 x 16 x (5 x 512 + 25 x 256) = 573,440, the
    # window layers' share 6,400 / 8,960 = 0.714 (of the layers 25/30, of the cache 0.909). A
    # 131,072-token prompt: full span 131,072^2 / 2 = 8,589,934,592, window 131,072 x 1,024 - 1,024^2 / 2
    # = 133,693,440: 64 x (2,560 x 8,589,934,592 + 6,400 x 133,693,440) = 1,462,135,716,577,280
    assert (row["attention_flops_per_key"], row["window_fraction"]) == (573_440, 6_400 / 8_960)
    prompt = estimate_row(gpu="h100-sxm", model=gemma, precision="bf16", input_tokens=131_072, output_tokens=1)
    # (the linear part: 131,072 tokens without the LM head, which runs at the last position only)
    attention = prompt["prefill_flops"] - prompt["prefill_flops_per_token"] * 131_072 - 2 * prompt["lm_head_params"]
    assert attention == pytest.approx(1_462_135_716_577_280, rel=1e-12)


def test_chunked_attention_attends_within_its_chunk():
    # Llama-4-Scout: 48 layers, 36 of them attending within chunks of W = 8,192 tokens (query i sees
    # ((i - 1) mod W) + 1 keys, not min(i, W)), 12 globally; 4 x 48 x 40 heads x 128 = 983,040 FLOPs
    # per key, window share 36/48 = 0.75. A 32,768-token prompt: full span 32,768^2 / 2 = 536,870,912,
    # chunked 4 chunks x 8,192^2 / 2 = 134,217,728 (a sliding window would give 32,768 x 8,192 -
    # 8,192^2 / 2 = 234,881,024): 536,870,912 + 0.75 x (134,217,728 - 536,870,912) = 234,881,024 keys.
    scout = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
    row = estimate_row(gpu="h100-sxm", model=scout, tp=4, input_tokens=32768, output_tokens=8)
    assert (row["chunked_window"], row["attention_flops_per_key"], row["window_fraction"]) == (True, 983_040, 0.75)
    # linear: 2 x (17,172,894,720 - 2 x 202,048 x 5,120 embedding and LM head) x 32,768 + the LM head
    # at the last position 2 x 1,034,485,760 = 989,850,710,835,200 + 2,068,971,520
    linear = 2 * (17_172_894_720 - 2 * 1_034_485_760) * 32768 + 2 * 1_034_485_760
    assert row["prefill_flops"] == linear + 983_040 * 234_881_024 == 1_220_750_221_639_680
    # decode, 8,192 in and 8,192 out: the chunked layers' queries fill the second chunk, a mean of
    # (span(16,384) - span(8,192)) / 8,192 = (2 x 8,192^2 / 2 - 8,192^2 / 2) / 8,192 = 4,096 keys, the
    # global ones the mean context 8,192 + 4,096 = 12,288: 12,288 + 0.75 x (4,096 - 12,288) = 6,144.
    row = estimate_row(gpu="h100-sxm", model=scout, tp=4, input_tokens=8192, output_tokens=8192)
    assert row["decode_flops_per_step"] == row["flops_per_token"] + 983_040 * 6_144
    # and they read those keys' KV: 49,152 B per token in the global layers x 12,288 + 147,456 B in
    # the chunked ones x 4,096 = 603,979,776 + 603,979,776 bytes (8 KV heads: split, never replicated)
    assert row["decode_kv_bytes_per_sequence"] == 49_152 * 12_288 + 147_456 * 4_096 == 1_207_959_552


def test_activation_and_overhead_bytes():
    # Llama-2-7B fp16, tp 1, one 512-token prompt. Per prefill token:
    # (2 x 4096 + (32 + 2 x 32) x 128 + 2 x 11008) x 2 bytes = 42,496 x 2 = 84,992 bytes;
    # x 512 tokens = 43,515,904; plus fp32 logits 32,000 x 4 = 128,000 -> 43,643,904
    row = estimate_row("default", gpu="a100-80gb-sxm", model=L2_7B, precision="fp16", input_tokens=512)
    assert row["activation_bytes"] == 43_643_904
    assert row["overhead_bytes"] == 1 * GIB  # default profile runtime overhead, tp x pp = 1
    tp2 = estimate_row("default", gpu="a100-80gb-sxm", model=L2_7B, precision="fp16", tp=2)
    assert tp2["overhead_bytes"] == 1.5 * GIB  # + 0.5 GiB communication buffers
    assert tp2["usable_memory_bytes"] == 80 * GIB * 0.9  # vLLM-style 10 % reserve


def test_max_batch_is_the_boundary():
    rows = estimate_rows("default", gpu="l40s", model=L31_8B, batch="max", input_tokens=2048, output_tokens=512)
    (row,) = rows
    b = row["max_batch"]
    at, above = estimate_rows(
        "default", gpu="l40s", model=L31_8B, batch=[b, b + 1], input_tokens=2048, output_tokens=512
    )
    assert at["fits"] and not above["fits"]
    assert row["batch"] == b and row["batch_is_max"]
    # by hand: usable 48 GiB x 0.9 = 46,385,646,796.8; fixed = weights 16,060,522,496 + 1 GiB
    # + chunk 8192 tokens x (2 x 4096 + 48 x 128 + 2 x 14336) x 2 bytes = 8192 x 86,016 = 704,643,072;
    # per sequence = 131,072 x 2560 KV + 128,256 x 4 logits = 336,068,608
    # -> floor((46,385,646,796.8 - 16,060,522,496 - 1,073,741,824 - 704,643,072) / 336,068,608) = 84
    assert b == 84


def test_moe_experts_touched():
    # Mixtral: E = 8, k = 2. One token reads 2 experts; 4 tokens read 8 (1 - 0.75^4) = 5.46875
    one, four = estimate_rows(gpu="h100-sxm", model="mistralai/Mixtral-8x7B-v0.1", batch=[1, 4], tp=2)
    assert one["experts_touched"] == pytest.approx(2.0)
    assert four["experts_touched"] == pytest.approx(5.46875)
    # weights read at batch 1 = (total - 32 layers x 6 idle experts x 176,160,768) x 2 bytes, less the
    # embedding table 32,000 x 4,096 x 2 = 262,144,000, plus the token's row 4,096 x 2 = 8,192
    kv = 1 * (1024 + 128) * 131_072  # KV read at the mean context, both tp ranks together
    assert one["decode_bytes_per_step"] == pytest.approx(12_879_925_248 * 2 - 262_144_000 + 8_192 + kv)


def test_tensor_parallel_allreduce():
    # Llama-3.1-70B bf16, tp 2 on H100 SXM (NVLink 450 GB/s per direction), batch 1, default profile:
    # 2 all-reduces x 80 layers x (10 us + 2 x 1/2 x 8192 x 2 bytes / 450e9) = 160 x 10.0364 us = 1.6058 ms
    row = estimate_row("default", gpu="h100-sxm", model=L31_70B, tp=2)
    assert row["decode_comm_s"] == pytest.approx(160 * (1e-5 + 16384 / 450e9))
    # PCIe cards without NVLink communicate over PCIe Gen4 x16: 31.5 GB/s per direction
    assert estimate_row(gpu="l40s", model=L31_8B, tp=2)["link_bandwidth_bytes_per_s"] == 31.5e9


def test_a_nemotron_h_block_holds_one_mixer_and_one_allreduce():
    # Nemotron-3 Super: 88 blocks (hybrid_override_pattern), each one Mamba2, MoE or attention mixer
    # ending in one row-parallel projection: 88 all-reduces a pass, not 2 x 88. Default profile, tp 8
    # on H100 SXM (NVLink 450 GB/s per direction), d = 4,096 at 2 bytes:
    # 88 x 10 us = 0.88 ms, and per token 88 x 2 x 7/8 x 4,096 x 2 / 450e9 = 2.8032e-6 s
    row = estimate_row("default", gpu="h100-sxm", model="nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", tp=8)
    assert row["tp_allreduces"] == 88
    assert row["allreduce_fixed_s"] == pytest.approx(88 * 1e-5, rel=1e-12)
    assert row["allreduce_s_per_token"] == pytest.approx(88 * 2 * 7 / 8 * 4096 * 2 / 450e9, rel=1e-12)
    # a standard decoder layer holds two: Llama-3.1-70B's 80 layers, 160 (test_tensor_parallel_allreduce)
    assert estimate_row(gpu="h100-sxm", model=L31_70B, tp=2)["tp_allreduces"] == 160


def test_pipeline_parallel_adds_memory_not_speed():
    one, two = estimate_rows(gpu="a100-80gb-sxm", model=L31_8B, pp=[1, 2])
    assert two["weight_bytes"] == one["weight_bytes"] / 2
    # the stages run one after another, plus one send of the hidden state between them:
    # 4,096 x 2 bytes over NVLink 300 GB/s = 2.73e-8 s
    assert two["pp_link"] == "scale-up"
    assert two["tpot_s"] == pytest.approx(one["tpot_s"] + 4_096 * 2 / 300e9, rel=1e-9)


def test_serving_throughput_and_latency():
    row = estimate_row("default", gpu="h100-sxm", model=L31_8B, batch=16, input_tokens=1000, output_tokens=200)
    # the operating point at concurrency 16 (estimate/load.py): R = TTFT + (S_out - 1) x TPOT,
    # requests/s = C / R (Little), output tokens/s = requests/s x S_out, per user = output / C
    assert row["request_latency_s"] == pytest.approx(row["ttft_s"] + 199 * row["tpot_s"])
    assert row["requests_per_s_per_replica"] == pytest.approx(16 / row["request_latency_s"])
    assert row["output_tokens_per_s"] == pytest.approx(row["requests_per_s_per_replica"] * 200)
    assert row["decode_tokens_per_s_per_seq"] * 16 == pytest.approx(row["output_tokens_per_s"])
    assert row["output_tokens_per_s_per_gpu"] == row["output_tokens_per_s"]
    # loaded figures are worse than the unloaded ones: prefill chunks stretch the step, prompts queue
    assert row["tpot_s"] > row["decode_step_s"] and row["ttft_s"] > row["prefill_s"]
    assert row["decode_tokens_per_s"] == pytest.approx(16 / row["decode_step_s"])
    assert row["output_tokens_per_s"] < row["decode_tokens_per_s"]


def test_roofline_and_bound():
    # ridge point of H100 SXM in bf16: 989e12 / 3.35e12 = 295.2 FLOP/byte
    small = estimate_row(gpu="h100-sxm", model=L2_7B, precision="fp16", batch=1, input_tokens=1, output_tokens=1)
    assert small["ridge_point"] == pytest.approx(989e12 / 3.35e12)
    assert small["bound"] == "memory" and small["arithmetic_intensity"] < 2
    # at batch 1024 with almost no KV, 2 x P x 1024 FLOPs outweigh one read of the weights
    big = estimate_row(gpu="h100-sxm", model=L2_7B, precision="fp16", batch=1024, input_tokens=1, output_tokens=1)
    assert big["bound"] == "compute"
    assert big["arithmetic_intensity"] > big["ridge_point"]


def test_compute_dtype_fallback_is_noted():
    # Apple publishes no fp16 tensor rate: the fp32 rate (27.2 TFLOP/s on M2 Ultra) is used and said
    row = estimate_row(gpu="m2-ultra", model=L31_8B, precision="fp16")
    assert (row["compute_dtype"], row["peak_flops_per_s"]) == ("fp32", 27.2e12)
    assert row["notes"] == "m2-ultra has no published fp16 rate; matmuls use its fp32 rate"
    # fp8 on A100 (no FP8 units) computes in bf16
    assert estimate_row(gpu="a100-80gb-sxm", model=L31_8B, precision="fp8")["compute_dtype"] == "bf16"


@pytest.mark.parametrize(
    ("axes", "reason"),
    [
        ({"tp": 3}, "tp does not divide the model's attention heads"),
        ({"input_tokens": 200_000}, "context_tokens exceeds the model's maximum context"),
    ],
)
def test_layouts_that_cannot_run_stay_as_rows_with_a_reason(axes, reason):
    row = estimate_row(gpu="h100-sxm", model=L31_8B, output_tokens=256, **axes)
    assert row["reason"] == reason
    assert row["fits"] is False


class TestSeedErrorsAreNotRepeated:
    """The errors listed at the end of DESIGN.md §4, one test each."""

    def test_flops_are_not_multiplied_by_bytes(self):
        # 2 FLOPs per parameter per token: Llama-2-7B decodes with 2 x (6.74e9 - 32,000 x 4,096
        # embedding rows, looked up, not multiplied) = 1.32e10 FLOPs per token, not "2 x 7e9 x 2 bytes
        # = 2.8e10"
        row = estimate_row(gpu="a100-80gb-sxm", model=L2_7B, precision="fp16", input_tokens=0, output_tokens=1)
        assert row["decode_flops_per_step"] == pytest.approx(2 * (6_738_415_616 - 131_072_000), rel=1e-3)

    def test_prefill_time_is_flops_over_flops_per_second(self):
        # 2 x P x S_in / F, not "input length x weight bytes / FLOP/s" (bytes over FLOP/s)
        # At fp16 the weight bytes are 2 P, so the wrong form differs from the right one only by the
        # attention and the LM head (3.9 % here); in int4 (0.5156 bytes a weight, 16-bit matmuls)
        # it would be 3.7 times too fast
        row = estimate_row(gpu="a100-80gb-sxm", model=L2_7B, precision="fp16", input_tokens=4000, output_tokens=1)
        assert row["prefill_s"] == pytest.approx(row["prefill_flops"] / 312e12)
        assert row["prefill_s"] != pytest.approx(4000 * 13_476_831_232 / 312e12, rel=0.02)
        int4 = estimate_row(gpu="a100-80gb-sxm", model=L2_7B, precision="int4", input_tokens=4000, output_tokens=1)
        assert int4["prefill_s"] == pytest.approx(row["prefill_s"])
        assert int4["prefill_s"] > 3 * 4000 * int4["model_weight_bytes"] / 312e12

    def test_weight_size_is_not_divided_by_1024(self):
        # params_G x bits / 8 / 1024 would give 6.74 x 16 / 8 / 1024 = 0.013 "GB"
        row = estimate_row(gpu="a100-80gb-sxm", model=L2_7B, precision="fp16")
        assert row["model_weight_bytes"] / 1e9 == pytest.approx(13.48, abs=0.01)

    def test_gqa_kv_uses_kv_heads(self):
        row = estimate_row(gpu="h100-sxm", model=L31_8B, precision="fp16")
        assert row["kv_bytes_per_token"] == 131_072  # not 524,288 from the 32 attention heads

    def test_prefill_intensity_grows_with_the_prompt(self):
        # about S_in FLOP/byte at fp16 (2 P S FLOPs over 2 P bytes), not about 1
        row = estimate_row(gpu="h100-sxm", model=L31_8B, precision="fp16", input_tokens=2048, output_tokens=1)
        assert 1500 < row["prefill_arithmetic_intensity"] < 2500

    def test_batching_multiplies_aggregate_decode_throughput(self):
        # "4 concurrent users share 142 tok/s" is wrong: while memory-bound, 4 sequences share one
        # weight read, so the aggregate is nearly 4x and each user keeps nearly the batch-1 speed
        one, four = estimate_rows(
            gpu="a100-80gb-sxm",
            model=L2_7B,
            precision="fp16",
            batch=[1, 4],
            input_tokens=128,
            output_tokens=128,
        )
        assert four["bound"] == "memory"
        assert four["decode_tokens_per_s"] > 3.5 * one["decode_tokens_per_s"]
        assert four["decode_tokens_per_s_per_seq"] > 0.9 * one["decode_tokens_per_s_per_seq"]
