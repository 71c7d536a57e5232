"""The share of peak that fp8 and fp4 matmuls reach (llmsweep/estimate/compute.py dtype_efficiency).

A GPU's datasheet gives fp8 twice and fp4 four times the 16-bit tensor peak; an engine's kernels reach
a smaller share of those peaks than of the 16-bit one. The profile carries that share per dtype
(fp8_gemm_efficiency, fp4_gemm_efficiency; 1 in `ideal`), fitted per engine (docs/fidelity.md).
"""

from __future__ import annotations

import pytest

from llmsweep.catalog import load_catalog
from llmsweep.errors import LlmsweepError

from .conftest import estimate_row

R1, QWEN32 = "deepseek-ai/DeepSeek-R1", "Qwen/Qwen3-32B"
H100_BF16, H100_FP8 = 989e12, 1979e12  # H100 SXM dense tensor peaks (catalog/gpus.yaml)


def test_fp8_matmuls_run_at_their_share_of_the_fp8_peak():
    # Qwen3-32B in fp8 on one H100 SXM: 1 / (1,979e12 x eta_c x f8); in bf16 1 / (989e12 x eta_c)
    fp8 = estimate_row("default", gpu="h100-sxm", model=QWEN32, precision="fp8", engine="sglang")
    bf16 = estimate_row("default", gpu="h100-sxm", model=QWEN32, precision="bf16", engine="sglang")
    eta, f8 = fp8["compute_efficiency"], fp8["fp8_gemm_efficiency"]
    assert (fp8["peak_flops_per_s"], bf16["peak_flops_per_s"]) == (H100_FP8, H100_BF16)
    assert bf16["compute_efficiency"] == eta
    assert 0.3 <= f8 < 1  # fitted: SGLang's fp8 GEMMs reach less of their peak than its bf16 ones
    assert fp8["seconds_per_flop"] == pytest.approx(1 / (H100_FP8 * eta * f8), rel=1e-12)
    assert bf16["seconds_per_flop"] == pytest.approx(1 / (H100_BF16 * eta), rel=1e-12)
    # fp8 is 2 x f8 times as fast per FLOP as bf16 (1,979 / 989 = 2.001), not twice
    ratio = bf16["seconds_per_flop"] / fp8["seconds_per_flop"]
    assert ratio == pytest.approx(H100_FP8 / H100_BF16 * f8, rel=1e-12)


def test_each_engine_has_its_own_share():
    # the fitted values are the engine's (catalog/default-profile.yaml), not shared
    profile = load_catalog().profile("default")
    for engine in ("sglang", "vllm", "trtllm"):
        row = estimate_row("default", gpu="b300", model=R1, precision="nvfp4", tp=8, engine=engine)
        values = profile.for_family("blackwell", engine)
        assert row["fp8_gemm_efficiency"] == values.fp8_gemm_efficiency
        assert row["fp4_gemm_efficiency"] == values.fp4_gemm_efficiency
    assert (
        profile.for_family("blackwell", "sglang").fp8_gemm_efficiency
        != profile.for_family("blackwell", "vllm").fp8_gemm_efficiency
    )


@pytest.mark.parametrize("kv", ["bf16", "fp8"])
def test_attention_counts_each_rate_at_its_own_share(kv):
    # DeepSeek-R1 nvfp4 on B300: matmuls at 14,000 TFLOP/s x f4; attention over a 16-bit cache at
    # 2,250 (f 1), over an fp8 cache at 4,500 x f8. Cost of one attention FLOP in matmul FLOPs:
    # 14,000 f4 / 2,250 or 14,000 f4 / (4,500 f8).
    row = estimate_row("default", gpu="b300", model=R1, precision="nvfp4", kv_precision=kv, tp=8, engine="sglang")
    f4, f8 = row["fp4_gemm_efficiency"], row["fp8_gemm_efficiency"]
    assert f8 < 1 and f4 < 1  # SGLang's fitted shares: both factors are exercised
    cost = 14_000 * f4 / 2_250 if kv == "bf16" else 14_000 * f4 / (4_500 * f8)
    assert row["attention_flop_cost"] == pytest.approx(cost, rel=1e-3)
    # so attention's time is its FLOPs at its own rate: attention FLOPs x cost x s/FLOP
    # = attention FLOPs / (8 x rate x f_attn x eta_c)
    attn_rate = 2_250e12 if kv == "bf16" else 4_500e12 * f8
    per_flop = row["attention_flop_cost"] * row["seconds_per_flop"]
    assert per_flop == pytest.approx(1 / (8 * attn_rate * row["compute_efficiency"]), rel=1e-3)


