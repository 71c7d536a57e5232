"""`llmsweep diff`: two runs of one sweep with one price changed list exactly the options whose cost
changed, old and new; every other input is compared key by key; bad folders are one-line errors."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from llmsweep import diff as diff_module
from llmsweep import pipeline
from llmsweep.cli import main
from llmsweep.diff import diff

SWEEP = {
    "name": "chat",
    "title": "Chat <b>assistant</b>",
    "grid": {
        "gpu": ["h100-sxm", "l40s"],
        "model": ["meta-llama/Llama-3.1-8B-Instruct"],
        "precision": ["bf16", "fp8"],
        "batch": [1, 16, "max"],
    },
    "workload": {"requests_per_s": 5},
    "slo": {"ttft_s": 1.0, "tpot_s": 0.05},
    "costs": {"h100-sxm": [{"rent": 2.9}, {"rent": 2.2, "term": "1y-reserved"}], "l40s": {"rent": 1.0}},
    "report": {"formats": ["parquet", "csv"]},
}


def run_sweep(tmp: Path, folder: str, sweep: dict) -> Path:
    path = tmp / f"{folder}.yaml"
    path.write_text(yaml.safe_dump(sweep))
    pipeline.run(path, tmp / folder)
    return tmp / folder / sweep["name"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("diff")
    changed = {**SWEEP, "costs": {**SWEEP["costs"], "h100-sxm": [{"rent": 3.1}, {"rent": 2.2, "term": "1y-reserved"}]}}
    return run_sweep(tmp, "old", SWEEP), run_sweep(tmp, "new", changed)


def options(folder: Path) -> dict[tuple, dict]:
    rows = pl.read_csv(folder / "options.csv").to_dicts()
    return {(r["Model"], r["GPU"], r["Offer"]): r for r in rows}


def test_one_price_changed_lists_exactly_the_options_whose_cost_changed(runs):
    old, new = runs
    a, b = options(old), options(new)
    assert a.keys() == b.keys()
    cost_changed = {k for k in a if a[k]["Cost (USD per month)"] != b[k]["Cost (USD per month)"]}
    assert cost_changed == {("meta-llama/Llama-3.1-8B", "h100-sxm", "rent")}  # the offer whose price moved
    result = diff(old, new)
    listed = {(o.key[0], o.key[3], o.key[4]) for o in result.options}
    assert listed == cost_changed
    (o,) = result.options
    assert o.status == "changed"
    # rent 2.9 -> 3.1 USD per GPU-hour, 24/7: the month's cost scales by 3.1 / 2.9
    assert o.new["tco_usd_per_month"] / o.old["tco_usd_per_month"] == pytest.approx(3.1 / 2.9)
    key = ("meta-llama/Llama-3.1-8B", "h100-sxm", "rent")
    assert o.old["tco_usd_per_month"] == pytest.approx(a[key]["Cost (USD per month)"], abs=0.01)
    assert o.new["tco_usd_per_month"] == pytest.approx(b[key]["Cost (USD per month)"], abs=0.01)
    assert not o.changed("rank") and not o.changed("ttft_s") and not o.changed("fleet_gpus")
    assert result.unchanged_options == len(a) - 1
    inputs = {(c.section, c.key): (c.old, c.new) for c in result.inputs}
    assert inputs[("prices", "h100-sxm rent.usd_per_gpu_hour")] == (2.9, 3.1)
    assert {s for s, _ in inputs} == {"llmsweep", "sweep", "prices"}  # no catalog or profile change
    assert ("sweep", "costs.h100-sxm") in inputs


def test_csv_has_old_new_and_change(runs):
    result = CliRunner().invoke(main, ["diff", str(runs[0]), str(runs[1]), "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    answer = [r for r in rows if r["section"] == "answer"]
    assert {r["field"] for r in answer} == {"tco_usd_per_month", "tco_usd"}
    assert {(r["gpu"], r["offer"]) for r in answer} == {("h100-sxm", "rent")}
    for r in answer:
        assert float(r["new"]) - float(r["old"]) == pytest.approx(float(r["change"]))
    price = next(r for r in rows if r["key"] == "h100-sxm rent.usd_per_gpu_hour")
    assert (price["section"], float(price["old"]), float(price["new"])) == ("prices", 2.9, 3.1)


def test_markdown_and_html(runs, tmp_path):
    result = CliRunner().invoke(main, ["diff", str(runs[0]), str(runs[1])])
    assert result.exit_code == 0
    md = result.stdout
    line = next(x for x in md.splitlines() if x.startswith("| meta-llama/Llama-3.1-8B | 1,024 in / 256 out | h100-sxm"))
    assert "| rent | changed |" in line and " → " in line and "+6.9 %" in line
    assert "| h100-sxm rent.usd\\_per\\_gpu\\_hour | 2.90 | 3.10 |" in md
    assert "## Inputs: catalog facts\n\nNo change." in md
    out = tmp_path / "changes.html"
    result = CliRunner().invoke(main, ["diff", str(runs[0]), str(runs[1]), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "Chat &lt;b&gt;assistant&lt;/b&gt;" in html and "<b>assistant</b>" not in html
    assert html.count('<tr data-gpu="h100-sxm" data-offer="rent">') == 1
    assert "<script" not in html


def test_grid_targets_and_traffic_changes_are_listed(runs, tmp_path, catalog):
    changed = {**SWEEP, "slo": {"ttft_s": 0.5, "tpot_s": 0.05}, "workload": {"requests_per_s": 50}}
    changed["grid"] = {**SWEEP["grid"], "gpu": ["h100-sxm"]}
    new = run_sweep(tmp_path, "other", changed)
    result = diff(runs[0], new)
    inputs = {(c.section, c.key): (c.old, c.new) for c in result.inputs}
    assert inputs[("sweep", "slo.ttft_s")] == (1.0, 0.5)
    assert inputs[("sweep", "workload.requests_per_s")] == (5, 50)
    assert inputs[("sweep", "grid.gpu")] == (["h100-sxm", "l40s"], ["h100-sxm"])
    assert inputs[("catalog", "gpus.l40s")] == (catalog.gpu("l40s").name, diff_module._ABSENT)  # once, not per field
    removed = {(o.key[3], o.key[4]) for o in result.options if o.status == "removed"}
    assert removed == {("l40s", "rent")}


def error_of(args: list[str]) -> str:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_bad_folders_are_one_line_errors(runs, tmp_path):
    old, _ = runs
    assert error_of(["diff", str(tmp_path / "nope"), str(old)]) == f"Error: {tmp_path / 'nope'}: no such folder"
    (tmp_path / "empty").mkdir()
    assert error_of(["diff", str(old), str(tmp_path / "empty")]).startswith(
        f"Error: {tmp_path / 'empty'}: not a run folder (no manifest.json written by `llmsweep run`)"
    )
    assert error_of(["diff", str(old), str(old)]) == (
        f"Error: {old}: is the same run as {old}; give two different run folders"
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json")
    assert "not a run folder" in error_of(["diff", str(old), str(broken)])


def test_a_run_of_an_older_version_is_compared(runs, tmp_path):
    """Last quarter's run may lack plan columns added since: read as empty, and said."""
    import shutil

    old = tmp_path / "older" / "chat"
    shutil.copytree(runs[0], old)
    plan = pl.read_parquet(old / "plan.parquet").drop("kv_cache_format", "max_running_requests")
    plan.write_parquet(old / "plan.parquet")
    result = diff(old, runs[1])
    assert {(o.key[3], o.key[4]) for o in result.options} == {("h100-sxm", "rent")}
    text = result.render("md")
    assert "has no kv_cache_format, max_running_requests in its plan.parquet" in text
    plan.drop("meets_slo").write_parquet(old / "plan.parquet")  # a column every run writes: refused
    assert "column meets_slo is missing" in error_of(["diff", str(old), str(runs[1])])


