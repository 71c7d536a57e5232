"""Serving engines: names, the framework text of benchmark files, the default per GPU, profiles
keyed by engine, and the sweep's `engine` axis."""

from __future__ import annotations

import polars as pl
import pytest

from llmsweep import pipeline
from llmsweep.catalog.engines import default_engine, engine_from_framework, resolve_engine, served
from llmsweep.catalog.profiles import Profile
from llmsweep.errors import UnknownNameError
from llmsweep.spec import load


@pytest.mark.parametrize(
    "name, engine",
    [
        ("vllm", "vllm"),
        ("vLLM", "vllm"),
        ("TensorRT-LLM", "trtllm"),
        ("trt-llm", "trtllm"),
        ("SGLang", "sglang"),
        ("llama-cpp", "llama.cpp"),
        ("EXL2", "exllamav2"),
        ("mlx", "mlx"),
        ("auto", "auto"),
        ("generic", "generic"),
    ],
)
def test_engine_names(name, engine):
    assert resolve_engine(name) == engine


def test_unknown_engine_suggests():
    with pytest.raises(UnknownNameError, match=r"unknown engine 'vlm'; did you mean 'vllm'"):
        resolve_engine("vlm")


@pytest.mark.parametrize(
    "framework, engine",
    [  # every framework spelling in shared/reference/measured-dev.csv and measured-load-dev.csv
        ("llama.cpp (llama-bench, CUDA/Metal, May 2024)", "llama.cpp"),
        ("TensorRT-LLM v0.5 (gptSessionBenchmark, static batching)", "trtllm"),
        ("TensorRT-LLM v0.6.1 (gptSessionBenchmark, static batching)", "trtllm"),
        ("ExLlamaV2", "exllamav2"),
        ("vLLM v0.5.4", "vllm"),
        ("llama.cpp (Dec 2023)", "llama.cpp"),
        ("llama.cpp GGUF", "llama.cpp"),
        ("trtllm 1.0.0rc3", "trtllm"),
        ("vllm 0.12.0", "vllm"),
        ("vllm ", "vllm"),
        ("sglang 0.5.1.post1", "sglang"),
        ("mlx-lm 0.19", "mlx"),
        ("", "generic"),
        (None, "generic"),
        ("DeepSpeed-MII", "generic"),
    ],
)
def test_engine_from_framework(framework, engine):
    assert engine_from_framework(framework) == engine


@pytest.mark.parametrize(
    "framework, front_end",
    [  # offline harnesses time the engine in process; everything else went through a server
        ("TensorRT-LLM v0.5 (gptSessionBenchmark, static batching)", False),
        ("TensorRT-LLM (gptManagerBenchmark)", False),
        ("trtllm-bench 0.21", False),
        ("llama.cpp (llama-bench, CUDA/Metal, May 2024)", False),
        ("vLLM 0.6 benchmark_latency.py", False),
        ("vllm bench throughput", False),
        ("vLLM v0.5.4", True),
        ("sglang 0.5.1.post1", True),
        ("Dynamo + TensorRT-LLM [nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1]", True),
        ("", True),
        (None, True),
    ],
)
def test_offline_harnesses_have_no_serving_front_end(framework, front_end):
    assert served(framework) is front_end


@pytest.mark.parametrize(
    "family, engine",
    [("hopper", "vllm"), ("blackwell", "vllm"), ("cdna", "vllm"), ("geforce", "llama.cpp"), ("apple", "llama.cpp")],
)
def test_default_engine_by_gpu_family(family, engine):
    assert default_engine(family) == engine


PROFILE = {
    "description": "test",
    "defaults": {
        "bandwidth_efficiency": 0.7,
        "compute_efficiency": 0.6,
        "step_overhead_s": 0.001,
        "layer_overhead_s": 0.0,
        "allreduce_latency_s": 0.0,
        "memory_reserve_fraction": 0.1,
        "runtime_overhead_bytes": 0,
        "tp_buffer_bytes": 0,
        "prefill_chunk_tokens": 8192,
    },
    "families": {"hopper": {"bandwidth_efficiency": 0.5, "memory_reserve_fraction": 0.2}},
    "engines": {
        "trtllm": {"defaults": {"bandwidth_efficiency": 0.8}, "families": {"hopper": {"step_overhead_s": 0.002}}},
    },
}


def test_profile_layers_most_specific_last():
    p = Profile.model_validate(PROFILE)
    # generic on hopper: defaults, then the family's hardware values
    g = p.for_family("hopper")
    assert (g.bandwidth_efficiency, g.memory_reserve_fraction, g.step_overhead_s) == (0.5, 0.2, 0.001)
    # trtllm on hopper: + the engine's default (0.8 replaces the family's 0.5) + engine x family
    t = p.for_family("hopper", "trtllm")
    assert (t.bandwidth_efficiency, t.memory_reserve_fraction, t.step_overhead_s) == (0.8, 0.2, 0.002)
    # trtllm elsewhere: the engine's default, no engine x family value
    a = p.for_family("ampere", "trtllm")
    assert (a.bandwidth_efficiency, a.step_overhead_s) == (0.8, 0.001)
    # an engine with no entry (vllm here) is the generic one: no other engine's values leak in
    assert p.for_family("hopper", "vllm") == g


def _sweep(tmp_path, body: str):
    path = tmp_path / "s.yaml"
    path.write_text("name: eng\n" + body)
    return load(path)


def test_engine_axis_auto_resolves_per_gpu(tmp_path):
    s = _sweep(tmp_path, "grid: {gpu: [h100-sxm, rtx-4090], model: [llama-3.1-8b], precision: [q4_k_m]}\n")
    frame = pipeline.compute(s).collect()
    assert frame.select("gpu", "engine").with_columns(pl.all().cast(pl.String)).rows() == [
        ("h100-sxm", "vllm"),
        ("rtx-4090", "llama.cpp"),
    ]


