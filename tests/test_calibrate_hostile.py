"""Hostile measurement files, second pass: absurd measured values, repeated ids, rows cut short, and
files in the wrong encoding or with the wrong separator. Each bad row is listed in unmapped.csv
with what is wrong and its line; each bad file is one message naming the file; nothing tracebacks."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest

from llmsweep import calibrate as cal
from llmsweep.calibrate.measurement import METRICS, NOT_ESTIMATED, VALUE_RANGES
from llmsweep.limits import RANGES
from tests.test_calibrate_inputs import FIELDS, GOOD, HEADER, invoke, unmapped_reasons, write_csv

DATA = Path(__file__).parent / "data"


def unmapped_rows(folder: Path) -> list[tuple[str, str]]:
    """unmapped.csv as (id, reason) pairs in file order (ids may repeat)."""
    with open(folder / "unmapped.csv", newline="", encoding="utf-8") as f:
        return [(r["id"], r["reason"]) for r in csv.DictReader(f)]


# -- 1. a measured value must be physically plausible for its metric and unit -----------------------------------
TOK_S = "a finite number at least 0.001 and at most 1e+10 (tok/s)"
MS = "a finite number at least 0.001 and at most 1e+09 (ms)"
VALUE_CASES = [
    ("tiny-rate", {"value": "1e-300"}, f"value '1e-300' is not a plausible decode_tok_s_per_seq: it must be {TOK_S}"),
    (
        "huge-ttft",
        {"metric": "ttft_ms", "unit": "ms", "value": "1e300"},
        f"value '1e300' is not a plausible ttft_ms: it must be {MS}",
    ),
    (
        "tiny-tpot",
        {"metric": "tpot_ms", "unit": "ms", "value": "1e-7"},
        f"value '1e-7' is not a plausible tpot_ms: it must be {MS}",
    ),
    (
        "per-gpu",
        {"metric": "output_throughput_tok_s", "unit": "tok/s/gpu", "value": "5e9"},
        "value '5e9' is not a plausible output_throughput_tok_s: it must be a finite number at least 0.001 and at "
        "most 10,000,000 (tok/s/gpu)",
    ),
    (
        "weights",
        {"metric": "memory_gb", "unit": "GB", "value": "1e300"},
        "value '1e300' is not a plausible memory_gb: it must be a finite number at least 0.001 and at most "
        "1,000,000 (GB)",
    ),
    (
        "max-batch",
        {"metric": "max_batch", "unit": "", "value": "0.5"},
        "value '0.5' is not a plausible max_batch: it must be a finite number at least 1 and at most 100,000,000 "
        "(sequences)",
    ),
    (
        "not-estimated",  # a metric read only to be listed is still checked
        {"metric": "tpot_p99_ms", "unit": "ms", "value": "1e300"},
        f"value '1e300' is not a plausible tpot_p99_ms: it must be {MS}",
    ),
    (
        "limit",
        {"metric": "output_throughput_tok_s", "batch": "", "scenario": "server", "ttft_limit_ms": "1e300"},
        f"ttft_limit_ms '1e300' must be {MS}",
    ),
]


@pytest.mark.parametrize(("rid", "change", "reason"), VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_an_implausible_value_is_listed_not_compared(tmp_path, rid, change, reason):
    header = [*FIELDS, "scenario", "ttft_limit_ms"]
    path = write_csv(tmp_path / "m.csv", [GOOD, {**GOOD, "id": rid, **change}], header)
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "1 rows compared, 1 not mapped" in r.output
    assert unmapped_reasons(tmp_path / "out") == {rid: reason}


def test_an_implausible_value_from_a_benchmark_tool_is_listed(tmp_path):
    run = {
        "backend": "vllm",
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "max_concurrency": 16,
        "completed": 256,
        "total_input_tokens": 262144,
        "total_output_tokens": 65536,
        "output_throughput": 1584.2,
        "mean_ttft_ms": 1e300,
        "mean_tpot_ms": 9.8,
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    r = invoke(path, "--gpu", "h100-sxm", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert unmapped_reasons(tmp_path / "out") == {
        "run.json:ttft_ms": f"value '1e+300' is not a plausible ttft_ms: it must be {MS}"
    }


def test_every_unit_read_has_a_plausible_range():
    units = {unit for _, unit in (*METRICS, *NOT_ESTIMATED)}
    assert units == set(VALUE_RANGES)
    assert all(name in RANGES for name in VALUE_RANGES.values())


@pytest.mark.parametrize("name", ["measured-dev.csv", "measured-load-dev.csv", "measured-serving-dev.csv"])
def test_every_published_measurement_is_within_its_range(name):
    """The ranges are generous: no real measurement is refused (the smallest is 2.7 ms TPOT, the
    largest 462 s TTFT and 19,694 tok/s per GPU). tests/data holds byte-for-byte copies of
    shared/reference's files."""
    with open(DATA / name, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        r = RANGES[VALUE_RANGES[row["unit"]]]
        assert r.contains(float(row["value"])), (row["id"], row["value"], row["unit"])
        for key in ("ttft_limit_ms", "tpot_limit_ms"):
            assert not row.get(key) or RANGES[VALUE_RANGES["ms"]].contains(float(row[key])), row["id"]


# -- 2. a repeated id: the row that repeats a compared row's id is listed, not compared twice -------------------
def test_a_repeated_id_is_compared_once(tmp_path):
    header = [*FIELDS]
    rows = [
        {**GOOD, "id": "dup", "tp": "0"},  # line 2: not mapped, so line 3 is the first compared
        {**GOOD, "id": "dup"},  # line 3
        {**GOOD, "id": "dup", "value": "151"},  # line 4: repeats line 3
        {**GOOD, "id": "twin-a"},  # the same measurement under two ids (as in measured-load-dev.csv): both kept
        {**GOOD, "id": "twin-b"},
    ]
    path = write_csv(tmp_path / "m.csv", rows, header)
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert (
        "note: id 'dup' (3 rows) appears more than once: a row that repeats the id of a compared row is listed in "
        "unmapped.csv, not compared; give each row its own id"
    ) in r.output
    assert "3 rows compared, 2 not mapped" in r.output
    frame = pl.read_csv(tmp_path / "out" / "comparison.csv")
    assert frame["id"].to_list() == ["dup", "twin-a", "twin-b"]
    assert frame["measured"].to_list() == [150.0, 150.0, 150.0]  # line 3's value, not line 4's
    assert unmapped_rows(tmp_path / "out") == [
        ("dup", "tp '0' must be between 1 and 65,536"),
        ("dup", "line 4 repeats id 'dup' of line 3 (compared there); give each row its own id"),
    ]


def test_a_vllm_sweep_with_repeated_run_numbers_keeps_every_run(tmp_path):
    """`vllm bench sweep` numbers the runs of each combination from 0: two combinations in one
    summary.json both have run 0. The ids llmsweep makes for them must differ, or one run is lost."""
    runs = json.loads((DATA / "formats" / "vllm_sweep_summary.json").read_text())
    runs = [{**runs[0], "run_number": 0}, {**runs[1], "run_number": 0, "max_concurrency": 64}]
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(runs))
    read = cal.read_file(path, defaults={"gpu": "h100-sxm"})
    ids = [m.id for m in read.measurements]
    assert read.skipped == [] and read.notes == []
    assert len(ids) == 10 and len(set(ids)) == 10
    assert ids[0] == "summary.json[1]:ttft_ms" and ids[5] == "summary.json[2]:ttft_ms"


