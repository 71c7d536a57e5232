"""A corpus of malformed sweeps: each ends in exit code 1, a `file:line: key.path: message` that
names the problem, no traceback, and no output folder. Each file's first line says what to expect."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from llmsweep.cli import main

BAD = sorted((Path(__file__).parent / "sweeps" / "bad").glob("*.yaml"))


def expected(path: Path) -> str:
    first = path.read_text().splitlines()[0] if path.read_text().strip() else ""
    return first.removeprefix("# expect: ")


def check_rejected(args: list[str], out: Path, message: str) -> str:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    assert message in r.output, r.output
    assert not any(out.iterdir()) if out.exists() else True  # nothing written, not even a partial folder
    return r.output


def test_corpus_is_large_enough():
    assert len(BAD) >= 30


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_malformed_sweep_validate(path, tmp_path):
    args = ["validate", str(path)] + (["--max-rows", "500"] if path.stem == "too_many_rows" else [])
    output = check_rejected(args, tmp_path / "none", expected(path))
    assert output.startswith("Error: ") and f"{path}:" in output


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_malformed_sweep_run_writes_nothing(path, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    args = ["run", str(path), "-o", str(out)] + (["--max-rows", "500"] if path.stem == "too_many_rows" else [])
    check_rejected(args, out, expected(path))


def test_line_numbers_point_at_the_problem():
    path = Path(__file__).parent / "sweeps" / "bad" / "misspelled_gpu.yaml"
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert f"{path}:6: grid.gpu[1]: unknown gpu 'h100-sxn'" in r.output


def test_every_problem_reported_at_once():
    path = Path(__file__).parent / "sweeps" / "bad" / "several_problems.yaml"
    r = CliRunner().invoke(main, ["validate", str(path)])
    lines = r.output.splitlines()
    assert lines[0] == f"Error: 3 problems in {path}:"
    assert any("grid.gpu[0]: unknown gpu 'h100-sxn'" in line for line in lines)
    assert any("grid.tp[0]: Input should be a valid integer" in line for line in lines)
    assert any("slo.ttft_s: Input should be greater than or equal to 0.000001" in line for line in lines)


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: x\n# caf\u00e9\n".encode("latin-1"))
    check_rejected(["validate", str(path)], tmp_path / "none", ":2: (file): not UTF-8 text (byte 0xe9)")


def test_directory_instead_of_file(tmp_path):
    check_rejected(
        ["run", str(tmp_path), "-o", str(tmp_path / "out")], tmp_path / "out", "is a directory, not a sweep file"
    )


def test_missing_file(tmp_path):
    check_rejected(["validate", str(tmp_path / "nope.yaml")], tmp_path / "none", "nope.yaml: (file): file not found")


# -- serving modes (spec/serving.py): each problem with its line, key path and message ----------------------------
def serving_sweep(tmp_path: Path, grid: str, rest: str = "", model: str = "deepseek-r1") -> Path:
    """A sweep whose grid lines from line 5 on are `grid`, then `rest` (top-level keys)."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\ngrid:\n  gpu: [h200-sxm]\n  model: [{model}]\n{grid}\n{rest}")
    return path


