"""What an engine does unless told otherwise: its KV-cache format for fp8/fp4 checkpoints, its
limit on running requests, the fixed cost of an MoE layer (catalog/engines.py, profiles.yaml)."""

from __future__ import annotations

import pytest

from llmsweep.catalog.engines import AUTO_KV_RULE
from llmsweep.columns import BY_NAME

from .conftest import estimate_row

R1, QWEN32, L31_8B = "deepseek-ai/DeepSeek-R1", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B"
NEMOTRON = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"
GPT_OSS = "openai/gpt-oss-120b"


@pytest.mark.parametrize(
    ("engine", "model", "precision", "kv_format", "kv_bytes"),
    [
        ("trtllm", NEMOTRON, "fp8", "fp8", 1.0),  # a ModelOpt checkpoint: kv_cache_quant_algo FP8
        ("trtllm", QWEN32, "nvfp4", "fp8", 1.0),  # NVFP4 is ModelOpt's format
        ("trtllm", QWEN32, "fp8", "bf16", 2.0),  # Qwen's block-FP8 release sets no KV quantization
        ("trtllm", QWEN32, "bf16", "bf16", 2.0),
        ("vllm", QWEN32, "fp8", "bf16", 2.0),  # vLLM's `auto` is the model dtype...
        ("vllm", QWEN32, "nvfp4", "fp8", 1.0),  # ...or, since 0.14, a ModelOpt checkpoint's kv_cache_quant_algo
        ("vllm", NEMOTRON, "fp8", "fp8", 1.0),
        ("vllm", R1, "mxfp4", "bf16", 2.0),  # AMD's Quark MXFP4 checkpoints set no KV dtype
        ("vllm", GPT_OSS, "mxfp4", "bf16", 2.0),  # nor does gpt-oss's own MXFP4
        ("trtllm", GPT_OSS, "mxfp4", "bf16", 2.0),
        ("sglang", QWEN32, "nvfp4", "fp8", 1.0),  # SGLang 0.5.9 reads kv_cache_quant_algo too
        ("llama.cpp", QWEN32, "nvfp4", "bf16", 2.0),  # an engine with no rule: the 16-bit activation dtype
        ("sglang", R1, "fp8", "fp8", 1.0),  # DeepSeek recipes: --kv-cache-dtype fp8_e4m3
        ("sglang", QWEN32, "fp8", "bf16", 2.0),  # not an MLA model
        ("trtllm", L31_8B, "int4", "fp16", 2.0),  # weight-only int4 computes (and caches) in fp16
    ],
)
def test_auto_kv_format_is_the_engines_choice(engine, model, precision, kv_format, kv_bytes):
    row = estimate_row(gpu="h100-sxm", engine=engine, model=model, precision=precision, tp=8)
    assert (row["kv_cache_format"], row["kv_bytes_per_element"]) == (kv_format, kv_bytes)


def test_the_rule_reads_the_same_everywhere():
    # the column dictionary cannot import it (the catalog imports llmsweep.columns): it copies it
    assert f"the engine's choice: {AUTO_KV_RULE}." in BY_NAME["kv_cache_format"].description


def test_a_stated_kv_format_wins():
    row = estimate_row(gpu="h100-sxm", engine="trtllm", model=QWEN32, precision="fp8", kv_precision="bf16")
    assert (row["kv_cache_format"], row["kv_bytes_per_element"]) == ("bf16", 2.0)
    # TensorRT-LLM's fp8 cache of an NVFP4 checkpoint: Qwen3-32B's 64 layers x 8 KV heads x 128 x 2
    # (K, V) x 1 byte = 131,072 bytes per token, half the 262,144 of a 16-bit cache
    fp4 = estimate_row(gpu="b200", engine="trtllm", model=QWEN32, precision="nvfp4")
    assert fp4["kv_bytes_per_token"] == 64 * 8 * 128 * 2 == 131_072


def test_engine_limits_on_running_requests():
    # vLLM 0.33 `vllm serve`: 1,024 on GPUs of 70 GiB or more, 256 on A100; SGLang and TensorRT-LLM 2,048
    assert estimate_row("literature", gpu="h100-sxm", engine="vllm", model=L31_8B)["max_running_requests"] == 1024
    assert estimate_row("literature", gpu="a100-80gb-sxm", engine="vllm", model=L31_8B)["max_running_requests"] == 256
    assert estimate_row("literature", gpu="h100-sxm", engine="sglang", model=L31_8B)["max_running_requests"] == 2048
    assert estimate_row("literature", gpu="h100-sxm", engine="trtllm", model=L31_8B)["max_running_requests"] == 2048
    # ideal: no limit; 2,000 clients of an 8B model on one H100 all run (the KV cache holds them at 128 tokens)
    row = estimate_row(gpu="h100-sxm", model=L31_8B, input_tokens=64, output_tokens=64, batch=2000)
    assert row["max_running_requests"] == 0 and row["load_note"] is None


def test_moe_layers_pay_their_own_fixed_cost():
    # literature: 0.5 ms per step + 61 layers x 10 us + 58 MoE layers x 10 us = 1.69 ms per forward pass
    row = estimate_row("literature", gpu="b200", engine="vllm", model=R1, precision="fp8", tp=8)
    assert row["decode_overhead_s"] == pytest.approx(0.0005 + 61 * 1e-5 + 58 * 1e-5, rel=1e-12)
    dense = estimate_row("literature", gpu="b200", engine="vllm", model=L31_8B)
    assert dense["decode_overhead_s"] == pytest.approx(0.0005 + 32 * 1e-5, rel=1e-12)
    # ideal: no fixed costs, the plain roofline
    assert estimate_row(gpu="b200", model=R1, precision="fp8", tp=8)["decode_overhead_s"] == 0.0
