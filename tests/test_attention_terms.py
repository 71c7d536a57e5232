"""Decode attention of MLA and DSA models (llmsweep/estimate/compute.py), values derived by hand.

MLA (DeepSeek-V3/R1, Kimi K2, GLM-5) decodes in its compressed latent ("absorbed"): per head and
cached key, q.k over kv_lora_rank + qk_rope_head_dim = 512 + 64 multiply-adds and attention.v over
kv_lora_rank = 512, so 2 x 1,088 FLOPs, where prefill computes per head over (192 + 128) dims.
DSA (DeepSeek-V3.2, GLM-5) attends to the top-k (2,048) cached keys a lightning indexer picks,
scoring every cached key with index_n_heads x index_head_dim multiply-adds per layer.
"""

from __future__ import annotations

import pytest

from .conftest import estimate_row

R1, GLM5, L31_8B = "deepseek-ai/DeepSeek-R1", "zai-org/GLM-5", "meta-llama/Llama-3.1-8B"


def test_mla_decode_attention_is_absorbed_in_the_latent():
    # DeepSeek-R1: 4 x 61 layers x 128 heads x (2 x 512 + 64) / 2 = 16,990,208 FLOPs per cached key
    # (prefill: 4 x 61 x 128 x (192 + 128) / 2 = 4,997,120). At 1,024 in / 256 out the mean context
    # is 1,024 + 128 = 1,152 keys: per sequence 2 x (37,552,297,472 - 129,280 x 7,168 embedding
    # rows, looked up) + 16,990,208 x 1,152 = 73,251,236,864 + 19,572,719,616 = 92,823,956,480 FLOPs.
    row = estimate_row(gpu="b200", model=R1, precision="fp8", tp=8, batch=1)
    assert row["decode_attention_flops_per_key"] == 4 * 61 * 128 * 544 == 16_990_208
    assert row["attention_flops_per_key"] == 4 * 61 * 128 * 160 == 4_997_120
    assert row["decode_flops_per_step"] == 2 * (37_552_297_472 - 926_679_040) + 16_990_208 * 1_152 == 92_823_956_480
    # ideal: the compute term is the plain roofline at each FLOP's rate: the fp8 matmuls at 4.5e15,
    # attention over the 16-bit cache at the bf16 2.25e15 (counted twice at the fp8 rate), and so
    # the bf16 LM head, 2 x 926,679,040 FLOPs (counted once more), over tp 8:
    # (73,251,236,864 + 2 x 926,679,040 + 2 x 19,572,719,616) / (8 x 4.5e15) = 3.1736e-6 s
    assert row["attention_flop_cost"] == row["unquantized_flop_cost"] == 4500 / 2250 == 2
    expected = (73_251_236_864 + 2 * 926_679_040 + 2 * 19_572_719_616) / (8 * 4.5e15)
    assert expected == pytest.approx(3.17361e-6, rel=1e-5)
    assert row["decode_compute_s"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("gpu", "precision", "kv", "cost"),
    [
        # nvfp4 weights run at B300's fp4 14,000 TFLOP/s; attention over a 16-bit cache at bf16 2,250
        ("b300", "nvfp4", "bf16", 14_000 / 2_250),
        # over an fp8 cache the attention kernels (FlashMLA, TensorRT-LLM) run at fp8 4,500
        ("b300", "nvfp4", "fp8", 14_000 / 4_500),
        ("b300", "fp8", "fp8", 1.0),
        # 16-bit weights over an fp8 cache: attention at twice the matmuls' rate (989 -> 1,979 on H100)
        ("h100-sxm", "bf16", "fp8", 989.4 / 1978.9),
        ("h100-sxm", "bf16", "bf16", 1.0),
        # an int8 cache is dequantised to 16 bits first: no fp8 rate
        ("h100-sxm", "bf16", "int8", 1.0),
        # no fp4 on Hopper: nvfp4 is weight-only there, the matmuls run at bf16 (989) as attention does
        ("h100-sxm", "nvfp4", "bf16", 1.0),
    ],
)
def test_attention_runs_at_the_rate_of_its_dtype(gpu, precision, kv, cost):
    row = estimate_row(gpu=gpu, model=R1, precision=precision, kv_precision=kv, tp=8, batch=1)
    assert row["attention_flop_cost"] == pytest.approx(cost, rel=1e-3)


def test_prefill_attention_over_an_fp8_cache_takes_half_the_time():
    # DeepSeek-R1 nvfp4 on 8 B300, a 16,384-token prompt (compute-bound: 2 x (37.55e9 - 2 x 0.93e9
    # embedding and LM head) x 16,384 = 1.17e15 linear FLOPs, 10 ms at 8 x 14e15, against 5.9 ms to
    # read its 377 GB of weights): only the attention FLOPs' rate differs, 2,250 over a 16-bit cache
    # and 4,500 over an fp8 one, so the prefill times differ by attention x (14,000 / 2,250 - 14,000 /
    # 4,500) / (8 x 14e15). Linear: 2 x (37,552,297,472 - 2 x 926,679,040) x 16,384 + the LM head at
    # the last position, 2 x 926,679,040.
    rows = {
        kv: estimate_row(gpu="b300", model=R1, precision="nvfp4", kv_precision=kv, tp=8, batch=1, input_tokens=16_384)
        for kv in ("bf16", "fp8")
    }
    attention = rows["bf16"]["prefill_flops"] - 71_397_878_784 * 16_384 - 2 * 926_679_040
    saved = attention * (14_000 / 2_250 - 14_000 / 4_500) / (8 * 14e15)
    assert rows["bf16"]["prefill_s"] - rows["fp8"]["prefill_s"] == pytest.approx(saved, rel=1e-9)


