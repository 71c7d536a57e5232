"""Hostile inputs found in round four: a sweep's model under another spelling of a catalog model, a
run folder missing a file its manifest lists or holding non-finite numbers, prices for GPUs the grid
does not use, engines on platforms they do not run on, and latency targets below a millisecond."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from llmsweep.cli import main
from llmsweep.spec import load

TINY = "{hidden_size: 64, num_hidden_layers: 1, num_attention_heads: 1, vocab_size: 1000}"


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- 1. a `models:` entry naming a catalog model by another spelling overrides it ---------------


@pytest.mark.parametrize(
    ("key", "grid_name"),
    [
        ("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"),  # an alias, and the grid a variant
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        ("llama-3.1-8b", "llama-3.1-8b"),
        ("unsloth/Llama-3.1-8B-Instruct", "Llama 3.1 8B"),  # another org's repackaging, not an alias
    ],
)
def test_a_model_entry_under_another_spelling_overrides_the_catalog_model(tmp_path, key, grid_name):
    path = write(tmp_path, f"name: m\ngrid: {{gpu: [h100-sxm], model: ['{grid_name}']}}\nmodels:\n  {key}: {TINY}\n")
    s = load(path)
    assert s.axes.model == ["meta-llama/Llama-3.1-8B"]
    model = s.catalog.model("meta-llama/Llama-3.1-8B")
    assert model.config["hidden_size"] == 64  # the sweep's config, not the catalog's 4096
    assert model.license == "Llama 3.1 Community License"  # not given: the catalog model's
    assert f"{path}:4: models.{key}: names the catalog's meta-llama/Llama-3.1-8B, so this entry replaces " in s.notes[0]
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0 and "this entry replaces its config: every grid name of meta-llama/Llama-3.1-8B" in (
        r.output
    ), r.output


def test_a_model_entry_under_the_catalog_id_overrides_it_without_a_note(tmp_path):
    path = write(
        tmp_path,
        f"name: m\ngrid: {{gpu: [h100-sxm], model: [llama-3.1-8b]}}\nmodels:\n  meta-llama/Llama-3.1-8B: {TINY}\n",
    )
    s = load(path)
    assert s.catalog.model(s.axes.model[0]).config["hidden_size"] == 64 and s.notes == ()


def test_a_new_model_keeps_its_own_name(tmp_path):
    s = load(
        write(tmp_path, f"name: m\ngrid: {{gpu: [h100-sxm], model: [tiny, llama-3.1-8b]}}\nmodels:\n  tiny: {TINY}\n")
    )
    assert s.axes.model == ["tiny", "meta-llama/Llama-3.1-8B"]
    assert s.catalog.model("meta-llama/Llama-3.1-8B").config["hidden_size"] == 4096 and s.notes == ()


# -- 4. costs: an ambiguous GPU name is noted as in the grid; a GPU the grid lacks is an error -------


def test_an_ambiguous_gpu_name_under_costs_is_noted_as_in_the_grid(tmp_path):
    path = write(tmp_path, "name: c\ngrid: {gpu: [h100-sxm], model: [llama-3.1-8b]}\ncosts: {'H100 80GB': {rent: 2}}\n")
    assert load(path).notes == (
        "gpu 'H100 80GB' is ambiguous; using h100-sxm (the most common variant; also: h100-pcie)",
    )
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0 and "note: gpu 'H100 80GB' is ambiguous; using h100-sxm" in r.output, r.output


@pytest.mark.parametrize(
    ("grid", "costs", "note"),
    [
        (
            "[h100-sxm, l40s]",
            "{h100-sxm: {rent: 2}, b200: {rent: 5}}",
            "costs.b200: 'b200' is not a GPU of the grid (h100-sxm, l40s), so its prices are not used",
        ),
        (  # the price meant for the grid's H100 PCIe went to the SXM part the ambiguous name picks
            "[h100-pcie]",
            "{'H100 80GB': {rent: 2}}",
            "costs.H100 80GB: 'H100 80GB' (read as h100-sxm) is not a GPU of the grid (h100-pcie), so its prices are "
            "not used; did you mean 'h100-pcie'?",
        ),
    ],
)
def test_a_price_for_a_gpu_the_grid_does_not_use_is_noted_with_its_line(tmp_path, grid, costs, note):
    path = write(tmp_path, f"name: c\ngrid: {{gpu: {grid}, model: [llama-3.1-8b]}}\ncosts: {costs}\n")
    assert f"{path}:3: {note}" in load(path).notes
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0 and f"note: {path}:3: {note}\n" in r.output, r.output


def test_a_grid_gpu_that_does_not_resolve_is_not_also_a_price_without_a_gpu(tmp_path):
    path = write(tmp_path, "name: c\ngrid: {gpu: [h100-sxn], model: [llama-3.1-8b]}\ncosts: {h100-sxm: {rent: 2}}\n")
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 1 and "not a GPU of the grid" not in r.output and "unknown gpu 'h100-sxn'" in r.output


# -- 6. latency targets below a millisecond, and `slo:` without targets -----------------------------


@pytest.mark.parametrize(
    ("slo", "text"),
    [
        ({"ttft_s": 0.0005, "tpot_s": 0.000001, "percentile": "p90"}, "with p90 TTFT ≤ 0.5 ms and TPOT ≤ 0.001 ms"),
        ({"request_latency_s": 0.00012345}, "with request latency ≤ 0.123 ms"),
        ({"ttft_s": 0.05, "tpot_s": 1.5}, "with mean TTFT ≤ 50 ms and TPOT ≤ 1.5 s"),  # from 1 ms, as before
        ({"tpot_s": 0.0125, "request_latency_s": 3600}, "with TPOT ≤ 12.5 ms and request latency ≤ 3,600 s"),
    ],
)
def test_targets_below_a_millisecond_keep_their_digits(slo, text):
    from llmsweep.answer import targets_text

    assert targets_text(slo) == text  # it said "TTFT ≤ 0 ms"


def test_report_prints_sub_millisecond_targets_and_an_slo_without_targets(tmp_path):
    base = (
        "grid: {gpu: [h100-sxm], model: [llama-3.1-8b]}\nworkload: {requests_per_s: 1}\ncosts: {h100-sxm: {rent: 2}}\n"
    )
    cases = {
        "tiny": "slo: {ttft_s: 0.0005, tpot_s: 0.000001}\n",
        "empty": "slo: {}\n",
        "percentile": "slo: {percentile: p90}\n",
        "none": "",
    }
    md = {}
    for name, slo in cases.items():
        path = write(tmp_path, f"name: {name}\n{base}{slo}", f"{name}.yaml")
        result = CliRunner().invoke(main, ["run", str(path), "-o", str(tmp_path / "out"), "--format", "md,html", "-q"])
        assert result.exit_code == 0, result.output
        md[name] = (tmp_path / "out" / name / "report.md").read_text()
        html = (tmp_path / "out" / name / "report.html").read_text()
        if name == "tiny":
            assert "Latency targets: mean TTFT ≤ 0.5 ms and TPOT ≤ 0.001 ms." in md[name]
            assert "Latency targets: mean TTFT ≤ 0.5 ms and TPOT ≤ 0.001 ms." in html
            assert "TTFT ≤ 0.5 ms and TPOT ≤ 0.001 ms" in md[name] and "≤ 0 ms" not in md[name] + html
    said = "> **No latency targets.** This sweep sets no latency targets (its `slo:` has no `ttft_s`, `tpot_s` or "
    said += "`request_latency_s`), so nothing here checks what users would see"
    assert said in md["empty"] and said in md["percentile"]  # it said "This sweep sets no `slo:`"
    assert "> **No latency targets.** This sweep sets no `slo:`, so nothing here" in md["none"]


def test_a_percentile_without_a_ttft_target_is_noted(tmp_path):
    path = write(
        tmp_path, "name: p\ngrid: {gpu: [h100-sxm], model: [llama-3.1-8b]}\nslo:\n  tpot_s: 0.05\n  percentile: p90\n"
    )
    note = (
        f"{path}:5: slo.percentile: p90 says which TTFT ttft_s bounds, and no ttft_s is given, so it bounds nothing "
        "(add ttft_s, or drop it)"
    )
    assert load(path).notes == (note,)
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0 and f"note: {note}\n" in r.output, r.output
    assert (
        load(
            write(
                tmp_path, "name: p\ngrid: {gpu: [h100-sxm], model: [llama-3.1-8b]}\nslo: {ttft_s: 1, percentile: p90}\n"
            )
        ).notes
        == ()
    )
