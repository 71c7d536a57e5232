"""The weights' terms by module: the token embedding, the LM head, and what quantised checkpoints keep
in 16 bits (llmsweep/estimate/memory.py, experts.py, compute.py; catalog/architecture.py, gpus.py).

Values derived by hand from the configs in shared/reference/model-configs/ (Llama-3.1-8B and
gemma-2-9b from shared/reference/models.yaml) and the GPU catalog, in the `ideal` profile (the plain
roofline). The facts used:

- Llama-3.1-8B: P = 8,030,261,248, V = 128,256, d = 4,096, untied: the embedding table and the LM
  head are V d = 525,336,576 parameters each, 1,050,673,152 together; 131,072 KV bytes a token.
- gemma-2-9b: P = 9,241,705,984, V = 256,000, d = 3,584, tied (Gemma2Config's default): one table of
  V d = 917,504,000 parameters is both.
- gpt-oss-120b: P = 116,829,154,368, P_a = 5,711,980,608, V = 201,088, d = 2,880 (V d =
  579,133,440), untied; its mxfp4 checkpoint keeps `model.layers.*.self_attn` and
  `model.layers.*.mlp.router` in bf16 (969,078,528 parameters, catalog/architecture.py
  unconverted_params), and `model.embed_tokens` and `lm_head`.
- H100 SXM: bf16 989 TFLOP/s, fp8 1,979, no fp4; B200: bf16 2,250, fp4 9,000; B300: fp4 14,000;
  MI300X: bf16 1,307.4, no fp4; MI355X: bf16 2,500, fp4 10,100; MI350X: fp4 9,230.
"""

from __future__ import annotations

import pytest

from llmsweep.catalog.architecture import _module_group, unconverted_params

from .conftest import estimate_row, estimate_rows

L31_8B, GEMMA2_9B, GPT_OSS, QWEN3_235B = (
    "meta-llama/Llama-3.1-8B",
    "google/gemma-2-9b",
    "openai/gpt-oss-120b",
    "Qwen/Qwen3-235B-A22B",
)
P_8B, VD_8B = 8_030_261_248, 128_256 * 4_096
P_G9, VD_G9 = 9_241_705_984, 256_000 * 3_584
P_OSS, PA_OSS, VD_OSS, KEPT_OSS = 116_829_154_368, 5_711_980_608, 201_088 * 2_880, 969_078_528


def test_model_facts():
    assert VD_8B == 525_336_576 and VD_G9 == 917_504_000 and VD_OSS == 579_133_440
    row = estimate_row(gpu="h100-sxm", model=L31_8B, precision="bf16")
    assert (row["embedding_params"], row["lm_head_params"], row["tied_embeddings"]) == (VD_8B, VD_8B, False)
    row = estimate_row(gpu="h100-sxm", model=GEMMA2_9B, precision="bf16")
    assert (row["embedding_params"], row["lm_head_params"], row["tied_embeddings"]) == (VD_G9, VD_G9, True)


# -- 1. decode reads the embedding's rows, not the table ------------------------------------------


def test_decode_reads_the_tokens_embedding_rows_not_the_table():
    # Llama-3.1-8B bf16, batch 1, no prompt, one output token (mean context 0.5):
    # weights 8,030,261,248 x 2 = 16,060,522,496 - the table 525,336,576 x 2 = 1,050,673,152 + one
    # row 4,096 x 2 = 8,192: 15,009,857,536 (the reviewer's ~15.01e9; 16.06e9 was 7 % too many);
    # + KV 0.5 x 131,072 = 65,536: 15,009,923,072 bytes
    row = estimate_row(gpu="h100-sxm", model=L31_8B, precision="bf16", input_tokens=0, output_tokens=1)
    assert row["decode_bytes_per_step"] == 16_060_522_496 - 1_050_673_152 + 8_192 + 65_536 == 15_009_923_072
    # batch 4: four rows, 4 x 8,192, and four caches
    row = estimate_row(gpu="h100-sxm", model=L31_8B, precision="bf16", batch=4, input_tokens=0, output_tokens=1)
    assert row["decode_bytes_per_step"] == 16_060_522_496 - 1_050_673_152 + 4 * 8_192 + 4 * 65_536


