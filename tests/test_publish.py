"""`llmsweep publish`: an offline site over runs that opens in a browser, filters without a server,
links only to files it holds, and replaces the previous site whole or not at all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from llmsweep import pipeline
from llmsweep import publish as publish_module
from llmsweep.cli import main
from llmsweep.errors import LlmsweepError
from llmsweep.publish import publish

from .browser import chromium, dump_dom
from .conftest import ROOT

SWEEPS = {  # name: (title, GPUs)
    "alpha": ("Alpha: H100 only", ["h100-sxm"]),
    "beta": ("Beta: L40S only", ["l40s"]),
    "gamma": ("Gamma: H100 against L40S", ["h100-sxm", "l40s"]),
}


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """Three runs of small sweeps (the example grid, one model) in one out folder."""
    base = yaml.safe_load((ROOT / "sweeps" / "example.yaml").read_text())
    root = tmp_path_factory.mktemp("runs")
    for name, (title, gpus) in SWEEPS.items():
        sweep = {**base, "name": name, "title": title, "exclude": []}
        sweep["grid"] = {**base["grid"], "gpu": gpus, "model": ["meta-llama/Llama-3.1-8B-Instruct"], "tp": [1]}
        path = root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(sweep))
        formats = ["parquet", "csv", "html", "md"] if name == "gamma" else ["parquet", "csv", "html"]
        pipeline.run(path, root / "out", formats=formats)
    return root / "out"


@pytest.fixture(scope="module")
def site(out, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("www") / "site"
    publish([out], target)
    return target


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def rows_of(html: str) -> dict[str, bool]:
    """{run: shown} from the index's table rows (a hidden row carries the `hidden` attribute)."""
    return {m[1]: "hidden" not in m[0] for m in re.finditer(r'<tr data-run="([^"]+)"[^>]*>', html)}


def test_index_lists_every_run_with_its_facts(site, out):
    html = (site / "index.html").read_text()
    assert set(rows_of(html)) == set(SWEEPS)
    for name, (title, _) in SWEEPS.items():
        manifest = yaml.safe_load((out / name / "manifest.json").read_text())
        assert title in html
        assert f"{name}.yaml" in html and manifest["sweep"]["sha256"][:12] in html
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", html)
    assert "Llama-3.1-8B with no latency targets (1,024 tokens in, 256 out): 1 × l40s" in html
    assert not re.search(r"<script[^>]*\ssrc=|<link[^>]*stylesheet|https?://", html)  # nothing to fetch


def test_every_link_resolves(site):
    html = (site / "index.html").read_text()
    links = re.findall(r'href="([^"#]+)"', html)
    assert len(links) >= 3 * 3  # report, options.csv, manifest.json per run (+ report.md for gamma)
    for link in links:
        assert (site / link).is_file(), link
    for name in SWEEPS:
        report = (site / "runs" / name / "report.html").read_text()
        assert report.count('href="../../index.html"') == 1  # the one link back
        assert (site / "runs" / name / "../../index.html").resolve() == (site / "index.html").resolve()
    md = (site / "runs" / "gamma" / "report.md").read_text()
    for link in re.findall(r"\]\((charts/[^)]+)\)", md):
        assert (site / "runs" / "gamma" / link).is_file(), link


def test_reports_are_copied_as_they_are(site, out):
    for name in SWEEPS:
        copied = (site / "runs" / name / "report.html").read_bytes()
        original = (out / name / "report.html").read_bytes()
        assert copied.replace(publish_module.BACK_LINK.encode(), b"", 1) == original
        assert (site / "runs" / name / "options.csv").read_bytes() == (out / name / "options.csv").read_bytes()


def browser_dom(url: str, tmp_path: Path) -> str:
    """The DOM after load in headless Chromium, with every host unresolvable (no network)."""
    return dump_dom(url, tmp_path, budget_ms=10_000)


