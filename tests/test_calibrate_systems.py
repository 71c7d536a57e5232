"""Calibration on systems (more GPUs than one replica), percentiles, variable-length datasets and
the units of comparison.csv. Expected values are the estimator's own figures for one replica,
taken straight from the grid (conftest.estimate_row) and combined by hand as the test says."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from llmsweep import calibrate as cal
from llmsweep.estimate import add_estimates, load
from llmsweep.grid import Axes, expand

from .conftest import DATA, estimate_row

FIXTURES = DATA / "calibration"
HEADER = (
    "id,source,gpu,num_gpus,tp,pp,model,weight_precision,kv_precision,framework,batch,input_len,output_len,"
    "metric,value,unit,notes,request_rate"
)
LLAMA_70B = "meta-llama/Llama-3.1-70B"
# one system: 8 x H100 SXM, Llama-3.1-70B bf16, vLLM, 1,024 in / 256 out
SYSTEM = {
    "id": "sys",
    "source": "me",
    "gpu": "H100 SXM",
    "num_gpus": "8",
    "tp": "2",
    "pp": "1",
    "model": LLAMA_70B,
    "weight_precision": "bf16",
    "kv_precision": "",
    "framework": "vllm",
    "batch": "64",
    "input_len": "1024",
    "output_len": "256",
    "metric": "output_throughput_tok_s",
    "value": "5000",
    "unit": "tok/s",
    "notes": "",
    "request_rate": "",
}


def write(tmp_path: Path, rows: list[dict]) -> Path:
    fields = HEADER.split(",")
    path = tmp_path / "m.csv"
    lines = [HEADER] + [",".join(str({**SYSTEM, **r}.get(k, "")) for k in fields) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def compared(tmp_path: Path, rows: list[dict], catalog) -> tuple[dict[str, dict], dict[str, str]]:
    """(comparison rows by id, unmapped reasons by id) for `rows` (changes to SYSTEM)."""
    read = cal.read_file(write(tmp_path, rows), catalog)
    frame = cal.compare(read.measurements, "default", catalog)
    return {r["id"]: r for r in frame.iter_rows(named=True)}, {s["id"]: s["reason"] for s in read.skipped}


def replica(**axes) -> dict:
    """One replica of SYSTEM's configuration, estimated directly (the default profile)."""
    base = {"gpu": "h100-sxm", "engine": "vllm", "model": LLAMA_70B, "precision": "bf16", "input_tokens": 1024}
    return estimate_row("default", **{**base, "output_tokens": 256, **axes})


# -- systems as replicas -------------------------------------------------------------------------------------------
def test_eight_gpus_of_tp2_replicas_give_four_times_one_replica(tmp_path, catalog):
    """8 GPUs at tp 2 are r = 8 / 2 = 4 replicas; concurrency 64 is 64 / 4 = 16 per replica. The
    system's tokens/s = 4 x one tp-2 replica's at concurrency 16; per GPU, TTFT and TPOT are the
    replica's own."""
    rows = [
        {"id": "total"},
        {"id": "per-gpu", "unit": "tok/s/gpu", "value": "600"},
        {"id": "ttft", "metric": "ttft_ms", "unit": "ms", "value": "800"},
        {"id": "tpot", "metric": "tpot_ms", "unit": "ms", "value": "30"},
    ]
    got, skipped = compared(tmp_path, rows, catalog)
    assert skipped == {}
    one = replica(tp=2, batch=16)
    assert got["total"]["estimated"] == pytest.approx(4 * one["output_tokens_per_s"])
    assert got["per-gpu"]["estimated"] == pytest.approx(one["output_tokens_per_s_per_gpu"])
    assert got["per-gpu"]["estimated"] == pytest.approx(got["total"]["estimated"] / 8)
    assert got["ttft"]["estimated"] == pytest.approx(one["ttft_s"] * 1000)  # in ms, as measured
    assert got["tpot"]["estimated"] == pytest.approx(one["tpot_s"] * 1000)
    assert {(r["tp"], r["replicas"], r["batch"]) for r in got.values()} == {(2, 4, "64")}
    assert got["total"]["assumptions"] == "8 GPUs = 4 replicas of tp 2; concurrency 64: 16 per replica"
    # the same replica alone (2 GPUs, 16 clients): a quarter of the system
    alone, _ = compared(tmp_path, [{"id": "one", "num_gpus": "2", "batch": "16"}], catalog)
    assert alone["one"]["estimated"] == pytest.approx(got["total"]["estimated"] / 4)
    assert (alone["one"]["replicas"], alone["one"]["assumptions"]) == (1, "")