def test_a_tied_table_is_read_whole_as_the_lm_head():
    # gemma-2-9b bf16: its one table is also the LM head, which multiplies all of it: weights
    # 9,241,705,984 x 2 = 18,483,411,968 + one looked-up row 3,584 x 2 = 7,168; + KV 0.5 x 42 layers
    # x 2 x 8 KV heads x 256 x 2 bytes = 0.5 x 344,064 = 172,032
    row = estimate_row(gpu="h100-sxm", model=GEMMA2_9B, precision="bf16", input_tokens=0, output_tokens=1)
    assert row["decode_bytes_per_step"] == 18_483_411_968 + 7_168 + 172_032


def test_moe_decode_reads_the_touched_experts_and_not_the_table():
    # Qwen3-235B-A22B bf16 on 8 H200 (tp 8, ep 1), batch 1: 94 MoE layers x 128 experts x
    # 3 x 4,096 x 1,536 = 18,874,368 parameters = 227,096,395,776 routed, 454,192,791,552 bytes; the
    # rest 235,093,634,560 x 2 - 454,192,791,552 = 15,994,477,568 bytes; one token touches 8 / 128
    # of the experts, 28,387,049,472 bytes; less the table 151,936 x 4,096 x 2 = 1,244,659,712, plus
    # one row 8,192: 43,136,875,520 bytes; + KV 0.5 x 94 x 2 x 4 KV heads x 128 x 2 bytes = 96,256,
    # read on 8 ranks holding 4 heads: 2 copies
    row = estimate_row(gpu="h200-sxm", model=QWEN3_235B, precision="bf16", tp=8, input_tokens=0, output_tokens=1)
    routed = 94 * 128 * 18_874_368 * 2
    assert routed == 454_192_791_552
    weights = 235_093_634_560 * 2 - routed + routed * 8 / 128 - 1_244_659_712 + 8_192
    assert weights == 43_136_875_520
    assert row["decode_bytes_per_step"] == pytest.approx(weights + 96_256 * 2, rel=1e-12)


def test_decode_flops_keep_the_lm_head_and_drop_the_lookup():
    # Llama-3.1-8B: 2 x (8,030,261,248 - 525,336,576) = 15,009,849,344 FLOPs a token (the LM head's
    # 2 x 525,336,576 in, the embedding's lookup out); gemma-2-9b (tied): all 2 x 9,241,705,984
    row = estimate_row(gpu="h100-sxm", model=L31_8B, precision="bf16", input_tokens=0, output_tokens=1)
    assert row["flops_per_token"] == 2 * (P_8B - VD_8B) == 15_009_849_344
    row = estimate_row(gpu="h100-sxm", model=GEMMA2_9B, precision="bf16", input_tokens=0, output_tokens=1)
    assert row["flops_per_token"] == 2 * P_G9 == 18_483_411_968


# -- 2. prefill computes logits at the last position only ----------------------------------------


def test_prefill_computes_the_lm_head_once_per_prompt():
    # Llama-3.1-8B, 1,024 tokens: 2 x (8,030,261,248 - 1,050,673,152) x 1,024 = 14,294,196,420,608,
    # + the LM head at the last position 2 x 525,336,576 = 1,050,673,152, + causal attention
    # 2 x 32 layers x 1,024^2 x 32 heads x 128 = 274,877,906,944: 14,570,125,000,704 = 1.457e13
    # (2 P_a S_in + attention was 1.672e13)
    row = estimate_row(gpu="h100-sxm", model=L31_8B, precision="bf16", input_tokens=1024, output_tokens=1)
    assert row["prefill_flops_per_token"] == 2 * (P_8B - 2 * VD_8B) == 13_959_176_192
    linear = 13_959_176_192 * 1_024
    assert linear == 14_294_196_420_608
    assert row["prefill_flops"] == linear + 1_050_673_152 + 274_877_906_944 == 14_570_125_000_704
    # ideal, compute-bound: 1.457e13 / 989e12 = 14.73 ms
    assert row["prefill_compute_s"] == pytest.approx(14_570_125_000_704 / 989e12, rel=1e-12)


