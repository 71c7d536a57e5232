"""Estimates against published measurements (tests/data/measured-dev.csv, a copy of
shared/reference/measured-dev.csv; sources per row in its `source` column).

Tolerances are honest, not tuned to pass: engines differ by 2x on the same hardware, and the
`default` profile is a first literature-based guess (the calibration issue fits it).
"""

from __future__ import annotations

import polars as pl
import pytest

from llmsweep.calibrate import compare, read_measurements

from .conftest import DATA, REFERENCE, needs_reference


@pytest.fixture(scope="module")
def measurements():
    mapped, skipped = read_measurements(DATA / "measured-dev.csv")
    return mapped, skipped


@pytest.fixture(scope="module")
def default(measurements):
    return compare(measurements[0], "default")


@pytest.fixture(scope="module")
def ideal(measurements):
    return compare(measurements[0], "ideal")


def test_every_row_is_estimated_or_listed(measurements):
    mapped, skipped = measurements
    assert len(mapped) + len(skipped) == 106
    assert skipped == []


def test_default_profile_within_factor_two_for_most_rows(default):
    within = default.filter(pl.col("ratio").is_between(0.5, 2.0))
    # 93 of 106 at the time of writing; the misses are vLLM runs whose batch the source does not
    # state (estimated at the memory maximum) and three llama.cpp Dec-2023 rows
    assert within.height / default.height >= 0.85


def test_batch1_decode_and_prefill_errors(default, ideal):
    def median_abs_error(df, metric):
        return df.filter(pl.col("metric") == metric).select((pl.col("ratio") - 1).abs().median()).item()

    assert median_abs_error(default, "decode_tok_s_per_seq") < 0.25
    assert median_abs_error(default, "prefill_tok_s") < 0.35
    # the pure roofline over-predicts decode speed, as the literature says
    decode_ideal = ideal.filter(pl.col("metric") == "decode_tok_s_per_seq")["ratio"].median()
    assert decode_ideal > 1.2
    assert median_abs_error(default, "decode_tok_s_per_seq") < median_abs_error(ideal, "decode_tok_s_per_seq")


def test_weight_sizes_match_published_gguf_files(default):
    # llama.cpp GGUF file sizes (GiB): Llama-3-8B fp16 14.96, 70B fp16 131.42, q4_k_m 4.58 / 39.59
    sizes = default.filter(pl.col("metric") == "memory_gb")
    assert sizes["ratio"].is_between(0.98, 1.02).all()


def test_unmappable_rows_are_listed_with_a_reason(tmp_path):
    path = tmp_path / "m.csv"
    header = (
        "id,source,gpu,num_gpus,tp,pp,model,params_b,weight_precision,kv_precision,framework,batch,"
        "input_len,output_len,metric,value,unit,notes\n"
    )
    path.write_text(
        header
        + "x1,s,H100 SXM,1,1,1,meta-llama/Llama-3.1-8B,8,bf16,,vllm,1,128,128,energy_j,3,J,\n"
        + "x2,s,H900,1,1,1,meta-llama/Llama-3.1-8B,8,bf16,,vllm,1,128,128,ttft_ms,3,ms,\n"
        + "x3,s,H100 SXM,1,1,1,meta-llama/Llama-3.1-8B,8,bf16,,vllm,one,128,128,ttft_ms,3,ms,\n"
    )
    mapped, skipped = read_measurements(path)
    assert mapped == []
    assert [s["id"] for s in skipped] == ["x1", "x2", "x3"]
    assert "metric 'energy_j' in unit 'J' is not one llmsweep estimates" in skipped[0]["reason"]
    assert skipped[1]["reason"].startswith("unknown gpu 'H900'")
    assert skipped[2]["reason"] == "batch 'one' is not a number"


# -- serving under load (tests/data/measured-load-dev.csv, a copy of shared/reference's: mean TTFT and
# TPOT at a fixed client concurrency on H100 SXM and B300 SXM, aiconfigurator silicon sample, commit
# in `source`)
@pytest.fixture(scope="module")
def loaded():
    return read_measurements(DATA / "measured-load-dev.csv")


