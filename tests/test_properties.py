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


# -- hostile numbers: every numeric field of a sweep ---------------------------------------------
# Any number in any field is either refused with a SpecError naming that field, or accepted, and
# then every estimate is a finite number (no NaN / inf, nothing negative where a size is promised).

import math  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402

from llmsweep import limits  # noqa: E402
from llmsweep.errors import SpecError  # noqa: E402


def _base_sweep() -> dict:
    return {
        "name": "props",
        "grid": {"gpu": ["mine"], "model": ["m"], "input_tokens": [512], "output_tokens": [64], "batch": [1, "max"]},
        "gpus": {"mine": {"memory_gb": 48, "memory_bandwidth_gbps": 900, "dense_tflops": {"bf16": 180}, "tdp_w": 300}},
        "models": {"m": {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 1000}},
        "workload": {"requests_per_s": 2},
        "slo": {"ttft_s": 2.0},
        "costs": {"mine": {"purchase_usd": 8000}},
    }


# (key path, range in llmsweep.limits); a trailing 0 means "the first item of a list axis"
NUMERIC_FIELDS = [
    (("grid", "input_tokens", 0), "tokens"),
    (("grid", "output_tokens", 0), "tokens"),
    (("grid", "batch", 0), "batch"),
    (("grid", "tp", 0), "parallel"),
    (("grid", "pp", 0), "parallel"),
    (("grid", "prefix_hit_rate", 0), "hit_rate"),
    (("workload", "prefix_hit_rate"), "hit_rate"),
    (("workload", "requests_per_s"), "requests_per_s"),
    (("workload", "tokens_per_day"), "tokens_per_day"),
    (("workload", "peak_factor"), "peak_factor"),
    (("workload", "headroom"), "headroom"),
    (("workload", "redundancy"), "redundancy"),
    (("workload", "input_tokens"), "tokens"),
    (("workload", "output_tokens"), "tokens"),
    (("slo", "ttft_s"), "seconds"),
    (("slo", "tpot_s"), "seconds"),
    (("slo", "request_latency_s"), "seconds"),
    (("costs", "mine", "usd_per_gpu_hour"), "usd_per_gpu_hour"),
    (("costs", "mine", "purchase_usd"), "purchase_usd"),
    (("costs", "mine", "purchase_usd_per_server"), "purchase_usd_per_server"),
    (("costs", "mine", "amortization_years"), "amortization_years"),
    (("costs", "mine", "power_usd_per_kwh"), "power_usd_per_kwh"),
    (("costs", "mine", "pue"), "pue"),
    (("costs", "mine", "power_utilization"), "power_utilization"),
    (("costs", "mine", "hosting_usd_per_kw_month"), "hosting_usd_per_kw_month"),
    (("gpus", "mine", "memory_gb"), "memory_gb"),
    (("gpus", "mine", "memory_bandwidth_gbps"), "memory_bandwidth_gbps"),
    (("gpus", "mine", "dense_tflops", "bf16"), "tflops"),
    (("gpus", "mine", "tdp_w"), "tdp_w"),
    (("gpus", "mine", "scale_up_gbps_per_direction"), "link_gbps"),
    (("gpus", "mine", "scale_out_gbps_per_direction"), "link_gbps"),
    (("gpus", "mine", "nvlink_group"), "gpu_group"),
    (("gpus", "mine", "gpus_per_node"), "gpus_per_node"),
    (("models", "m", "hidden_size"), "config_width"),
    (("models", "m", "num_hidden_layers"), "config_count"),
    (("models", "m", "num_attention_heads"), "config_count"),
    (("models", "m", "num_key_value_heads"), "config_count"),
    (("models", "m", "vocab_size"), "config_vocab"),
    (("models", "m", "intermediate_size"), "config_width"),
    (("models", "m", "max_position_embeddings"), "config_context"),
]


def _in_range(name: str) -> st.SearchStrategy:
    r = limits.RANGES[name]
    if r.integer:
        return st.integers(int(r.low), int(r.high))
    return st.floats(r.low, r.high, exclude_min=r.low_open, exclude_max=r.high_open)


any_number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, 0.0, -0.0, 1e20]),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), 0, -1]),
)


def _put(doc: dict, path: tuple, value) -> None:
    if path[0] == "grid":
        doc["grid"][path[1]] = [value]
        return
    *parents, last = path
    node = doc
    for p in parents:
        node = node.setdefault(p, {}) if isinstance(node, dict) else node[p]
    node[last] = value
    if path == ("workload", "tokens_per_day"):
        doc["workload"].pop("requests_per_s", None)
    if path in (("workload", "input_tokens"), ("workload", "output_tokens")):
        doc["grid"][path[1]] = [value]  # a workload's length must be among the grid's (else a spec error)


def _load_or_reject(doc: dict):
    """The sweep, or None when refused (with a problem naming a key of the file)."""
    from llmsweep.spec import load

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "props.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        try:
            return load(path)
        except SpecError as e:
            assert all(p.file == str(path) and p.path for p in e.problems), e
            return None


def _assert_finite_outputs(sweep) -> None:
    from llmsweep.pipeline import compute, compute_plan

    frame = compute(sweep).collect()
    plan_frame = compute_plan(sweep).options
    for df in (frame, plan_frame):
        floats = [n for n, t in df.schema.items() if t.is_float()]
        if floats and df.height:
            bad = df.select(pl.any_horizontal(~pl.col(floats).is_finite().fill_null(True)).sum()).item()
            assert bad == 0, [n for n in floats if not df[n].drop_nulls().is_finite().all()]
    sizes = [n for n in frame.columns if n.endswith("_bytes") or n.endswith("_flops")]
    assert frame.select(pl.any_horizontal(pl.col(sizes) < 0).sum()).item() == 0


@settings(max_examples=30, deadline=None)
@given(field=st.sampled_from(NUMERIC_FIELDS), data=st.data())
def test_any_number_in_any_field_is_refused_or_estimated_finitely(field, data):
    path, range_name = field
    value = data.draw(st.one_of(any_number, _in_range(range_name)), label="value")
    doc = _base_sweep()
    _put(doc, path, value)
    sweep = _load_or_reject(doc)
    if isinstance(value, float) and not math.isfinite(value):
        assert sweep is None, f"{path} accepted {value}"
    if sweep is not None:
        _assert_finite_outputs(sweep)


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_extreme_values_within_every_range_give_finite_outputs(data):
    doc = _base_sweep()
    for path, range_name in NUMERIC_FIELDS:
        if path[0] in ("models",):
            continue  # sizes of a model are bounded together (params_total); see the case above
        if path[-1] in ("usd_per_gpu_hour", "purchase_usd_per_server"):
            continue  # one offer rents or buys (with one purchase price), never both: the base buys
        if path == ("workload", "prefix_hit_rate"):
            continue  # the grid's prefix_hit_rate axis is drawn: a sweep gives one or the other
        _put(doc, path, data.draw(_in_range(range_name), label=".".join(map(str, path))))
    sweep = _load_or_reject(doc)
    assert sweep is not None  # every value in range: `validate` says OK, and then `run` must work
    _assert_finite_outputs(sweep)
