"""MoE layouts: expert parallelism (ep) and attention data parallelism (dp_attention), with
values derived by hand (llmsweep/estimate/memory.py, compute.py, parallel.py)."""

from __future__ import annotations

import math

import pytest

from llmsweep.spec import load

from .conftest import estimate_row

R1 = "deepseek-ai/DeepSeek-R1"
# DeepSeek-R1 (config.json, shared/reference/model-configs): 671,026,419,200 parameters; 58 MoE
# layers x 256 routed experts x 44,040,192 parameters each (3 x 7168 x 2048) = 653,908,770,816
# routed; the rest (attention, 3 dense layers, shared experts, embeddings) 17,117,648,384.
R1_TOTAL, R1_ROUTED = 671_026_419_200, 58 * 256 * 44_040_192
R1_DENSE = R1_TOTAL - R1_ROUTED


def r1(**axes) -> dict:
    base = {"gpu": "b200", "model": R1, "precision": "fp8", "input_tokens": 1024, "output_tokens": 256}
    return estimate_row(**{**base, **axes})


def test_routed_and_dense_parameters():
    assert R1_ROUTED == 653_908_770_816 and R1_DENSE == 17_117_648_384


def test_deepseek_r1_fp8_weights_on_8_b200_with_ep8_and_attention_dp8():
    # fp8 = 1 byte per weight, but the embedding and LM head stay bf16 (2 x 129,280 x 7,168 =
    # 1,853,358,080 parameters, 1 byte more each). Attention and dense layers are copied on each of
    # the 8 attention groups (tp 1 each), the routed experts are spread over all 8 GPUs:
    # 17,117,648,384 + 1,853,358,080 + 653,908,770,816 / 8 = 18,971,006,464 + 81,738,596,352
    # = 100,709,602,816 bytes
    row = r1(tp=1, dp_attention=8, ep=8, batch=64)
    assert row["gpus"] == 8 and row["reason"] is None and row["fits"]
    assert row["weight_bytes"] == 100_709_602_816
    # tp 8 instead splits everything 8 ways (ep does not change memory): 672,879,777,280 / 8
    assert r1(tp=8, ep=8)["weight_bytes"] == r1(tp=8, ep=1)["weight_bytes"] == 84_109_972_160


def test_each_attention_group_caches_only_its_own_sequences():
    # 64 sequences over 8 groups = 8 per group. MLA caches 70,272 bytes per token at 16 bits
    # (61 layers x (512 + 64) x 2 bytes), one latent "head" (never split): at 1,024 + 256 tokens
    # 8 x 1,280 x 70,272 = 719,585,280 bytes per GPU.
    row = r1(tp=1, dp_attention=8, ep=8, batch=64)
    assert row["kv_cache_bytes"] == 8 * 1_280 * 70_272 == 719_585_280
    # 65 sequences: the busiest group has ceil(65 / 8) = 9
    assert r1(tp=1, dp_attention=8, ep=8, batch=65)["kv_cache_bytes"] == 9 * 1_280 * 70_272
    # max_batch counts the whole replica: a multiple of the 8 groups
    assert r1(tp=1, dp_attention=8, ep=8, batch=1)["max_batch"] % 8 == 0


def test_decode_step_bytes_of_the_busiest_group():
    # ideal profile: uniform routing. 64 sequences touch a fraction 1 - (1 - 8/256)^64 = 0.868916
    # of the experts; the group reads its dense copy, 1/8 of the routed experts at the share the
    # busiest ep rank touches (0.954497, test_the_busiest_expert_parallel_rank_sets_the_step) and
    # its 8 sequences' KV at the mean context 1,024 + 128 = 1,152 tokens (70,272 bytes each). Its
    # dense copy holds the bf16 embedding and LM head, 1,853,358,080 bytes more than at fp8, but the
    # step does not stream the 2 x 926,679,040-byte embedding table: it gathers the 64 tokens' rows,
    # 64 x 7,168 x 2 = 917,504 bytes (all the replica's tokens, as the experts are counted).
    busiest = 0.9544973255939503
    expected = R1_DENSE + R1_ROUTED * busiest / 8 + 8 * 1_152 * 70_272 + 917_504
    row = r1(tp=1, dp_attention=8, ep=8, batch=64)
    assert row["decode_bytes_per_step"] == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(95_785_464_256, rel=1e-9)


def test_expert_all_to_all():
    # Dispatch + combine per MoE layer: 2 x 58 layers x k 8 x d 7168 x 2 bytes (bf16 activations)
    # = 13,303,808 bytes per token, 7/8 of it to other GPUs, over B200 NVLink 900 GB/s per
    # direction: 11,640,832 / 9e11 = 1.2934e-5 s per token (tp 1 sends all of it).
    row = r1(tp=1, dp_attention=8, ep=8, batch=64)
    assert row["decode_comm_s"] == pytest.approx(8 * 11_640_832 / 900e9, rel=1e-12)  # 8 tokens per group
    assert r1(tp=8, ep=1, batch=64)["decode_comm_s"] > 0  # tp uses all-reduces instead
    # no ep: the experts are tensor-split over all 8 GPUs, which gather every group's tokens
    # (all-gather) and return partial sums (reduce-scatter): per token of a group
    # 2 x 58 x 7/8 x 8 groups x 7,168 x 2 bytes = 11,640,832 bytes, the same volume as the all-to-all
    gathered = r1(tp=1, dp_attention=8, ep=1, batch=64)
    assert gathered["expert_link"] == "scale-up"
    assert gathered["decode_comm_s"] == pytest.approx(8 * 2 * 58 * 7 / 8 * 8 * 7_168 * 2 / 900e9, rel=1e-12)
    assert r1(tp=8, ep=1, batch=64)["expert_link"] is None  # tp 8 alone: the all-reduces carry the experts


