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