def test_ideal_is_the_plain_roofline_at_every_dtype():
    for precision, peak in (("fp8", H100_FP8), ("bf16", H100_BF16)):
        row = estimate_row(gpu="h100-sxm", model=QWEN32, precision=precision)
        assert row["fp8_gemm_efficiency"] == row["fp4_gemm_efficiency"] == 1.0
        assert row["seconds_per_flop"] == pytest.approx(1 / peak, rel=1e-12)


def test_16_bit_and_integer_matmuls_keep_the_engine_efficiency():
    # int8 W8A8 runs at the int8 rate with no dtype share (f = 1), as 16-bit formats do
    row = estimate_row("default", gpu="h100-sxm", model=QWEN32, precision="int8")
    assert row["compute_dtype"] == "int8"
    assert row["seconds_per_flop"] * row["peak_flops_per_s"] * row["compute_efficiency"] == pytest.approx(1.0)


def test_an_fp8_cache_without_an_fp8_rate_attends_at_the_16_bit_share():
    # A100 has no fp8 tensor rate: attention over an fp8 cache runs at its bf16 312 TFLOP/s with the
    # 16-bit share (1), as over a bf16 cache; on H100 at 1,979 x f8 against the matmuls' 989:
    # cost = 989 / (1,979 f8)
    a100 = estimate_row(
        "default", gpu="a100-80gb-sxm", model=QWEN32, precision="bf16", kv_precision="fp8", engine="sglang"
    )
    assert not a100["fp8_rate"] and a100["attention_flop_cost"] == 1.0
    h100 = estimate_row("default", gpu="h100-sxm", model=QWEN32, precision="bf16", kv_precision="fp8", engine="sglang")
    assert h100["fp8_rate"]
    assert h100["attention_flop_cost"] == pytest.approx(989 / (1979 * h100["fp8_gemm_efficiency"]), rel=1e-12)


# -- a GPU family's matmul ceiling (compute_scale) ------------------------------------------------------------------
MI355X_BF16 = 2_500e12  # MI355X dense bf16 peak, AMD's figure (catalog/gpus.yaml)


def test_a_family_without_data_gets_its_measured_matmul_ceiling():
    # No development row runs on AMD: its compute comes from the engine's values fitted on NVIDIA
    # GPUs, scaled by CDNA's matmul ceiling against theirs: MI355X's best bf16 matmul is 1,565 of
    # 2,500 TFLOP/s (62.6 %), B300's and B200's 1,769 and 1,745 of 2,250 (78.1 % mean):
    # 62.6 / 78.1 = 0.80 (catalog/profiles.yaml, `literature`, carried into `default`).
    row = estimate_row("default", gpu="mi355x", model=QWEN32, precision="bf16", engine="sglang")
    eta = load_catalog().profile("default").for_family("cdna", "sglang").compute_efficiency
    assert row["compute_efficiency"] == eta and row["compute_scale"] == 0.8
    # Qwen3-32B bf16 on one MI355X: 1 / (2,500e12 x eta_c x 0.8) s a FLOP
    assert row["seconds_per_flop"] == pytest.approx(1 / (MI355X_BF16 * eta * 0.8), rel=1e-12)
    # the families the fit saw keep theirs: 1
    h100 = estimate_row("default", gpu="h100-sxm", model=QWEN32, precision="bf16", engine="sglang")
    assert h100["compute_scale"] == 1.0
    gaudi = estimate_row("default", gpu="gaudi3", model=QWEN32, precision="bf16", engine="vllm")
    assert gaudi["compute_scale"] == 0.87  # Gaudi 3: 1,243 of 1,835 (67.7 %) / 78.1 %


def test_ideal_has_no_matmul_ceiling():
    row = estimate_row(gpu="mi355x", model=QWEN32, precision="bf16")
    assert row["compute_scale"] == 1.0
    assert row["seconds_per_flop"] == pytest.approx(1 / MI355X_BF16, rel=1e-12)


def test_a_compute_scale_out_of_range_names_its_key(tmp_path, catalog):
    path = tmp_path / "p.yaml"
    path.write_text(
        "description: x\ndefaults: {bandwidth_efficiency: 0.7, compute_efficiency: 0.6, step_overhead_s: 0,"
        " layer_overhead_s: 0, allreduce_latency_s: 0, memory_reserve_fraction: 0.1,"
        " runtime_overhead_bytes: 0, tp_buffer_bytes: 0, prefill_chunk_tokens: 8192}\n"
        "families: {cdna: {compute_scale: 5}}\n"
    )
    with pytest.raises(LlmsweepError) as e:
        catalog.profile(str(path))
    assert str(e.value) == (
        f"{path}: not a valid efficiency profile: families.cdna: compute_scale: Input should be less than or "
        "equal to 2 (got 5.0) (line 3)"
    )