@pytest.mark.skipif(chromium() is None, reason="Chromium is not installed (.ci/run installs Debian's chromium)")
def test_index_filters_in_the_browser_offline(site, tmp_path):
    index = (site / "index.html").resolve().as_uri()
    dom = browser_dom(index, tmp_path)
    assert rows_of(dom) == {"alpha": True, "beta": True, "gamma": True}
    assert 'data-shown="3"' in dom
    dom = browser_dom(index + "#q=beta", tmp_path)  # the search box, from the URL
    assert rows_of(dom) == {"alpha": False, "beta": True, "gamma": False}
    assert 'data-shown="1"' in dom
    dom = browser_dom(index + "#gpu=l40s", tmp_path)  # the GPU filter
    assert rows_of(dom) == {"alpha": False, "beta": True, "gamma": True}
    dom = browser_dom(index + "#q=h100%20gamma", tmp_path)  # every word must match
    assert rows_of(dom) == {"alpha": False, "beta": False, "gamma": True}
    dom = browser_dom(index + "#q=no-such-run", tmp_path)
    assert 'data-shown="0"' in dom and '<p id="none" class="muted">' in dom


@pytest.mark.skipif(chromium() is None, reason="Chromium is not installed (.ci/run installs Debian's chromium)")
def test_copied_report_still_renders_offline(site, tmp_path):
    dom = browser_dom((site / "runs" / "gamma" / "report.html").resolve().as_uri(), tmp_path)
    body = re.search(r"<body[^>]*>", dom).group(0)
    charts_n = int(re.search(r'data-charts="(\d+)"', body).group(1))
    assert charts_n > 0 and f'data-rendered="{charts_n}"' in body and 'data-errors="0"' in body
    assert 'href="../../index.html"' in dom


