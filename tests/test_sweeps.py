"""Sweep files into tables: row counts, outputs, determinism, atomic writes, the example sweeps."""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from llmsweep import export, pipeline
from llmsweep.cli import main
from llmsweep.columns import BY_NAME, EXPORTED
from llmsweep.spec import load

from .conftest import ROOT

EXAMPLES = sorted((ROOT / "sweeps").glob("*.yaml"))


def write_sweep(tmp_path: Path, data: dict, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def rows_of(path: Path, **kw) -> pl.DataFrame:
    return pipeline.compute(load(path, **kw)).collect()


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_sweeps_validate_and_run(path, tmp_path):
    r = CliRunner().invoke(main, ["run", str(path), "-o", str(tmp_path), "--format", "csv,parquet", "-q"])
    assert r.exit_code == 0, r.output
    sweep = load(path)
    frame = pl.read_parquet(tmp_path / sweep.spec.name / "estimates.parquet")
    assert frame.height > 0 and frame["fits"].any()
    assert frame.columns == list(EXPORTED)


def test_quickstart_sweep_is_small_and_has_the_expected_rows():
    # 2 gpus x 2 models x 3 precisions x 3 batches x 3 tp = 108, minus the 8B at tp 2 and 4
    # (2 x 3 x 3 x 2 = 36) = 72
    frame = rows_of(ROOT / "sweeps" / "example.yaml")
    assert frame.height == 72
    assert set(frame["tp"].unique()) == {1, 2, 4}
    assert frame.filter(pl.col("model") == "meta-llama/Llama-3.1-8B")["tp"].unique().to_list() == [1]


axis_values = {
    "gpu": ["h100-sxm", "l40s", "rtx-4090"],
    "model": ["meta-llama/Llama-3.1-8B", "mistralai/Mixtral-8x7B-v0.1", "Qwen/Qwen2.5-7B"],
    "precision": ["bf16", "fp8", "int4"],
    "input_tokens": [128, 1024, 4096],
    "output_tokens": [64, 256],
    "batch": [1, 8, "max"],
    "tp": [1, 2, 4],
}


@settings(max_examples=20, deadline=None)
@given(
    st.fixed_dictionaries({k: st.lists(st.sampled_from(v), min_size=1, unique=True) for k, v in axis_values.items()}),
    st.lists(
        st.dictionaries(st.sampled_from(sorted(axis_values)), st.integers(0, 9), min_size=1, max_size=3), max_size=3
    ),
)
def test_row_count_is_product_minus_exclusions(tmp_path_factory, axes, rule_picks):
    rules = [{k: axis_values[k][i % len(axis_values[k])] for k, i in pick.items()} for pick in rule_picks]
    path = write_sweep(tmp_path_factory.mktemp("s"), {"name": "p", "grid": axes, "exclude": rules})
    expected = sum(
        1
        for combo in itertools.product(*axes.values())
        if not any(all(dict(zip(axes, combo, strict=True))[k] == v for k, v in rule.items()) for rule in rules)
    )
    if expected == 0:
        return
    assert rows_of(path).height == expected


def test_context_axis(tmp_path):
    path = write_sweep(
        tmp_path,
        {
            "name": "c",
            "grid": {
                "gpu": ["h100-sxm"],
                "model": ["llama-3.1-8b"],
                "context": [2048, 8192],
                "output_tokens": [256, 512],
            },
        },
    )
    frame = rows_of(path)
    assert sorted(zip(frame["input_tokens"], frame["output_tokens"], strict=True)) == [
        (1536, 512),
        (1792, 256),
        (7680, 512),
        (7936, 256),
    ]
    assert set(frame["context_tokens"]) == {2048, 8192}


def test_rules_that_all_name_a_batch_leave_the_options_whole(tmp_path):
    """The plan's options come before any batch, so rules naming one do not apply to them; when every rule
    named a batch, the options fell back to all the rules and filtered a frame with no batch column (a
    polars traceback from `run`)."""
    data = {
        "name": "b",
        "grid": {"gpu": ["h100-sxm"], "model": ["llama-3.1-8b"], "batch": [1, 8]},
        "exclude": [{"batch": 1}],
    }
    pipeline.run(write_sweep(tmp_path, data), tmp_path / "out", formats=["csv"])
    estimates = pl.read_csv(tmp_path / "out" / "b" / "estimates.csv")
    assert estimates["batch"].to_list() == [8]
    assert pl.read_csv(tmp_path / "out" / "b" / "options.csv").height == 1
    run = CliRunner().invoke(main, ["run", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "again")])
    assert run.exit_code == 0 and run.stderr.endswith("\n1 configuration\n"), run.output  # one: not "1 configurations"


