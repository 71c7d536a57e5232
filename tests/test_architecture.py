"""config.json fields -> architecture: parameter counts and KV sizes against the reference."""

from __future__ import annotations

import json

import pytest
import yaml

from llmsweep.catalog.architecture import config_slips, load_config_file, read_config
from llmsweep.errors import ConfigFileError

from .conftest import REFERENCE, needs_reference


def _reference_models():
    if not REFERENCE.is_dir():
        return []
    return yaml.safe_load((REFERENCE / "models.yaml").read_text())["models"]


@needs_reference
def test_every_reference_model_is_in_the_catalog_with_matching_counts(catalog):
    by_ref = {m.reference_id: m for m in catalog.models.values() if m.reference_id}
    for ref in _reference_models():
        entry = by_ref[f"models.yaml:{ref['id']}"]
        a = entry.architecture
        p = ref["params"]
        if isinstance(p["computed_total_from_config"], int):
            assert a.params_total == p["computed_total_from_config"], ref["id"]
        if isinstance(p.get("computed_active_from_config"), int):
            assert a.params_active == p["computed_active_from_config"], ref["id"]
        # full-cache KV bytes per token at fp16, as models.yaml computes them
        assert a.kv_elements_per_token * 2 == ref["kv_bytes_per_token_fp16"], ref["id"]


def test_kv_bytes_per_token_hand_derived(catalog):
    # Llama-2-7B (MHA): 2 (K,V) x 32 layers x 32 KV heads x 128 head dim x 2 bytes = 524,288
    assert catalog.model("meta-llama/Llama-2-7b-hf").architecture.kv_elements_per_token * 2 == 524_288
    # Llama-3.1-8B (GQA): 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 (not 524,288)
    assert catalog.model("meta-llama/Llama-3.1-8B").architecture.kv_elements_per_token * 2 == 131_072
    # DeepSeek-V3 (MLA): 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes = 70,272
    # (the GQA formula with its 128 listed KV heads would give 3,997,696)
    assert catalog.model("deepseek-ai/DeepSeek-V3").architecture.kv_elements_per_token * 2 == 70_272


def test_head_dim_comes_from_config_not_hidden_over_heads(catalog):
    # Gemma-2-9B: hidden 3584 / 16 heads = 224, but config head_dim is 256
    a = catalog.model("google/gemma-2-9b").architecture
    assert a.head_dim == 256
    # 2 x 42 layers x 8 KV heads x 256 x 2 bytes = 344,064
    assert a.kv_elements_per_token * 2 == 344_064


def test_sliding_window_layers(catalog):
    gemma = catalog.model("google/gemma-2-9b").architecture
    assert (gemma.sliding_window, gemma.sliding_layers) == (4096, 21)  # 42 layers, alternate
    mistral = catalog.model("mistralai/Mistral-7B-v0.1").architecture
    assert (mistral.sliding_window, mistral.sliding_layers) == (4096, 32)  # every layer
    qwen = catalog.model("Qwen/Qwen2.5-7B").architecture
    assert qwen.sliding_window is None  # sliding_window set but use_sliding_window false


def test_moe_active_parameters(catalog):
    # Mixtral-8x7B: 8 experts of 3 x 4096 x 14336 = 176,160,768 parameters per layer; a token uses 2:
    # active = total - 32 layers x 6 unused experts x 176,160,768 = 46,702,792,704 - 33,822,867,456
    a = catalog.model("mistralai/Mixtral-8x7B-v0.1").architecture
    assert a.expert_params == 3 * 4096 * 14336 == 176_160_768
    assert a.params_active == 46_702_792_704 - 32 * 6 * 176_160_768 == 12_879_925_248


def test_older_models_counted_from_config(catalog):
    # GPT-J-6B: embeddings 50400 x 4096 twice (+ lm_head bias 50400), 28 layers of
    # 4 x 4096^2 attention + 2 x 4096 x 16384 MLP + biases + one LayerNorm: 6,050,882,784 (~6.05B)
    assert catalog.model("EleutherAI/gpt-j-6b").architecture.params_total == 6_050_882_784
    # LLaMA-30B ("32.5B" in the LLaMA paper)
    assert round(catalog.model("huggyllama/llama-30b").architecture.params_total / 1e9, 1) == 32.5