def test_prefill_of_a_tied_model_drops_the_table_once():
    # gemma-2-9b, tied: per prompt token 2 x (9,241,705,984 - 917,504,000) = 16,648,403,968 FLOPs,
    # and 2 x 917,504,000 once for the last position's logits
    row = estimate_row(gpu="h100-sxm", model=GEMMA2_9B, precision="bf16", input_tokens=512, output_tokens=1)
    assert row["prefill_flops_per_token"] == 2 * (P_G9 - VD_G9) == 16_648_403_968
    attention = row["prefill_flops"] - 16_648_403_968 * 512 - 2 * VD_G9
    # gemma-2-9b's 42 layers (16 heads x 256, half of them in 4,096-token windows, which a 512-token
    # prompt does not reach): 4 x 42 x 16 x 256 x 512^2 / 2 = 90,194,313,216
    assert attention == 4 * 42 * 16 * 256 * 512**2 / 2 == 90_194_313_216


def test_a_cached_prefix_still_computes_one_logit():
    # Llama-3.1-8B, 2,048 tokens of which half are cached: n = 1,024 new tokens, the LM head once:
    # linear 13,959,176,192 x 1,024 + 1,050,673,152
    row = estimate_row(
        gpu="h100-sxm", model=L31_8B, precision="bf16", input_tokens=2048, output_tokens=1, prefix_hit_rate=0.5
    )
    attention = 4 * 32 * 32 * 128 * (2_048**2 / 2 - 1_024**2 / 2)
    assert row["prefill_flops"] == 13_959_176_192 * 1_024 + 1_050_673_152 + attention


# -- 3. FP4 without FP4 units is weight-only: bf16 matmuls ----------------------------------------


@pytest.mark.parametrize(("gpu", "rate"), [("h100-sxm", 989e12), ("mi300x", 1_307.4e12)])
def test_fp4_without_fp4_units_computes_in_bf16(gpu, rate):
    # gpt-oss-120b's mxfp4 on Hopper / MI300X runs W4A16 (vLLM's Marlin, gpt-oss's triton kernels):
    # bf16 at 989 (1,307.4) TFLOP/s, not fp8 at 1,979
    row = estimate_row(gpu=gpu, model=GPT_OSS, precision="mxfp4")
    assert (row["compute_dtype"], row["peak_flops_per_s"]) == ("bf16", rate)
    assert row["notes"] == f"{gpu} has no published fp4 rate; mxfp4 runs weight-only: matmuls use its bf16 rate"
    # every matmul at one rate: the bf16 LM head and attention cost one FLOP a FLOP
    assert row["unquantized_flop_cost"] == row["attention_flop_cost"] == 1.0


def test_fp4_on_blackwell_keeps_its_fp4_rate():
    row = estimate_row(gpu="b200", model=GPT_OSS, precision="mxfp4")
    assert (row["compute_dtype"], row["peak_flops_per_s"], row["notes"]) == ("fp4", 9_000e12, None)


def test_fp8_without_fp8_units_still_falls_back_to_bf16():
    # A100: no fp8 rate, matmuls at bf16 312 TFLOP/s (the fallback chain fp8 -> bf16 is unchanged)
    row = estimate_row(gpu="a100-80gb-sxm", model=L31_8B, precision="fp8")
    assert (row["compute_dtype"], row["peak_flops_per_s"]) == ("bf16", 312e12)
    assert row["notes"] == "a100-80gb-sxm has no published fp8 rate; matmuls use its bf16 rate"


