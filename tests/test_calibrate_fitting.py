"""The fit's machinery: many candidates in one estimator pass, and the Levenberg-Marquardt search
checked against an independent minimiser on synthetic measurements."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from polars.testing import assert_frame_equal

from llmsweep import calibrate as cal
from llmsweep.calibrate import fitting
from llmsweep.calibrate.comparison import evaluate_many

from .conftest import DATA


@pytest.fixture
def dev(catalog):
    measured, _ = cal.read_measurements(DATA / "measured-dev.csv", catalog)
    return cal.Evaluator.build(measured, catalog.profile("literature"), catalog)


def test_many_candidates_in_one_pass_are_each_as_alone(dev, catalog):
    evens = dev.subset(range(0, len(dev.measurements), 2))
    empty = dev.subset([])
    requests = [
        (dev, catalog.profile("literature")),
        (evens, catalog.profile("default")),
        (empty, catalog.profile("ideal")),
    ]
    together = evaluate_many(requests)
    for (ev, profile), out in zip(requests, together, strict=True):
        assert_frame_equal(out, ev.evaluate(profile))
    assert together[1].height == len(evens.measurements) and together[2].height == 0


def synthetic(dev: cal.Evaluator, catalog, truth: float, faster: float = 1.0) -> tuple[cal.Evaluator, cal.Profile]:
    """The decode rows of measured-dev.csv (Apple's aside: `literature` gives that family its own
    bandwidth efficiency), their `measured` replaced by `faster` x the estimate of `literature`
    with the shared bandwidth efficiency `truth`."""
    start = catalog.profile("literature")
    rows = [
        i
        for i, (m, f) in enumerate(zip(dev.measurements, dev.families, strict=True))
        if f != "apple" and m.metric == "decode_tok_s_per_seq"
    ]
    sub = dev.subset(rows)
    made = sub.estimate(fitting._with(start, {"bandwidth_efficiency": truth}, {}))
    ms = [replace(m, measured=v * faster) for m, v in zip(sub.measurements, made, strict=True)]
    return cal.Evaluator.build(ms, start, catalog), start


def problem(ev: cal.Evaluator, start: cal.Profile, x0: float) -> fitting._Problem:
    return fitting._Problem(
        ev, ("bandwidth_efficiency",), lambda p: fitting._with(start, p, {}), start.defaults, fitting.PRIOR_WEIGHT, [x0]
    )


def test_the_search_finds_the_minimum_a_golden_section_search_finds(dev, catalog):
    """Decode rows made with bandwidth efficiency 0.6 (literature: 0.75): the loss is their mean
    squared log error + 0.1 x log(b / 0.75)^2, whose minimum lies between 0.6 and 0.75 (the prior
    pulls towards 0.75). A golden-section search on the same loss, 40 steps, agrees to 0.1 %."""
    ev, start = synthetic(dev, catalog, 0.6)
    assert len(ev.measurements) >= 30
    (found,) = fitting._minimise([problem(ev, start, 0.75)])

    def loss(b: float) -> float:
        est = ev.estimate(fitting._with(start, {"bandwidth_efficiency": b}, {}))
        errors = [math.log(e / m.measured) ** 2 for e, m in zip(est, ev.measurements, strict=True)]
        return sum(errors) / len(errors) + 0.1 * math.log(b / 0.75) ** 2

    lo, hi, phi = 0.3, 0.95, (math.sqrt(5) - 1) / 2
    for _ in range(40):
        a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
        lo, hi = (lo, b) if loss(a) < loss(b) else (a, hi)
    assert 0.6 < found["bandwidth_efficiency"] < 0.75
    assert found["bandwidth_efficiency"] == pytest.approx((lo + hi) / 2, rel=1e-3)


def test_a_value_beyond_its_bound_stops_at_the_bound(dev, catalog):
    """Rows 1.5 times faster than bandwidth efficiency 0.95 gives (1.43, beyond what a GPU
    reaches): the fit stops at the upper bound, 0.95, exactly."""
    ev, start = synthetic(dev, catalog, 0.95, faster=1.5)
    (found,) = fitting._minimise([problem(ev, start, 0.75)])
    assert found["bandwidth_efficiency"] == fitting.BOUNDS["bandwidth_efficiency"][1]


def test_sub_fits_run_at_once_give_what_each_gives_alone(dev, catalog):
    """Up to rounding: a sum over a slice of the stacked estimates may add in another order."""
    one, start = synthetic(dev, catalog, 0.6)
    two, _ = synthetic(dev, catalog, 0.8)
    together = fitting._minimise([problem(one, start, 0.75), problem(two, start, 0.5)])
    alone = [fitting._minimise([problem(one, start, 0.75)])[0], fitting._minimise([problem(two, start, 0.5)])[0]]
    for a, b in zip(together, alone, strict=True):
        assert a["bandwidth_efficiency"] == pytest.approx(b["bandwidth_efficiency"], rel=1e-12)
    assert together[0]["bandwidth_efficiency"] < 0.75 < together[1]["bandwidth_efficiency"]


def test_folds_side_by_side_give_what_each_gives_alone(dev, catalog):
    """Up to rounding, as above: the folds' passes are pooled, their results the same."""
    start = catalog.profile("literature")
    rows = list(range(len(dev.measurements)))
    folds = [rows[::2], rows[1::2], rows[: len(rows) // 2]]
    together = fitting._side_by_side([lambda r=r: cal.fit(dev, start, r) for r in folds])
    for profile, r in zip(together, folds, strict=True):
        alone = cal.fit(dev, start, r)
        assert profile.defaults.bandwidth_efficiency == pytest.approx(alone.defaults.bandwidth_efficiency, rel=1e-9)
        assert profile.engines.keys() == alone.engines.keys()
    again = fitting._side_by_side([lambda r=r: cal.fit(dev, start, r) for r in folds])
    assert again == together  # the same rounds whatever the threads' timing: the same profiles


def test_a_fold_that_fails_stops_the_others_waiting(dev, catalog):
    start = catalog.profile("literature")

    def broken() -> cal.Profile:
        raise cal.LlmsweepError("fold failed")

    with pytest.raises(cal.LlmsweepError, match="fold failed"):
        fitting._side_by_side([lambda: cal.fit(dev, start, list(range(len(dev.measurements)))), broken])


@pytest.fixture
def loaded(catalog):
    measured, _ = cal.read_measurements(DATA / "measured-load-dev.csv", catalog)
    return measured


def engine_rows(ms, engine: str, model: str = "") -> list:
    return [m for m in ms if m.engine == engine and model in m.model]


def test_a_dtype_share_is_fitted_only_where_a_model_is_measured_at_two_dtypes(loaded, catalog):
    """An engine's fp8 or fp4 share is told apart from the model's own kernels only by one model at
    its dtype and a wider one, on one GPU family at the same lengths: SGLang's Qwen3.5-397B runs in
    bf16, fp8 and nvfp4 on B300, so both shares are fitted; every TensorRT-LLM model of the file has
    one dtype (Qwen3-32B and Qwen3-235B-A22B fp8, Llama-3.1-8B bf16), so neither is; vLLM's
    MiniMax-M2.5 runs in fp8 and nvfp4 on B300 (the fp4 share), and its Qwen3-32B in fp8 only at
    4,000 tokens, in bf16 at other lengths (no fp8 share)."""
    start = catalog.profile("literature")
    rest = tuple(n for n in fitting.ENGINE_PARAMS if n not in ("fp8_gemm_efficiency", "fp4_gemm_efficiency"))

    def names(ms):
        return fitting.identified(cal.Evaluator.build(ms, start, catalog))

    assert names(engine_rows(loaded, "sglang")) == fitting.ENGINE_PARAMS
    assert names(engine_rows(loaded, "trtllm")) == rest
    # the same Qwen3-32B rows, also measured in bf16: the fp8 share is now fitted, the fp4 one not
    qwen = engine_rows(loaded, "trtllm", "Qwen3-32B")
    both = qwen + [replace(m, precision="bf16") for m in qwen]
    assert names(both) == (*rest[:2], "fp8_gemm_efficiency", *rest[2:])
    # fp8 on H100 and bf16 on A100 are two GPU families: nothing tells the share from the GPU
    a100 = [replace(m, precision="bf16", gpu="a100-80gb-sxm") for m in qwen]
    assert names(qwen + a100) == rest
    # nor do bf16 rows at other lengths than the fp8 ones
    longer = [replace(m, precision="bf16", input_tokens=m.input_tokens + 1) for m in qwen]
    assert names(qwen + longer) == rest
    vllm = names(engine_rows(loaded, "vllm"))
    assert "fp4_gemm_efficiency" in vllm and "fp8_gemm_efficiency" not in vllm
    # fp8 against fp4 (on B300, which computes in fp4) says how the two shares compare, not where
    # fp8 stands: only the fp4 share is fitted
    b300 = [replace(m, gpu="b300") for m in qwen]
    fp4 = [replace(m, precision="nvfp4") for m in b300]
    assert names(b300 + fp4) == (*rest[:2], "fp4_gemm_efficiency", *rest[2:])