def test_gpt2_style_field_names():
    a = read_config({"model_type": "gptj", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100})
    assert (a.hidden_size, a.layers, a.attention_heads, a.intermediate_size) == (64, 2, 4, 256)


def test_config_file_round_trip(tmp_path, catalog):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(catalog.model("meta-llama/Llama-3.1-8B").config))
    cfg, a = load_config_file(path)
    assert a.params_total == 8_030_261_248
    _, a2 = load_config_file(tmp_path)  # a folder holding config.json works too
    assert a2 == a


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"hidden_size": 4096,', "config.json:1:22: invalid JSON"),
        (
            '{"num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10}',
            "missing field 'hidden_size'",
        ),
        (
            '{"hidden_size": "big", "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10}',
            "field 'hidden_size' must be a positive integer, got 'big'",
        ),
        (
            '{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 3,'
            ' "vocab_size": 10}',
            "num_attention_heads (4) is not a multiple of num_key_value_heads (3)",
        ),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_malformed_config_names_file_and_field(tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(ConfigFileError) as e:
        load_config_file(path)
    assert str(path) in str(e.value)
    assert message in str(e.value)


def test_unreadable_config(tmp_path):
    with pytest.raises(ConfigFileError, match="file not found"):
        load_config_file(tmp_path / "nope.json")
    bad = tmp_path / "config.json"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigFileError, match="not UTF-8"):
        load_config_file(bad)


# -- 2024-2026 architectures (shared/reference/model-configs) -------------------------------------
# KV bytes per token derived by hand from each config.json; "16-bit" = fp16/bf16 KV (2 bytes per
# element), fp8 = 1 byte. Full layers grow with the context, window layers stop at W tokens, state
# layers (linear attention, Mamba2) keep a fixed state per sequence whatever the context.


def _arch(catalog, mid):
    return catalog.model(mid).architecture


def test_kv_deepseek_r1_mla(catalog):
    # DeepSeek-R1 = the DeepSeek-V3 shape: MLA caches one latent per layer, 61 layers x
    # (kv_lora_rank 512 + qk_rope_head_dim 64) = 35,136 elements: 70,272 bytes at 16-bit, 35,136 at fp8
    a = _arch(catalog, "deepseek-ai/DeepSeek-R1")
    assert (a.full_attention_layers, a.sliding_layers, a.state_layers) == (61, 0, 0)
    assert a.kv_elements_per_token == 61 * (512 + 64) == 35_136
    assert (
        a.kv_bytes_per_sequence(1, 2) == 70_272 == _arch(catalog, "deepseek-ai/DeepSeek-V3").kv_bytes_per_sequence(1, 2)
    )
    assert a.kv_bytes_per_sequence(1, 1) == 35_136
    # dense first layers and the shared expert: 3 dense + 58 MoE layers, 1 shared expert
    assert (a.dense_layers, a.moe_layers, a.shared_experts) == (3, 58, 1)


def test_kv_kimi_k2_mla(catalog):
    # Kimi-K2: MLA like DeepSeek (64 heads, but the cache does not depend on heads):
    # 61 x (512 + 64) x 2 bytes = 70,272 at 16-bit; first_k_dense_replace 1 -> 1 dense + 60 MoE layers
    a = _arch(catalog, "moonshotai/Kimi-K2-Instruct")
    assert a.kv_bytes_per_sequence(1, 2) == 61 * 576 * 2 == 70_272
    assert (a.dense_layers, a.moe_layers) == (1, 60)
    assert _arch(catalog, "moonshotai/Kimi-K2.5").kv_bytes_per_sequence(1, 2) == 70_272  # same text model


def test_kv_glm5_mla_with_dsa_indexer(catalog):
    # GLM-5: MLA latent (512 + 64) plus the DSA lightning indexer's key (index_head_dim 128), which
    # is a real per-token cache the indexer scores against on every step: it counts. 78 layers x
    # (512 + 64 + 128) = 54,912 elements: 109,824 bytes at 16-bit, 54,912 at fp8. (Engines may keep
    # the indexer key in fp8 with one fp32 scale per 128 values, 132 bytes per layer, whatever the
    # KV precision; llmsweep stores it at the KV precision.)
    a = _arch(catalog, "zai-org/GLM-5")
    assert a.indexer_head_dim == 128
    assert a.kv_bytes_per_sequence(1, 2) == 78 * (512 + 64 + 128) * 2 == 109_824
    assert a.kv_bytes_per_sequence(1, 1) == 54_912
    # DeepSeek-V3.2 (the same indexer): 61 x (576 + 128) x 2 = 85,888
    assert _arch(catalog, "deepseek-ai/DeepSeek-V3.2").kv_bytes_per_sequence(1, 2) == 85_888