# -- 3. a row cut short is named as such, with its line -----------------------------------------------------------
def test_a_truncated_row_says_so(tmp_path):
    path = write_csv(tmp_path / "m.csv", [GOOD])
    cut = ",".join(list({**GOOD, "id": "cut"}.values())[:11])  # the file ends after output_len
    path.write_text(path.read_text() + "short\n" + cut)
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "1 rows compared, 2 not mapped" in r.output
    assert unmapped_reasons(tmp_path / "out") == {
        "short": "line 3 is truncated: it has 1 of the header's 14 fields (up to id); was the file cut off?",
        "cut": "line 4 is truncated: it has 11 of the header's 14 fields (up to output_len); was the file cut off?",
    }


def test_a_file_of_truncated_rows_is_one_message(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(HEADER + "\nok,me,H100 SXM,1,1,meta-llama/Llama-3.1-8B,bf16,,1,128,12")
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 1
    assert (
        f"{path}: no row could be mapped to a configuration (ok: line 2 is truncated: it has 11 of the header's 14 "
        "fields (up to output_len); was the file cut off?)"
    ) in r.output


def test_a_row_without_its_optional_last_columns_is_read_and_noted(tmp_path):
    """A hand-written file (or a spreadsheet that drops a row's blank trailing cells) may end a row
    before its optional columns: the row is compared with them blank, and the note says so."""
    path = tmp_path / "m.csv"
    full = ",".join([*GOOD.values(), "vllm", "a note"])
    short = ",".join({**GOOD, "id": "short"}.values())
    path.write_text(f"{HEADER},framework,notes\n{full}\n{short}\n{short.replace('short', 'shorter')}\n")
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "3 rows compared, 0 not mapped" in r.output
    assert (
        f"note: {path}: line 3 has 14 of the header's 16 fields (and 1 more row(s) have fewer fields than the "
        "header): the missing last column(s) are read as blank; if the file was cut off, complete the row"
    ) in r.output


# -- other hostile files ----------------------------------------------------------------------------------------
def test_a_header_of_many_columns(tmp_path):
    path = write_csv(tmp_path / "m.csv", [GOOD], [*FIELDS, *(f"c{i}" for i in range(20_000))])
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert f"note: {path}: ignored unknown column(s) c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 and 19,990 more" in r.output
    assert "1 rows compared, 0 not mapped" in r.output


def test_an_unnamed_column_is_named_by_its_position(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(HEADER + ",\n" + ",".join(GOOD.values()) + ",\n")  # Excel's trailing comma
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert f"note: {path}: ignored unknown column(s) (unnamed column 15)" in r.output


def test_two_byte_order_marks(tmp_path):
    path = write_csv(tmp_path / "m.csv", [GOOD])
    path.write_bytes(b"\xef\xbb\xbf\xef\xbb\xbf" + path.read_bytes())
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "1 rows compared, 0 not mapped" in r.output


def _text(rows: list[dict], sep: str = ",") -> str:
    return "\n".join(sep.join(r) for r in [FIELDS, *(list(row.values()) for row in rows)]) + "\n"


TWO_ROWS = _text([GOOD, GOOD]).encode()  # the bad byte follows these and an "r"
FILE_CASES = [
    (
        "utf16.csv",
        _text([GOOD]).encode("utf-16"),
        "{path}: not UTF-8 text but UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8 "
        "(Excel: 'CSV UTF-8')",
    ),
    (
        "bad-byte.csv",
        TWO_ROWS + b"r\xe9,me\n",
        f"{{path}}:4: not UTF-8 text (byte {len(TWO_ROWS) + 2} is not valid UTF-8); save it as UTF-8 "
        "(Excel: 'CSV UTF-8')",
    ),
    (
        "bad-byte-after-bom.csv",
        b"\xef\xbb\xbf" + _text([]).encode() + b"\xff\n",
        # counted in the file as it is, byte-order mark included
        f"{{path}}:2: not UTF-8 text (byte {3 + len(HEADER) + 2} is not valid UTF-8); save it as UTF-8 "
        "(Excel: 'CSV UTF-8')",
    ),
    (
        "semicolons.csv",
        _text([GOOD], ";").encode(),
        "{path}:1: the header is one column, 'id;source;gpu;tp;pp;model;weight_precision;kv_precision;batch;...': its "
        "fields are separated by semicolons; save the file with commas between fields (Excel: 'CSV UTF-8')",
    ),
    (
        "tabs.tsv",
        _text([GOOD], "\t").encode(),
        "{path}:1: the header is one column, 'id\\tsource\\tgpu\\ttp\\tpp\\tmodel\\tweight_precision\\tkv_precision"
        "\\tbatch\\t...': its fields are separated by tabs; save the file with commas between fields (Excel: "
        "'CSV UTF-8')",
    ),
]


@pytest.mark.parametrize(("name", "data", "message"), FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_a_file_in_the_wrong_form_is_one_message(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    r = invoke(path, "-o", tmp_path / "out")
    assert r.exit_code == 1, r.output
    assert r.output.strip() == "Error: " + message.format(path=path)
    assert not (tmp_path / "out").exists()
