"""Hostile calibration inputs: every bad row is listed in unmapped.csv with the field named, every
bad file is one message naming the file (exit 1, nothing written), and nothing tracebacks or
writes NaN/inf into comparison.csv."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from llmsweep import calibrate as cal
from llmsweep.cli import main

HEADER = "id,source,gpu,tp,pp,model,weight_precision,kv_precision,batch,input_len,output_len,metric,value,unit"
FIELDS = HEADER.split(",")
GOOD = {
    "id": "ok",
    "source": "me",
    "gpu": "H100 SXM",
    "tp": "1",
    "pp": "1",
    "model": "meta-llama/Llama-3.1-8B",
    "weight_precision": "bf16",
    "kv_precision": "",
    "batch": "1",
    "input_len": "128",
    "output_len": "128",
    "metric": "decode_tok_s_per_seq",
    "value": "150",
    "unit": "tok/s",
}
VLLM = {
    "backend": "vllm",
    "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "num_prompts": 256,
    "request_rate": "inf",
    "max_concurrency": 16,
    "completed": 256,
    "total_input_tokens": 262144,
    "total_output_tokens": 65536,
    "output_throughput": 1584.2,
    "mean_ttft_ms": 64.3,
    "mean_tpot_ms": 9.8,
}


def invoke(*args) -> object:
    """Run `llmsweep calibrate`; fail on any exception that escaped (a traceback for the user)."""
    r = CliRunner().invoke(main, ["calibrate", *map(str, args)])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output
    return r


def write_csv(path: Path, rows: list[dict], header: list[str] = FIELDS) -> Path:
    lines = [",".join(header)] + [",".join(str(r.get(k, "")) for k in header) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_finite_comparison(folder: Path) -> pl.DataFrame:
    text = (folder / "comparison.csv").read_text()
    frame = pl.read_csv(folder / "comparison.csv", infer_schema_length=None)
    for name in ("measured", "estimated", "ratio"):
        values = [v for v in frame[name].cast(pl.Float64).to_list() if v is not None]
        assert all(math.isfinite(v) for v in values), name
    assert ",NaN," not in text and ",inf," not in text and ",nan," not in text
    return frame


def unmapped_reasons(folder: Path) -> dict[str, str]:
    frame = pl.read_csv(folder / "unmapped.csv", infer_schema_length=None, schema_overrides={"id": pl.String})
    return dict(zip(frame["id"], frame["reason"], strict=True))


# -- one bad row beside a good one: the bad row is listed with the field and the problem ---------------------
ROW_CASES = [
    ("neg-batch", {"batch": "-4"}, "batch '-4' must be between 1 and 10,000,000"),
    ("neg-concurrency", {"batch": "-16", "metric": "ttft_ms", "unit": "ms"}, "batch '-16' must be between 1 and"),
    ("neg-input", {"input_len": "-128"}, "input_len '-128' must be between 0 and 100,000,000"),
    ("neg-output", {"output_len": "-1"}, "output_len '-1' must be between 0 and 100,000,000"),
    ("tp-zero", {"tp": "0"}, "tp '0' must be between 1 and 65,536"),
    ("pp-negative", {"pp": "-2"}, "pp '-2' must be between 1 and 65,536"),
    ("batch-text", {"batch": "lots"}, "batch 'lots' is not a number"),
    ("tp-nan", {"tp": "nan"}, "tp 'nan' is not a finite number"),
    ("value-nan", {"value": "NaN"}, "value 'NaN' is not a finite number"),
    ("value-inf", {"value": "inf"}, "value 'inf' is not a finite number"),
    ("value-1e400", {"value": "1e400"}, "value '1e400' is not a finite number"),
    ("value-negative", {"value": "-5"}, "value '-5' must be a positive number"),
    ("value-empty", {"value": ""}, "value is empty"),
    (
        "value-overflows-si",
        {"metric": "memory_gb", "unit": "GB", "value": "1e300"},
        "value '1e300' is not a plausible memory_gb: it must be a finite number at least 0.001 and at most",
    ),
    ("batch-1e400", {"batch": "1e400"}, "batch '1e400' is not a finite number"),
    ("batch-huge", {"batch": "1e30"}, "batch '1e30' must be between 1 and 10,000,000"),
    ("input-fraction", {"input_len": "12.5"}, "input_len '12.5' is not a whole number"),
    ("no-tokens", {"input_len": "0", "output_len": "0"}, "input_len and output_len are both 0"),
    ("model-empty", {"model": ""}, "model is empty"),
    ("rate-negative", {"request_rate": "-1"}, "request_rate '-1' must be a positive number of requests per second"),
    ("expert-parallel", {"ep": "4"}, "layout: moe_tp x ep must equal tp x dp_attention"),
    ("dp-attention-zero", {"dp_attention": "0"}, "dp_attention '0' must be between 1 and 65,536"),
    ("ep-text", {"ep": "four"}, "ep 'four' is not a number"),
    ("moe-tp-negative", {"moe_tp": "-1"}, "moe_tp '-1' must be between 0 and 65,536"),
    # the experts split 65,536 ways on one GPU: moe_tp x ep must be the stage's tp x dp_attention, ep 1 too
    ("moe-tp-beyond-the-gpus", {"moe_tp": "65536"}, "layout: moe_tp x ep must equal tp x dp_attention"),
    # estimate and validate refuse mtp for a model without an MTP module; so does calibrate
    ("mtp-without-a-module", {"speculative": "mtp"}, "mtp drafts with the model's own multi-token-prediction module"),
    # the lengths leave nothing to measure (these were compared with a blank or 0.0 estimate)
    ("prefill-without-prompt", {"metric": "prefill_tok_s", "input_len": "0"}, "prefill_tok_s with input_len 0"),
    (
        "throughput-without-output",
        {"metric": "output_throughput_tok_s", "output_len": "0"},
        "output_throughput_tok_s with output_len 0: no output tokens",
    ),
    (
        "tpot-of-one-token",
        {"metric": "tpot_ms", "unit": "ms", "output_len": "1"},
        "tpot_ms with output_len 1: no interval between tokens",
    ),
    (
        "unitless-metric-with-a-unit",
        {"metric": "max_batch", "unit": "sequences"},
        "metric 'max_batch' in unit 'sequences' is not one llmsweep estimates: it is read in no unit (blank)",
    ),
    ("mode-misspelt", {"mode": "disagreggated"}, "mode 'disagreggated': serving modes estimated are agg"),
    (
        "scenario-misspelt",
        {"scenario": "offlne"},
        "scenario 'offlne' must be one of offline, server, interactive; did you mean 'offline'?",
    ),
]


@pytest.mark.parametrize(("rid", "change", "reason"), ROW_CASES, ids=[c[0] for c in ROW_CASES])
def test_a_bad_row_is_listed_with_its_reason(tmp_path, rid, change, reason):
    header = [*FIELDS, "request_rate", "dp_attention", "ep", "moe_tp", "speculative", "mode", "scenario"]
    path = write_csv(tmp_path / "m.csv", [GOOD, {**GOOD, "id": rid, **change}], header)
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "1 rows compared, 1 not mapped" in r.output
    assert "ignored unknown column" not in r.output  # request_rate and the layout columns are known
    assert unmapped_reasons(tmp_path / "out")[rid].startswith(reason)
    assert assert_finite_comparison(tmp_path / "out")["id"].to_list() == ["ok"]


def test_closed_loop_rate_and_single_layout_are_compared(tmp_path):
    header = [*FIELDS, "request_rate", "dp_attention", "ep", "moe_tp"]
    rows = [
        {**GOOD, "request_rate": "inf", "dp_attention": "1", "ep": "1", "moe_tp": "1"},
        {**GOOD, "id": "rate-with-batch", "request_rate": "4", "batch": "8"},
    ]
    read = cal.read_file(write_csv(tmp_path / "m.csv", rows, header))
    assert read.skipped == []
    assert [(m.batch, m.request_rate, m.dp_attention, m.ep) for m in read.measurements] == [
        (
            1,
            math.inf,
            1,
            1,
        ),
        (8, 4.0, 1, 1),
    ]


def test_a_row_with_more_values_than_columns(tmp_path):
    path = tmp_path / "m.csv"
    write_csv(path, [GOOD])
    path.write_text(path.read_text() + ",".join([*GOOD.values(), "surplus"]).replace("ok,", "extra,", 1) + "\n")
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert unmapped_reasons(tmp_path / "out")["extra"] == "line 3 has 1 more value(s) than the header has columns"


def test_formula_cells_are_neutralised(tmp_path):
    path = write_csv(tmp_path / "m.csv", [{**GOOD, "id": "=HYPERLINK(1)"}, {**GOOD, "id": "+bad", "tp": "0"}])
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert pl.read_csv(tmp_path / "out" / "comparison.csv")["id"].to_list() == ["'=HYPERLINK(1)"]
    assert list(unmapped_reasons(tmp_path / "out")) == ["'+bad"]


# -- whole-file problems: one message naming the file, exit 1, nothing written -------------------------------
def _bytes(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


FILE_CASES = [
    ("missing-columns.csv", b"gpu,model\nh100-sxm,x\n", "missing column(s) id, source, tp"),
    ("empty.csv", b"", "the file is empty (no header line"),
    ("blank-lines.csv", b"\n\n  \n", "the file is empty (no header line"),
    (
        "misspelt.csv",
        HEADER.replace("value", "valeu").encode() + b"\n",
        "missing column(s) value (the header has 'valeu' for 'value': misspelt?)",
    ),
    ("header-only.csv", (HEADER + "\n").encode(), "no measurements in the file (only a header, or empty)"),
    ("latin1.csv", (HEADER + "\nr\xe9,me\n").encode("latin-1"), "not UTF-8 text (byte"),
    ("doubled.csv", (HEADER + ",value\n").encode(), "column(s) value appear more than once in the header"),
    ("huge-field.csv", (HEADER + '\n"' + "x" * 200_000 + '"\n').encode(), "not a readable CSV file"),
    (
        "all-bad.csv",
        (HEADER + "\na,me,H100 SXM,0,1,m,bf16,,-1,1,1,ttft_ms,nan,ms\n").encode(),
        "no row could be mapped",
    ),
    ("invalid.json", b'{"mean_ttft_ms": 1,', "invalid JSON"),
    ("number.json", b"5", "not a llama-bench (-o json) or vLLM benchmark_serving result"),
    ("deep.json", b"[" * 100_000 + b"]" * 100_000, "invalid JSON"),
    ("long-int.json", b'{"mean_ttft_ms": ' + b"9" * 5000 + b"}", "invalid JSON"),
    ("strings.json", json.dumps(["a", "b"]).encode(), "not a llama-bench (-o json) or vLLM benchmark_serving result"),
]


@pytest.mark.parametrize(("name", "data", "message"), FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_a_bad_file_is_one_message_and_writes_nothing(tmp_path, name, data, message):
    path = _bytes(tmp_path, name, data)
    out = tmp_path / "out"
    r = invoke(path, "--gpu", "h100-sxm", "-o", out)
    assert r.exit_code == 1, r.output
    assert message in r.output and str(path) in r.output
    assert not out.exists()


def test_excel_csv_utf8_with_a_byte_order_mark(tmp_path):
    path = write_csv(tmp_path / "excel.csv", [GOOD])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_text().replace("\n", "\r\n").encode())
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "1 rows compared, 0 not mapped" in r.output


# -- vLLM benchmark_serving JSON -----------------------------------------------------------------------------
def _vllm(tmp_path: Path, **changes) -> Path:
    data = {k: v for k, v in {**VLLM, **changes}.items() if v is not ...}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))  # NaN and Infinity are written as JSON allows Python to read them
    return path


def test_open_loop_rows_are_estimated_at_their_rate(tmp_path, catalog):
    """A measurement at an offered request rate (no concurrency) is compared with the open-loop
    operating point at that rate (estimate/load.py), not the closed loop: TTFT rises with the rate."""
    from llmsweep.estimate import add_estimates, load
    from llmsweep.grid import Axes, expand

    open_loop = {"batch": "", "metric": "ttft_ms", "value": "100", "unit": "ms"}
    rows = [{**GOOD, **open_loop, "id": f"r{rate}", "request_rate": str(rate)} for rate in (1, 8)]
    measured = cal.read_file(write_csv(tmp_path / "m.csv", rows, [*FIELDS, "request_rate"]), catalog).measurements
    assert [m.request_rate for m in measured] == [1.0, 8.0]
    got = cal.compare(measured, "default", catalog)["estimated"].to_list()
    # the same figures straight from the estimator: the configuration at its largest batch, then open loop
    axes = Axes(
        gpu=["h100-sxm"],
        engine=["generic"],  # the file names no framework
        model=["meta-llama/Llama-3.1-8B"],
        precision=["bf16"],
        input_tokens=[128],
        output_tokens=[128],
        batch=["max"],
    )
    base = add_estimates(expand(catalog, axes, catalog.profile("default")))
    want = [load.open_loop(base, pl.lit(rate)).select("ttft_s").collect().item() for rate in (1.0, 8.0)]
    assert got == pytest.approx([w * 1000 for w in want]) and want[0] < want[1]  # compared in ms, as measured


def test_vllm_reads_request_rate_and_max_concurrency(tmp_path):
    read = cal.read_file(_vllm(tmp_path, request_rate=4.0, max_concurrency=8), defaults={"gpu": "h100-sxm"})
    assert {(m.batch, m.request_rate) for m in read.measurements} == {(8, 4.0)}
    read = cal.read_file(_vllm(tmp_path, max_concurrency=None), defaults={"gpu": "h100-sxm"})
    assert {(m.batch, m.request_rate) for m in read.measurements} == {("max", math.inf)}


VLLM_ROW_CASES = [
    ("no-input-tokens", {"total_input_tokens": ...}, "total_input_tokens is empty"),
    ("text-output-tokens", {"total_output_tokens": "many"}, "total_output_tokens 'many' is not a number"),
    ("no-completed", {"completed": 0, "num_prompts": ...}, "completed is 0 or missing"),
    ("completed-text", {"completed": "all"}, "completed 'all' is not a number"),
    ("neg-concurrency", {"max_concurrency": -3}, "max_concurrency '-3' must be between 1 and 10,000,000"),
    ("model-list", {"model_id": ["a"]}, "model_id ['a'] is not a single value"),
    ("rate-nan", {"request_rate": float("nan")}, "request_rate 'nan' must be a positive number"),
]


@pytest.mark.parametrize(("case", "change", "reason"), VLLM_ROW_CASES, ids=[c[0] for c in VLLM_ROW_CASES])
def test_vllm_run_problems_are_named_on_every_row(tmp_path, case, change, reason):
    path = _vllm(tmp_path, **change)
    read = cal.read_file(path, defaults={"gpu": "h100-sxm"})
    assert read.measurements == []
    assert [s["id"] for s in read.skipped] == [
        f"run.json:{m}" for m in ("ttft_ms", "tpot_ms", "output_throughput_tok_s")
    ]
    assert all(s["reason"].startswith(reason) for s in read.skipped), read.skipped
    out = tmp_path / "out"
    r = invoke(path, "--gpu", "h100-sxm", "-o", out)
    assert r.exit_code == 1 and reason in r.output and not out.exists()


@pytest.mark.parametrize(("value", "shown"), [(float("nan"), "nan"), (1e400, "inf"), ("fast", "fast"), (-2, "-2")])
def test_vllm_bad_metric_value_rejects_that_row_only(tmp_path, value, shown):
    r = invoke(_vllm(tmp_path, mean_ttft_ms=value), "--gpu", "h100-sxm", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "2 rows compared, 1 not mapped" in r.output
    assert unmapped_reasons(tmp_path / "out")["run.json:ttft_ms"].startswith(f"value '{shown}' ")
    assert_finite_comparison(tmp_path / "out")


# -- llama-bench JSON ----------------------------------------------------------------------------------------
def test_llama_bench_bad_records(tmp_path):
    good = {"gpu_info": "NVIDIA GeForce RTX 4090", "model_type": "llama 8B Q4_K - Medium", "n_prompt": 0}
    records = [
        {**good, "n_gen": 128, "avg_ts": 130.5},
        "not a record",
        {**good, "n_gen": "many", "avg_ts": 1.0},
        {**good, "n_gen": 128, "avg_ts": None},
        {**good, "n_gen": -128, "avg_ts": 1.0},
    ]
    path = tmp_path / "lb.json"
    path.write_text(json.dumps(records))
    r = invoke(path, "--model", "meta-llama/Meta-Llama-3-8B", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert unmapped_reasons(tmp_path / "out") == {
        "lb-2": "record is not a JSON object",
        "lb-3": "n_gen 'many' is not a number",
        "lb-4": "value is empty",
        "lb-5": "n_gen '-128' must be between 0 and 100,000,000",
    }


# -- output files --------------------------------------------------------------------------------------------
def test_outputs_have_runs_permissions_and_stale_fit_files_go(tmp_path):
    out = tmp_path / "out"
    measured = write_csv(tmp_path / "m.csv", [GOOD])
    assert invoke(measured, "-o", out).exit_code == 0
    (out / "profile.yaml").write_text("stale")  # as an earlier --fit left them in llmsweep's folder
    (out / "out_of_sample.csv").write_text("stale")
    from llmsweep.outfolder import seal

    seal(out, "calibrate")  # listed in its manifest, as a --fit run lists them
    old = os.umask(0o027)
    try:
        r = invoke(measured, "-o", out)
    finally:
        os.umask(old)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["comparison.csv", "manifest.json", "unmapped.csv"]
    assert f"removed {out / 'profile.yaml'} (from an earlier --fit)" in r.output
    for name in ("comparison.csv", "unmapped.csv", "manifest.json"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o640


def test_a_folder_llmsweep_did_not_write_is_left_alone(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "profile.yaml").write_text("my own profile")
    r = invoke(write_csv(tmp_path / "m.csv", [GOOD]), "-o", out)
    assert r.exit_code == 1 and f"{out}: exists and was not written by llmsweep" in r.output
    assert sorted(p.name for p in out.iterdir()) == ["profile.yaml"]
    assert (out / "profile.yaml").read_text() == "my own profile"


def test_nothing_to_compare_is_an_empty_frame(catalog):
    frame = cal.compare([], "default", catalog)
    assert frame.height == 0 and frame.columns[:5] == ["id", "metric", "measured", "estimated", "ratio"]


def test_a_framework_naming_no_known_engine_is_said(tmp_path):
    header = [*FIELDS, "framework"]
    path = write_csv(
        tmp_path / "m.csv", [{**GOOD, "framework": "vlm 0.5"}, {**GOOD, "id": "v", "framework": "vllm"}], header
    )
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    frame = assert_finite_comparison(tmp_path / "out")
    notes = dict(zip(frame["id"], frame["assumptions"], strict=True))
    assert "framework 'vlm 0.5' names no engine llmsweep knows: the profile's shared values (generic)" in notes["ok"]
    assert "names no engine" not in (notes["v"] or "")