R1_MTP = (
    "mtp drafts with the model's own multi-token-prediction module, and meta-llama/Llama-3.1-70B has none (no "
    "num_nextn_predict_layers in config.json); models with one: deepseek-ai/DeepSeek-V3, deepseek-ai/DeepSeek-R1, "
    "deepseek-ai/DeepSeek-V3.2, Qwen/Qwen3.5-27B, Qwen/Qwen3.5-122B-A10B, Qwen/Qwen3.5-397B-A17B, zai-org/GLM-5, "
    "MiniMaxAI/MiniMax-M2.5, nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8. Use eagle or a draft model for it, or "
    "exclude {model: meta-llama/Llama-3.1-70B, speculative: mtp}"
)
SERVING_ERRORS = {
    "method-misspelled": (
        "  speculative: [none, mpt]",
        "",
        "deepseek-r1",
        "5: grid.speculative[1]: unknown method 'mpt'; did you mean 'mtp'? (none, mtp, eagle, draft)",
    ),
    "method-misspelled-in-mapping": (
        "  speculative:\n    - none\n    - {method: eagel, draft_tokens: 2}",
        "",
        "deepseek-r1",
        "7: grid.speculative[1].method: unknown method 'eagel'; did you mean 'eagle'? (none, mtp, eagle, draft)",
    ),
    "key-misspelled-in-mapping": (
        "  speculative:\n    - none\n    - {method: eagle, acceptence: 0.7}",
        "",
        "llama-3.1-8b",
        "7: grid.speculative[1].acceptence: unknown key 'acceptence'; did you mean 'acceptance'?",
    ),
    "draft-as-a-name": (
        "  speculative: draft",
        "",
        "deepseek-r1",
        "5: grid.speculative: draft needs its draft model: write {method: draft, draft_model: <model id>}",
    ),
    "draft-without-model": (
        "  speculative:\n    - {method: draft, draft_tokens: 4}",
        "",
        "llama-3.1-70b",
        "6: grid.speculative[0]: method draft needs draft_model: the smaller model that drafts "
        "(e.g. llama-3.1-8b for llama-3.1-70b)",
    ),
    "draft-model-for-mtp": (
        "  speculative:\n    - {method: mtp, draft_model: llama-3.1-8b}",
        "",
        "deepseek-r1",
        "6: grid.speculative[0]: draft_model is for method draft; mtp drafts with the model's own MTP module",
    ),
    "none-with-draft-tokens": (
        "  speculative: [{method: none, draft_tokens: 2}]",
        "",
        "deepseek-r1",
        "5: grid.speculative[0]: none drafts nothing: drop draft_tokens (or name a method: mtp, eagle, draft)",
    ),
    "too-many-draft-tokens": (
        "  speculative:\n    - {method: eagle, draft_tokens: 17}",
        "",
        "deepseek-r1",
        "6: grid.speculative[0].draft_tokens: Input should be less than or equal to 16 (got 17)",
    ),
    "acceptance-zero": (
        "  speculative:\n    - {method: mtp, acceptance: 0}",
        "",
        "deepseek-r1",
        "6: grid.speculative[0].acceptance: Input should be greater than 0 (got 0)",
    ),
    "acceptance-twice": (
        "  speculative:\n    - {method: eagle, acceptance: 0.7, acceptance_rates: [0.8, 0.6, 0.5]}",
        "",
        "deepseek-r1",
        "6: grid.speculative[0]: give acceptance (every position alike) or acceptance_rates (one per position), "
        "not both",
    ),
    "rates-for-other-draft-tokens": (
        "  speculative:\n    - {method: eagle, draft_tokens: 3, acceptance_rates: [0.8, 0.6]}",
        "",
        "deepseek-r1",
        "6: grid.speculative[0]: acceptance_rates lists 2 rates for draft_tokens 3: give one per drafted token",
    ),
    "rate-above-one": (
        "  speculative:\n    - method: eagle\n      acceptance_rates: [0.8, 1.2]",
        "",
        "deepseek-r1",
        "7: grid.speculative[0].acceptance_rates[1]: Input should be less than or equal to 1 (got 1.2)",
    ),
    "draft-model-misspelled": (
        "  speculative:\n    - none\n    - {method: draft, draft_model: llama-3.1-8bb}",
        "",
        "llama-3.1-70b",
        "7: grid.speculative[1].draft_model: unknown model 'llama-3.1-8bb'; did you mean 'meta-llama/Llama-3.1-8B'",
    ),
    "draft-model-not-smaller": (
        "  speculative:\n    - {method: draft, draft_model: llama-3.1-405b}",
        "",
        "llama-3.1-70b",
        "6: grid.speculative[0].draft_model: the draft model meta-llama/Llama-3.1-405B (405.85 B active "
        "parameters) is not smaller than meta-llama/Llama-3.1-70B (70.55 B): a draft must have fewer active "
        "parameters than the model it drafts for, or drafting costs more than it saves",
    ),
    "mtp-without-mtp-module": ("  speculative: [none, mtp]", "", "llama-3.1-70b", f"5: grid.speculative[1]: {R1_MTP}"),
    "speculation-repeated": (
        "  speculative:\n    - {method: mtp, draft_tokens: 1}\n    - {method: mtp, draft_tokens: 1, acceptance: null}",
        "",
        "deepseek-r1",
        "7: grid.speculative[1]: 'mtp k=1' repeats grid.speculative[0]",
    ),
    "mode-misspelled": (
        "  mode: [aggregated, disagregated]",
        "",
        "deepseek-r1",
        "5: grid.mode[1]: unknown mode 'disagregated'; did you mean 'disaggregated'? (aggregated, disaggregated)",
    ),
    "prefill-without-disaggregated": (
        "  tp: [8]\n  prefill: {workers: [1, 2]}",
        "",
        "deepseek-r1",
        "6: grid.prefill: a prefill pool is for mode disaggregated: add it to grid.mode (mode: [aggregated, "
        "disaggregated] compares both) or drop `prefill:`",
    ),
    "decode-without-disaggregated": (
        "  mode: aggregated\n  decode:\n    workers: [2]",
        "",
        "deepseek-r1",
        "6: grid.decode: a decode pool is for mode disaggregated: add it to grid.mode (mode: [aggregated, "
        "disaggregated] compares both) or drop `decode:`",
    ),
    "prefill-workers-repeated": (
        "  mode: disaggregated\n  prefill:\n    workers: [2, 2]",
        "",
        "deepseek-r1",
        "7: grid.prefill.workers[1]: 2 repeats grid.prefill.workers[0]",
    ),
    "prefill-key-misspelled": (
        "  mode: disaggregated\n  prefill:\n    workrs: [2]",
        "",
        "deepseek-r1",
        "7: grid.prefill.workrs: unknown key 'workrs'; did you mean 'workers'?",
    ),
    "decode-workers-zero": (
        "  mode: disaggregated\n  decode: {workers: [0]}",
        "",
        "deepseek-r1",
        "6: grid.decode.workers[0]: Input should be greater than 0 (got 0)",
    ),
    "hit-rate-of-one": (
        "  prefix_hit_rate: [0, 1.0]",
        "",
        "deepseek-r1",
        "5: grid.prefix_hit_rate[1]: Input should be less than 1 (got 1.0)",
    ),
    "workload-hit-rate-negative": (
        "  batch: [1]",
        "workload:\n  requests_per_s: 2\n  prefix_hit_rate: -0.1",
        "deepseek-r1",
        "8: workload.prefix_hit_rate: Input should be greater than or equal to 0 (got -0.1)",
    ),
    "hit-rate-twice": (
        "  prefix_hit_rate: [0, 0.5]",
        "workload: {requests_per_s: 2, prefix_hit_rate: 0.5}",
        "deepseek-r1",
        "5: grid.prefix_hit_rate: give the prefix hit rate once: grid.prefix_hit_rate (an axis, to compare rates) "
        "or workload.prefix_hit_rate (the traffic's), not both",
    ),
    "exclude-mode-misspelled": (
        "  mode: [aggregated, disaggregated]",
        "exclude:\n  - {mode: disagg, batch: 1}",
        "deepseek-r1",
        "7: exclude[0].mode: unknown mode 'disagg'; did you mean 'disaggregated'? (aggregated, disaggregated)",
    ),
    "exclude-method-misspelled": (
        "  speculative: [none, mtp]",
        "exclude:\n  - {speculative: mpt}",
        "deepseek-r1",
        "7: exclude[0].speculative: unknown method 'mpt'; did you mean 'mtp'? (none, mtp, eagle, draft)",
    ),
    "exclude-hit-rate-of-one": (
        "  prefix_hit_rate: [0, 0.5]",
        "exclude:\n  - {prefix_hit_rate: 1}",
        "deepseek-r1",
        "7: exclude[0].prefix_hit_rate: a prefix hit rate must be a finite number at least 0 and less than 1 "
        "(fraction), got 1",
    ),
    "exclude-every-disaggregated-row": (
        "  mode: disaggregated\n  decode: {workers: [1, 2]}",
        "exclude:\n  - {decode_workers: [1, 2]}",
        "deepseek-r1",
        "8: exclude[0]: the exclusion rules leave no configuration to estimate (this rule drops every one)",
    ),
}