# -- 4. quantised checkpoints keep the embedding, the LM head (and listed modules) in 16 bits ------


@pytest.mark.parametrize(
    ("precision", "weight_bytes"),
    [
        # AWQ/GPTQ int4 g128: 6,979,588,096 x 0.515625 + 1,050,673,152 x 2
        # = 3,598,850,112 + 2,101,346,304 = 5,700,196,416 (5.70 GB; 8.03e9 x 0.515625 = 4.14 GB was -27 %)
        ("int4", 5_700_196_416),
        # fp8: 6,979,588,096 x 1 + 2,101,346,304 = 9,080,934,400
        ("fp8", 9_080_934_400),
        # NVFP4: 6,979,588,096 x 0.5625 + 2,101,346,304 = 3,926,018,304 + 2,101,346,304
        ("nvfp4", 6_027_364_608),
        # EXL2-style 4.0bpw: the decoder layers' average; its embedding stays fp16
        ("4.0bpw", 6_979_588_096 * 0.5 + 2_101_346_304),
        # 16-bit: every weight at 2 bytes, 8,030,261,248 x 2
        ("bf16", 16_060_522_496),
        # GGUF files quantise token_embd and output too: 8,030,261,248 x 4.85 / 8 (unchanged)
        ("q4_k_m", 8_030_261_248 * 4.85 / 8),
        ("q8_0", 8_030_261_248 * 8.5 / 8),
    ],
)
def test_quantised_weights_keep_embedding_and_lm_head_in_16_bits(precision, weight_bytes):
    assert P_8B - 2 * VD_8B == 6_979_588_096
    row = estimate_row(gpu="h100-sxm", model=L31_8B, precision=precision)
    assert row["model_weight_bytes"] == pytest.approx(weight_bytes, rel=1e-15)
    assert row["weight_bytes"] == row["model_weight_bytes"]


def test_a_tied_table_is_kept_once():
    # gemma-2-9b int4: (9,241,705,984 - 917,504,000) x 0.515625 + 917,504,000 x 2
    # = 4,292,166,648 + 1,835,008,000 = 6,127,174,648
    row = estimate_row(gpu="h100-sxm", model=GEMMA2_9B, precision="int4")
    assert row["model_weight_bytes"] == (P_G9 - VD_G9) * 0.515625 + VD_G9 * 2 == 6_127_174_648


def test_quantised_decode_reads_the_16_bit_lm_head():
    # Llama-3.1-8B int4, batch 1, no prompt: 5,700,196,416 - the 16-bit table 1,050,673,152
    # + one row 8,192 + KV 65,536 = 4,649,596,992 bytes
    row = estimate_row(gpu="h100-sxm", model=L31_8B, precision="int4", input_tokens=0, output_tokens=1)
    assert row["decode_bytes_per_step"] == 5_700_196_416 - 1_050_673_152 + 8_192 + 65_536 == 4_649_596_992


def test_gpt_oss_keeps_its_attention_and_routers_in_bf16_in_its_own_format():
    # mxfp4 (4.25 bits = 0.53125 bytes), its own format: 16-bit P_u = 2 x 579,133,440 + 969,078,528
    # = 2,127,345,408; (116,829,154,368 - 2,127,345,408) x 0.53125 + 2,127,345,408 x 2
    # = 60,935,336,010 + 4,254,690,816 = 65,190,026,826 bytes (the checkpoint's files: 65.2 GB;
    # P x 0.53125 = 62.07e9 before)
    row = estimate_row(gpu="h100-sxm", model=GPT_OSS, precision="mxfp4")
    assert row["unconverted_params"] == KEPT_OSS
    kept = 2 * VD_OSS + KEPT_OSS
    assert kept == 2_127_345_408
    assert row["model_weight_bytes"] == pytest.approx((P_OSS - kept) * 0.53125 + kept * 2, rel=1e-15)
    assert row["model_weight_bytes"] == pytest.approx(65_190_026_826, rel=1e-15)
    # requantised to nvfp4, nothing says which modules stay: the embedding and LM head only,
    # (116,829,154,368 - 1,158,266,880) x 0.5625 + 1,158,266,880 x 2
    row = estimate_row(gpu="h100-sxm", model=GPT_OSS, precision="nvfp4")
    assert row["unconverted_params"] == 0
    assert row["model_weight_bytes"] == pytest.approx((P_OSS - 2 * VD_OSS) * 0.5625 + 2 * VD_OSS * 2, rel=1e-15)