def test_infeasible_combinations_stay_as_rows(tmp_path):
    path = write_sweep(tmp_path, {"name": "i", "grid": {"gpu": ["l4"], "model": ["llama-3.1-70b"], "tp": [1, 3]}})
    frame = rows_of(path)
    assert frame.height == 2 and not frame["fits"].any()
    assert set(frame["reason"]) == {
        "does not fit: memory_per_gpu_bytes exceeds usable_memory_bytes",
        "tp does not divide the model's attention heads",
    }


def test_inline_and_file_models_and_gpus(tmp_path, catalog):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text(json.dumps(catalog.model("meta-llama/Llama-3.1-8B").config))
    path = write_sweep(
        tmp_path,
        {
            "name": "custom",
            "grid": {"gpu": ["my-gpu", "h100-sxm"], "model": ["from-file", "tiny"]},
            "gpus": {
                "my-gpu": {"memory_gb": 96, "memory_bandwidth_gbps": 4000, "dense_tflops": {"bf16": 900}},
                "h100-sxm": {"memory_bandwidth_gbps": 4000},
            },
            "models": {
                "from-file": {"config": "cfg/config.json", "license": "Llama 3.1 Community License"},
                "tiny": {
                    "hidden_size": 512,
                    "num_hidden_layers": 4,
                    "num_attention_heads": 8,
                    "vocab_size": 1000,
                    "intermediate_size": 1024,
                },
            },
        },
    )
    frame = rows_of(path)
    by = {(r["gpu"], r["model"]): r for r in frame.iter_rows(named=True)}
    assert by[("my-gpu", "from-file")]["params_total"] == 8_030_261_248
    assert by[("my-gpu", "tiny")]["gpu_memory_bytes"] == 96 * 2**30
    # the override changes only what it names: bandwidth 4000 GB/s, the H100's FLOP/s kept
    h100 = by[("h100-sxm", "tiny")]
    assert (h100["memory_bandwidth_bytes_per_s"], h100["peak_flops_per_s"]) == (4000e9, 989e12)


