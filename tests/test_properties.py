"""Properties the estimator must keep for any configuration (hypothesis)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmsweep.catalog import load_catalog
from llmsweep.estimate import add_estimates
from llmsweep.grid import Axes, expand

CAT = load_catalog()
MODELS = [
    "meta-llama/Llama-2-7b-hf",
    "meta-llama/Llama-3.1-8B",
    "mistralai/Mixtral-8x7B-v0.1",
    "deepseek-ai/DeepSeek-V3",
    "google/gemma-2-9b",
    "Qwen/Qwen3-30B-A3B",
    "openai/gpt-oss-20b",
]
GPUS = ["h100-sxm", "a100-80gb-sxm", "l40s", "rtx-4090", "m2-ultra", "mi300x", "b200"]
settings.register_profile("llmsweep", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("llmsweep")

configs = st.fixed_dictionaries(
    {
        "gpu": st.sampled_from(GPUS),
        "model": st.sampled_from(MODELS),
        "precision": st.sampled_from(["bf16", "fp8", "int4", "q4_k_m", "fp16"]),
        "input_tokens": st.integers(0, 16_000),
        "output_tokens": st.integers(1, 4_000),
        "batch": st.integers(1, 256),
        "profile": st.sampled_from(["ideal", "default"]),
    }
)


def run(cfg: dict, **over) -> list[dict]:
    cfg = {**cfg, **over}
    profile = CAT.profile(cfg.pop("profile"))
    axes = Axes(**{k: v if isinstance(v, list) else [v] for k, v in cfg.items()})
    return add_estimates(expand(CAT, axes, profile)).collect().to_dicts()


@given(configs, st.integers(2, 5))
def test_kv_bytes_linear_in_context_and_batch(cfg, k):
    cfg = {**cfg, "model": "meta-llama/Llama-3.1-8B"}  # no sliding window: exactly linear
    (base,) = run(cfg)
    (more_batch,) = run(cfg, batch=cfg["batch"] * k)
    (more_ctx,) = run(cfg, input_tokens=cfg["input_tokens"] * k, output_tokens=cfg["output_tokens"] * k)
    assert more_batch["kv_cache_bytes"] == pytest.approx(k * base["kv_cache_bytes"])
    assert more_ctx["kv_cache_bytes"] == pytest.approx(k * base["kv_cache_bytes"])


@given(configs)
def test_fewer_bytes_per_weight_never_slower(cfg):
    # 16-bit weights vs a 4-bit weight-only format computing in the same 16-bit dtype
    wide, narrow = run(cfg, precision=["fp16", "int4"])
    assert narrow["weight_bytes"] < wide["weight_bytes"]
    assert narrow["decode_step_s"] <= wide["decode_step_s"] * (
        1 + 1e-12
    )  # the step; loaded TPOT also depends on how many run
    assert narrow["prefill_s"] <= wide["prefill_s"] * (1 + 1e-12)


@given(configs, st.floats(1.01, 4))
def test_more_bandwidth_never_slower(cfg, factor):
    profile = CAT.profile(cfg.pop("profile"))
    axes = Axes(**{k: [v] for k, v in cfg.items()})
    base = expand(CAT, axes, profile)
    faster = base.with_columns(pl.col("memory_bandwidth_bytes_per_s") * factor)
    (a,), (b,) = (add_estimates(f).collect().to_dicts() for f in (base, faster))
    assert b["tpot_s"] <= a["tpot_s"] and b["prefill_s"] <= a["prefill_s"]


@given(configs)
def test_aggregate_decode_non_decreasing_in_batch_while_memory_bound(cfg):
    rows = run(cfg, batch=[1, 2, 4, 8, 16, 32, 64])
    rows = [r for r in rows if r["bound"] == "memory"]
    for smaller, larger in zip(rows, rows[1:], strict=False):
        assert larger["decode_tokens_per_s"] >= smaller["decode_tokens_per_s"]


@given(configs, st.integers(1, 64))
def test_fits_false_beyond_max_batch(cfg, extra):
    (mx,) = run(cfg, batch="max")
    (beyond,) = run(cfg, batch=mx["max_batch"] + extra)
    assert not beyond["fits"]
    if mx["max_batch"] >= 1 and mx["reason"] is None:
        assert mx["fits"]
