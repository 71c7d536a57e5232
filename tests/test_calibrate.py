"""Calibration: readers, the comparison file, honest (out-of-sample) fitting, and clear messages."""

from __future__ import annotations

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from llmsweep import calibrate as cal
from llmsweep.cli import main

from .conftest import DATA

FIXTURES = DATA / "calibration"


def test_llama_bench_json(catalog):
    read = cal.read_file(FIXTURES / "llama-bench.json", catalog, {"model": "meta-llama/Meta-Llama-3-8B"})
    assert read.skipped == []
    prompt, gen = read.measurements
    assert (prompt.metric, prompt.input_tokens, prompt.output_tokens, prompt.measured) == (
        "prefill_tok_s",
        512,
        0,
        7138.99,
    )
    assert (gen.metric, gen.input_tokens, gen.output_tokens, gen.measured) == ("decode_tok_s_per_seq", 0, 128, 130.58)
    assert (gen.gpu, gen.precision, gen.model) == ("rtx-4090", "q4_k_m", "meta-llama/Meta-Llama-3-8B")


def test_vllm_json(catalog):
    defaults = {"gpu": "H100 SXM", "precision": "bf16"}
    read = cal.read_file(FIXTURES / "vllm-benchmark-serving.json", catalog, defaults)
    by_metric = {m.metric: m for m in read.measurements}
    # p99_ttft_ms is compared with the estimated p99; the TPOT/ITL percentiles and medians are not read
    assert set(by_metric) == {"ttft_ms", "ttft_p99_ms", "tpot_ms", "output_throughput_tok_s"}
    ttft = by_metric["ttft_ms"]
    # 262,144 input / 256 requests = 1,024 tokens in; 65,536 / 256 = 256 out; concurrency 16
    assert (ttft.input_tokens, ttft.output_tokens, ttft.batch, ttft.measured) == (1024, 256, 16, 0.0643)
    assert ttft.model == "meta-llama/Llama-3.1-8B"  # the Instruct id maps to its architecture
    assert (by_metric["ttft_p99_ms"].column, by_metric["ttft_p99_ms"].measured) == ("ttft_p99_s", 0.131)


def test_calibrate_command_on_both_fixtures(tmp_path):
    runner = CliRunner()
    r = runner.invoke(
        main,
        [
            "calibrate",
            str(FIXTURES / "llama-bench.json"),
            "--model",
            "meta-llama/Meta-Llama-3-8B",
            "-o",
            str(tmp_path / "lb"),
        ],
    )
    assert r.exit_code == 0, r.output
    comparison = pl.read_csv(tmp_path / "lb" / "comparison.csv")
    assert comparison.columns[:5] == ["id", "metric", "measured", "estimated", "ratio"]
    assert comparison.height == 2 and comparison["ratio"].is_between(0.5, 2).all()
    assert "per metric:" in r.output and "decode_tok_s_per_seq" in r.output
    r = runner.invoke(
        main,
        ["calibrate", str(FIXTURES / "vllm-benchmark-serving.json"), "--gpu", "h100-sxm", "-o", str(tmp_path / "vllm")],
    )
    assert r.exit_code == 0, r.output
    vllm = pl.read_csv(tmp_path / "vllm" / "comparison.csv")
    assert vllm.height == 4
    # values in the unit the metric names (the file's `value`), not in SI: 64.3 ms, not 0.0643 s
    ttft = vllm.filter(pl.col("metric") == "ttft_ms").row(0, named=True)
    assert (ttft["measured"], ttft["unit"]) == (64.3, "ms")
    assert 5 < ttft["estimated"] < 5000  # milliseconds too
    assert ttft["ratio"] == pytest.approx(ttft["estimated"] / 64.3)


def test_formats_that_need_the_missing_facts(tmp_path):
    r = CliRunner().invoke(main, ["calibrate", str(FIXTURES / "vllm-benchmark-serving.json"), "-o", str(tmp_path)])
    assert r.exit_code == 1 and "vLLM results do not name the GPU; give --gpu" in r.output
    r = CliRunner().invoke(main, ["calibrate", str(FIXTURES / "llama-bench.json"), "-o", str(tmp_path)])
    assert r.exit_code == 1 and "llama-bench results do not name the Hugging Face model; give --model" in r.output


