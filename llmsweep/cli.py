"""Command line: parse, call one core function, print. Heavy imports happen inside commands so
`llmsweep --help` answers at once. Exit codes: 0 success, 1 bad input or failed run, 2 usage."""

from __future__ import annotations

import contextlib
import json
import math
import signal
import sys
from functools import wraps
from pathlib import Path

import click

from llmsweep import __version__
from llmsweep.errors import LlmsweepError, did_you_mean, printable

# --format of each command: what it lists is what it accepts (any case). run's and report's are
# pipeline.TABLE_FORMATS + REPORT_FORMATS (= a sweep's report.formats) and REPORT_FORMATS, repeated
# as literals so `llmsweep --help` imports nothing heavy (tests/test_cli.py checks they agree)
RUN_FORMATS = ("csv", "parquet", "xlsx", "html", "md")
REPORT_FORMATS = ("html", "md")
FORMATS = click.Choice(["table", "json", "csv"], case_sensitive=False)
DIFF_FORMATS = click.Choice(["md", "html", "csv"], case_sensitive=False)
# the ranges of llmsweep.limits, repeated as literals so `llmsweep --help` imports nothing heavy
MAX_TOKENS, MAX_BATCH, MAX_PARALLEL, MAX_DRAFT_TOKENS = 10_000_000, 1_000_000, 1024, 16


def _finite(row: dict) -> dict:
    """NaN / infinity become null: JSON has no such numbers (a last guard; inputs are range-checked)."""
    return {k: None if isinstance(v, float) and v - v != 0 else v for k, v in row.items()}


class UserError(click.ClickException):
    """Printed as `Error: <message>` on stderr; exit code 1."""

    exit_code = 1


MAX_PROBLEMS_SHOWN = 50  # problems of one sweep file printed; the rest are counted


def _message(e: LlmsweepError) -> str:
    """What the user sees: control characters from the input shown as '?' (no escape sequence
    reaches the terminal), one line per problem, at most MAX_PROBLEMS_SHOWN of them."""
    from llmsweep.errors import SpecError

    if isinstance(e, SpecError):
        return "\n".join(e.lines(MAX_PROBLEMS_SHOWN))
    return printable(e)


def _errors_to_exit(fn):
    """Turn LlmsweepError into a one-line message and exit 1 (no traceback)."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except LlmsweepError as e:
            raise UserError(_message(e)) from None
        except MemoryError:
            raise UserError(
                "out of memory: the inputs need more memory than this machine (or its limits) allows; "
                "use a smaller sweep or file, or a larger machine"
            ) from None
        except Exception:
            if _interrupted:  # a library turned the interrupt into its own error (pydantic, mid-import)
                raise click.Abort() from None
            raise

    return wrapper


class BatchType(click.ParamType):
    name = "N|max"

    def convert(self, value, param, ctx):
        if isinstance(value, int) or str(value).strip().lower() == "max":
            return value if isinstance(value, int) else "max"
        try:
            n = int(value)
        except ValueError:
            self.fail(f"{value!r} is not a positive integer or 'max'", param, ctx)
        if not 1 <= n <= MAX_BATCH:
            self.fail(f"{n} is not a positive integer up to {MAX_BATCH:,} or 'max'", param, ctx)
        return n


class FiniteRange(click.FloatRange):
    """click.FloatRange that refuses nan (which compares false with either bound, so FloatRange lets it
    through)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            low, high = "<" if self.min_open else "<=", "<" if self.max_open else "<="
            self.fail(f"{value!r} is not a number in the range {self.min:g}{low}x{high}{self.max:g}", param, ctx)
        return number


_interrupted = False  # a termination signal arrived: what fails after it is its consequence


def _in_polars(frame) -> bool:
    """True when `frame` runs polars' own Python code."""
    name = getattr(getattr(frame, "f_code", None), "co_filename", None) or ""
    return "/polars/" in name.replace("\\", "/")