def test_outputs_are_complete_and_documented(tmp_path):
    r = CliRunner().invoke(
        main, ["run", str(ROOT / "sweeps" / "example.yaml"), "-o", str(tmp_path), "-q", "--format", "csv,parquet,xlsx"]
    )
    assert r.exit_code == 0, r.output
    folder = tmp_path / "example"
    assert r.stdout.splitlines() == [
        str(folder / f)
        for f in (
            "estimates.csv",
            "plan.csv",
            "options.csv",
            "estimates.parquet",
            "estimates.xlsx",
            "plan.parquet",
            "manifest.json",
        )
    ]
    with open(folder / "estimates.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == list(EXPORTED)  # header only: no units row mixed into the data
    assert len(rows) == 73
    fits = rows[0].index("fits")
    assert {row[fits] for row in rows[1:]} <= {"true", "false"}
    for value in rows[1][rows[0].index("weight_bytes")], rows[1][rows[0].index("tpot_s")]:
        float(value)  # plain numbers
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["rows"] == 72 and manifest["llmsweep_version"]
    text = (ROOT / "sweeps" / "example.yaml").read_text()
    assert manifest["sweep"]["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert manifest["sweep"]["content"] == text
    assert manifest["profile"]["name"] == "default"
    assert manifest["catalog"]["gpus"]["h100-sxm"]["sources"]
    assert manifest["catalog"]["models"]["meta-llama/Llama-3.1-8B"]["license"] == "Llama 3.1 Community License"


def test_xlsx_for_finance(tmp_path):
    import openpyxl

    pipeline.run(ROOT / "sweeps" / "example.yaml", tmp_path, formats=["xlsx"])
    book = openpyxl.load_workbook(tmp_path / "example" / "estimates.xlsx")
    assert book.sheetnames == ["About", "options", "plan", "estimates"]  # what the run assumed, then the answer
    options = book["options"]
    header = [c.value for c in options[1]]
    units = dict(zip(header, [c.value for c in options[2]], strict=True))
    assert (
        units["Capex (USD)"] == "USD"
        and units["TTFT (ms)"] == "ms"
        and units["USD per M output tokens"] == "USD/M tokens"
    )
    fmt = {h: options.cell(row=3, column=j + 1).number_format for j, h in enumerate(header)}
    # currency with cents, thousands separators, no scientific notation
    assert fmt["Cost (USD per month)"] == "$#,##0.00" and fmt["USD per M output tokens"] == "$#,##0.0000"
    assert fmt["TTFT (ms)"] == "#,##0" and fmt["GPUs"] == "#,##0" and not any("E+" in f for f in fmt.values())
    ws = book["estimates"]
    assert ws.freeze_panes == "A3"
    header = [c.value for c in ws[1]]
    units = [c.value for c in ws[2]]
    assert header == list(EXPORTED)
    assert units[header.index("weight_bytes")] == "bytes" and units[header.index("tpot_s")] == "s"
    assert ws.max_row == 2 + 72
    cell = ws.cell(row=3, column=header.index("weight_bytes") + 1)
    assert isinstance(cell.value, float | int) and cell.number_format == "#,##0"
    assert ws.cell(row=3, column=header.index("fits") + 1).value in (True, False)


def test_same_input_same_bytes(tmp_path):
    digests = []
    for out in ("a", "b"):
        pipeline.run(ROOT / "sweeps" / "example.yaml", tmp_path / out, formats=["csv", "parquet", "xlsx"])
        folder = tmp_path / out / "example"
        digests.append(
            {
                f: hashlib.sha256((folder / f).read_bytes()).hexdigest()
                for f in ("estimates.csv", "plan.csv", "estimates.parquet", "estimates.xlsx", "manifest.json")
            }
        )
    assert digests[0] == digests[1]


def test_failed_run_keeps_previous_outputs(tmp_path, monkeypatch):
    pipeline.run(ROOT / "sweeps" / "example.yaml", tmp_path, formats=["csv"])
    before = (tmp_path / "example" / "estimates.csv").read_bytes()

    def broken(frame, path):
        path.write_text("half")
        raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-write

    monkeypatch.setattr(pipeline, "write_csv", broken)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run(ROOT / "sweeps" / "example.yaml", tmp_path, formats=["csv"])
    assert (tmp_path / "example" / "estimates.csv").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example"]  # no partial folder left


def test_too_many_rows_for_xlsx(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "XLSX_MAX_ROWS", 10)
    monkeypatch.setattr(pipeline, "XLSX_MAX_ROWS", 10)
    result = pipeline.run(ROOT / "sweeps" / "example.yaml", tmp_path, formats=None)
    assert (
        "estimates.xlsx not written: estimates has 72 rows, plan has 20 rows, more than the 10-row limit of a sheet"
        in (result.notes)
    )  # the answer itself (plan, options) is too long for a sheet: no workbook
    r = CliRunner().invoke(
        main, ["run", str(ROOT / "sweeps" / "example.yaml"), "-o", str(tmp_path / "x"), "--format", "xlsx"]
    )
    assert r.exit_code == 1 and "72 rows is more than an XLSX sheet should hold" in r.output
    assert not (tmp_path / "x" / "example").exists()


def test_exclusions_that_leave_nothing(tmp_path):
    path = write_sweep(
        tmp_path, {"name": "e", "grid": {"gpu": ["l4"], "model": ["llama-3.1-8b"]}, "exclude": [{"gpu": "l4"}]}
    )
    r = CliRunner().invoke(main, ["run", str(path), "-o", str(tmp_path / "out")])
    assert r.exit_code == 1 and "the exclusion rules leave no configuration to estimate" in r.output
    assert not (tmp_path / "out" / "e").exists()


def test_validate_and_schema(tmp_path):
    r = CliRunner().invoke(main, ["validate", str(ROOT / "sweeps" / "example.yaml")])
    # the count after exclusions, as `run` reports it: 2 GPUs x (8B at tp 1 + 70B at tp 1, 2, 4) x 3 precisions
    # x 3 batches = 72 of the 108 the axes make
    assert r.exit_code == 0 and r.output.strip().endswith("\nOK: 72 configurations (108 before exclusions)")
    assert "'meta-llama/Llama-3.1-8B-Instruct' read as meta-llama/Llama-3.1-8B" in r.output  # the -Instruct said
    run = CliRunner().invoke(main, ["run", str(ROOT / "sweeps" / "example.yaml"), "-o", str(tmp_path)])
    assert run.exit_code == 0 and "72 configurations" in run.stderr
    r = CliRunner().invoke(main, ["schema"])
    schema = json.loads(r.stdout)
    assert set(schema["required"]) == {"name", "grid"}
    assert "gpu" in schema["$defs"]["GridSpec"]["properties"]
    assert schema["$defs"]["GridSpec"]["additionalProperties"] is False


def test_every_sweep_key_is_documented():
    readme = (ROOT / "README.md").read_text()
    from llmsweep.spec import GridSpec, SweepSpec

    for key in [*SweepSpec.model_fields, *GridSpec.model_fields]:
        assert f"`{key}`" in readme, key


def test_columns_in_units_not_labels():
    for name in EXPORTED:
        assert BY_NAME[name].description


def test_run_help_lists_every_file_it_writes(tmp_path):
    result = pipeline.run(ROOT / "sweeps" / "procurement.yaml", tmp_path)
    written = {p.name if p.parent.name != "charts" else "charts/*.svg" for p in result.files}
    text = " ".join(CliRunner().invoke(main, ["run", "--help"]).output.split())
    for name in written:
        shown = {"estimates.parquet": ".parquet", "estimates.xlsx": ".xlsx"}.get(name, name)
        assert shown in text, name


def test_progress_bar_and_eta():
    import io

    from llmsweep.progress import ProgressBar, bar_line, eta_text

    # 30 s for the first 40 %: the other 60 % take 30 x 0.6 / 0.4 = 45 s
    assert eta_text(30.0, 0.4) == "ETA 45 s" and eta_text(120.0, 0.4) == "ETA 3 min 0 s"
    assert eta_text(5.0, 0.0) == "ETA --"
    assert bar_line("ranking", 0.5, 10.0, width=10) == "[#####.....]  50% ranking  ETA 10 s"
    times = iter([0.0, 0.0, 6.0])
    out = io.StringIO()
    bar = ProgressBar(out, clock=lambda: next(times))
    bar("estimating", 0.0)
    bar("ranking", 0.75)  # 6 s for 75 %: 2 s to go
    bar.close()
    frames = out.getvalue().split("\r")
    assert frames[1].startswith("[") and "ETA --" in frames[1]
    assert frames[2].rstrip() == "[" + "#" * 18 + "." * 6 + "]  75% ranking  ETA 2 s"
    assert "\n" not in out.getvalue()  # one line, redrawn


def test_progress_only_on_a_terminal(monkeypatch):
    from llmsweep import cli

    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: True, raising=False)
    assert cli._progress(quiet=False) is not None
    assert cli._progress(quiet=True) is None
    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: False, raising=False)
    assert cli._progress(quiet=False) is None