def test_16_bit_weights_compute_at_the_16_bit_rate():
    # gpt-oss-120b mxfp4 on a B200, ideal: the fp4 matmuls at 9,000 TFLOP/s, the bf16 ones (attention
    # projections, routers, LM head) at 2,250, so each of their FLOPs costs 9,000 / 2,250 = 4 at the
    # fp4 rate. A 1,024-token prompt: linear 2 x (5,711,980,608 - 2 x 579,133,440) x 1,024
    # = 9,107,427,456 x 1,024, + the LM head once 2 x 579,133,440; the 16-bit part of it,
    # 2 x 969,078,528 x 1,024 + 2 x 579,133,440, counts 3 more times; attention (16-bit cache, at
    # bf16) 4 x 36 x 64 x 64 = 589,824 FLOPs a key over 1,024^2 / 2 + 0.5 x (1,024 x 128 - 128^2 / 2
    # - 1,024^2 / 2) = 323,584 keys (half the layers slide over 128 tokens) = 190,857,609,216,
    # counted 4 times.
    row = estimate_row(gpu="b200", model=GPT_OSS, precision="mxfp4", input_tokens=1024, output_tokens=1)
    assert row["unquantized_flop_cost"] == row["attention_flop_cost"] == 9_000 / 2_250 == 4
    linear = 9_107_427_456 * 1_024 + 2 * VD_OSS
    attention = 589_824 * 323_584
    assert attention == 190_857_609_216
    assert row["prefill_flops"] == linear + attention
    sixteen = 2 * KEPT_OSS * 1_024 + 2 * VD_OSS
    expected = (linear + 3 * sixteen + 4 * attention) / 9_000e12
    assert row["prefill_compute_s"] == pytest.approx(expected, rel=1e-12)
    # decode, one token at a 0.5-token context: 2 x (5,711,980,608 - 579,133,440) + 3 x 2 x
    # (969,078,528 + 579,133,440) + attention 4 x 589,824 x 0.5
    row = estimate_row(gpu="b200", model=GPT_OSS, precision="mxfp4", input_tokens=0, output_tokens=1)
    flops = 2 * (PA_OSS - VD_OSS) + 3 * 2 * (KEPT_OSS + VD_OSS) + 4 * 589_824 * 0.5
    assert row["decode_compute_s"] == pytest.approx(flops / 9_000e12, rel=1e-12)


@pytest.mark.parametrize(
    ("module", "group"),
    [
        ("model.layers.*.self_attn", "attention_params"),  # gpt-oss
        ("model.layers.*.mlp.router", "router_params"),
        ("model.embed_tokens", None),  # costed by the embedding rule
        ("lm_head", None),
        ("re:.*self_attn.*", "attention_params"),  # Kimi-K2.5 (compressed-tensors `ignore`)
        ("re:.*shared_experts.*", "shared_expert_params"),
        (r"re:.*mlp\.(gate|up|gate_up|down)_proj.*", "dense_mlp_params"),
        ("gate", "router_params"),  # MiniMax-M2.5
        ("e_score_correction_bias", None),
        ("model.layers.0.self_attn.indexers_proj", None),  # GLM-5-FP8: a sub-module, not the attention
        ("model.layers.3.mlp.experts.0.gate_proj", None),  # a routed expert's projection
        ("model.layers.0.input_layernorm", None),
    ],
)
def test_listed_modules_name_their_group(module, group):
    assert _module_group(module) == group