def test_a_latent_moe_routes_its_latent():
    # Nemotron-3 Super projects each token from d = 4,096 to its 1,024-wide latent before routing it
    # (LatentMoE; moe_latent_size): dispatch + combine per MoE layer move the latent, 2 x 40 MoE
    # layers x k 22 x 1,024 x 2 bytes = 3,604,480 bytes per token, 7/8 of it to other GPUs over H100
    # NVLink 450 GB/s per direction: 3,153,920 / 450e9 = 7.0087e-6 s (at d it would be 4x that)
    row = estimate_row(
        gpu="h100-sxm",
        model="nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
        precision="fp8",
        tp=1,
        dp_attention=8,
        ep=8,
        batch=64,
    )
    assert (row["moe_width"], row["moe_layers"], row["experts_per_token"]) == (1024, 40, 22)
    assert row["alltoall_s_per_token"] == pytest.approx(3_153_920 / 450e9, rel=1e-12)
    # a model without a latent routes d: DeepSeek-R1's 7,168
    assert r1(tp=1, dp_attention=8, ep=8, batch=64)["moe_width"] == 7168


def test_expert_parallelism_inside_the_tp_group_needs_no_all_to_all():
    # tp 8 x ep 8, no attention DP: after attention every GPU holds all 64 tokens, runs those routed
    # to its 32 experts, and the MLP's all-reduce sums the outputs (vLLM's FusedMoE uses all-to-all
    # kernels only with data parallelism). Communication is the tp all-reduces alone, as at ep 1:
    # 2 x 61 layers x 2 x 7/8 x 7,168 x 2 bytes = 3,060,736 bytes per token over 900 GB/s.
    assert 2 * 61 * 2 * 7 / 8 * 7_168 * 2 == 3_060_736
    inside = r1(tp=8, ep=8, batch=64)
    assert inside["expert_link"] is None
    assert inside["alltoall_fixed_s"] == 0.0 and inside["alltoall_s_per_token"] == 0.0
    assert inside["decode_comm_s"] == pytest.approx(64 * 3_060_736 / 900e9, rel=1e-12)
    assert inside["decode_comm_s"] == r1(tp=8, ep=1, batch=64)["decode_comm_s"]
    # across attention groups the tokens differ: tp 1 x dp_attention 8 x ep 8 dispatches them
    assert r1(tp=1, dp_attention=8, ep=8, batch=64)["alltoall_s_per_token"] > 0


# E[max of n standard normals], exact (Tippett 1925; Harter 1961 tables): 1/sqrt(pi) at n = 2.
@pytest.mark.parametrize(
    ("n", "exact", "rel"), [(2, 1 / math.sqrt(math.pi), 0.05), (8, 1.42360, 0.01), (64, 2.31928, 0.01)]
)
def test_the_expected_maximum_of_normal_variables(n, exact, rel):
    import polars as pl

    from llmsweep.estimate.experts import expected_max_normal

    z = pl.select(expected_max_normal(pl.lit(n))).item()
    assert z == pytest.approx(exact, rel=rel)
    # not its leading asymptotic term sqrt(2 ln n), 2.039 at n = 8: 43 % too far out
    assert z < math.sqrt(2 * math.log(n))


def test_the_busiest_expert_parallel_rank_sets_the_step():
    # Uniform routing, ideal profile. 64 tokens touch each expert with p = 1 - (1 - 8/256)^64 =
    # 0.868916; a rank of n = 256 / 8 = 32 experts touches n p +- sqrt(n p (1 - p)), and the busiest
    # of 8 ranks about z = E[max of 8 normals] = 1.434466 (experts.expected_max_normal: Blom's
    # q = 7.625 / 8.25, t = sqrt(-2 ln(1 - q)) = 2.271659) spreads more: p + z sqrt(p (1 - p) / n)
    # = 0.868916 + 1.434466 x 0.059661 = 0.868916 + 0.085581 = 0.954497 (a Monte Carlo of uniform
    # top-8 routing gives 0.947).
    p = 1 - (1 - 8 / 256) ** 64
    t = math.sqrt(-2 * math.log(1 - 7.625 / 8.25))
    z = t - (2.515517 + 0.802853 * t + 0.010328 * t**2) / (1 + 1.432788 * t + 0.189269 * t**2 + 0.001308 * t**3)
    assert z == pytest.approx(1.434466, abs=1e-6)
    busiest = p + z * math.sqrt(p * (1 - p) / 32)
    assert busiest == pytest.approx(0.954497, abs=1e-6)
    base = {"gpu": "b200", "model": R1, "precision": "fp8", "tp": 1, "dp_attention": 8, "batch": 64}
    no_ep, ep8 = estimate_row(**base, ep=1), estimate_row(**base, ep=8)
    assert ep8["decode_bytes_per_step"] - no_ep["decode_bytes_per_step"] == pytest.approx(
        R1_ROUTED * (busiest - p) / 8, rel=1e-9
    )
    # the spread coefficient of ep 8: z / sqrt(n) = 1.434466 / sqrt(32) = 0.253580 (a prompt's
    # p = 1 leaves no spread: p (1 - p) = 0)
    prompt = estimate_row(**{**base, "batch": 1}, ep=8, input_tokens=8192)
    assert prompt["expert_spread"] == pytest.approx(z / math.sqrt(32), rel=1e-12)


