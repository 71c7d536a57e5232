"""The precision axis's default `auto`: the format a model's name states (a quantized
repackaging such as nvidia/...-FP8), else its checkpoint's own (config.json), else bf16."""

from __future__ import annotations

import polars as pl

from llmsweep import pipeline
from llmsweep.spec import load


def rows(tmp_path, grid: str) -> list[tuple[str, str]]:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: auto\ngrid:\n  gpu: [b200]\n{grid}")
    frame = pipeline.compute(load(path)).collect().with_columns(pl.col("model", "precision").cast(pl.String))
    return frame.select("model", "precision").rows()


def test_auto_is_the_default_and_reads_names_then_checkpoints(tmp_path):
    got = rows(
        tmp_path,
        "  model: [nvidia/Llama-3.1-70B-Instruct-FP8, deepseek-ai/DeepSeek-R1, meta-llama/Llama-3.1-8B, "
        "nvidia/Qwen3-235B-A22B-NVFP4, openai/gpt-oss-120b]\n",
    )
    assert got == [
        ("meta-llama/Llama-3.1-70B", "fp8"),  # the name's -FP8
        ("deepseek-ai/DeepSeek-R1", "fp8"),  # config.json quantization_config: fp8
        ("meta-llama/Llama-3.1-8B", "bf16"),  # neither: bf16
        ("Qwen/Qwen3-235B-A22B", "nvfp4"),  # the name's -NVFP4
        ("openai/gpt-oss-120b", "mxfp4"),  # config.json: mxfp4 experts
    ]


def test_auto_beside_explicit_precisions_is_listed_once(tmp_path):
    got = rows(tmp_path, "  model: [deepseek-r1, llama-3.1-8b]\n  precision: [auto, fp8, bf16]\n")
    assert got == [
        ("deepseek-ai/DeepSeek-R1", "fp8"),
        ("deepseek-ai/DeepSeek-R1", "bf16"),
        ("meta-llama/Llama-3.1-8B", "bf16"),
        ("meta-llama/Llama-3.1-8B", "fp8"),
    ]


def test_fp4_is_each_gpus_vendors_format_in_a_sweep(tmp_path):
    # `fp4` is resolved per GPU as `auto` is per model: NVFP4 on NVIDIA, MXFP4 on AMD; the sweep says
    # so once, each row in its notes; nvfp4 and mxfp4 named are themselves
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: fp4\ngrid:\n  gpu: [b200, h100-sxm, mi355x]\n  model: [deepseek-r1]\n"
        "  precision: [fp4, nvfp4, mxfp4]\n  tp: [8]\n"
    )
    sweep = load(path)
    assert "grid.precision fp4 is each GPU vendor's FP4 format: nvfp4 on b200, h100-sxm; mxfp4 on mi355x" in sweep.notes
    frame = pipeline.compute(sweep).collect().with_columns(pl.col("gpu", "precision", "notes").cast(pl.String))
    assert frame.select("gpu", "precision").rows() == [
        ("b200", "nvfp4"),  # fp4, and nvfp4 named
        ("b200", "mxfp4"),
        ("h100-sxm", "nvfp4"),
        ("h100-sxm", "mxfp4"),
        ("mi355x", "mxfp4"),  # fp4, and mxfp4 named
        ("mi355x", "nvfp4"),
    ]
    notes = dict(zip(frame["gpu"] + " " + frame["precision"], frame["notes"], strict=True))
    assert notes["b200 nvfp4"] == "fp4 on b200 is nvfp4, NVIDIA's FP4 format"
    assert notes["mi355x mxfp4"] == "fp4 on mi355x is mxfp4, AMD's FP4 format"
    assert notes["b200 mxfp4"] is None


def test_a_kv_cache_in_fp4_is_nvfp4_on_every_gpu(tmp_path):
    # the KV-cache axis is not resolved per GPU: fp4 there keeps its old meaning, and the sweep says so
    path = tmp_path / "s.yaml"
    path.write_text("name: kv\ngrid:\n  gpu: [b200, mi355x]\n  model: [llama-3.1-8b]\n  kv_precision: [fp4]\n")
    sweep = load(path)
    assert sweep.axes.kv_precision == ["nvfp4"]
    said = "grid.kv_precision 'fp4': a KV cache's fp4 is nvfp4: the KV-cache axis is not resolved per GPU"
    assert said in sweep.notes


def test_exclude_rules_see_fp4_per_gpu(tmp_path):
    # fp4 is nvfp4 on b200 and mxfp4 on mi355x: a rule on mxfp4 on b200 matches no row, and says so
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ngrid:\n  gpu: [b200, mi355x]\n  model: [deepseek-r1]\n  precision: [fp4]\n  tp: [8]\n"
        "exclude:\n  - {gpu: b200, precision: mxfp4}\n  - {gpu: mi355x, precision: mxfp4}\n"
    )
    sweep = load(path)
    assert (
        f"{path}:8: exclude[0]: no configuration of the grid has all of this rule's values together, so it drops "
        "nothing (gpu: b200, precision: mxfp4)"
    ) in sweep.notes
    frame = pipeline.compute(sweep).collect().with_columns(pl.col("gpu", "precision").cast(pl.String))
    assert frame.select("gpu", "precision").rows() == [("b200", "nvfp4")]