@pytest.mark.parametrize(("grid", "rest", "model", "message"), SERVING_ERRORS.values(), ids=list(SERVING_ERRORS))
def test_serving_mode_errors(tmp_path, grid, rest, model, message):
    path = serving_sweep(tmp_path, grid, rest, model)
    out = check_rejected(["validate", str(path)], tmp_path / "none", f"{path}:{message}")
    assert out.startswith("Error: 1 problem in "), out


def test_mtp_for_a_model_without_it_may_be_excluded(tmp_path):
    # the error names the rule that drops the combination; with it, the sweep is valid
    path = serving_sweep(
        tmp_path,
        "  speculative: [none, mtp]",
        "exclude:\n  - {model: meta-llama/Llama-3.1-70B, speculative: mtp}",
        "llama-3.1-70b, deepseek-r1",
    )
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0 and r.output.strip() == "OK: 3 configurations (4 before exclusions)", r.output


def test_a_pool_rule_keeps_the_aggregated_rows(tmp_path):
    # an aggregated row has no prefill workers: a rule on them drops disaggregated rows only
    path = serving_sweep(
        tmp_path,
        "  tp: [8]\n  ep: [8]\n  mode: [aggregated, disaggregated]\n  prefill: {workers: [1, 2]}",
        "exclude:\n  - {prefill_workers: [1, 2]}",
    )
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0 and r.output.strip() == "OK: 1 configuration (3 before exclusions)", r.output