def test_an_added_gpu_is_one_line_per_section(runs, tmp_path):
    changed = {**SWEEP, "grid": {**SWEEP["grid"], "gpu": ["h100-sxm", "l40s", "a100-80gb-sxm"]}}
    changed["costs"] = {**SWEEP["costs"], "a100-80gb-sxm": {"rent": 1.8}}
    result = diff(runs[0], run_sweep(tmp_path, "more", changed))
    keys = [(c.section, c.key) for c in result.inputs if "a100" in c.key]
    assert keys == [
        ("sweep", "costs.a100-80gb-sxm.rent"),
        ("prices", "a100-80gb-sxm rent"),
        ("catalog", "gpus.a100-80gb-sxm"),
    ]
    added = {o.key[3] for o in result.options if o.status == "added"}
    assert added == {"a100-80gb-sxm"}


def test_diff_o_replaces_only_a_diff_it_wrote(runs, tmp_path):
    """-o rewrites its own earlier output in every format, and refuses everything else untouched:
    a user's file, a link, a FIFO, a folder, and any path inside either run."""
    old, new = (str(r) for r in runs)
    for fmt in ("md", "html", "csv"):
        out = tmp_path / f"changes.{fmt}"
        for _ in range(2):  # the second run replaces the first one's file
            result = CliRunner().invoke(main, ["diff", old, new, "--format", fmt, "-o", str(out)])
            assert result.exit_code == 0, result.output
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: mine\n")
    assert error_of(["diff", old, new, "-o", str(sweep)]) == (
        f"Error: {sweep}: exists and is not a diff llmsweep wrote; it is left untouched. "
        "Move it away, or choose another -o"
    )
    assert sweep.read_text() == "name: mine\n"
    link = tmp_path / "link.md"
    link.symlink_to(tmp_path / "changes.md")
    assert "is a symbolic link" in error_of(["diff", old, new, "-o", str(link)])
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "is not a regular file" in error_of(["diff", old, new, "-o", str(fifo)])
    assert "is not a regular file" in error_of(["diff", old, new, "-o", str(tmp_path)])
    manifest = runs[0] / "manifest.json"
    before = manifest.read_bytes()
    for target in (manifest, runs[1] / "changes.md"):
        assert error_of(["diff", old, new, "-o", str(target)]).endswith(
            "which this command reads; write the file elsewhere"
        )
    assert manifest.read_bytes() == before and not (runs[1] / "changes.md").exists()