@pytest.mark.parametrize(
    "axes, reason",
    [
        (
            {"model": "meta-llama/Llama-3.1-8B", "precision": "bf16", "ep": 2, "tp": 2},
            "ep and dp_attention apply to MoE models; a dense model's data parallelism is more replicas",
        ),
        (
            {"tp": 4, "ep": 3},
            "ep does not divide tp x dp_attention (the experts of a stage are spread over those GPUs)",
        ),
        (
            {"model": "mistralai/Mixtral-8x7B-v0.1", "precision": "bf16", "tp": 2, "dp_attention": 8, "ep": 16},
            "ep exceeds the model's routed experts",
        ),
    ],
)
def test_layouts_that_cannot_run(axes, reason):
    row = r1(**axes)
    assert row["reason"] == reason and not row["fits"]
    assert math.isfinite(row["tpot_s"])


def test_sweep_axes_and_gpu_count(tmp_path):
    path = tmp_path / "moe.yaml"
    path.write_text(
        "name: moe\ngrid:\n  gpu: [b200]\n  model: [deepseek-r1]\n  precision: [fp8]\n"
        "  tp: [1, 8]\n  dp_attention: [1, 8]\n  ep: [1, 8]\n"
        "exclude: [{tp: 8, dp_attention: 8}]\n"
    )
    sweep = load(path)
    assert sweep.size == 8
    from llmsweep import pipeline

    frame = pipeline.compute(sweep).collect()
    assert frame.height == 6
    assert sorted(frame.select("tp", "dp_attention", "gpus").unique().rows()) == [(1, 1, 1), (1, 8, 8), (8, 1, 8)]


def test_routing_traffic_of_the_moe_layers():
    # Per token and GPU: n_r passes x 2 bytes x d 7,168 x 58 MoE layers x k 8 copies, spread over
    # ep 8 ranks, at B200's 8 TB/s x eta_bw. At n_r = 7: 7 x 2 x 7,168 x 58 x 8 / 8 = 5,820,416 bytes.
    row = r1(tp=8, ep=8, batch=32, profile="default")
    n_r = row["routed_activation_passes"]
    assert n_r > 0
    per_token = n_r / 7 * 5_820_416 / (8e12 * row["bandwidth_efficiency"])
    assert row["routing_s_per_token"] == pytest.approx(per_token, rel=1e-12)
    # a decode step of 32 sequences adds it 32 times, beside the roofline's max, like communication
    assert row["decode_routing_s"] == pytest.approx(32 * per_token, rel=1e-12)
    terms = max(row["decode_compute_s"], row["decode_memory_s"]) + row["decode_comm_s"] + row["decode_overhead_s"]
    assert row["decode_step_s"] == pytest.approx(terms + 32 * per_token, rel=1e-12)


def test_routing_traffic_is_none_for_dense_models_and_in_ideal():
    assert r1(tp=8, ep=8)["routing_s_per_token"] == 0  # ideal: n_r = 0, the plain roofline
    dense = estimate_row(gpu="h100-sxm", model="meta-llama/Llama-3.1-8B", batch=8, profile="default")
    assert dense["routing_s_per_token"] == 0 and dense["decode_routing_s"] == 0


def test_routing_traffic_with_tensor_split_experts_runs_on_every_rank():
    # ep 8: a token's 8 copies spread over the 8 ranks, one each; ep 1 (experts split by tp): every
    # rank permutes and combines all 8 copies at full width, 8 times the traffic. With 8 attention
    # groups of tp 1 and ep 8, each group's tokens still spread over the 8 ranks: the same per GPU
    # as tp 8 x ep 8 at the same batch.
    split = r1(tp=8, ep=1, batch=32, profile="default")
    spread = r1(tp=8, ep=8, batch=32, profile="default")
    groups = r1(tp=1, dp_attention=8, ep=8, batch=32, profile="default")
    assert split["routing_s_per_token"] == pytest.approx(8 * spread["routing_s_per_token"], rel=1e-12)
    assert groups["decode_routing_s"] == pytest.approx(spread["decode_routing_s"], rel=1e-12)
    assert spread["decode_routing_s"] == pytest.approx(32 * spread["routing_s_per_token"], rel=1e-12)