def test_loaded_rows_map_to_configurations(loaded):
    mapped, skipped = loaded
    assert len(mapped) + len(skipped) == 2130
    compared = compare(mapped, "default").filter(pl.col("estimated").is_not_null())
    assert compared.height / 2130 >= 0.95  # the coverage target; every other row has a reason
    assert all(s["reason"] for s in skipped)


def test_loaded_errors_with_the_shipped_default(loaded):
    """In-sample figures of the shipped `default` (fitted on these rows among others); the
    out-of-sample ones are in docs/fidelity.md. Tolerances a little above the fitted values."""
    frame = compare(loaded[0], "default")

    def median_abs_error(metric):
        return frame.filter(pl.col("metric") == metric).select((pl.col("ratio") - 1).abs().median()).item()

    assert median_abs_error("tpot_ms") <= 0.15
    assert median_abs_error("ttft_ms") <= 0.30


def test_sglang_serves_identical_requests_in_synchronised_waves(loaded):
    """SGLang runs waiting prefills before the next decode batch, so its closed-loop TTFT is the
    wave's prefill queue and its TPOT is close to the bare decode step (docs/serving.md, step 6).
    The shipped default says so for SGLang only (burst_share 1): its rows' median errors stay
    small, where the steady-state model alone was 68 % (TTFT) and 41 % (TPOT) off."""
    frame = compare(loaded[0], "default").filter((pl.col("engine") == "sglang") & (pl.col("gpu") == "h100-sxm"))
    errors = frame.group_by("metric").agg((pl.col("ratio") - 1).abs().median().alias("e"))
    assert dict(errors.iter_rows()) == {"tpot_ms": pytest.approx(0, abs=0.10), "ttft_ms": pytest.approx(0, abs=0.22)}


def test_sglang_on_b300_stays_the_known_blind_spot(loaded):
    """SGLang's B300 rows (DeepSeek, GLM-5, Qwen3.5 on early Blackwell builds) prefill several times
    slower than its H100 rows imply; in sample the fit brings their TPOT within 20 % and TTFT
    within 50 % (docs/fidelity.md, blind spots). A change that makes them worse shows here."""
    frame = compare(loaded[0], "default").filter((pl.col("engine") == "sglang") & (pl.col("gpu") == "b300"))
    errors = dict(frame.group_by("metric").agg((pl.col("ratio") - 1).abs().median()).iter_rows())
    assert errors["tpot_ms"] <= 0.20 and errors["ttft_ms"] <= 0.50


def test_same_engine_decode_follows_bandwidth_across_vendors():
    """Llama-3.1-70B fp8, batch 1, vLLM on one GPU: H200 (4.8 TB/s) against MI300X (5.3 TB/s). The
    engine's efficiency applies to both, so the speed ratio follows the bandwidth ratio
    5,300 / 4,800 = 1.104 (within 15 %; KV and fixed costs move it slightly)."""
    from .conftest import estimate_row

    speed = {
        g: estimate_row("default", gpu=g, engine="vllm", model="meta-llama/Llama-3.1-70B", precision="fp8")["tpot_s"]
        for g in ("h200-sxm", "mi300x")
    }
    ratio = speed["h200-sxm"] / speed["mi300x"]  # time per token: inverse speed
    assert ratio == pytest.approx(5300 / 4800, rel=0.15)


@needs_reference
@pytest.mark.parametrize("name", ["measured-dev.csv", "measured-load-dev.csv", "measured-serving-dev.csv"])
def test_the_development_files_are_copies_of_the_reference(name):
    """tests/data holds the development measurements byte for byte, so tests that read them there (the
    fit, the plausible ranges of calibrate) read what shared/reference publishes."""
    assert (DATA / name).read_bytes() == (REFERENCE / name).read_bytes()