def test_unconverted_params_of_the_reference_checkpoints(catalog):
    oss = catalog.model(GPT_OSS)
    # 36 x (2,880 x (64 + 2 x 8) x 64 + 64 x 64 x 2,880 + (64 + 2 x 8) x 64 + 2,880) = 955,802,880
    # attention, + 36 x (2,880 x 128 + 128) = 13,275,648 routers
    assert unconverted_params(oss.config, oss.architecture) == 955_802_880 + 13_275_648 == KEPT_OSS
    assert oss.kept_params("mxfp4") == KEPT_OSS and oss.kept_params("nvfp4") == 0
    # Llama-3.1-8B lists nothing
    llama = catalog.model(L31_8B)
    assert unconverted_params(llama.config, llama.architecture) == 0
    # Kimi-K2.5 (int4 g32 routed experts): attention, shared experts and the dense MLP stay bf16
    kimi = catalog.model("moonshotai/Kimi-K2.5")
    a = kimi.architecture
    kept = a.attention_params + a.shared_expert_params + a.dense_mlp_params
    assert kimi.kept_params("int4-g32") == kept
    # its one dense layer (first_k_dense_replace 1): 3 x 7,168 x 18,432; 60 shared experts of
    # 3 x 7,168 x 2,048
    assert (a.dense_mlp_params, a.shared_expert_params) == (3 * 7_168 * 18_432, 60 * 3 * 7_168 * 2_048)
    # an AMD Quark checkpoint lists its unconverted modules under `exclude`: the same count as gpt-oss's own
    quark = {"quant_method": "quark", "exclude": ["model.layers.*.self_attn", "model.layers.*.mlp.router"]}
    assert unconverted_params({**oss.config, "quantization_config": quark}, oss.architecture) == KEPT_OSS


# -- 5. FP4 is each GPU vendor's format: NVFP4 on NVIDIA, MXFP4 on AMD ----------------------------

# DeepSeek-R1 (the catalog's config.json): P = 671,026,419,200, V = 129,280, d = 7,168, untied: the
# embedding table and the LM head V d = 926,679,040 parameters each, kept at 16 bits (1,853,358,080
# x 2 bytes = 3,706,716,160); the other P - 2 V d = 669,173,061,120 are quantised.
R1, P_R1, VD_R1 = "deepseek-ai/DeepSeek-R1", 671_026_419_200, 129_280 * 7_168
R1_MXFP4 = 359_204_904_880  # 669,173,061,120 x 4.25 / 8 = 355,498,188,720, + 3,706,716,160
R1_NVFP4 = 380_116_563_040  # 669,173,061,120 x 4.5 / 8 = 376,409,846,880, + 3,706,716,160


def test_deepseek_r1_in_mxfp4_and_nvfp4():
    assert VD_R1 == 926_679_040 and P_R1 - 2 * VD_R1 == 669_173_061_120
    assert (P_R1 - 2 * VD_R1) * 4.25 / 8 + 2 * VD_R1 * 2 == 355_498_188_720 + 3_706_716_160 == R1_MXFP4
    assert (P_R1 - 2 * VD_R1) * 4.5 / 8 + 2 * VD_R1 * 2 == 376_409_846_880 + 3_706_716_160 == R1_NVFP4


