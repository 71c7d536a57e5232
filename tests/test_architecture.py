"""config.json fields -> architecture: parameter counts and KV sizes against the reference."""

from __future__ import annotations

import json

import pytest
import yaml

from llmsweep.catalog.architecture import load_config_file, read_config
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