def test_batch_max_in_any_case(tmp_path):
    from llmsweep.spec import load

    upper = write_sweep(
        tmp_path, {"name": "u", "grid": {"gpu": ["l4"], "model": ["llama-3.1-8b"], "batch": [1, "MAX"]}}
    )
    assert list(load(upper).axes.batch) == [1, "max"]  # as the names are: case aside


# -- serving modes ---------------------------------------------------------------------------------------------------
def test_frontier_moe_sweep_rows():
    # layouts after the exclusions: tp 8 x ep 8, dp_attention 8 x ep 8 and dp_attention 16 x ep 16 (3 of the
    # 2 x 3 x 2 = 12 the axes make); per GPU 3 layouts x 4 batches x 2 speculative = 24 aggregated rows and,
    # as decode workers with the one prefill layout, 24 disaggregated rows at 1P1D (the sweep gives no worker
    # counts: the plan searches them). 3 GPUs x 48 = 144; before exclusions 3 x 12 x 4 x 2 x (1 + 1).
    sweep = load(ROOT / "sweeps" / "frontier-moe.yaml")
    assert sweep.size == 3 * 12 * 4 * 2 * 2 == 576
    frame = rows_of(ROOT / "sweeps" / "frontier-moe.yaml")
    assert frame.height == 144
    assert frame.group_by("mode").len().sort("mode").rows() == [("aggregated", 72), ("disaggregated", 72)]
    pools = frame.filter(pl.col("mode") == "disaggregated")
    assert set(pools.select("prefill_workers", "decode_workers").unique().rows()) == {(1, 1)}
    assert pools["gpus"].max() == 8 + 16  # a prefill worker of 8 and a decode worker of 16 GPUs
    # GB200 NVL72 keeps every replica (<= 72 GPUs) in one NVLink domain; H200 replicas span servers
    assert set(pools.filter(pl.col("gpu") == "gb200")["kv_link"]) == {"scale-up"}
    assert set(pools.filter(pl.col("gpu") == "h200-sxm")["kv_link"]) == {"scale-out"}
    mtp = frame.filter(pl.col("speculative") == "mtp")
    alpha = sweep.profile.for_family("hopper", "vllm").mtp_acceptance
    assert set(mtp["draft_tokens"]) == {1} and mtp["tokens_per_step"].to_list() == pytest.approx([1 + alpha] * 72)
    assert frame.filter(pl.col("fits") & pl.col("meets_slo")).height > 0
    # the plan searched the prefill:decode ratio: its disaggregated options are not all 1P1D
    from llmsweep import pipeline

    options = pipeline.compute_plan(sweep).options
    searched = options.filter(pl.col("mode") == "disaggregated").select("prefill_workers", "decode_workers")
    assert searched.unique().height > 1 and (options["gpus"] <= 72).all()


