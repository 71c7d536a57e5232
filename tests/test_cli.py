"""The command line: help with examples, outputs, and clear one-line errors (exit 1, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from llmsweep.cli import main

from .conftest import ROOT

COMMANDS = ["estimate", "gpus", "models", "precisions"]


def invoke(*args):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command):
    r = invoke(command, "--help")
    assert r.exit_code == 0
    assert "Examples:" in r.output and f"llmsweep {command}" in r.output


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        # nvfp4 on an H100 runs weight-only: its matmuls are bf16, no FP4 share applies; over a 16-bit
        # cache no FP8 one either, but vLLM caches an NVFP4 checkpoint's KV in fp8, attending at the fp8 rate
        (["--gpu", "h100", "--precision", "fp4", "--kv-precision", "bf16"], []),
        (["--gpu", "h100", "--precision", "fp4"], ["FP8 GEMM efficiency"]),
        (["--gpu", "b200", "--precision", "fp4"], ["FP8 GEMM efficiency", "FP4 GEMM efficiency"]),
        (["--gpu", "b200", "--precision", "fp4", "--kv-precision", "bf16"], ["FP4 GEMM efficiency"]),
        (["--gpu", "h100", "--precision", "fp8"], ["FP8 GEMM efficiency"]),
        # bf16 weights over an fp8 cache: attention runs at the fp8 rate where the GPU has one
        (["--gpu", "h100", "--precision", "bf16", "--kv-precision", "fp8"], ["FP8 GEMM efficiency"]),
        (["--gpu", "a100", "--precision", "bf16", "--kv-precision", "fp8"], []),
    ],
)
def test_estimate_shows_the_gemm_efficiencies_its_matmuls_run_at(args, shown):
    r = invoke("estimate", "--model", "meta-llama/Llama-3.1-8B", *args)
    assert r.exit_code == 0, r.output
    assert [k for k in ("FP8 GEMM efficiency", "FP4 GEMM efficiency") if k in r.output] == shown


def test_estimate_table():
    r = invoke(
        "estimate",
        "--gpu",
        "A100 80GB SXM",
        "--model",
        "llama-2-7b",
        "--precision",
        "fp16",
        "--profile",
        "ideal",
        "--input-tokens",
        "0",
        "--output-tokens",
        "1",
    )
    assert r.exit_code == 0, r.output
    # 2.039e12 B/s / (13,476,831,232 - the 262,144,000-byte embedding table + one 8,192-byte row
    # + 262,144 KV) = 154.3 (tests/test_estimate.py)
    assert "Tokens/s per user              154.3 tokens/s" in r.output
    assert "Weights per GPU                13.48 GB (12.55 GiB)" in r.output
    assert "Profile: ideal" in r.output


def test_estimate_of_a_layout_that_does_not_fit_says_so_first_and_serves_nothing():
    # DeepSeek-R1 fp8 on 8 H100s: 671,026,419,200 weights of 1 byte, the bf16 embedding and LM head
    # (1,853,358,080) one more, over 8 GPUs = 84.11 GB a GPU
    # (+ the KV cache, activations and runtime: 85.85 GB), against 80 GiB x (1 - 0.1 reserve) =
    # 72 GiB = 77.31 GB usable. The prefill and the step are still arithmetic; an operating point is not.
    from .conftest import estimate_row

    row = estimate_row("default", gpu="h100-sxm", model="deepseek-ai/DeepSeek-R1", precision="fp8", tp=8)
    assert row["weight_bytes"] == (671_026_419_200 + 1_853_358_080) / 8 == 84_109_972_160
    assert row["usable_memory_bytes"] == 0.9 * 80 * 2**30
    r = invoke("estimate", "--gpu", "h100-sxm", "--model", "deepseek-r1", "--precision", "fp8", "--tp", "8")
    assert r.exit_code == 0, r.output
    lines = [line for line in r.output.splitlines() if not line.startswith("note:")]
    assert lines[0] == (
        "Does not run: does not fit: it needs 85.85 GB (79.96 GiB) a GPU, and 77.31 GB (72.00 GiB) is usable. "
        "Serving and cost figures need a configuration that runs."
    )
    assert row["memory_per_gpu_bytes"] == pytest.approx(85.85e9, abs=0.005e9)
    assert "Fits                           no" in r.output
    assert "TTFT" not in r.output and "Load:" not in r.output
    serving = lines.index(next(line for line in lines if line.startswith("Serving at this concurrency")))
    assert lines[serving + 1] == "  - (the configuration does not run)"
    assert "Prefill time" in r.output  # the prompt's arithmetic is shown


def test_estimate_json_and_batch_max():
    r = invoke(
        "estimate",
        "--gpu",
        "h100-sxm",
        "--model",
        "meta-llama/Llama-3.1-70B-Instruct",
        "--tp",
        "2",
        "--batch",
        "max",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)
    assert row["batch_is_max"] is True and row["batch"] == row["max_batch"] > 0
    assert row["model"] == "meta-llama/Llama-3.1-70B" and row["fits"] is True


def test_estimate_csv_has_header_and_one_row():
    r = invoke("estimate", "--gpu", "l40s", "--model", "llama-3.1-8b", "--format", "csv")
    lines = r.stdout.splitlines()
    assert r.exit_code == 0 and len(lines) == 2
    assert lines[0].startswith("gpu,engine,model,precision,kv_precision,tp,pp,ep,dp_attention,gpus,batch")


def test_ambiguous_name_note_on_stderr():
    r = CliRunner().invoke(main, ["estimate", "--gpu", "H100 80GB", "--model", "llama-3.1-8b"])
    assert r.exit_code == 0
    assert "note: gpu 'H100 80GB' is ambiguous; using h100-sxm" in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--gpu", "H10 SXM", "--model", "llama-3.1-8b"],
            "Error: unknown gpu 'H10 SXM'; did you mean 'h100-sxm' or 'h200-sxm'? (`llmsweep gpus` lists them)",
        ),
        (
            ["--gpu", "h100-sxm", "--model", "llama-3.1-8c"],
            "Error: unknown model 'llama-3.1-8c'; did you mean 'meta-llama/Llama-3.1-8B'",
        ),
        (
            ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--precision", "fp9"],
            "Error: unknown precision 'fp9'; did you mean",
        ),
        (
            ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--profile", "fast"],
            "Error: unknown profile 'fast'",
        ),
        (
            ["--gpu", "h100-sxm", "--model", "./missing/config.json"],
            "Error: ./missing/config.json: file not found",
        ),
        (
            ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--input-tokens", "0", "--output-tokens", "0"],
            "Error: --input-tokens and --output-tokens are both 0",
        ),
    ],
)
def test_bad_input_is_one_line_exit_1(args, message):
    r = invoke("estimate", *args)
    assert r.exit_code == 1
    assert r.output.startswith(message), r.output
    assert len(r.output.strip().splitlines()) == 1
    assert "Traceback" not in r.output


def test_malformed_config_json_names_file_and_field(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text('{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32}')
    r = invoke("estimate", "--gpu", "h100-sxm", "--model", str(cfg))
    assert r.exit_code == 1
    assert (
        r.output.strip() == f"Error: {cfg}: missing field 'vocab_size' (a Hugging Face config.json for a "
        "decoder-only transformer has it)"
    )


def test_local_config_json(tmp_path):
    from llmsweep.catalog import load_catalog

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(load_catalog().model("meta-llama/Llama-3.1-8B").config))
    r = invoke("estimate", "--gpu", "h100-sxm", "--model", str(cfg), "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["params_total"] == 8_030_261_248


def test_usage_errors_exit_2():
    assert invoke("estimate", "--gpu", "h100-sxm", "--model", "x", "--tp", "0").exit_code == 2
    assert invoke("estimate", "--gpu", "h100-sxm", "--model", "x", "--batch", "lots").exit_code == 2


@pytest.mark.parametrize("command", ["gpus", "models", "precisions"])
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_catalog_listings(command, fmt):
    r = invoke(command, "--format", fmt)
    assert r.exit_code == 0
    if fmt == "json":
        rows = json.loads(r.stdout)
        assert len(rows) >= 15 and "id" in rows[0]


def test_catalog_entry_with_sources():
    r = invoke("gpus", "H100 SXM")
    assert r.exit_code == 0
    assert "id: h100-sxm" in r.output and "sources:" in r.output and "bf16: 989.0" in r.output
    r = invoke("models", "llama-3.1-8b", "--format", "json")
    entry = json.loads(r.stdout)
    assert entry["license"] == "Llama 3.1 Community License"
    assert entry["computed"]["kv_bytes_per_token_fp16"] == 131072
    assert invoke("gpus", "H200X").exit_code == 1


def test_python_dash_m():
    out = subprocess.run([sys.executable, "-m", "llmsweep", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "llmsweep estimate" in out.stdout


def test_help_does_not_import_the_heavy_stack():
    code = "import sys, llmsweep.cli; print(sorted({'polars', 'pydantic', 'altair'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


# -- serving modes ---------------------------------------------------------------------------------------------------
R1_1P2D = [
    "estimate",
    "--gpu",
    "h200-sxm",
    "--model",
    "deepseek-r1",
    "--precision",
    "fp8",
    "--tp",
    "8",
    "--ep",
    "8",
    "--batch",
    "16",
    "--input-tokens",
    "8192",
    "--output-tokens",
    "1024",
    "--profile",
    "ideal",
    "--mode",
    "disaggregated",
    "--prefill-workers",
    "1",
    "--decode-workers",
    "2",
    "--speculative",
    "mtp",
]


def test_estimate_disaggregated_with_mtp_table():
    r = invoke(*R1_1P2D)
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "  Serving mode                   disaggregated 1P2D, mtp k=1\n" in out
    # 1 + 2 workers of 8 H200: 24 GPUs, more than one NVLink domain (8): the KV cache crosses the NICs.
    # DeepSeek-R1's 8,192-token prompt caches 61 x 576 x 2 bytes x 8,192 = 575,668,224 bytes; one sender on a
    # 50 GB/s NIC at the ideal profile's efficiency 1: 11.51 ms
    assert "  Prefill pool GPUs              8 GPUs\n" in out and "  Decode pool GPUs               16 GPUs\n" in out
    assert "  KV link                        scale-out\n" in out
    assert "  KV transfer                    0.58 GB (0.54 GiB)\n" in out
    assert "  KV transfer time               11.51 ms\n" in out
    # MTP: one drafted token at the profile's acceptance 0.85: E = 1 + 0.85 = 1.85 tokens per step
    assert "  Acceptance                     0.85\n" in out and "  Tokens per step                1.85 tokens\n" in out
    assert "Memory per GPU (a decode worker's)\n" in out and "Prefix cache" not in out and "Draft model" not in out


def test_estimate_disaggregated_with_mtp_json():
    r = invoke(*R1_1P2D, "--prefill-tp", "8", "--prefix-hit-rate", "0.75", "--format", "json")
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)
    assert (row["mode"], row["prefill_workers"], row["decode_workers"], row["prefill_tp"]) == ("disaggregated", 1, 2, 8)
    assert (row["speculative"], row["draft_tokens"], row["acceptance_rate"]) == ("mtp", 1, 0.85)
    assert row["tokens_per_step"] == pytest.approx(1.85) and row["gpus"] == 24
    assert row["prefix_hit_rate"] == 0.75 and row["prefill_new_tokens"] == 8192 / 4


def test_estimate_aggregated_shows_no_mode_sections():
    r = invoke("estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b")
    assert r.exit_code == 0, r.output
    for title in ("Serving mode", "Disaggregated serving", "Speculative decoding", "Prefix cache", "KV link"):
        assert title not in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prefill-workers", "2"], "Error: --prefill-workers is for --mode disaggregated (a prefill pool and a "),
        (["--decode-workers", "2"], "Error: --decode-workers is for --mode disaggregated"),
        (["--acceptance", "0.8"], "Error: --acceptance is for speculative decoding: add --speculative mtp, eagle"),
        (["--speculative", "draft"], "Error: --speculative draft needs --draft-model: the smaller model that drafts"),
        (
            ["--speculative", "eagle", "--draft-model", "llama-3.1-8b"],
            "Error: --draft-model is for --speculative draft; eagle drafts with an EAGLE head",
        ),
        (
            ["--speculative", "mtp"],
            "Error: mtp drafts with the model's own multi-token-prediction module, and meta-llama/Llama-3.1-70B "
            "has none",
        ),
        (
            ["--speculative", "draft", "--draft-model", "llama-3.1-405b"],
            "Error: the draft model meta-llama/Llama-3.1-405B (405.85 B active parameters) is not smaller than "
            "meta-llama/Llama-3.1-70B (70.55 B)",
        ),
        (["--speculative", "draft", "--draft-model", "llama-3.1-8bb"], "Error: unknown model 'llama-3.1-8bb'"),
    ],
)
def test_estimate_serving_mode_errors(args, message):
    r = invoke("estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--tp", "4", *args)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert message in r.output, r.output


@pytest.mark.parametrize(
    "args",
    [["--draft-tokens", "17"], ["--acceptance", "0"], ["--prefix-hit-rate", "1"], ["--mode", "disagg"]]
    # nan compares false with both bounds, so click's FloatRange alone let it through (it ran as acceptance 1)
    + [["--acceptance", "nan"], ["--prefix-hit-rate", "nan"], ["--acceptance", "NaN"]],
)
def test_estimate_serving_mode_options_out_of_range_are_usage_errors(args):
    r = invoke("estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--speculative", "eagle", *args)
    assert r.exit_code == 2 and "Invalid value for" in r.output


def test_estimate_serving_option_bounds_are_the_declared_ranges():
    from llmsweep import cli, limits

    assert limits.RANGES["draft_tokens"].high == cli.MAX_DRAFT_TOKENS
    assert limits.RANGES["workers"].high == cli.MAX_PARALLEL
    # --speculative's choices are the estimator's methods, written out so that --help stays light
    from llmsweep.estimate.speculative import METHODS

    (option,) = [p for p in cli.estimate.params if p.name == "speculative"]
    assert tuple(option.type.choices) == METHODS


def test_an_error_a_library_makes_of_an_interrupt_ends_as_aborted(monkeypatch):
    # pydantic, building a schema when SIGINT lands mid-import, turns the KeyboardInterrupt into its
    # own SchemaError: once a termination signal has arrived, any error ends as click's "Aborted!"
    import click

    from llmsweep import cli

    def interrupted_import():
        try:
            cli._interrupt(2, None)
        except KeyboardInterrupt as e:
            raise RuntimeError("Error building validator") from e

    monkeypatch.setattr(cli, "_interrupted", False)
    with pytest.raises(click.Abort):
        cli._errors_to_exit(interrupted_import)()
    # without a signal the error is a bug and stays one
    monkeypatch.setattr(cli, "_interrupted", False)
    with pytest.raises(RuntimeError):
        cli._errors_to_exit(lambda: (_ for _ in ()).throw(RuntimeError("bug")))()


def test_an_interrupt_waits_while_polars_code_runs(monkeypatch):
    # A KeyboardInterrupt raised in a Python callback that polars' Rust code made (reading a schema)
    # becomes a Rust panic with a backtrace on stderr. So a signal that lands while polars runs (a
    # polars frame on the stack) is raised at the next line of the code that called polars: a trace
    # function on the frames below the outermost polars frame, and on no other.
    from types import SimpleNamespace

    from llmsweep import cli

    traces = []
    monkeypatch.setattr(cli.sys, "settrace", traces.append)
    monkeypatch.setattr(cli, "_interrupted", False)

    def frame(path, back=None):
        return SimpleNamespace(f_code=SimpleNamespace(co_filename=path), f_back=back, f_trace=None, f_trace_lines=False)

    ours = frame("/src/llmsweep/pipeline.py")
    wrapper = frame("/venv/site-packages/polars/lazyframe/frame.py", ours)
    callback = frame("/venv/site-packages/polars/datatypes/classes.py", wrapper)
    library = frame("/usr/lib/python3.11/enum.py", callback)  # what the callback calls
    assert cli._interrupt(15, library) is None  # not raised while polars runs
    (trace,) = traces
    assert cli._interrupted and ours.f_trace is trace and ours.f_trace_lines and wrapper.f_trace is None
    assert trace(callback, "line", None) is None and trace(library, "line", None) is None  # run untraced
    assert trace(frame("/src/llmsweep/x.py", library), "call", None) is None  # and so do new frames
    with pytest.raises(KeyboardInterrupt, match="signal 15"):
        trace(ours, "line", None)  # back in our code: raised there, and tracing ends
    assert traces[-1] is None and ours.f_trace is None
    assert trace(ours, "line", None) is None  # the cleanup unwinding runs is not interrupted again
    with pytest.raises(KeyboardInterrupt, match="signal 2"):
        cli._interrupt(2, ours)  # a signal outside polars is raised at once


def test_a_model_name_longer_than_a_file_name_is_an_unknown_model():
    # the name is tried as a config folder first; a 300-character one is longer than a file name may
    # be (ENAMETOOLONG), which must read as "unknown model", not an OSError
    r = invoke("estimate", "--gpu", "h100-sxm", "--model", "a" * 300)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "unknown model" in r.output


def test_a_folder_without_config_json_says_so(tmp_path):
    r = invoke("estimate", "--gpu", "h100-sxm", "--model", str(tmp_path))
    assert r.exit_code == 1 and "the folder has no config.json" in r.output, r.output


def test_a_misspelt_run_format_names_the_one_meant():
    r = invoke("run", str(ROOT / "sweeps" / "example.yaml"), "--format", "csv,xlxs", "-o", "/nonexistent-never-written")
    assert r.exit_code == 2
    assert "'xlxs' (did you mean xlsx?): choose from csv,parquet,xlsx,html,md" in r.output, r.output


def test_report_format_lists_what_it_accepts():
    # --help listed "html, md or both" while a misspelling was told to "choose from csv,parquet,xlsx,html,md",
    # each of which but html and md it then refused
    r = invoke("report", "--help")
    assert "Comma-separated subset of html,md." in " ".join(r.output.split()), r.output
    estimates = "/nonexistent-never-read/estimates.parquet"
    r = invoke("report", estimates, "--format", "htm")
    assert r.exit_code == 2
    assert "Invalid value for --format: 'htm' (did you mean html?): choose from html,md\n" in r.output, r.output
    r = invoke("report", estimates, "--format", "md,csv,parquet")
    assert r.exit_code == 2
    assert (
        "Invalid value for --format: 'csv,parquet': choose from html,md; `llmsweep run` writes csv and parquet\n"
        in r.output
    ), r.output


def test_format_lists_are_the_pipelines():
    # the CLI repeats them as literals (so --help imports nothing heavy): they must not drift apart
    from llmsweep import cli, pipeline, spec

    assert cli.RUN_FORMATS == pipeline.TABLE_FORMATS + pipeline.REPORT_FORMATS
    assert sorted(cli.RUN_FORMATS) == sorted(spec.FORMATS)
    assert cli.REPORT_FORMATS == pipeline.REPORT_FORMATS


@pytest.mark.parametrize(("command", "fmt"), [("gpus", "JSON"), ("models", "Csv"), ("precisions", "TABLE")])
def test_format_choices_take_any_case_as_run_and_report_do(command, fmt):
    # run --format CSV worked; gpus --format JSON was a usage error
    r = invoke(command, "--format", fmt)
    assert r.exit_code == 0, r.output
    assert r.output == invoke(command, "--format", fmt.lower()).output


def test_diff_format_takes_any_case(tmp_path):
    # the format is accepted; what is wrong is the runs (a usage error before: exit 2)
    r = invoke("diff", str(tmp_path / "old"), str(tmp_path / "new"), "--format", "HTML")
    assert r.exit_code == 1 and "Invalid value for '--format'" not in r.output, r.output


def test_a_context_beyond_the_models_says_the_numbers():
    r = invoke("estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--input-tokens", "200000")
    assert r.exit_code == 0
    # 200,000 + 256 output tokens against Llama-3.1-8B's max_position_embeddings, 131,072
    assert "200,256 tokens of context (input + output) exceed meta-llama/Llama-3.1-8B's maximum, 131,072" in r.output
    assert "Does not run: context_tokens exceeds the model's maximum context" in r.output


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.01134, "0.01134 USD/M tokens"), (1.9712, "1.971 USD/M tokens"), (1234.5, "1,234 USD/M tokens")],
)
def test_a_cost_per_million_tokens_keeps_four_digits(value, shown):
    # a cheap GPU's cost per million tokens (cents) must not read "0.0"
    from llmsweep.present import format_value

    assert format_value("USD/M tokens", value) == shown