def test_engine_axis_multiplies_rows_and_applies_each_engines_profile(tmp_path):
    import yaml

    (tmp_path / "p.yaml").write_text(yaml.safe_dump(PROFILE))
    s = _sweep(
        tmp_path,
        "grid: {gpu: [h100-sxm], engine: [vllm, TensorRT-LLM], model: [llama-3.1-8b]}\nprofile: p.yaml\n",
    )
    assert s.size == 2
    frame = pipeline.compute(s).collect()
    by_engine = {r["engine"]: r for r in frame.with_columns(pl.col("engine").cast(pl.String)).to_dicts()}
    assert by_engine["vllm"]["bandwidth_efficiency"] == 0.5  # generic hopper
    assert by_engine["trtllm"]["bandwidth_efficiency"] == 0.8  # trtllm's own
    assert by_engine["trtllm"]["tpot_s"] < by_engine["vllm"]["tpot_s"]


def test_exclude_an_engine(tmp_path):
    s = _sweep(
        tmp_path,
        "grid: {gpu: [h100-sxm, l40s], engine: [vllm, sglang], model: [llama-3.1-8b]}\n"
        "exclude: [{gpu: l40s, engine: sglang}]\n",
    )
    frame = pipeline.compute(s).collect().with_columns(pl.col("gpu", "engine").cast(pl.String))
    assert sorted(frame.select("gpu", "engine").rows()) == [
        ("h100-sxm", "sglang"),
        ("h100-sxm", "vllm"),
        ("l40s", "vllm"),
    ]


def test_bad_engine_in_sweep_names_the_key(tmp_path):
    with pytest.raises(
        Exception, match=r"s.yaml:3: grid.engine\[1\]: unknown engine 'tensor'; did you mean 'trtllm'\?"
    ):
        _sweep(tmp_path, "grid:\n  engine: [vllm, tensor]\n  gpu: [h100-sxm]\n  model: [llama-3.1-8b]\n")


def test_an_engine_on_a_platform_it_does_not_run_on_cannot_run(tmp_path):
    """MLX on an H100 was estimated at 115 tokens/s per user and TensorRT-LLM on an M4 Max at 24."""
    s = _sweep(
        tmp_path,
        "grid: {gpu: [h100-sxm, m4-max, mi300x, gaudi3], engine: [mlx, exllamav2, llama.cpp, trtllm, vllm, sglang],"
        " model: [llama-3.1-8b]}\n",
    )
    frame = pipeline.compute(s).collect().with_columns(pl.col("gpu", "engine", "reason").cast(pl.String))
    reasons = {(r["gpu"], r["engine"]): (r["fits"], r["reason"]) for r in frame.to_dicts()}
    no = {
        ("h100-sxm", "mlx"): "MLX runs on Apple silicon only (its CUDA backend is not modelled), not on an NVIDIA GPU",
        ("mi300x", "mlx"): "MLX runs on Apple silicon only (its CUDA backend is not modelled), not on an AMD GPU",
        ("gaudi3", "mlx"): "MLX runs on Apple silicon only (its CUDA backend is not modelled), not on Intel Gaudi",
        ("m4-max", "trtllm"): "TensorRT-LLM runs on NVIDIA GPUs only, not on Apple silicon",
        ("mi300x", "trtllm"): "TensorRT-LLM runs on NVIDIA GPUs only, not on an AMD GPU",
        ("gaudi3", "trtllm"): "TensorRT-LLM runs on NVIDIA GPUs only, not on Intel Gaudi",
        ("m4-max", "exllamav2"): "ExLlamaV2 runs on NVIDIA GPUs and AMD GPUs, not on Apple silicon",
        ("gaudi3", "exllamav2"): "ExLlamaV2 runs on NVIDIA GPUs and AMD GPUs, not on Intel Gaudi",
        (
            "gaudi3",
            "llama.cpp",
        ): "llama.cpp runs on NVIDIA GPUs, AMD GPUs, Apple silicon and Intel GPUs, not on Intel Gaudi",
        ("m4-max", "vllm"): "vLLM runs on NVIDIA GPUs, AMD GPUs, Intel GPUs and Intel Gaudi, not on Apple silicon",
        ("m4-max", "sglang"): "SGLang runs on NVIDIA GPUs, AMD GPUs and Intel GPUs, not on Apple silicon",
        ("gaudi3", "sglang"): "SGLang runs on NVIDIA GPUs, AMD GPUs and Intel GPUs, not on Intel Gaudi",
    }
    assert {k: v[1] for k, v in reasons.items() if v[1]} == no
    assert all(fits == (key not in no) for key, (fits, _) in reasons.items())


def test_a_new_gpu_takes_its_platform_from_its_family_or_the_gpu_it_inherits(tmp_path):
    s = _sweep(
        tmp_path,
        "grid: {gpu: [mine, mac, odd], engine: [trtllm], model: [llama-3.1-8b]}\ngpus:\n  mine: {inherit: h100-sxm}\n"
        "  mac: {memory_gb: 64, memory_bandwidth_gbps: 400, dense_tflops: {bf16: 30}, family: apple}\n"
        "  odd: {memory_gb: 64, memory_bandwidth_gbps: 400, dense_tflops: {bf16: 30}}\n",
    )
    frame = pipeline.compute(s).collect().with_columns(pl.col("gpu", "reason").cast(pl.String))
    assert dict(frame.select("gpu", "reason").rows()) == {
        "mine": None,
        "mac": "TensorRT-LLM runs on NVIDIA GPUs only, not on Apple silicon",
        "odd": None,  # a GPU of unknown make: no rule applies
    }