def test_kv_qwen35_hybrid_linear_attention(catalog):
    # Qwen3.5-397B-A17B: layer_types = 45 linear_attention (Gated DeltaNet) + 15 full_attention.
    # Only the 15 full layers cache K and V: 15 x 2 (K,V) x 2 KV heads x 256 head_dim = 15,360
    # elements = 30,720 bytes per token at 16-bit (15,360 at fp8), not 60 layers' 122,880.
    a = _arch(catalog, "Qwen/Qwen3.5-397B-A17B")
    assert (a.full_attention_layers, a.state_layers, a.attention_layers) == (15, 45, 15)
    assert a.kv_elements_per_token == 15 * 2 * 2 * 256 == 15_360
    # Fixed state per Gated DeltaNet layer (aiconfigurator qwen35.py): 64 value heads x 128 key dim
    # x 128 value dim x 4 bytes (fp32 SSM state) = 4,194,304, plus the conv window
    # (2 x 16 x 128 + 64 x 128) x (kernel 4 - 1) x 2 bytes = 73,728 -> 4,268,032 x 45 = 192,061,440
    assert a.state_bytes_per_sequence == 45 * (64 * 128 * 128 * 4 + (2 * 16 * 128 + 64 * 128) * 3 * 2) == 192_061_440
    # one sequence at 100k tokens, 16-bit KV: 30,720 x 100,000 + 192,061,440 = 3,264,061,440 bytes
    assert a.kv_bytes_per_sequence(100_000, 2) == 3_264_061_440
    assert (a.shared_experts, a.moe_layers, a.dense_layers) == (1, 60, 0)