def test_an_inline_config_field_a_letter_from_one_read_is_noted_with_its_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: inline\nmodels:\n  my-model:\n    hidden_size: 4096\n    num_hidden_layers: 32\n"
        "    num_attention_heads: 32\n    num_kv_heads: 8\n    intermediate_size: 14336\n    vocab_size: 128256\n"
        "grid:\n  gpu: [h100-sxm]\n  model: [my-model]\n"
    )
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0 and r.stdout.strip() == "OK: 1 configuration", r.output
    assert (
        f"{path}:7: models.my-model.num_kv_heads: not a field llmsweep reads, and 'num_key_value_heads' is not given"
        in r.stderr
    )


@pytest.mark.parametrize(
    ("where", "text", "message"),
    [
        # PyYAML reads YAML 1.1: 1e3 (no dot, no exponent sign) is a string, which the message says
        (
            "grid",
            "  input_tokens: [1e3]\n",
            "grid.input_tokens[0]: Input should be a valid integer, unable to parse string as an integer (got '1e3') "
            "(text, not a number: YAML reads 1e3 as text; write 1.0e+03 or 1000)",
        ),
        (
            "models",
            "    num_hidden_layers: 1e9\n",
            "field 'num_hidden_layers' must be a positive integer, got '1e9' (text, not a number: YAML reads 1e9 as "
            "text; write 1.0e+09 or 1000000000)",
        ),
    ],
)
def test_a_number_yaml_reads_as_text_says_how_to_write_it(tmp_path, where, text, message):
    model = (
        "models:\n  m:\n    hidden_size: 4096\n    num_attention_heads: 32\n    intermediate_size: 14336\n"
        "    vocab_size: 128256\n" + (text if where == "models" else "    num_hidden_layers: 32\n")
    )
    grid = "grid:\n  gpu: [h100-sxm]\n  model: [m]\n" + (text if where == "grid" else "")
    path = tmp_path / "s.yaml"
    path.write_text("name: t\n" + model + grid)
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 1 and message in r.output, r.output