@pytest.mark.parametrize(
    ("gpu", "vendor", "precision", "weight_bytes", "fp4_rate"),
    [
        # AMD CDNA 4: OCP MXFP4 (one e8m0 scale per 32 values, 4.25 bits), at the FP4 rate
        ("mi355x", "AMD", "mxfp4", R1_MXFP4, 10_100e12),
        ("mi350x", "AMD", "mxfp4", R1_MXFP4, 9_230e12),
        # NVIDIA Blackwell: NVFP4 (one e4m3 scale per 16 values, 4.5 bits)
        ("b200", "NVIDIA", "nvfp4", R1_NVFP4, 9_000e12),
        ("b300", "NVIDIA", "nvfp4", R1_NVFP4, 14_000e12),
        # DGX Spark's vendor reads 'NVIDIA (with MediaTek)': NVIDIA's, at GB10's fp4 500 TFLOP/s
        ("dgx-spark", "NVIDIA", "nvfp4", R1_NVFP4, 500e12),
    ],
)
def test_fp4_is_the_gpu_vendors_fp4_format(gpu, vendor, precision, weight_bytes, fp4_rate):
    row = estimate_row(gpu=gpu, model=R1, precision="fp4", tp=8)
    assert row["precision"] == precision
    assert row["model_weight_bytes"] == weight_bytes
    assert row["weight_bytes"] == weight_bytes / 8  # tp 8, every layer split 8 ways
    assert (row["compute_dtype"], row["peak_flops_per_s"]) == ("fp4", fp4_rate)
    assert row["notes"] == f"fp4 on {gpu} is {precision}, {vendor}'s FP4 format"


@pytest.mark.parametrize("gpu", ["b200", "mi355x", "h100-sxm", "mi300x"])
def test_nvfp4_and_mxfp4_named_are_themselves_on_every_gpu(gpu):
    rows = estimate_rows(gpu=gpu, model=R1, precision=["nvfp4", "mxfp4"], tp=8)
    assert [(r["precision"], r["model_weight_bytes"]) for r in rows] == [("nvfp4", R1_NVFP4), ("mxfp4", R1_MXFP4)]


def test_nvfp4_on_amd_cdna4_is_weight_only():
    # MI355X's FP4 units take MXFP4's e8m0 scales per 32 values, not NVFP4's e4m3 scales per 16 (AMD
    # CDNA 4 ISA): an NVFP4 checkpoint runs as on a GPU without FP4 units, its matmuls at bf16
    # 2,500 TFLOP/s, its weights still 4.5 bits
    nvfp4, mxfp4 = estimate_rows(gpu="mi355x", model=R1, precision=["nvfp4", "mxfp4"], tp=8)
    assert (nvfp4["compute_dtype"], nvfp4["peak_flops_per_s"], nvfp4["model_weight_bytes"]) == (
        "bf16",
        2_500e12,
        R1_NVFP4,
    )
    assert (
        nvfp4["notes"] == "mi355x's FP4 units take mxfp4, not nvfp4; nvfp4 runs weight-only: matmuls use its bf16 rate"
    )
    assert (mxfp4["compute_dtype"], mxfp4["peak_flops_per_s"], mxfp4["notes"]) == ("fp4", 10_100e12, None)
    # Blackwell's tensor cores take both (PTX ISA .kind::mxf4nvf4): MXFP4 keeps B200's FP4 rate, and
    # GB10's (DGX Spark, vendor 'NVIDIA (with MediaTek)')
    b200, spark = estimate_rows(gpu=["b200", "dgx-spark"], model=GPT_OSS, precision="mxfp4")
    assert (b200["compute_dtype"], b200["peak_flops_per_s"], b200["notes"]) == ("fp4", 9_000e12, None)
    assert (spark["compute_dtype"], spark["peak_flops_per_s"], spark["notes"]) == ("fp4", 500e12, None)


def test_fp4_beside_its_own_format_is_one_row():
    # fp4 on MI355X is mxfp4: listed beside mxfp4, one row, which says so; beside nvfp4, two rows
    rows = estimate_rows(gpu=["b200", "mi355x"], model=R1, precision=["mxfp4", "fp4"], tp=8)
    assert [(r["gpu"], r["precision"], r["notes"]) for r in rows] == [
        ("b200", "mxfp4", None),
        ("b200", "nvfp4", "fp4 on b200 is nvfp4, NVIDIA's FP4 format"),
        ("mi355x", "mxfp4", "fp4 on mi355x is mxfp4, AMD's FP4 format"),
    ]