def test_republish_replaces_the_site_whole(out, tmp_path):
    site = tmp_path / "site"
    publish([out], site)
    publish([out / "alpha"], site)
    assert sorted(p.name for p in (site / "runs").iterdir()) == ["alpha"]
    assert set(rows_of((site / "index.html").read_text())) == {"alpha"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # nothing beside it


def test_a_failed_publish_leaves_the_old_site(out, tmp_path, monkeypatch):
    site = tmp_path / "site"
    publish([out], site)
    before = snapshot(site)
    calls = []

    def failing(run, dest):
        calls.append(run.name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return copy(run, dest)

    copy = publish_module._copy_run
    monkeypatch.setattr(publish_module, "_copy_run", failing)
    with pytest.raises(LlmsweepError, match="cannot write the results: No space left on device.*; nothing was changed"):
        publish([out], site)
    assert snapshot(site) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no temporary folder left


def test_a_bad_run_stops_publish_before_anything_is_written(out, tmp_path):
    site = tmp_path / "site"
    publish([out], site)
    before = snapshot(site)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text('{"llmsweep_version": "0.1.0", "command": "run"}')
    result = CliRunner().invoke(main, ["publish", str(out), str(broken), "-o", str(site)])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {broken / 'manifest.json'}: ") and "Traceback" not in result.output
    assert snapshot(site) == before


def test_a_folder_publish_did_not_write_is_not_replaced(out, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "NOTES.md").write_text("mine")
    result = CliRunner().invoke(main, ["publish", str(out), "-o", str(site)])
    assert result.exit_code == 1 and "was not written by llmsweep" in result.output
    assert (site / "NOTES.md").read_text() == "mine" and len(list(site.iterdir())) == 1


def error_of(args: list[str]) -> str:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_bad_input_is_one_line(out, tmp_path):
    site = str(tmp_path / "site")
    assert error_of(["publish", str(tmp_path / "nope"), "-o", site]) == f"Error: {tmp_path / 'nope'}: no such folder"
    (tmp_path / "empty").mkdir()
    assert error_of(["publish", str(tmp_path / "empty"), "-o", site]).startswith(
        f"Error: {tmp_path / 'empty'}: not a run folder and holds none"
    )
    (tmp_path / "file.txt").write_text("x")
    assert "is not a folder" in error_of(["publish", str(tmp_path / "file.txt"), "-o", site])
    assert error_of(["publish", str(out / "alpha"), "-o", str(out / "alpha" / "site")]) == (
        f"Error: {out / 'alpha' / 'site'}: is inside the run folder {out / 'alpha'}; "
        "publish the site outside every run (e.g. -o site)"
    )
    assert error_of(["publish", str(out / "alpha"), str(out), "-o", site]) == (
        f"Error: {out / 'alpha'}: given twice, as {out / 'alpha'} and again (in {out}); give each run once"
    )
    assert error_of(["publish", str(out / "beta"), str(out / "beta"), "-o", site]).endswith("give each run once")
    assert not (tmp_path / "site").exists()


def test_a_run_missing_its_plan_or_holding_infinite_costs_is_refused(out, tmp_path):
    """As `llmsweep report` does: a run whose manifest lists plan.parquet without it would be indexed
    with no answer, and an infinite cost would be shown as '$inf'; nothing is written."""
    import shutil

    import polars as pl

    missing = tmp_path / "runs" / "missing"
    shutil.copytree(out / "alpha", missing)
    (missing / "plan.parquet").unlink()
    site = tmp_path / "site"
    assert error_of(["publish", str(missing), "-o", str(site)]) == (
        f"Error: {missing / 'plan.parquet'}: not found, though {missing / 'manifest.json'} lists it: the index's "
        "answer comes from it; put it back (or run the sweep again)"
    )
    infinite = tmp_path / "runs2" / "infinite"
    shutil.copytree(out / "alpha", infinite)
    plan = pl.read_parquet(infinite / "plan.parquet")
    plan.with_columns(tco_usd=pl.lit(float("inf"))).write_parquet(infinite / "plan.parquet")
    message = error_of(["publish", str(infinite), "-o", str(site)])
    assert message.startswith(f"Error: {infinite / 'plan.parquet'}: column tco_usd has {plan.height:,} infinite value")
    assert not site.exists()


def test_a_published_site_is_not_taken_for_a_run(out, tmp_path):
    site = out.parent / "www"
    try:
        publish([out], site)
        assert "holds the output of `llmsweep publish`" in error_of(["publish", str(site), "-o", str(tmp_path / "s")])
    finally:
        import shutil

        shutil.rmtree(site)


def test_two_runs_of_one_name_get_their_own_folders(out, tmp_path):
    import shutil

    other = tmp_path / "other-out"
    shutil.copytree(out / "beta", other / "beta")
    result = publish([out, other], tmp_path / "site")
    assert sorted(result.runs) == ["alpha", "beta", "beta-2", "gamma"]
    html = (tmp_path / "site" / "index.html").read_text()
    assert set(rows_of(html)) == {"alpha", "beta", "beta-2", "gamma"}
    for link in re.findall(r'href="([^"#]+)"', html):
        assert (tmp_path / "site" / link).is_file(), link


def test_names_with_html_are_shown_as_text(tmp_path):
    evil = "<img src=x onerror=alert(1)>"
    base = yaml.safe_load((ROOT / "sweeps" / "example.yaml").read_text())
    sweep = {**base, "name": "evil", "title": f"Title {evil}", "exclude": []}
    sweep["grid"] = {**base["grid"], "gpu": ["l40s"], "model": ["meta-llama/Llama-3.1-8B-Instruct"], "tp": [1]}
    path = tmp_path / "evil.yaml"
    path.write_text(yaml.safe_dump(sweep))
    pipeline.run(path, tmp_path / "out", formats=["parquet"])  # no report.html: listed without a link
    publish([tmp_path / "out"], tmp_path / "site")
    html = (tmp_path / "site" / "index.html").read_text()
    assert evil not in html and "Title &lt;img src=x onerror=alert(1)&gt;" in html
    assert "(no report.html)" in html and not (tmp_path / "site" / "runs" / "evil" / "report.html").exists()