def test_users_file_with_problems(tmp_path):
    header = (
        "id,source,gpu,tp,pp,model,weight_precision,kv_precision,batch,input_len,output_len,metric,value,unit,"
        "engine_ver\n"
    )
    path = tmp_path / "mine.csv"
    path.write_text(
        header
        + "a,me,H100 SXM,1,1,meta-llama/Llama-3.1-8B,bf16,,1,128,128,decode_tok_s_per_seq,150,tok/s,x\n"
        + "b,me,H900,1,1,meta-llama/Llama-3.1-8B,bf16,,1,128,128,decode_tok_s_per_seq,150,tok/s,x\n"
        + "c,me,H100 SXM,1,1,meta-llama/Llama-3.1-8B,bf16,,1,128,128,decode_tok_s_per_seq,fast,tok/s,x\n"
        + "d,me,,1,1,meta-llama/Llama-3.1-8B,bf16,,1,128,128,decode_tok_s_per_seq,150,tok/s,x\n"
    )
    r = CliRunner().invoke(main, ["calibrate", str(path), "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert "note: " in r.output and "ignored unknown column(s) engine_ver" in r.output
    assert "1 rows compared, 3 not mapped" in r.output
    unmapped = pl.read_csv(tmp_path / "out" / "unmapped.csv")
    reasons = dict(zip(unmapped["id"], unmapped["reason"], strict=True))
    assert reasons["b"].startswith("unknown gpu 'H900'")
    assert reasons["c"] == "value 'fast' is not a number"
    assert reasons["d"] == "gpu is empty"
    bad = tmp_path / "bad.csv"
    bad.write_text("gpu,model\nh100-sxm,x\n")
    r = CliRunner().invoke(main, ["calibrate", str(bad), "-o", str(tmp_path / "out2")])
    assert r.exit_code == 1 and "missing column(s) id, source, tp" in r.output and "Traceback" not in r.output


def test_cross_validation_never_scores_a_row_with_a_profile_fitted_on_it(catalog, monkeypatch):
    measured, _ = cal.read_measurements(DATA / "measured-dev.csv", catalog)
    ev = cal.Evaluator.build(measured, catalog.profile("literature"), catalog)
    seen: list[list[int]] = []
    real_fit = cal.fit

    def spy(ev_, start, rows, init=None):
        seen.append(list(rows))
        return real_fit(ev_, start, rows[:0])  # skip the optimisation: only the row sets matter here

    monkeypatch.setattr("llmsweep.calibrate.fitting.fit", spy)
    oos = cal.cross_validate(ev, catalog.profile("literature"))
    sources = [cal.source_key(m.source) for m in measured]
    assert len(seen) == len(set(sources)) == 4
    for train in seen:
        held = {sources[i] for i in range(len(measured))} - {sources[i] for i in train}
        assert len(held) == 1  # each fold fits on every source but one
    assert oos.height == len(measured)


def test_an_offline_harness_row_pays_no_request_overhead(tmp_path, catalog):
    """The same batch-1 TTFT timed by gptSessionBenchmark (in process) and by a server: the served
    row's estimate is the offline row's plus the engine's request_overhead_s, and only it says so."""
    head = (
        "id,source,gpu,tp,pp,model,weight_precision,kv_precision,framework,batch,input_len,output_len,metric,value,unit"
    )
    config = "s,h100-sxm,1,1,meta-llama/Llama-3.1-8B,fp8,fp8"
    rows = [
        f"a,{config},TensorRT-LLM v0.5 (gptSessionBenchmark),1,2048,1,ttft_ms,36,ms",
        f"b,{config},trtllm 1.0.0rc3,1,2048,1,ttft_ms,90,ms",
    ]
    path = tmp_path / "m.csv"
    path.write_text("\n".join([head, *rows]) + "\n")
    measured, _ = cal.read_measurements(path, catalog)
    assert [m.served for m in measured] == [False, True]
    assert "offline harness" in measured[0].assumptions and "offline harness" not in measured[1].assumptions
    profile = catalog.profile("default")
    offline, online = cal.Evaluator.build(measured, profile, catalog).estimate(profile)
    overhead = profile.for_family("hopper", "trtllm").request_overhead_s
    assert overhead > 0.01
    assert online == pytest.approx(offline + overhead, rel=1e-12)


def test_shipped_default_is_the_fitted_profile_and_beats_ideal(catalog):
    default = catalog.profile("default")
    assert "measured-dev.csv" in default.description and "measured-load-dev.csv" in default.description
    # the aggregated rows' bands, and the disaggregated deployments' own
    assert set(default.bands) == {
        "decode",
        "prefill",
        "throughput",
        *(f"disaggregated_{g}" for g in ("decode", "prefill", "throughput")),
    }
    lo, hi = default.bands["decode"]
    assert lo < 1 < hi
    # the disaggregated deployments measured slower than estimated: most of the TTFT band lies above it
    lo, hi = default.bands["disaggregated_prefill"]
    assert lo < 0.5 and hi > 1
    measured, _ = cal.read_measurements(DATA / "measured-dev.csv", catalog)
    decode = [m for m in measured if m.metric == "decode_tok_s_per_seq"]
    err = {
        p: cal.summary(cal.compare(decode, p, catalog), "metric")["median_abs_error"].item()
        for p in ("ideal", "default")
    }
    assert err["default"] < err["ideal"] / 2


def test_profile_file_from_fit_is_accepted(tmp_path, catalog):
    measured, _ = cal.read_measurements(DATA / "measured-dev.csv", catalog)
    subset = [m for m in measured if "exllamav2" in m.source or "TensorRT" in m.source][:20]
    result = cal.calibrate(subset, catalog.profile("literature"), catalog)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(cal.profile_document(result, "test", ["fixture"])))
    r = CliRunner().invoke(
        main, ["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--profile", str(path), "--format", "json"]
    )
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("group", ["decode", "prefill"])
def test_bands_cover_the_middle_80_percent(group):
    oos = pl.DataFrame(
        {
            "metric": ["decode_tok_s_per_seq" if group == "decode" else "prefill_tok_s"] * 11,
            "ratio": [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5],
            "batch": ["1"] * 11,
        }
    )
    lo, hi = cal.bands(oos)[group]
    factors = sorted(1 / r for r in oos["ratio"])  # measured / estimated
    inside = [f for f in factors if lo <= f <= hi]
    assert len(inside) >= 8  # 80 % of 11 rows, give or take the quantile interpolation


def test_disaggregated_rows_get_bands_of_their_own():
    # 6 aggregated TTFT rows estimated right and 6 disaggregated ones at a quarter of the measured
    # time (TTFT is a time: the factor is estimated / measured): the aggregated band stays at 1, the
    # disaggregated rows' is 0.25 (the estimate / 0.25 = 4x it is what they measured)
    oos = pl.DataFrame(
        {
            "metric": ["ttft_ms"] * 12,
            "ratio": [1.0] * 6 + [0.25] * 6,
            "batch": ["8"] * 12,
            "mode": ["aggregated"] * 6 + ["disaggregated"] * 6,
        }
    )
    assert cal.bands(oos) == {"prefill": [1.0, 1.0], "disaggregated_prefill": [0.25, 0.25]}
    # fewer than 5 rows of a group: no band for it
    assert cal.bands(oos.head(10)) == {"prefill": [1.0, 1.0]}


def test_a_failed_fit_writes_nothing(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise cal.LlmsweepError("fit failed")

    monkeypatch.setattr("llmsweep.calibrate.run.calibrate", broken)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["calibrate", str(DATA / "measured-dev.csv"), "--fit", "-o", str(out)])
    assert r.exit_code == 1 and "fit failed" in r.output
    assert not out.exists()  # the comparison is not written either: all or nothing


def test_a_measured_fp4_row_is_its_gpus_vendors_format(catalog, tmp_path):
    # weight_precision fp4 is NVFP4 on NVIDIA (InferenceX's B300 and H100 rows: unchanged) and MXFP4 on
    # AMD; nvfp4 named stays nvfp4 on any GPU; a KV cache's fp4 is nvfp4 (not resolved per GPU)
    head = (
        "id,source,gpu,tp,pp,model,weight_precision,kv_precision,framework,batch,input_len,output_len,metric,value,unit"
    )
    rows = [
        "a,s,B300 SXM,8,1,deepseek-ai/DeepSeek-R1,fp4,,vllm,1,1024,1,ttft_ms,100,ms",
        "b,s,H100 SXM,8,1,deepseek-ai/DeepSeek-R1,fp4,,vllm,1,1024,1,ttft_ms,100,ms",
        "c,s,MI355X,8,1,deepseek-ai/DeepSeek-R1,fp4,fp4,vllm,1,1024,1,ttft_ms,100,ms",
        "d,s,MI355X,8,1,deepseek-ai/DeepSeek-R1,nvfp4,,vllm,1,1024,1,ttft_ms,100,ms",
    ]
    path = tmp_path / "m.csv"
    path.write_text("\n".join([head, *rows]) + "\n")
    measured, skipped = cal.read_measurements(path, catalog)
    assert skipped == []
    assert [(m.gpu, m.precision, m.kv_precision) for m in measured] == [
        ("b300", "nvfp4", "auto"),
        ("h100-sxm", "nvfp4", "auto"),
        ("mi355x", "mxfp4", "nvfp4"),
        ("mi355x", "nvfp4", "auto"),
    ]
    # and each row says what its fp4 became
    assert "fp4 on mi355x is mxfp4, AMD's FP4 format" in measured[2].assumptions
    assert "fp4 on b300 is nvfp4, NVIDIA's FP4 format" in measured[0].assumptions
    assert "fp4" not in measured[3].assumptions