def test_kv_nemotron3_super_hybrid_mamba(catalog):
    # hybrid_override_pattern: 8 '*' attention, 40 'M' Mamba2, 40 'E' MoE layers. KV only on the 8
    # attention layers: 8 x 2 x 2 KV heads x 128 = 4,096 elements = 8,192 bytes at 16-bit, 4,096 at fp8
    a = _arch(catalog, "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    assert (a.full_attention_layers, a.state_layers, a.moe_layers) == (8, 40, 40)
    assert a.kv_bytes_per_sequence(1, 2) - a.state_bytes_per_sequence == 8_192
    assert a.kv_bytes_per_sequence(1, 1) - a.state_bytes_per_sequence == 4_096
    # Mamba2 state per layer: 128 heads x 64 head dim x 128 state x 4 bytes (mamba_ssm_cache_dtype
    # float32) = 4,194,304, plus conv (8192 + 2 x 8 groups x 128) x 3 x 2 bytes = 61,440 -> x 40
    assert a.state_bytes_per_sequence == 40 * (128 * 64 * 128 * 4 + 10_240 * 3 * 2) == 170_229_760


def test_kv_llama4_scout_chunked_attention(catalog):
    # The config has attention_chunk_size 8192 and no layer list; transformers' default
    # no_rope_layer_interval 4 makes layers 3, 7, ..., 47 (12 NoPE layers) global and the other 36
    # chunked: a chunked layer holds at most 8192 tokens. Per layer 2 x 8 KV heads x 128 = 2,048
    # elements = 4,096 bytes at 16-bit.
    a = _arch(catalog, "meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert (a.full_attention_layers, a.sliding_layers, a.sliding_window, a.window_kind) == (12, 36, 8192, "chunked")
    # context <= 8192: every layer holds every token: 48 x 4,096 = 196,608 bytes per token
    assert a.kv_bytes_per_sequence(8192, 2) == 48 * 4096 * 8192 == 196_608 * 8192
    assert a.kv_bytes_per_sequence(1000, 2) == 196_608 * 1000
    # 100k tokens: 12 x 4,096 x 100,000 + 36 x 4,096 x 8,192 = 4,915,200,000 + 1,207,959,552
    assert a.kv_bytes_per_sequence(100_000, 2) == 6_123_159_552  # 61,232 bytes per token on average
    assert a.kv_bytes_per_sequence(100_000, 1) == 6_123_159_552 / 2  # fp8


def test_kv_gpt_oss_sliding_window(catalog):
    # gpt-oss-120b: 18 sliding (window 128) + 18 full layers, 2 x 8 KV heads x 64 = 1,024 elements
    # = 2,048 bytes per layer per token at 16-bit. Full part 18 x 2,048 = 36,864 bytes per token.
    a = _arch(catalog, "openai/gpt-oss-120b")
    assert (a.full_attention_layers, a.sliding_layers, a.sliding_window) == (18, 18, 128)
    # 10,000 tokens: 36,864 x 10,000 + 36,864 x 128 = 373,358,592 bytes
    assert a.kv_bytes_per_sequence(10_000, 2) == 36_864 * 10_000 + 36_864 * 128 == 373_358_592


def test_kv_gemma4_sliding_and_global_layers(catalog):
    # gemma-4-26B-A4B: layer_types 25 sliding (window 1024) + 5 full. Sliding layers: 2 x 8 KV heads
    # x 256 = 4,096 elements; full layers use the global shape, 2 x 2 KV heads x 512 = 2,048 (K is
    # reused as V but the cache still holds both tensors). 16-bit: full 5 x 4,096 = 20,480 bytes per
    # token; window 25 x 8,192 = 204,800 bytes per token up to 1024 tokens.
    a = _arch(catalog, "google/gemma-4-26B-A4B")
    assert (a.full_attention_layers, a.sliding_layers, a.sliding_window) == (5, 25, 1024)
    assert (a.kv_full_elements_per_token * 2, a.kv_window_elements_per_token * 2) == (20_480, 204_800)
    # 32k tokens: 20,480 x 32,768 + 204,800 x 1,024 = 671,088,640 + 209,715,200
    assert a.kv_bytes_per_sequence(32_768, 2) == 880_803_840


# Published parameter counts (catalog params_reference: the figure in the model's name, or the
# model card named there) against the count from the config fields. Tolerance: 2% on the total
# (names round; vision towers and MTP layers are not counted here), 7% on the active count (names
# round "12.8B" to "12B"). Where the publisher excludes the input embedding from "active", so do we.
PUBLISHED = {
    "deepseek-ai/DeepSeek-R1": (671e9, 37e9, False),
    "Qwen/Qwen3-235B-A22B": (235e9, 22e9, False),
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": (480e9, 35e9, False),
    "Qwen/Qwen3.5-27B": (27e9, 27e9, False),
    "Qwen/Qwen3.5-122B-A10B": (122e9, 10e9, False),
    "Qwen/Qwen3.5-397B-A17B": (397e9, 17e9, False),
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": (109e9, 17e9, False),
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": (400e9, 17e9, False),
    "moonshotai/Kimi-K2-Instruct": (1.0e12, 32e9, False),  # "1 trillion": 1.026e12 is within 2.6%
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8": (120e9, 12e9, False),
    "google/gemma-4-26B-A4B": (26e9, 4e9, False),
    "openai/gpt-oss-120b": (116.8e9, 5.1e9, True),  # models.yaml pg_gptoss: 116.8B / 5.1B
}


@pytest.mark.parametrize("mid", sorted(PUBLISHED))
def test_parameter_counts_against_published_figures(catalog, mid):
    total, active, active_without_embedding = PUBLISHED[mid]
    a = _arch(catalog, mid)
    tol_total = 0.03 if mid.startswith("moonshotai") else 0.04 if "gemma-4" in mid else 0.02
    assert abs(a.params_total / total - 1) <= tol_total, a.params_total
    got = a.params_active - (a.vocab_size * a.hidden_size if active_without_embedding else 0)
    assert abs(got / active - 1) <= 0.07, got
    entry = catalog.model(mid)
    if entry.reference_id.startswith("model-configs:"):  # new entries say where the figure is published
        assert entry.params_reference["official_total"] and entry.params_reference["source"], mid


@needs_reference
def test_parameter_counts_hand_derived():
    # Qwen3-8B (dense, qk-norm): embeddings 151936 x 4096 x 2 (untied) = 1,244,659,712;
    # per layer attention 4096 x (32 + 2 x 8) x 128 + 32 x 128 x 4096 + q/k norms 2 x 128 = 41,943,296,
    # MLP 3 x 4096 x 12288 = 150,994,944, 2 norms 8,192; 36 layers + final norm 4096
    cfg = json.loads((REFERENCE / "model-configs" / "Qwen--Qwen3-8B_config.json").read_text())
    a = read_config(cfg)
    per_layer = 41_943_296 + 150_994_944 + 8_192
    assert a.params_total == 1_244_659_712 + 36 * per_layer + 4096 == 8_190_735_360  # "8.2B" on its card


def test_checkpoint_precision_read_from_quantization_fields():
    from llmsweep.catalog.architecture import checkpoint_precision

    assert checkpoint_precision({"quantization_config": {"quant_method": "fp8"}}) == (
        "fp8",
        "config.json quantization_config.quant_method fp8",
    )
    assert checkpoint_precision({}, {"quantization": {"quant_algo": "NVFP4"}})[0] == "nvfp4"
    assert checkpoint_precision({"torch_dtype": "bfloat16"})[0] == "bf16"
    assert checkpoint_precision({}) == (None, None)
    # FP4 checkpoints: compressed-tensors float4 (nvfp4-pack-quantized: groups of 16) and AMD Quark's MXFP4
    weights = {"num_bits": 4, "type": "float", "group_size": 16}
    float4 = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": weights}}}
    assert checkpoint_precision({"quantization_config": float4, "torch_dtype": "bfloat16"})[0] == "nvfp4"
    weights["group_size"] = 32
    assert checkpoint_precision({"quantization_config": float4})[0] == "mxfp4"
    weight = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}
    quark = {"quant_method": "quark", "global_quant_config": {"weight": weight}, "exclude": ["lm_head"]}
    assert checkpoint_precision({"quantization_config": quark, "torch_dtype": "bfloat16"}) == (
        "mxfp4",
        "config.json quantization_config: quark fp4, group 32 (MXFP4); not converted: lm_head",
    )
    quark["global_quant_config"]["weight"] = [{"dtype": "fp8_e4m3"}]
    assert checkpoint_precision({"quantization_config": quark})[0] == "fp8"
    # fields of the wrong shape are read as absent, never a traceback: the dtype decides
    for odd in ({"global_quant_config": "x"}, {"global_quant_config": {"weight": ["s"]}}, {"exclude": {"a": 1}}):
        assert checkpoint_precision({"quantization_config": {"quant_method": "quark", **odd}, "dtype": "bfloat16"}) == (
            "bf16",
            "config.json dtype bfloat16",
        )
    for groups in ([1], {"g": "x"}, {"g": {"weights": 3}}):
        q = {"quant_method": "compressed-tensors", "config_groups": groups}
        assert checkpoint_precision({"quantization_config": q})[0] is None


@needs_reference
@pytest.mark.parametrize(
    ("file", "layers"),
    [
        ("deepseek-ai--DeepSeek-R1_config.json", 1),  # num_nextn_predict_layers 1
        ("deepseek-ai--DeepSeek-V3.2_config.json", 1),
        ("zai-org--GLM-5_config.json", 1),
        ("Qwen--Qwen3.5-397B-A17B_config.json", 1),  # text_config.mtp_num_hidden_layers 1
        ("MiniMaxAI--MiniMax-M2.5_config.json", 3),  # use_mtp true, num_mtp_modules 3
        ("moonshotai--Kimi-K2-Instruct_config.json", 0),  # num_nextn_predict_layers 0: none
        ("Qwen--Qwen3-235B-A22B_config.json", 0),  # no MTP field at all
    ],
)
def test_mtp_modules_read_from_the_reference_configs(file, layers):
    _, a = load_config_file(REFERENCE / "model-configs" / file)
    assert a.mtp_layers == layers


def test_mtp_modules_in_the_catalog(catalog):
    with_mtp = {m for m in catalog.models if catalog.model(m).architecture.mtp_layers}
    # (Nemotron-3's reference file holds an Infinity, which config.json files cannot: the catalog's copy)
    assert {"deepseek-ai/DeepSeek-R1", "zai-org/GLM-5", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"} <= with_mtp
    assert "meta-llama/Llama-3.1-70B" not in with_mtp and "moonshotai/Kimi-K2-Instruct" not in with_mtp
    # the MTP layer is not in the parameter count: DeepSeek-V3 is 671 B without its 14 B module
    assert round(catalog.model("deepseek-ai/DeepSeek-R1").architecture.params_total / 1e9) == 671


def test_a_near_miss_of_a_field_it_looks_for_is_named():
    # num_kv_heads is no field llmsweep reads, and num_key_value_heads (which it looks for) is absent:
    # the model would be read as full multi-head attention, 4x the KV cache of 8 KV heads
    cfg = {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_kv_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
    }
    assert config_slips(cfg) == [("num_kv_heads", "num_key_value_heads")]
    assert read_config(cfg).kv_heads == 32  # the default the slip leaves
    # the field spelt right is no slip, and a field far from any looked for is a config.json's own
    right = {**{k: v for k, v in cfg.items() if k != "num_kv_heads"}, "num_key_value_heads": 8, "rope_theta": 5e5}
    assert config_slips(right) == []


@needs_reference
def test_the_reference_configs_have_no_slips_but_minimaxs_unread_shared_size():
    found = {}
    for path in sorted((REFERENCE / "model-configs").glob("*.json")):
        slips = config_slips(json.loads(path.read_text()))
        if slips:
            found[path.name] = slips
    # MiniMax-M2 states shared_intermediate_size 0 (no shared expert), which llmsweep reads as none anyway
    assert found == {
        "MiniMaxAI--MiniMax-M2.5_config.json": [("shared_intermediate_size", "shared_expert_intermediate_size")]
    }


# -- a quantization_config that names no format llmsweep reads is said, not silently bf16 ---------

LLAMA_8B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}
UNREAD = "names no weight format llmsweep reads, so precision auto takes its weights as bf16; if they are quantised, "
UNREAD += "give the precision (e.g. int4, fp8)"


@pytest.mark.parametrize(
    ("q", "what"),
    [
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "quant_method 'bitsandbytes'"),
        ({"quant_method": "awq", "bits": 4, "group_size": 64}, "quant_method 'awq'"),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "group_size": -16}}},
            },
            "quant_method 'compressed-tensors'",
        ),
        (
            {"quant_method": "quark", "global_quant_config": {"weight": {"dtype": "fp4", "group_size": 16}}},
            "quant_method 'quark'",
        ),
        ({"quant_method": ["fp8"]}, "no quant_method"),
        ([{"quant_method": "fp8"}], "not a mapping"),
    ],
)
def test_a_quantization_config_read_as_no_format_is_said(tmp_path, q, what):
    from click.testing import CliRunner

    from llmsweep.catalog.architecture import unread_quantization
    from llmsweep.cli import main

    cfg = {**LLAMA_8B, "quantization_config": q}
    assert unread_quantization(cfg) == f"its config.json's quantization_config ({what}) {UNREAD}"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = CliRunner().invoke(main, ["estimate", "--gpu", "b200", "--model", str(path)])
    assert r.exit_code == 0 and f"note: model {str(path)!r}: its config.json's quantization_config ({what}) " in (
        r.output
    ), r.output  # it estimated 16 GB of bf16 weights and said nothing
    r = CliRunner().invoke(main, ["estimate", "--gpu", "b200", "--model", str(path), "--precision", "int4"])
    assert r.exit_code == 0 and "names no weight format" not in r.output  # a precision given: nothing to say
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"name: q\ngrid: {{gpu: [b200], model: [m]}}\nmodels:\n  m: {{config: '{path}'}}\n")
    r = CliRunner().invoke(main, ["validate", str(sweep)])
    assert r.exit_code == 0 and f"note: grid.model 'm': its config.json's quantization_config ({what}) " in r.output


def test_a_quantization_config_read_or_absent_is_not_said(catalog):
    from llmsweep.catalog.architecture import unread_quantization

    assert unread_quantization(LLAMA_8B) is None
    assert unread_quantization({**LLAMA_8B, "quantization_config": None}) is None
    assert unread_quantization({**LLAMA_8B, "quantization_config": {"quant_method": "fp8"}}) is None
    assert [m for m, e in catalog.models.items() if unread_quantization(e.config)] == []