def _interrupt(signum, frame):
    """Raise KeyboardInterrupt where the signal lands, unless polars is running (a polars frame on
    the stack): the code may be a callback from polars' Rust code (reading a schema with a
    categorical column calls back into Python), which makes a panic of an exception raised there and
    prints a Rust backtrace. Then the interrupt is raised at the next line that runs in the code that
    called polars, the frames below its outermost one (a trace function on those frames only)."""
    global _interrupted
    _interrupted = True
    outermost, f = None, frame
    while f is not None:
        outermost = f if _in_polars(f) else outermost
        f = f.f_back
    if outermost is None:
        raise KeyboardInterrupt(f"signal {signum}")

    traced = []

    def trace(f, event, _arg):
        if event == "call" or not any(f is each for each in traced):
            return None  # new frames run untraced (polars may call a library's Python code)
        if event == "line":
            sys.settrace(None)
            for each in traced:  # the cleanup that unwinding runs must not be interrupted again
                each.f_trace = None
            traced.clear()
            raise KeyboardInterrupt(f"signal {signum}")
        return trace

    below = outermost.f_back
    while below is not None:
        below.f_trace, below.f_trace_lines = trace, True
        traced.append(below)
        below = below.f_back
    sys.settrace(trace)


def _handle_termination() -> None:
    """SIGTERM and SIGHUP end a command the way Ctrl-C (SIGINT) does: the half-written output folder
    is removed and previous results stay as they were. All three are noted, so that an error a
    library makes of the interrupt (pydantic building a schema when it lands mid-import) also ends
    as "Aborted!", not a traceback."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            with contextlib.suppress(ValueError):  # not the main thread (embedded use): leave it
                signal.signal(sig, _interrupt)


def _note(msg: str | None) -> None:
    if msg:
        click.echo(f"note: {printable(msg)}", err=True)


def _say(text: object, keep_lines: bool = False, **kwargs) -> None:
    """click.echo for text that may hold input data (names, paths): control characters as '?'."""
    click.echo(printable(text, keep_lines), **kwargs)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="llmsweep")
def main() -> None:
    """First-principles LLM inference estimates: will a model fit, how fast will it run, how many
    GPUs are needed and what will it cost.

    \b
    Examples:
      llmsweep run sweeps/example.yaml          # a grid -> out/example/ (reports, CSV, plan)
      llmsweep estimate --gpu "H100 SXM" --model meta-llama/Llama-3.1-8B --precision bf16
      llmsweep calibrate my-benchmarks.csv --fit
      llmsweep gpus
    """
    _handle_termination()
    from llmsweep.vega import ensure_home

    ensure_home()  # no HOME and no passwd entry: libraries that look it up at import must not fail


@main.command()
@click.option("--gpu", required=True, help="GPU id or name, e.g. h100-sxm, 'RTX 4090', 'M2 Ultra'.")
@click.option("--model", required=True, help="Hugging Face id or alias, or a local config.json path.")
@click.option(
    "--engine",
    default="auto",
    show_default=True,
    help="Serving engine: vllm, sglang, trtllm, llama.cpp, mlx, exllamav2, generic; auto = by GPU.",
)
@click.option(
    "--precision",
    default=None,
    help="Weight format (see `llmsweep precisions`). Default: the model name's quantization suffix "
    "(-FP8, -AWQ, -NVFP4, ...), else the checkpoint's own format, else bf16.",
)
@click.option(
    "--kv-precision",
    default="auto",
    show_default=True,
    help="KV-cache format; auto = the engine's choice: fp8 for NVFP4 and ModelOpt FP8 checkpoints, and on SGLang "
    "for fp8/fp4 MLA models; else 16-bit.",
)
@click.option("--tp", default=1, show_default=True, type=click.IntRange(1, MAX_PARALLEL), help="Tensor-parallel GPUs.")
@click.option(
    "--pp", default=1, show_default=True, type=click.IntRange(1, MAX_PARALLEL), help="Pipeline-parallel GPUs."
)
@click.option(
    "--ep", default=1, show_default=True, type=click.IntRange(1, MAX_PARALLEL), help="Expert-parallel GPUs (MoE)."
)
@click.option(
    "--dp-attention",
    default=1,
    show_default=True,
    type=click.IntRange(1, MAX_PARALLEL),
    help="Attention data-parallel groups of tp GPUs each (MoE); the replica has tp x pp x dp_attention GPUs.",
)
@click.option("--batch", default="1", show_default=True, type=BatchType(), help="Concurrent sequences, or max.")
@click.option(
    "--input-tokens", default=1024, show_default=True, type=click.IntRange(0, MAX_TOKENS), help="Prompt length."
)
@click.option(
    "--output-tokens",
    default=256,
    show_default=True,
    type=click.IntRange(0, MAX_TOKENS),
    help="Tokens generated per request.",
)
@click.option(
    "--profile",
    default="default",
    show_default=True,
    help="Efficiency profile: ideal (pure roofline), default, or a profile file.",
)
@click.option(
    "--mode",
    type=click.Choice(["aggregated", "disaggregated"]),
    default="aggregated",
    show_default=True,
    help="aggregated: prefill and decode on the same GPUs; disaggregated: a prefill pool and a decode pool, "
    "the KV cache moved between them (--tp, --pp, --ep, --dp-attention are then a decode worker's).",
)
@click.option("--prefill-workers", type=click.IntRange(1, MAX_PARALLEL), help="Disaggregated: prefill workers (1).")
@click.option("--decode-workers", type=click.IntRange(1, MAX_PARALLEL), help="Disaggregated: decode workers (1).")
@click.option(
    "--prefill-tp", type=click.IntRange(1, MAX_PARALLEL), help="Disaggregated: a prefill worker's tp (default: --tp)."
)
@click.option(
    "--prefill-pp", type=click.IntRange(1, MAX_PARALLEL), help="Disaggregated: a prefill worker's pp (default: --pp)."
)
@click.option(
    "--prefill-ep", type=click.IntRange(1, MAX_PARALLEL), help="Disaggregated: a prefill worker's ep (default: --ep)."
)
@click.option(
    "--prefill-dp-attention",
    type=click.IntRange(1, MAX_PARALLEL),
    help="Disaggregated: a prefill worker's attention DP groups (default: --dp-attention).",
)
@click.option(
    "--speculative",
    type=click.Choice(["none", "mtp", "eagle", "draft"]),
    default="none",
    show_default=True,
    help="Speculative decoding: mtp (the model's own multi-token-prediction module: DeepSeek-V3/R1, GLM-5, ...), "
    "eagle (an EAGLE draft head) or draft (a smaller model, --draft-model).",
)
@click.option(
    "--draft-tokens",
    type=click.IntRange(1, MAX_DRAFT_TOKENS),
    help="Tokens drafted per sequence and step (default: mtp the engine's own depth, SGLang 3, TensorRT-LLM "
    "and vLLM 1; eagle and draft 3).",
)
@click.option(
    "--acceptance",
    type=FiniteRange(0, 1, min_open=True),
    help="Chance a drafted token is accepted (default: the profile's mtp_acceptance, eagle_acceptance or "
    "draft_acceptance; `default` ships mtp fitted on random-token benchmark prompts, about 0.5, and 0.7 "
    "for the others).",
)
@click.option(
    "--draft-model", help="--speculative draft: the draft model (an id or alias with fewer active parameters)."
)
@click.option(
    "--prefix-hit-rate",
    type=FiniteRange(0, 1, max_open=True),
    default=0.0,
    show_default=True,
    help="Share of prompt tokens served from the prefix cache: prefill computes the rest.",
)
@click.option(
    "--prefix-shared",
    is_flag=True,
    help="The cached prefix is common to every request (a system prompt): held once, not once per sequence.",
)
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@_errors_to_exit
def estimate(fmt, **axes):
    """Estimate one configuration: memory, prefill/TTFT, decode speed, throughput, roofline.

    \b
    Examples:
      llmsweep estimate --gpu "H100 SXM" --model meta-llama/Llama-3.1-70B --tp 2
      llmsweep estimate --gpu rtx-4090 --model llama-3.1-8b --precision q4_k_m --batch max
      llmsweep estimate --gpu l40s --model ./my-model/config.json --format json
      llmsweep estimate --gpu gb200 --model deepseek-r1 --precision fp8 --tp 4 --dp-attention 8 --ep 32 --batch 256
      llmsweep estimate --gpu h200-sxm --model deepseek-r1 --precision fp8 --tp 8 --ep 8 --batch 64 \\
        --mode disaggregated --prefill-workers 1 --decode-workers 2 --speculative mtp
      llmsweep estimate --gpu h100-sxm --model llama-3.1-70b --precision fp8 --tp 4 \\
        --speculative draft --draft-model llama-3.1-8b --prefix-hit-rate 0.5
    """
    from llmsweep.single import estimate_one

    if axes["input_tokens"] + axes["output_tokens"] == 0:
        raise LlmsweepError("--input-tokens and --output-tokens are both 0; give at least one token")
    result = estimate_one(**axes)
    for n in result.notes:
        _note(n)
    if fmt == "json":
        click.echo(json.dumps(_finite(result.row), indent=2, default=str, allow_nan=False))
    elif fmt == "csv":
        from llmsweep.export import safe_csv_frame

        click.echo(safe_csv_frame(result.frame).write_csv(), nl=False)
    else:
        _say(result.text(), keep_lines=True)


def _progress(quiet: bool):
    """A progress bar with an ETA on stderr, only for a person watching a terminal (not when piped)."""
    if quiet or not sys.stderr.isatty():
        return None
    from llmsweep.progress import ProgressBar

    return ProgressBar(sys.stderr)


def _template_dir(ctx, param, value):
    """A folder (not /dev/null or a file) whose templates are regular files of a sane size."""
    if value is None:
        return None
    from llmsweep.limits import UnreadableFile, check_template_folder

    try:
        check_template_folder(value)
    except NotADirectoryError:
        raise click.BadParameter(f"{printable(value)!r} is not a folder (give a folder of .j2 templates)") from None
    except UnreadableFile as e:
        raise UserError(printable(e)) from None
    return value


TEMPLATE_DIR = click.option(
    "--template-dir",
    type=click.Path(file_okay=False, exists=True),
    callback=_template_dir,
    default=None,
    help="Folder of jinja2 templates that replace the packaged ones (same names). A template folder is "
    "code: use only one you trust (templates run in jinja2's sandbox, which limits but does not remove the risk).",
)


def _formats(value: str | None, choices: tuple[str, ...] = RUN_FORMATS) -> list[str] | None:
    """A comma-separated --format: each item one of `choices` (any case), each once, in order."""
    if value is None:
        return None
    items = list(dict.fromkeys(v.strip().lower() for v in value.split(",") if v.strip()))
    bad = [v for v in items if v not in choices]
    if bad or not items:
        hints = [h for b in bad for h in did_you_mean(b, choices, n=1)]
        meant = f" (did you mean {', '.join(hints)}?)" if hints else ""
        elsewhere = [b for b in bad if b in RUN_FORMATS]  # report: tables are run's to write
        where = f"; `llmsweep run` writes {' and '.join(elsewhere)}" if elsewhere else ""
        raise click.BadParameter(
            f"{','.join(bad) or value!r}{meant}: choose from {','.join(choices)}{where}", param_hint="--format"
        )
    return items


@main.command()
@click.argument("sweep", type=click.Path(dir_okay=True, path_type=str))
@click.option("-o", "--out", "out_root", default="out", show_default=True, help="Folder that receives <name>/.")
@click.option(
    "--format", "fmt", default=None, help=f"Comma-separated subset of {','.join(RUN_FORMATS)} (default: the sweep's)."
)
@click.option("--profile", default=None, help="Override the sweep's efficiency profile (name or file).")
@click.option(
    "--max-rows",
    default=5_000_000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Refuse grids larger than this.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@TEMPLATE_DIR
@_errors_to_exit
def run(sweep, out_root, fmt, profile, max_rows, quiet, template_dir):
    """Expand a sweep file into estimates and write them to OUT/<name>/.

    Writes estimates.csv, .parquet and .xlsx (sheets options, plan, estimates), plan.csv and
    plan.parquet (every option at its best batch, ranked), options.csv (one row per GPU x offer, for
    finance), report.html (self-contained, works offline), report.md with charts/*.svg, and
    manifest.json, into a folder that appears whole or not at all, and prints the paths it wrote.
    On a terminal a progress bar with an ETA shows on stderr (-q: none).

    \b
    Examples:
      llmsweep run sweeps/example.yaml
      llmsweep run sweeps/procurement.yaml --format csv,parquet -o /tmp/out
      llmsweep run sweeps/long-context.yaml --profile ideal
    """
    from llmsweep.pipeline import run as run_sweep

    bar = _progress(quiet)
    try:
        result = run_sweep(sweep, out_root, _formats(fmt), profile, max_rows, bar, template_dir)
    finally:
        if bar is not None:
            bar.close()
    for n in result.notes:
        _note(n)
    for f in result.files:
        _say(f)
    if not quiet:
        click.echo(f"{result.rows:,} configuration{'s' * (result.rows != 1)}", err=True)


@main.command()
@click.argument("sweep", type=click.Path(dir_okay=True, path_type=str))
@click.option("--max-rows", default=5_000_000, show_default=True, type=click.IntRange(min=1))
@_errors_to_exit
def validate(sweep, max_rows):
    """Check a sweep file: every problem at once, or "OK: N configurations".

    \b
    Examples:
      llmsweep validate sweeps/example.yaml
    """
    from dataclasses import replace

    from llmsweep.pipeline import count_rows
    from llmsweep.spec import load

    s = load(sweep, max_rows=max_rows)
    for n in s.notes:
        _note(n)
    rows = count_rows(s)  # after exclusions: the count `run` reports
    # counted, not the axes' product (fp4 and nvfp4 on an NVIDIA GPU are one format, one row)
    unexcluded = count_rows(replace(s, exclude=())) if s.exclude else rows
    before = f" ({unexcluded:,} before exclusions)" if rows != unexcluded else ""
    click.echo(f"OK: {rows:,} configuration{'s' * (rows != 1)}{before}")


@main.command()
@click.argument("estimates", type=click.Path(dir_okay=False, path_type=str))
@click.option(
    "--format",
    "fmt",
    default=",".join(REPORT_FORMATS),
    show_default=True,
    help=f"Comma-separated subset of {','.join(REPORT_FORMATS)}.",
)
@TEMPLATE_DIR
@_errors_to_exit
def report(estimates, fmt, template_dir):
    """Render report.html / report.md again from saved results, without recomputing.

    ESTIMATES is the estimates.parquet a run wrote; manifest.json must sit beside it (and
    plan.parquet, for the recommendations). Each report is replaced whole, or left as it was
    when anything fails; only reports llmsweep wrote there (and nobody changed since) are
    replaced, and other files in the folder stay as they are.

    \b
    Examples:
      llmsweep report out/example/estimates.parquet
      llmsweep report out/example/estimates.parquet --format md --template-dir my-templates/
    """
    from llmsweep.pipeline import rerender

    for path in rerender(estimates, _formats(fmt, REPORT_FORMATS), template_dir):
        _say(path)


@main.command()
@click.argument("measurements", type=click.Path(dir_okay=False, path_type=str))
@click.option("-o", "--out", "out_dir", default=None, help="Folder for the results (default out/calibration/<file>).")
@click.option("--profile", default="default", show_default=True, help="Profile to compare (and start the fit) with.")
@click.option(
    "--fit/--no-fit",
    default=False,
    show_default=True,
    help="Fit the profile (cross-validated by source) and write profile.yaml.",
)
@click.option("--gpu", default=None, help="GPU of a vLLM result (the file does not name it).")
@click.option("--model", default=None, help="Model of a llama-bench result (the file does not name it).")
@click.option("--precision", default=None, help="Weight format, where the file does not say.")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True, help="Tensor parallel of a vLLM run.")
@click.option(
    "--batch",
    type=click.IntRange(1, MAX_BATCH),
    default=None,
    help="Client concurrency of a run whose file does not state it (AIPerf CSV, vLLM without max_concurrency).",
)
@_errors_to_exit
def calibrate(measurements, out_dir, profile, fit, gpu, model, precision, tp, batch):
    """Compare estimates with measured benchmarks; with --fit, fit an efficiency profile.

    Reads the measured-dev.csv schema, vLLM benchmark_serving JSON results and llama-bench
    JSON/CSV output. Writes comparison.csv (id, metric, measured, estimated, ratio and the
    configuration; estimated with the profile before any fitting) and unmapped.csv (rows that
    could not be used, with the reason), and prints error summaries per metric and per source.
    With --fit also profile.yaml (for run/estimate --profile FILE) and out_of_sample.csv.

    \b
    Examples:
      llmsweep calibrate my-benchmarks.csv
      llmsweep calibrate results/vllm-run.json --gpu h100-sxm --model meta-llama/Llama-3.1-8B --precision fp8
      llmsweep calibrate llama-bench.json --model meta-llama/Llama-3.1-8B --fit -o out/cal
    """
    from pathlib import Path

    from llmsweep.calibrate import run_calibration
    from llmsweep.outfolder import folder_name

    folder = Path(out_dir) if out_dir else Path("out") / "calibration" / folder_name(measurements)
    defaults = {"gpu": gpu, "model": model, "precision": precision, "tp": tp, "batch": batch}
    report = run_calibration(measurements, folder, profile, fit, defaults)
    for line in report.lines:
        _say(line)


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("-o", "--out", "site_dir", required=True, help="Folder of the site (replaced whole, or left as it was).")
@_errors_to_exit
def publish(runs, site_dir):
    """Publish runs as a static site that works offline: an index over every run, each report.

    RUNS are run folders (out/<name>) or folders of runs (out). SITE_DIR/index.html lists every run
    (title, when it ran, sweep file and hash, llmsweep version, GPUs, the answer per model) with
    search and filters; each report is copied with a link back. SITE_DIR is replaced whole or not
    at all, and only when it is empty or a site publish wrote.

    \b
    Examples:
      llmsweep publish out -o site
      llmsweep publish out/chatbot-2027q1 out/chatbot-2026q4 -o /srv/www/llmsweep
    """
    from llmsweep.publish import publish as publish_site

    result = publish_site(list(runs), site_dir)
    _say(result.index)
    click.echo(f"{len(result.runs):,} run{'s' if len(result.runs) != 1 else ''} published", err=True)


@main.command()
@click.argument("old_run", type=click.Path(path_type=str))
@click.argument("new_run", type=click.Path(path_type=str))
@click.option("--format", "fmt", type=DIFF_FORMATS, default="md", show_default=True)
@click.option(
    "-o", "--out", "out_file", default=None, help="Write to this file (new, or one diff wrote) instead of printing."
)
@_errors_to_exit
def diff(old_run, new_run, fmt, out_file):
    """What changed between two runs: inputs, catalog facts, profile, version, and the answer.

    OLD_RUN and NEW_RUN are folders `llmsweep run` wrote. Lists every changed input (grid, prices,
    targets, traffic, ...) and, per model x GPU x offer, the rank, GPUs needed, USD per month, TCO,
    TTFT and tokens/s per user, old and new and the change; unchanged options are left out.

    \b
    Examples:
      llmsweep diff out-2026q4/chatbot out/chatbot
      llmsweep diff old/chatbot out/chatbot --format html -o changes.html
      llmsweep diff old/chatbot out/chatbot --format csv > changes.csv
    """
    from llmsweep.diff import diff as diff_runs

    text = diff_runs(old_run, new_run).render(fmt)
    if out_file:
        from llmsweep.diff import written_by_diff
        from llmsweep.export import write_text_atomic
        from llmsweep.outfolder import check_output_file

        check_output_file(Path(out_file), written_by_diff, "a diff", keep_out=(Path(old_run), Path(new_run)))
        try:
            write_text_atomic(Path(out_file), text)
        except OSError as e:
            raise UserError(f"{printable(out_file)}: cannot write it: {e.strerror or e}") from None
        _say(out_file)
    elif fmt == "md":
        _say(text, keep_lines=True)
    else:
        click.echo(text, nl=False)


@main.command()
def schema():
    """Print the JSON Schema of the sweep file, for editors.

    \b
    Examples:
      llmsweep schema > sweep.schema.json
    """
    from llmsweep.spec import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


def _catalog_command(kind: str):
    @click.argument("name", required=False)
    @click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
    @_errors_to_exit
    def command(name, fmt):
        from llmsweep import listing

        text = listing.render(kind, name, fmt)
        if fmt == "table":  # JSON escapes control characters itself; CSV is data, kept byte for byte
            _say(text, keep_lines=True)
        else:
            click.echo(text, nl=fmt != "csv")

    return command


main.command(
    "gpus",
    help="List the GPU catalog, or show one GPU in full with its sources.\n\n\b\nExamples:\n"
    "  llmsweep gpus\n  llmsweep gpus 'H100 SXM'\n  llmsweep gpus --format csv",
)(_catalog_command("gpu"))
main.command(
    "models",
    help="List the model catalog, or show one model in full with its sources.\n\n\b\nExamples:\n"
    "  llmsweep models\n  llmsweep models deepseek-ai/DeepSeek-V3\n  llmsweep models ./config.json",
)(_catalog_command("model"))
main.command(
    "precisions",
    help="List weight/KV formats with bytes per weight, compute dtype and sources.\n\n\b\nExamples:\n"
    "  llmsweep precisions\n  llmsweep precisions q4_k_m --format json",
)(_catalog_command("precision"))