def test_serving_axes_from_the_sweep_file(tmp_path):
    path = write_sweep(
        tmp_path,
        {
            "name": "modes",
            "grid": {
                "gpu": ["h200-sxm"],
                "model": ["deepseek-r1"],
                "precision": ["fp8"],
                "tp": [8],
                "ep": [8],
                "mode": ["aggregated", "disaggregated"],
                "prefill": {"workers": [1, 2], "tp": [8]},
                "decode": {"workers": [2]},
                # E = 1 + 0.8 + 0.8 x 0.5 = 2.2; the i.i.d. alpha of the same E: 1 + a + a^2 = 2.2, a = 0.70416
                "speculative": ["none", {"method": "eagle", "acceptance_rates": [0.8, 0.5]}],
            },
            "exclude": [{"mode": "disaggregated", "speculative": "eagle"}],
            "workload": {"requests_per_s": 2, "prefix_hit_rate": 0.25, "prefix_shared": True},
        },
    )
    sweep = load(path)
    assert (sweep.axes.mode, sweep.axes.prefill_workers, sweep.axes.decode_workers) == (
        ["aggregated", "disaggregated"],
        [1, 2],
        [2],
    )
    assert sweep.axes.prefill_tp == [8] and sweep.axes.prefill_ep is None  # None: the grid's ep
    eagle = sweep.axes.speculative[1]
    assert (eagle.method, eagle.draft_tokens, eagle.tokens_per_step) == ("eagle", 2, pytest.approx(2.2))
    assert eagle.acceptance == pytest.approx((-1 + 5.8**0.5) / 2)
    assert (sweep.axes.prefix_hit_rate, sweep.axes.prefix_shared) == ([0.25], True)  # the workload's: the default
    # 2 aggregated rows (none, eagle) + 2 worker pairs x none (eagle is excluded when disaggregated)
    frame = rows_of(path)
    assert frame.height == 4 and sweep.size == 2 * (1 + 2)
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.output.strip() == "OK: 4 configurations (6 before exclusions)"
    rows = {(r["mode"], r["prefill_workers"], r["speculative"]): r for r in frame.iter_rows(named=True)}
    assert rows[("aggregated", None, "eagle")]["tokens_per_step"] == pytest.approx(2.2)
    assert rows[("disaggregated", 2, "none")]["decode_workers"] == 2
    assert {r["prefill_new_tokens"] for r in rows.values()} == {1024 * 0.75}
    assert all(r["prefix_shared"] for r in rows.values())


