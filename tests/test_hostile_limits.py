"""Hostile corpus, round 3, classes 6 to 8: limits that count everything, wrong answers on valid
input, and messages that blame the right thing. (Sweep-file cases of these classes are data:
tests/hostile/limits and tests/hostile/messages, run by test_hostile_inputs.py.)
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest

from llmsweep import pipeline

from .hostile_world import SWEEP, World, assert_ran, assert_refused, first_run, make_world

HEADER = "id,source,gpu,tp,pp,model,weight_precision,kv_precision,batch,input_len,output_len,metric,value,unit"
ROW = "{id},{source},H100 SXM,1,1,meta-llama/Llama-3.1-8B,bf16,,1,128,128,decode_tok_s_per_seq,150,tok/s"


@pytest.fixture
def world(tmp_path) -> World:
    return make_world(tmp_path)


def sweep(world: World, text: str) -> Path:
    path = world.root / "s.yaml"
    path.write_text(text)
    return path


# -- 6: limits that count what is really built -----------------------------------------------------------------
def test_many_misspelled_names_are_listed_in_part_and_fast(world):
    names = ", ".join(f"h{i}00-sxmx" for i in range(20_000))
    path = sweep(world, f"name: w\ngrid: {{gpu: [{names}], model: [llama-3.1-8b]}}\n")
    started = time.monotonic()
    r = assert_refused(world, ["validate", path], "grid.gpu[0]: unknown gpu 'h000-sxmx'; did you mean")
    assert time.monotonic() - started < 15  # 99,000 names took 70 s: a did-you-mean for the first 100 only
    assert len(r.lines) == 52 and r.lines[-1] == "  ... and 19,950 more problems (the first 50 shown)"
    assert "grid.gpu[1]:" in r.lines[2]  # in file order


def test_raising_max_rows_admits_the_offers_it_counts(world):
    offers = ", ".join(f"{{rent: {1 + i / 100}, term: t{i}}}" for i in range(20))
    ins = ", ".join(str(100 + i) for i in range(100))
    path = sweep(world, f"name: w\ngrid: {{gpu: [h100-sxm], model: [llama-3.1-8b], input_tokens: [{ins}]}}\n")
    path.write_text(path.read_text() + f"costs:\n  h100-sxm: [{offers}]\n")
    assert_refused(world, ["validate", path, "--max-rows", "5000"], "the plan would hold 2,000 priced options")
    assert_ran(world, ["validate", path, "--max-rows", "10000"], ())


def test_fit_cross_validates_in_bounded_folds(world, monkeypatch):
    """A fit per source took 8 s each: many sources are folded into MAX_FOLDS groups."""
    from llmsweep.calibrate import run as calibrate_run
    from llmsweep.errors import LlmsweepError

    seen = {}

    def fake(measurements, start, catalog, group):
        seen["folds"] = {group(m) for m in measurements}
        raise LlmsweepError("stopped before fitting")

    monkeypatch.setattr(calibrate_run, "calibrate", fake)
    rows = [ROW.format(id=f"r{i}", source=f"https://example.org/bench-{i}") for i in range(25)]
    path = world.root / "m.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    assert_refused(world, ["calibrate", path, "--fit", "-o", world.out / "cal"], "stopped before fitting")
    assert len(seen["folds"]) == calibrate_run.MAX_FOLDS


# -- 7: wrong answers on valid input ---------------------------------------------------------------------------
def test_a_workload_too_large_to_size_is_never_ranked(world):
    text = (
        "name: w\ngrid: {gpu: [h100-sxm], model: [llama-3.1-8b], input_tokens: [130000], batch: [1, 8]}\n"
        "workload: {requests_per_s: 10000000, peak_factor: 1000, headroom: 10}\ncosts: {h100-sxm: {rent: 2.5}}\n"
    )
    r = assert_ran(world, ["run", sweep(world, text), "-o", world.out, "--format", "csv"], ("out/w",))
    assert "no fleet can be sized" in r.output
    with open(world.results / "plan.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["meets_slo"], row["rank"], row["replicas"], row["fleet_usd_per_month"]) == ("false", "", "", "")
    assert row["slo_miss"] == "no fleet: the workload needs more than 10^12 replicas of this layout"
    with open(world.results / "estimates.csv", newline="") as f:
        assert {(r["meets_slo"], r["fleet_usd_per_month"]) for r in csv.DictReader(f)} == {("false", "")}
    with open(world.results / "options.csv", newline="") as f:
        (option,) = list(csv.DictReader(f))
    assert (option["GPUs"], option["Meets targets"]) == ("", "no")  # no fleet, not one replica


def test_report_accepts_a_runs_own_output(world):
    """slo.percentile, top_n: 5.0 and input_tokens: 1024.0 are valid sweeps: report reads them back."""
    text = (
        "name: w\ngrid: {gpu: [h100-sxm], model: [llama-3.1-8b], batch: [1, 8]}\n"
        "workload: {requests_per_s: 2, input_tokens: 1024.0, output_tokens: 256}\n"
        "slo: {ttft_s: 1, tpot_s: 0.05, percentile: p90}\nreport: {top_n: 5.0}\ncosts: {h100-sxm: {rent: 2.0}}\n"
    )
    args = ["run", sweep(world, text), "-o", world.out, "--format", "parquet", "-q"]
    assert world.invoke(*args).exit_code == 0
    assert_ran(world, ["report", world.results / "estimates.parquet", "--format", "md"], ("out/w",))


@pytest.mark.parametrize("explicit", [False, True])
def test_xlsx_skipped_with_a_note_when_any_sheet_is_too_long(world, monkeypatch, explicit):
    """Configurations x offers: the plan sheet outgrows the limit long before the estimates do."""
    monkeypatch.setattr(pipeline, "XLSX_MAX_ROWS", 3)
    offers = ", ".join(f"{{rent: {1 + i}, term: t{i}}}" for i in range(6))
    text = (
        SWEEP.replace("costs: {h100-sxm: {rent: 2.0}}", f"costs:\n  h100-sxm: [{offers}]")
        + "report: {formats: [csv, xlsx]}\n"
    )
    args = ["run", sweep(world, text), "-o", world.out, "-q"] + (["--format", "csv,xlsx"] if explicit else [])
    if explicit:  # asked for by name: an error, as the README says
        monkeypatch.setattr("llmsweep.export.XLSX_MAX_ROWS", 3)
        assert_refused(world, args, "more than an XLSX sheet should hold")
    else:
        r = assert_ran(world, args, ("out/w",))
        assert "estimates.xlsx not written: plan has 6 rows" in r.output
        assert not (world.results / "estimates.xlsx").exists()


# -- 8: messages that blame the right thing --------------------------------------------------------------------
def test_a_bad_profile_option_is_not_blamed_on_the_sweep(world):
    r = assert_refused(world, ["run", world.root / "sweep.yaml", "-o", world.out, "--profile", "nope"], "--profile:")
    assert "unknown profile 'nope'" in r.output and "sweep.yaml" not in r.output


@pytest.mark.parametrize("folder", ["/dev/null", "FILE"])
def test_template_dir_must_be_a_folder(world, folder):
    folder = folder.replace("FILE", str(world.root / "sweep.yaml"))
    args = ["run", world.root / "sweep.yaml", "-o", world.out, "--template-dir", folder]
    assert_refused(world, args, "Invalid value for '--template-dir'", code=2)


def test_repeated_ids_and_absurd_rates_in_measurements(world):
    rows = [ROW.format(id="same", source="me"), ROW.format(id="same", source="me")]
    rate = HEADER + ",request_rate\n" + "\n".join(f"{r},{v}" for r, v in zip(rows, ["1e300", "4"], strict=True))
    path = world.root / "m.csv"
    path.write_text(rate + "\n")
    r = assert_ran(world, ["calibrate", path, "-o", world.out / "cal"], ("out/cal",))
    assert "note: id 'same' (2 rows) appears more than once" in r.output
    with open(world.out / "cal" / "unmapped.csv", newline="") as f:
        (skipped,) = list(csv.DictReader(f))
    assert skipped["reason"].startswith("request_rate '1e300' must be a finite number at least 1e-06 and at most")
    assert "1 rows compared, 1 not mapped" in r.output


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    return first_run(tmp_path_factory.mktemp("limits"), "parquet")


def test_report_refuses_a_calibration_manifest(tmp_path, saved):
    world = make_world(tmp_path, saved)
    manifest = world.results / "manifest.json"
    data = json.loads(manifest.read_text())
    data["command"] = "calibrate"
    manifest.write_text(json.dumps(data))
    assert_refused(world, ["report", world.results / "estimates.parquet"], "written by `llmsweep calibrate`")


CORPUS = ["misspelled names", "max-rows knob", "fit folds", "unsizable fleet", "report own output"]
CORPUS += ["xlsx note", "xlsx explicit", "bad --profile", "template /dev/null", "template file", "ids and rates"]
CORPUS += ["calibration manifest"]