def test_gqa_decode_attention_is_unchanged():
    # Llama-3.1-8B: 4 x 32 x 32 heads x 128 = 524,288 FLOPs per key, prefill and decode alike
    row = estimate_row(gpu="h100-sxm", model=L31_8B, batch=1)
    assert row["decode_attention_flops_per_key"] == row["attention_flops_per_key"] == 524_288


def test_dsa_decode_attends_to_the_top_k_and_indexes_every_key():
    # GLM-5 at 8,192 in / 1,024 out: mean context 8,192 + 512 = 8,704 cached tokens. The main
    # attention reads 2,048 of them: 4 x 78 x 64 x 544 x 2,048 = 22,246,588,416 FLOPs; the indexer
    # scores all 8,704: 2 x 78 x 32 heads x 128 = 638,976 FLOPs per key, x 8,704 = 5,561,647,104.
    row = estimate_row(gpu="b200", model=GLM5, precision="fp8", tp=8, input_tokens=8192, output_tokens=1024, batch=1)
    assert row["indexer_flops_per_key"] == 638_976
    attention = 4 * 78 * 64 * 544 * 2_048
    assert attention == 22_246_588_416
    # linear: 2 x (41,784,728,832 - 154,880 x 6,144 embedding rows, looked up)
    assert row["decode_flops_per_step"] == 2 * (41_784_728_832 - 951_582_720) + attention + 638_976 * 8_704
    # Bytes: the latents (512 + 64) and indexer keys (128) of the 2,048 picked tokens, 78 layers
    # x 704 elements x 2 bytes = 109,824 bytes each, and the indexer keys of the other 6,656:
    # 78 x 128 x 2 = 19,968 bytes each; every one of the 8 tp ranks reads its copy of the latent.
    kv = 2_048 * 109_824 + (8_704 - 2_048) * 19_968
    assert kv == 357_826_560
    assert row["decode_kv_bytes_per_sequence"] == 8 * kv
    # without DSA the step would read all 8,704 tokens' 109,824 bytes: 2.7 times as much
    assert 8_704 * 109_824 / kv == pytest.approx(2.67, abs=0.01)


def test_dsa_prefill_attention_is_a_window_of_the_top_k():
    # Each of the 8,192 prompt tokens attends to at most 2,048 earlier ones: span = 8,192 x 2,048
    # - 2,048^2 / 2 = 14,680,064 (not 8,192^2 / 2 = 33,554,432); the indexer scores all
    # 33,554,432 pairs. The first 2,048 positions attend densely (MHA, 256 dims a head: 2,048^2 / 2
    # = 2,097,152 pairs), the rest to their top 2,048 in MLA's latent (MQA) mode at the decode dims,
    # 544 (6,144 x 2,048 = 12,582,912 pairs; DeepSeek-V3.2 report: masked MHA only for short
    # prefills). FLOPs = 2 (P_a - 2 V d) S + 2 V d (the LM head, last position) + 4 x 78 x 64 x (256 x
    # 2,097,152 + 544 x 12,582,912) + 638,976 x S^2 / 2, V d = 154,880 x 6,144 = 951,582,720.
    row = estimate_row(gpu="b200", model=GLM5, precision="fp8", tp=8, input_tokens=8192, output_tokens=1, batch=1)
    dense, sparse = 2_048**2 / 2, (8_192 - 2_048) * 2_048
    assert dense + sparse == 8_192 * 2_048 - 2_048**2 / 2 == 14_680_064
    attention = 4 * 78 * 64 * (256 * dense + 544 * sparse)
    linear = 2 * (41_784_728_832 - 2 * 951_582_720) * 8_192 + 2 * 951_582_720
    expected = linear + attention + 638_976 * 8_192**2 / 2
    assert row["prefill_flops"] == pytest.approx(expected, rel=1e-12)
    # at 2,048 tokens or fewer every pair is dense, at the MHA dims
    short = estimate_row(gpu="b200", model=GLM5, precision="fp8", tp=8, input_tokens=2048, output_tokens=1, batch=1)
    dense = 4 * 78 * 64 * 256 * 2_048**2 / 2
    linear = 2 * (41_784_728_832 - 2 * 951_582_720) * 2_048 + 2 * 951_582_720
    assert short["prefill_flops"] == pytest.approx(linear + dense + 638_976 * 2_048**2 / 2)