def test_a_request_rate_is_split_over_the_replicas(tmp_path, catalog):
    """2 requests/s offered to 4 replicas: 0.5/s each (open loop). TTFT is one replica's at 0.5/s;
    the system's output is 2/s x 256 tokens = 512 tokens/s (4 x 0.5 x 256)."""
    rate = {"batch": "", "request_rate": "2"}
    rows = [
        {"id": "ttft", **rate, "metric": "ttft_ms", "unit": "ms", "value": "300"},
        {"id": "out", **rate, "value": "512"},
    ]
    got, _ = compared(tmp_path, rows, catalog)
    axes = Axes(
        gpu=["h100-sxm"], engine=["vllm"], model=[LLAMA_70B], precision=["bf16"], tp=[2], batch=["max"]
    )  # 1,024 in / 256 out are the Axes defaults
    base = add_estimates(expand(catalog, axes, catalog.profile("default")))
    want = load.open_loop(base, pl.lit(0.5)).select("ttft_s").collect().item()
    assert got["ttft"]["estimated"] == pytest.approx(want * 1000)
    assert got["out"]["estimated"] == pytest.approx(512.0)
    assert "request rate 2/s: 0.5/s per replica" in got["ttft"]["assumptions"]


def test_a_concurrency_that_does_not_divide_goes_to_the_busiest_replica(tmp_path, catalog):
    """Concurrency 10 over 4 replicas: ceil(10 / 4) = 3 per replica (the busiest one's share).
    Latencies are that replica's; the system's throughput is each of the 10 users at the per-user
    rate there (Little's law): 10 x X(3) / 3, not 4 x X(3) (which would serve 12 users)."""
    rows = [
        {"id": "out", "batch": "10"},
        {"id": "per-gpu", "batch": "10", "unit": "tok/s/gpu", "value": "100"},
        {"id": "tpot", "batch": "10", "metric": "tpot_ms", "unit": "ms", "value": "20"},
    ]
    got, _ = compared(tmp_path, rows, catalog)
    three = replica(tp=2, batch=3)
    assert got["out"]["estimated"] == pytest.approx(10 * three["output_tokens_per_s"] / 3)
    assert got["per-gpu"]["estimated"] == pytest.approx(10 * three["output_tokens_per_s"] / 3 / 8)
    assert got["tpot"]["estimated"] == pytest.approx(three["tpot_s"] * 1000)
    split = "concurrency 10: 3 per replica (ceil of 10 / 4; throughput = 10 x the per-user rate there)"
    assert split in got["out"]["assumptions"]
    # fewer clients than replicas: 2 clients keep 2 replicas busy at 1 each, 2 x X(1)
    few, _ = compared(tmp_path, [{"id": "few", "batch": "2"}], catalog)
    assert few["few"]["estimated"] == pytest.approx(2 * replica(tp=2, batch=1)["output_tokens_per_s"])