def test_fp4_on_gpus_without_fp4_units_is_the_vendors_format_weight_only():
    # H100 (NVIDIA) and MI300X (AMD) have no FP4 units: the vendor's format, run weight-only at bf16;
    # a Mac (Apple has no FP4 format of its own) keeps nvfp4, what fp4 meant before (Llama-3.1-8B: a
    # bf16 checkpoint, so no FP4 format of its own either; gpt-oss's MXFP4 would be kept)
    llama = "meta-llama/Llama-3.1-8B"
    h100, mi300x, mac = estimate_rows(gpu=["h100-sxm", "mi300x", "m2-ultra"], model=llama, precision="fp4")
    assert (h100["precision"], h100["compute_dtype"]) == ("nvfp4", "bf16")
    assert h100["notes"] == (
        "fp4 on h100-sxm is nvfp4, NVIDIA's FP4 format; "
        "h100-sxm has no published fp4 rate; nvfp4 runs weight-only: matmuls use its bf16 rate"
    )
    assert (mi300x["precision"], mi300x["compute_dtype"]) == ("mxfp4", "bf16")
    assert mi300x["notes"].startswith("fp4 on mi300x is mxfp4, AMD's FP4 format; mi300x has no published fp4 rate")
    assert mac["precision"] == "nvfp4"
    assert mac["notes"].startswith("fp4 on m2-ultra is nvfp4 (Apple has no FP4 format of its own; NVIDIA's assumed)")


@pytest.mark.parametrize("gpu", ["b200", "mi355x", "h100-sxm"])
def test_fp4_keeps_a_checkpoints_own_fp4_format(gpu):
    """gpt-oss ships in MXFP4: `fp4` keeps it on every GPU whose FP4 units take it (B200, MI355X) and on
    one without FP4 units (H100, weight-only), rather than re-quantising it into NVIDIA's NVFP4."""
    row = estimate_row(gpu=gpu, model="openai/gpt-oss-120b", precision="fp4")
    mxfp4 = estimate_row(gpu=gpu, model="openai/gpt-oss-120b", precision="mxfp4")
    assert row["precision"] == "mxfp4" and row["model_weight_bytes"] == mxfp4["model_weight_bytes"]
    assert row["notes"].startswith(f"fp4 for openai/gpt-oss-120b on {gpu} is mxfp4, its checkpoint's own FP4 format")


def test_vendor_names_are_read_as_vendors_write_them():
    from llmsweep.catalog.engines import gpu_platform

    for name in ("AMD", "amd", "AMD/ATI", "AMD, Inc.", "Advanced Micro Devices", "Advanced Micro Devices, Inc."):
        assert gpu_platform(name, None) == "amd", name
    assert gpu_platform("NVIDIA (with MediaTek)", None) == "nvidia" and gpu_platform("Intel (Habana)", None) == "gaudi"
    # no vendor: the family says (a sweep's own GPU that inherits mi355x and drops its vendor is AMD's)
    assert gpu_platform(None, "cdna") == gpu_platform("", "cdna") == "amd" and gpu_platform(None, None) is None


def test_an_fp4_rate_of_an_unknown_vendor_is_taken_at_its_word(catalog):
    """Only a make whose FP4 units' scales the catalog knows (NVIDIA, AMD: precisions.yaml fp4_units) can
    refuse a format: NVFP4 on MI355X runs weight-only; on Gaudi or a Mac (no fp4 rate anyway) it is not
    refused; mxfp4 runs on both NVIDIA's and AMD's units."""
    assert not catalog.fp4_units_take("nvfp4", "mi355x") and catalog.fp4_units_take("nvfp4", "b200")
    assert catalog.fp4_units_take("mxfp4", "mi355x") and catalog.fp4_units_take("mxfp4", "b200")
    assert catalog.fp4_units_take("nvfp4", "gaudi3") and catalog.fp4_units_take("nvfp4", "m2-ultra")
    assert catalog.fp4_units_take("fp8", "mi355x")  # not an fp4 format