def test_the_schema_lists_the_estimators_modes_and_methods():
    import json

    from llmsweep.estimate import disaggregated, speculative
    from llmsweep.spec import json_schema

    text = json.dumps(json_schema())
    assert all(f'"{name}"' in text for name in (*disaggregated.MODES, *speculative.METHODS))


def test_the_readme_serving_modes_example_is_a_valid_grid(tmp_path):
    readme = (ROOT / "README.md").read_text()
    block = readme.split("### Serving modes")[1].split("```yaml\n")[1].split("```")[0]
    path = write_sweep(tmp_path, {"name": "readme", **yaml.safe_load(block)})
    # 2 GPUs x 4 speculative x 2 hit rates = 16 layouts x lengths, each aggregated once and disaggregated 2 x 3
    # times (minus the rule's 2P1D): 16 x (1 + 6) = 112, 16 x (1 + 5) = 96
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0 and r.output.strip() == "OK: 96 configurations (112 before exclusions)", r.output


def test_the_schema_has_the_serving_modes():
    from llmsweep.spec import json_schema

    schema = json_schema()["$defs"]
    grid = schema["GridSpec"]["properties"]
    assert grid["mode"]["items"]["enum"] == ["aggregated", "disaggregated"]
    assert grid["mode"]["default"] == ["aggregated"]
    assert grid["speculative"]["items"]["anyOf"][0]["enum"] == ["none", "mtp", "eagle"]
    assert schema["SpeculationSpec"]["properties"]["draft_tokens"]["anyOf"][0]["maximum"] == 16
    assert schema["SpeculationSpec"]["properties"]["acceptance"]["anyOf"][0]["exclusiveMinimum"] == 0
    assert set(schema["PrefillSpec"]["properties"]) == {"workers", "tp", "pp", "ep", "dp_attention"}
    assert schema["WorkloadSpec"]["properties"]["prefix_hit_rate"]["anyOf"][0]["exclusiveMaximum"] == 1


def test_validate_counts_rows_not_the_axes_product(tmp_path):
    # fp4 is nvfp4 on b200 and mxfp4 on mi355x: 2 GPUs x 3 spellings = 6 combinations, 4 formats (rows);
    # no exclusion rule, so no "before exclusions" (it printed "4 configurations (6 before exclusions)")
    path = tmp_path / "dup.yaml"
    path.write_text(
        "name: dup\ngrid: {gpu: [b200, mi355x], model: [deepseek-r1], precision: [fp4, nvfp4, mxfp4], tp: [8]}\n"
    )
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0 and r.stdout.strip() == "OK: 4 configurations", r.output