def test_a_row_without_tp_is_compared_at_the_layout_with_the_most_tokens_per_gpu(tmp_path, catalog):
    """Llama-3.1-70B bf16 is 70.6e9 x 2 bytes = 141 GB = 131 GiB of weights: tp 1 does not fit one
    80 GiB H100; tp 2, 4 and 8 do. At 64 clients on 8 GPUs, llmsweep picks what its plan would: the
    layout with the most output tokens/s per GPU (the lowest cost per token on one GPU type). At a
    fixed concurrency that is the lowest latency: one tp-8 replica (each of the 4 tp-2 replicas
    reads 131 GiB per step for its 16 clients; the tp-8 replica reads it over 8 GPUs' bandwidth)."""
    assert not replica(tp=1, batch=16)["fits"]
    per_gpu = {tp: replica(tp=tp, batch=64 * tp // 8)["output_tokens_per_s_per_gpu"] for tp in (2, 4, 8)}
    assert max(per_gpu, key=per_gpu.get) == 8
    got, _ = compared(tmp_path, [{"id": "auto", "tp": ""}, {"id": "stated", "tp": "8"}], catalog)
    auto = got["auto"]
    assert (auto["tp"], auto["pp"], auto["replicas"], auto["fits"]) == (8, 1, 1, True)
    assert auto["assumptions"] == "layout chosen by llmsweep: tp 8 x 1 replica for 8 GPUs"
    assert auto["estimated"] == pytest.approx(got["stated"]["estimated"])


def test_fitting_keeps_the_chosen_layout(tmp_path, catalog):
    """--fit scores the rows at the layout chosen before fitting: in, before and out of sample."""
    rows = [{"id": "a", "tp": "", "source": "one"}, {"id": "b", "tp": "", "source": "two", "batch": "32"}]
    read = cal.read_file(write(tmp_path, rows), catalog)
    result = cal.calibrate(read.measurements, catalog.profile("literature"), catalog)
    for frame in (result.before, result.in_sample, result.out_of_sample):
        assert frame.select("tp", "replicas").rows() == [(8, 1), (8, 1)]
        assert frame["ratio"].is_not_null().all()


def test_when_no_tp_runs_the_row_keeps_the_estimators_reason(tmp_path, catalog):
    """Llama-3.1-405B bf16 (810 GB) does not fit 4 x 80 GiB at any tp: compared at tp 4 (the
    largest layout that can run at all), with fits false."""
    rows = [{"id": "big", "tp": "", "num_gpus": "4", "model": "meta-llama/Llama-3.1-405B", "batch": "1"}]
    got, _ = compared(tmp_path, rows, catalog)
    assert (got["big"]["tp"], got["big"]["replicas"], got["big"]["fits"]) == (4, 1, False)
    assert got["big"]["assumptions"].startswith("layout chosen by llmsweep: tp 4 x 1 replica for 4 GPUs")


WHOLE = "is not a whole number of replicas of"
REPLICA_CASES = [
    ({"num_gpus": "6", "tp": "4"}, f"num_gpus 6 {WHOLE} tp x pp x dp_attention = 4 GPUs (6 / 4 = 1.5)"),
    ({"num_gpus": "1", "tp": "2"}, f"num_gpus 1 {WHOLE} tp x pp x dp_attention = 2 GPUs (1 / 2 = 0.5)"),
    ({"num_gpus": "6", "tp": "", "pp": "4"}, f"num_gpus 6 {WHOLE} pp x dp_attention = 4 GPUs (6 / 4 = 1.5)"),
    ({"num_gpus": "0"}, "num_gpus '0' must be between 1 and 65,536"),
]


@pytest.mark.parametrize(("change", "reason"), REPLICA_CASES)
def test_a_fractional_replica_count_is_not_mapped(tmp_path, catalog, change, reason):
    got, skipped = compared(tmp_path, [{"id": "ok"}, {"id": "bad", **change}], catalog)
    assert list(got) == ["ok"]
    assert skipped == {"bad": reason}


def test_mlperf_offline_llama2_70b_on_an_8_gpu_h100_server(tmp_path, catalog):
    """MLPerf Inference v4.1 Offline, Llama-2-70B, 8 x H100-SXM-80GB, TensorRT-LLM, fp8: about
    24,500 tokens/s for the system (approximately, from NVIDIA's MLPerf Inference v4.1 results).
    The benchmark's OpenOrca prompts vary in length; their means are not in shared/reference, so
    the row uses an input and an output of the order documented for it (a few hundred tokens: 294
    and 294), with a loose tolerance. batch blank: Offline sends every query at once.

    No tp stated: llmsweep picks the layout with the most tokens/s per GPU: at the largest batch
    that fits, tp 2 (each replica's KV cache holds far more sequences than tp 1's, about 60). The
    same server stated as 4 replicas of tp 2 is the same estimate; both within a factor 1.6 (1.00
    at the time of writing)."""
    mlperf = {
        "gpu": "H100 SXM",
        "num_gpus": "8",
        "model": "meta-llama/Llama-2-70b-hf",
        "weight_precision": "fp8",
        "kv_precision": "fp8",
        "framework": "TensorRT-LLM",
        "batch": "",
        "input_len": "294",
        "output_len": "294",
        "value": "24500",
    }
    got, _ = compared(tmp_path, [{"id": "auto", **mlperf, "tp": ""}, {"id": "tp2", **mlperf, "tp": "2"}], catalog)
    auto, tp2 = got["auto"], got["tp2"]
    assert (auto["tp"], auto["replicas"], auto["batch"], auto["fits"]) == (2, 4, "max", True)
    assert auto["ratio"] == pytest.approx(tp2["ratio"])
    assert (tp2["tp"], tp2["replicas"]) == (2, 4)
    assert 1 / 1.6 <= tp2["ratio"] <= 1.6


# -- percentiles ---------------------------------------------------------------------------------------------------
def test_percentile_and_median_rows(tmp_path, catalog):
    """ttft_p99_ms is compared with ttft_p99_s, ttft_p90_ms with ttft_p90_s; a median with the
    mean (and says so); in ms, as measured."""
    rows = [
        {"id": m, "num_gpus": "2", "batch": "16", "metric": m, "unit": "ms", "value": "900"}
        for m in ("ttft_p99_ms", "ttft_p90_ms", "ttft_median_ms", "tpot_median_ms")
    ]
    got, skipped = compared(tmp_path, rows, catalog)
    assert skipped == {}
    one = replica(tp=2, batch=16)
    assert got["ttft_p99_ms"]["estimated"] == pytest.approx(one["ttft_p99_s"] * 1000)
    assert got["ttft_p90_ms"]["estimated"] == pytest.approx(one["ttft_p90_s"] * 1000)
    assert got["ttft_median_ms"]["estimated"] == pytest.approx(one["ttft_s"] * 1000)
    assert got["tpot_median_ms"]["estimated"] == pytest.approx(one["tpot_s"] * 1000)
    assert one["ttft_s"] < one["ttft_p90_s"] < one["ttft_p99_s"]
    assert got["ttft_median_ms"]["assumptions"] == cal.measurement.MEDIAN_NOTE
    assert got["ttft_p99_ms"]["ratio"] == pytest.approx(one["ttft_p99_s"] * 1000 / 900)
    # compared, not fitted: the fit uses the means the model is built on
    read = cal.read_file(write(tmp_path, rows), catalog)
    assert [m.fittable for m in read.measurements] == [False] * 4


NO_TPOT_PERCENTILE = "the estimator gives the mean time per output token only, no percentile of it"
TTFT_PERCENTILES = (
    "TTFT percentiles are estimated at p90 and p99 (ttft_p90_ms, ttft_p99_ms); "
    "write a median as ttft_median_ms and a mean as ttft_ms"
)
PERCENTILE_CASES = [
    ("tpot_p99_ms", "ms", f"tpot_p99_ms: {NO_TPOT_PERCENTILE} (compare tpot_ms or tpot_median_ms)"),
    ("itl_p90_ms", "ms", f"itl_p90_ms: {NO_TPOT_PERCENTILE} (compare itl_ms or itl_median_ms)"),
    ("ttft_p95_ms", "ms", f"metric 'ttft_p95_ms': {TTFT_PERCENTILES}"),
    ("ttft_p50_ms", "ms", f"metric 'ttft_p50_ms': {TTFT_PERCENTILES}"),
    (
        "tpot_p95_ms",
        "ms",
        "metric 'tpot_p95_ms': the estimator gives the mean TPOT only (write tpot_ms, or tpot_median_ms for a median)",
    ),
    ("ttft_p99_ms", "s", "metric 'ttft_p99_ms' in unit 's' is not one llmsweep estimates: it is read in ms"),
    (
        "decode_tok_s_per_seqq",
        "tok/s",
        "metric 'decode_tok_s_per_seqq' in unit 'tok/s' is not one llmsweep estimates; "
        "did you mean 'decode_tok_s_per_seq'?",
    ),
]


@pytest.mark.parametrize(("metric", "unit", "reason"), PERCENTILE_CASES)
def test_percentiles_without_an_estimate_are_listed(tmp_path, catalog, metric, unit, reason):
    got, skipped = compared(tmp_path, [{"id": "p", "metric": metric, "unit": unit, "value": "50"}], catalog)
    assert got == {} and skipped == {"p": reason}


# -- variable-length datasets --------------------------------------------------------------------------------------
def test_inferencex_rows_are_compared_at_the_mean_lengths(catalog):
    """tests/data/calibration/inferencex-sample.csv: rows of shared/reference/measured-serving-dev.csv
    (InferenceX, DeepSeek-R1-0528 on B300). Their notes say "ISL/OSL are uniform in [0.8L, L] around
    nominal 1024/1024": the mean is (0.8 + 1) / 2 x 1,024 = 921.6, compared at 922 tokens; 8,192 x 0.9
    = 7,372.8 -> 7,373. A disaggregated row with its pool sizes and an MTP row are compared too."""
    read = cal.read_file(FIXTURES / "inferencex-sample.csv", catalog)
    assert read.notes == []  # mode, speculative and the pool columns are known
    lengths = {m.id: (m.input_tokens, m.output_tokens) for m in read.measurements}
    assert lengths == {
        "S00001": (922, 922),
        "S00184": (7373, 922),
        "S00136": (922, 922),
        "S00137": (922, 922),
        "S00138": (922, 922),
        "S00181": (7373, 922),
        "S00182": (7373, 922),
        "S00183": (7373, 922),
    }
    by_id = {m.id: m for m in read.measurements}
    assert by_id["S00181"].assumptions.startswith(
        "lengths uniform in [0.8 L, L] (notes): compared at their means 7373 / 922 tokens "
        "(0.9 x the nominal 8192 / 1024)"
    )
    assert read.skipped == []
    assert by_id["S00001"].disaggregated and by_id["S00001"].prefill_workers is not None
    # its pools state their layouts (5 decode workers of tp 4 x ep 4, 1 prefill worker of tp 1 x dp 2 x
    # ep 2: 22 GPUs): num_gpus counts both pools, so no tp is chosen from it
    s1 = by_id["S00001"]
    assert (s1.tp, s1.ep, s1.dp_attention, s1.decode_workers, s1.num_gpus) == (4, 4, 1, 5, 22)
    assert not s1.layout_chosen
    assert by_id["S00184"].draft_tokens == 3  # MTP on SGLang: its default of 3 drafted tokens (the source states none)
    frame = cal.compare(read.measurements, "default", catalog)
    assert frame["estimated"].is_not_null().all() and frame["replicas"].to_list() == [1] * 8
    assert frame.filter(pl.col("id") == "S00001")["tp"].to_list() == [4]  # the decode worker's, as stated


def test_lengths_stated_as_means(tmp_path, catalog):
    """A row whose notes say its lengths are means may give fractional lengths (rounded to whole
    tokens); without that note a fractional length is an error, as before."""
    rows = [
        {"id": "means", "input_len": "294.4", "output_len": "293.5", "notes": "mean lengths of the dataset"},
        {"id": "plain", "input_len": "294.4"},
    ]
    got, skipped = compared(tmp_path, rows, catalog)
    assert (got["means"]["input_tokens"], got["means"]["output_tokens"]) == (294, 294)
    assert "lengths are a dataset's means (notes)" in got["means"]["assumptions"]
    assert skipped == {"plain": "input_len '294.4' is not a whole number"}


# -- units ---------------------------------------------------------------------------------------------------------
def test_comparison_values_are_in_the_unit_the_metric_names(tmp_path, catalog):
    """measured and estimated are in the row's own unit (`unit` column): ms for ttft_ms, GB (GiB)
    for memory_gb, tokens/s for throughput; the ratio does not depend on it."""
    rows = [
        {"id": "ttft", "metric": "ttft_ms", "unit": "ms", "value": "64.3"},
        {"id": "weights", "metric": "memory_gb", "unit": "GB", "value": "131.42", "gpu": "n/a", "num_gpus": ""},
    ]
    got, _ = compared(tmp_path, rows, catalog)
    assert (got["ttft"]["measured"], got["ttft"]["unit"]) == (64.3, "ms")
    assert got["ttft"]["estimated"] == pytest.approx(replica(tp=2, batch=16)["ttft_s"] * 1000)
    assert (got["weights"]["measured"], got["weights"]["unit"]) == (131.42, "GB")
    # 70.6e9 parameters x 2 bytes / 2^30 = 131.5 GiB
    assert got["weights"]["estimated"] == pytest.approx(131.5, rel=0.01)


# -- MLPerf-style scenarios ----------------------------------------------------------------------------------------
SCENARIO_HEADER = [*HEADER.split(","), "scenario", "ttft_limit_ms", "tpot_limit_ms"]
LLAMA2 = {
    "gpu": "H100 SXM",
    "num_gpus": "8",
    "tp": "2",
    "model": "meta-llama/Llama-2-70b-hf",
    "weight_precision": "fp8",
    "kv_precision": "fp8",
    "framework": "TensorRT-LLM",
    "batch": "",
    "input_len": "294",
    "output_len": "294",
}


def scenario_rows(tmp_path: Path, rows: list[dict], catalog) -> tuple[dict[str, dict], dict[str, str]]:
    path = tmp_path / "s.csv"
    lines = [",".join(SCENARIO_HEADER)]
    lines += [",".join(str({**SYSTEM, **LLAMA2, **r}.get(k, "")) for k in SCENARIO_HEADER) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = cal.read_file(path, catalog)
    frame = cal.compare(read.measurements, "default", catalog)
    return {r["id"]: r for r in frame.iter_rows(named=True)}, {s["id"]: s["reason"] for s in read.skipped}


def test_server_scenario_is_the_largest_rate_meeting_the_limits(tmp_path, catalog):
    """Server: the largest Poisson rate per replica whose p99 TTFT <= 2,000 ms and TPOT <= 200 ms
    (the mean TPOT: no percentile of it is estimated), x 294 output tokens x 4 replicas. Offline:
    4 x one replica's closed loop at its largest batch. Tighter limits (interactive, 450 ms and
    40 ms) never give more."""
    rows = [
        {"id": "offline", "scenario": "offline", "value": "24500"},
        {"id": "server", "scenario": "server", "ttft_limit_ms": "2000", "tpot_limit_ms": "200", "value": "21000"},
        {"id": "inter", "scenario": "interactive", "ttft_limit_ms": "450", "tpot_limit_ms": "40", "value": "9000"},
    ]
    got, skipped = scenario_rows(tmp_path, rows, catalog)
    assert skipped == {}
    axes = Axes(
        gpu=["h100-sxm"],
        engine=["trtllm"],
        model=["meta-llama/Llama-2-70b-hf"],
        precision=["fp8"],
        kv_precision=["fp8"],
        input_tokens=[294],
        output_tokens=[294],
        tp=[2],
        batch=["max"],
    )
    base = add_estimates(expand(catalog, axes, catalog.profile("default"))).collect()
    assert got["offline"]["estimated"] == pytest.approx(4 * base["output_tokens_per_s"].item())
    for rid, ttft, tpot in (("server", 2.0, 0.2), ("inter", 0.45, 0.04)):
        rate = load.max_rate(base, lambda _, a=ttft, b=tpot: (pl.col("ttft_p99_s") <= a) & (pl.col("tpot_s") <= b))
        assert got[rid]["estimated"] == pytest.approx(4 * rate.item() * 294)
        point = load.open_loop(base.lazy(), pl.lit(rate.item())).collect().row(0, named=True)
        assert point["ttft_p99_s"] <= ttft and point["tpot_s"] <= tpot and not point["saturated"]
    assert 0 < got["inter"]["estimated"] <= got["server"]["estimated"]
    assert got["server"]["assumptions"] == (
        "8 GPUs = 4 replicas of tp 2; scenario server: the largest request rate whose p99 TTFT <= 2000 ms "
        "and mean TPOT <= 200 ms (no TPOT percentile is estimated)"
    )
    assert got["offline"]["assumptions"] == (
        "8 GPUs = 4 replicas of tp 2; scenario offline: every query at once (the largest batch that fits)"
    )


SCENARIO_CASES = [
    ({"scenario": "server"}, "scenario 'server' needs ttft_limit_ms or tpot_limit_ms (the p99 latency limits)"),
    (
        {"scenario": "server", "ttft_limit_ms": "450", "metric": "ttft_ms", "unit": "ms"},
        "scenario 'server' measures output_throughput_tok_s, not ttft_ms",
    ),
    (
        {"scenario": "server", "ttft_limit_ms": "450", "batch": "8"},
        "scenario 'server': the rate is what the row measures; leave batch and request_rate blank",
    ),
    ({"scenario": "singlestream"}, "scenario 'singlestream' must be one of offline, server, interactive"),
    ({"ttft_limit_ms": "450"}, "ttft_limit_ms / tpot_limit_ms apply to the server and interactive scenarios only"),
    ({"scenario": "server", "tpot_limit_ms": "-1"}, "tpot_limit_ms '-1' must be a positive number"),
]


@pytest.mark.parametrize(("change", "reason"), SCENARIO_CASES)
def test_scenario_rows_that_cannot_be_read(tmp_path, catalog, change, reason):
    got, skipped = scenario_rows(tmp_path, [{"id": "bad", "value": "100", **change}], catalog)
    assert got == {} and skipped == {"bad": reason}


PREFILL_TILING = "prefill layout: prefill_moe_tp x prefill_ep must equal"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        # 7 expert ranks cannot tile the prefill worker's 1 x 2 GPUs (nor 65,536)
        ({"prefill_ep": "7"}, PREFILL_TILING),
        ({"prefill_ep": "65536"}, PREFILL_TILING),
        ({"prefill_moe_tp": "4"}, PREFILL_TILING),  # 4 x ep 2 is not 1 x 2
        ({"prefill_moe_tp": "abc"}, "prefill_moe_tp 'abc' is not a number"),
        # num_gpus counts both pools: 1 x (1 x 1 x 2) + 5 x (4 x 1 x 1) = 22 GPUs a replica
        (
            {"num_gpus": "23"},
            "num_gpus 23 is not a whole number of replicas of 1 prefill worker(s) of 1 x 1 x 2 and 5 decode "
            "worker(s) of 4 x 1 x 1 GPUs (tp x pp x dp_attention) = 22 GPUs",
        ),
    ],
)
def test_a_disaggregated_row_whose_pools_do_not_add_up_is_listed(tmp_path, catalog, change, reason):
    # S00001 of the InferenceX sample: 1 prefill worker of tp 1 x dp_attention 2 x ep 2 (moe_tp 1)
    import csv

    with (FIXTURES / "inferencex-sample.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["id"] == "S00001"]
    path = tmp_path / "s.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows([{**rows[0], **change}])
    read = cal.read_file(path, catalog)
    assert read.measurements == []
    assert read.skipped[0]["reason"].startswith(reason), read.skipped