# -- exclude rules (spec/exclude.py): each wrong value one true message, at its key path and line ----------------
def exclude_sweep(tmp_path: Path, rules: str, axis: str = "  tp: [1, 2]") -> Path:
    """A sweep on h100-sxm and l40s whose grid's line 5 is `axis` and whose rules start on line 7."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\ngrid:\n  gpu: [h100-sxm, l40s]\n  model: [llama-3.1-8b]\n{axis}\nexclude:\n{rules}\n")
    return path


def validate(path: Path):
    return CliRunner().invoke(main, ["validate", str(path)])


EMPTY_LIST = "an empty list matches no configuration, so this rule would never drop one: list the {} values to drop"
EXCLUDE_ERRORS = {
    # a grid without a `context` axis: a bad context was reported, then the rule, read without it, as
    # one that "drops every one" (it drops nothing)
    "context-zero-without-a-context-axis": (
        "  - {context: 0}",
        "  input_tokens: [1024]",
        "7: exclude[0].context: expected a positive integer, got 0",
    ),
    "context-zero-beside-another-axis": (
        "  - {context: 0, tp: 1}",
        "  input_tokens: [1024]",
        "7: exclude[0].context: expected a positive integer, got 0",
    ),
    "context-zero-in-a-list": (
        "  - {context: [1280, 0]}",
        "  output_tokens: [256]",
        "7: exclude[0].context[1]: expected a positive integer, got 0",
    ),
    # an empty list matches nothing: the rule could never drop anything (it was accepted silently)
    "empty-list": ("  - {gpu: []}", "  tp: [1, 2]", "7: exclude[0].gpu: " + EMPTY_LIST.format("gpu")),
    "empty-list-beside-a-value": (
        "  - {gpu: h100-sxm, tp: []}",
        "  tp: [1, 2]",
        "7: exclude[0].tp: " + EMPTY_LIST.format("tp"),
    ),
    "empty-list-in-block-style": (
        "  - gpu: h100-sxm\n    batch: []",
        "  batch: [1, 8]",
        "8: exclude[0].batch: " + EMPTY_LIST.format("batch"),
    ),
    # a name of the wrong type was read as its Python text ('None', "['h100-sxm']" even resolved)
    "gpu-null": ("  - {gpu: null}", "  tp: [1, 2]", "7: exclude[0].gpu: expected a GPU id or name, got None"),
    "gpu-nested-list": (
        "  - {gpu: [[h100-sxm]]}",
        "  tp: [1, 2]",
        "7: exclude[0].gpu[0]: expected a GPU id or name, got ['h100-sxm']",
    ),
    "model-number": ("  - {model: 8}", "  tp: [1, 2]", "7: exclude[0].model: expected a model id or name, got 8"),
    "kv-precision-bool": (
        "  - {kv_precision: true}",
        "  tp: [1, 2]",
        "7: exclude[0].kv_precision: expected a precision name or auto, got True",
    ),
    # null is not the method none (the rule dropped every row)
    "speculative-null": (
        "  - {speculative: null}",
        "  tp: [1, 2]",
        "7: exclude[0].speculative: unknown method None (none, mtp, eagle, draft)",
    ),
    # a value twice, as the grid says of its own axes
    "repeated-gpu": (
        "  - {gpu: [h100-sxm, H100 SXM]}",
        "  tp: [1, 2]",
        "7: exclude[0].gpu[1]: 'H100 SXM' repeats exclude[0].gpu[0] (both are h100-sxm)",
    ),
    "repeated-tp": ("  - {tp: [2, 2]}", "  tp: [1, 2]", "7: exclude[0].tp[1]: 2 repeats exclude[0].tp[0]"),
    # a key that is not text was at 'exclude[0].None.[key]' (or lost: 'exclude[0].[key]')
    "null-key": ("  - {null: 1}", "  tp: [1, 2]", "7: exclude[0].null: Keys should be strings (got None)"),
    "number-key": ("  - gpu: l40s\n    2: 1", "  tp: [1, 2]", "8: exclude[0].2: Keys should be strings (got 2)"),
    # the grid's fp4 is each GPU vendor's format (nvfp4 on NVIDIA, mxfp4 on AMD): a rule names one
    "precision-fp4": (
        "  - {precision: fp4}",
        "  precision: [fp4, fp8]",
        "7: exclude[0].precision: exclude rules name a weight format (nvfp4, mxfp4), not fp4, which is each GPU "
        "vendor's own (nvfp4 on NVIDIA, mxfp4 on AMD): name the format, with the gpu if it is one GPU's",
    ),
    # engine auto is vLLM on both GPUs: validate said "OK: 0 configurations" and run refused the sweep
    "engine-of-auto-drops-every-row": (
        "  - {engine: vllm}",
        "  tp: [1, 2]",
        "7: exclude[0]: the exclusion rules leave no configuration to estimate (this rule drops every one)",
    ),
}


@pytest.mark.parametrize(("rules", "axis", "message"), EXCLUDE_ERRORS.values(), ids=list(EXCLUDE_ERRORS))
def test_exclude_errors(tmp_path, rules, axis, message):
    path = exclude_sweep(tmp_path, rules, axis)
    out = check_rejected(["validate", str(path)], tmp_path / "none", f"{path}:{message}")
    assert out.splitlines() == [f"Error: 1 problem in {path}:", f"  {path}:{message}"], out


def test_exclude_rules_that_leave_nothing_together_through_engine_auto(tmp_path):
    # auto is vLLM on h100-sxm and llama.cpp on rtx-4090: the two rules drop every row (validate said
    # "OK: 0 configurations", and run refused the sweep)
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ngrid:\n  gpu: [h100-sxm, rtx-4090]\n  model: [llama-3.1-8b]\nexclude:\n"
        "  - {engine: vllm}\n  - {gpu: rtx-4090}\n"
    )
    out = check_rejected(["validate", str(path)], tmp_path / "none", "")
    assert out.splitlines() == [
        f"Error: 1 problem in {path}:",
        f"  {path}:5: exclude: the exclusion rules leave no configuration to estimate (together, the 2 rules drop "
        "every one)",
    ], out


def test_a_context_rule_on_a_grid_of_input_tokens_matches_input_plus_output(tmp_path):
    # the grid's contexts are 1,024 + 256 = 1,280: a rule on 2,048 drops nothing (it was refused as one
    # that "drops every one"), and says so; a rule on 1,280 drops every row
    path = exclude_sweep(tmp_path, "  - {context: 2048}", "  input_tokens: [1024]")
    r = validate(path)
    assert r.exit_code == 0 and r.stdout == "OK: 2 configurations\n", r.output
    assert r.stderr == (
        f"note: {path}:7: exclude[0].context: 2048 is not among the grid's context values (1280), so it matches no "
        "configuration\n"
    )
    path = exclude_sweep(tmp_path, "  - {context: 1280}", "  input_tokens: [1024]")
    r = validate(path)
    assert r.exit_code == 1
    assert f"{path}:7: exclude[0]: the exclusion rules leave no configuration to estimate" in r.output, r.output


def test_a_batch_rule_reads_max_as_the_grid_does(tmp_path):
    # the grid takes MAX for max; the rule refused it ("expected a positive integer or max, got 'MAX'")
    r = validate(exclude_sweep(tmp_path, "  - {gpu: l40s, batch: MAX}", "  batch: [1, max]"))
    assert r.exit_code == 0 and r.output == "OK: 3 configurations (4 before exclusions)\n", r.output


EXCLUDE_NOTES = {
    # a value the grid does not hold drops nothing: valid (a rule kept for a value taken off the grid),
    # but likely a slip, so validate says so, with the line, the grid's values and a close name
    "gpu-off-the-grid": (
        "  - {gpu: h200-sxm}",
        "OK: 4 configurations",
        "7: exclude[0].gpu: h200-sxm is not among the grid's gpu values (h100-sxm, l40s), so it matches no "
        "configuration; did you mean 'h100-sxm'?",
    ),
    "tp-off-the-grid-in-a-list": (
        "  - {gpu: l40s, tp: [2, 16]}",
        "OK: 3 configurations (4 before exclusions)",
        "7: exclude[0].tp[1]: 16 is not among the grid's tp values (1, 2), so it matches no configuration",
    ),
    "engine-auto-resolves": (
        "  - {engine: sglang}",
        "OK: 4 configurations",
        "7: exclude[0].engine: sglang is not among the grid's engine values (vllm), so it matches no configuration",
    ),
    "pools-without-disaggregation": (
        "  - {prefill_workers: 2}",
        "OK: 4 configurations",
        "7: exclude[0].prefill_workers: 2 matches no configuration: prefill_workers is a disaggregated pool's, and "
        "the grid has none",
    ),
}


@pytest.mark.parametrize(("rules", "stdout", "note"), EXCLUDE_NOTES.values(), ids=list(EXCLUDE_NOTES))
def test_exclude_values_that_match_nothing_are_noted(tmp_path, rules, stdout, note):
    path = exclude_sweep(tmp_path, rules)
    r = validate(path)
    assert r.exit_code == 0 and r.stdout == stdout + "\n", r.output
    assert r.stderr == f"note: {path}:{note}\n"


def test_an_exclude_rule_whose_values_never_meet_is_noted(tmp_path):
    # each value is the grid's, but no row holds both: l40s runs vLLM (auto), not llama.cpp
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ngrid:\n  gpu: [l40s, rtx-4090]\n  model: [llama-3.1-8b]\n"
        "exclude:\n  - {gpu: l40s, engine: llama.cpp}\n"
    )
    r = validate(path)
    assert r.exit_code == 0 and r.stdout == "OK: 2 configurations\n", r.output
    assert r.stderr == (
        f"note: {path}:6: exclude[0]: no configuration of the grid has all of this rule's values together, so it "
        "drops nothing (gpu: l40s, engine: llama.cpp)\n"
    )


def test_a_key_that_is_not_text_is_named_as_written_on_its_line(tmp_path):
    # pydantic's location was costs.[key] (the 5 lost) and costs.None.[key]
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ngrid:\n  gpu: [h100-sxm]\n  model: [llama-3.1-8b]\ncosts:\n  ~: {rent: 1}\n  5: {rent: 2}\n"
    )
    out = check_rejected(["validate", str(path)], tmp_path / "none", "")
    assert out.splitlines() == [
        f"Error: 2 problems in {path}:",
        f"  {path}:6: costs.~: Keys should be strings (got None)",
        f"  {path}:7: costs.5: Keys should be strings (got 5)",
    ], out
