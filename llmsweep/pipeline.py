"""The main job: a sweep file -> estimates -> files in out/<name>/.

`compute(sweep)` is pure (a lazy frame, no I/O); `run(...)` writes the outputs atomically and
returns what it wrote.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from llmsweep import __version__, plan
from llmsweep.about import about_lines
from llmsweep.catalog.engines import AUTO, default_engine
from llmsweep.columns import PLAN_EXPORTED, SCHEMA, higher_is_better
from llmsweep.errors import LlmsweepError
from llmsweep.estimate import select_exported
from llmsweep.export import XLSX_MAX_ROWS, write_csv, write_manifest, write_parquet, write_xlsx
from llmsweep.finance import options_table, rent_statement
from llmsweep.grid import grid_parts, model_precisions
from llmsweep.outfolder import atomic_folder
from llmsweep.report import workloads as report_workloads
from llmsweep.report import write_reports
from llmsweep.spec import DEFAULT_MAX_ROWS, Sweep, load

TABLE_FORMATS = ("csv", "parquet", "xlsx")
REPORT_FORMATS = ("html", "md")
CHUNK_ROWS = 1_000_000  # rows estimated at a time when writing: bounds memory on huge grids
IN_MEMORY_ROWS = 2_000_000  # up to this many rows the estimates are held in memory (about 1.5 GB)
Progress = Callable[[str, float], None]  # (what is being done, share of the run done when it starts)


def compute(sweep: Sweep, chunk_rows: int | None = None) -> pl.LazyFrame:
    """The estimates of every configuration in the sweep, with cost, SLO and capacity columns
    (exported columns, declared order)."""
    parts = grid_parts(sweep.catalog, sweep.axes, sweep.profile, sweep.exclude, sweep.contexts)
    return select_exported(plan.add_plan_columns(parts.estimate(chunk_rows), plan.plan_inputs(sweep)))


@dataclass(frozen=True)
class Plan:
    options: pl.DataFrame  # plan.csv: every option at its slo_batch, ranked
    rank_by: str  # the column ranked by (rank_by, or a fallback)
    notes: tuple[str, ...]
    sensitivity: dict[str, list[dict]]  # per model: the top option against the runner-up


def compute_plan(sweep: Sweep) -> Plan:
    """Every hardware option at the largest batch that meets the targets, ranked, and how robust
    each model's top recommendation is."""
    inputs = plan.plan_inputs(sweep)
    axes = plan.search_axes(sweep.axes, inputs.worker_search)  # worker counts the sweep leaves to the plan
    parts = grid_parts(sweep.catalog, axes, sweep.profile, sweep.exclude, sweep.contexts)
    base, searched = plan.search(plan.candidates(parts, inputs.worker_search).collect(), inputs)
    opts = plan.options(base.lazy(), inputs)
    if opts.height == 0:
        return Plan(opts, sweep.spec.rank_by, (), {})
    column, note = plan.rank_column(opts, sweep.spec.rank_by, inputs)
    ranked = plan.rank(opts, column)
    keys = list(plan.OPTION_IDENTITY)
    # sensitivity for the workloads the reports recommend for (all pairs when there are few)
    pairs = sorted(ranked.select("input_tokens", "output_tokens").unique().rows())
    load = sweep.spec.workload
    shown, _ = report_workloads(pairs, (load.input_tokens, load.output_tokens) if load else (None, None))
    top2 = ranked.filter(pl.col("rank") <= 2).sort([*plan.WORKLOAD_KEYS, "rank"])
    pairs, rivals = {}, {}
    for (model, s_in, s_out), group in top2.group_by(plan.WORKLOAD_KEYS, maintain_order=True):
        if group.height == 2 and (s_in, s_out) in shown:
            pair = group.select(*keys, pl.col("offer").cast(pl.String).alias(plan.WANT_OFFER)).with_row_index("_pair")
            found = base.join(pair, on=keys, nulls_equal=True).sort("_pair").drop("_pair")
            key = f"{model}|{s_in}|{s_out}"
            pairs[key] = found
            rival = plan.rival(ranked, group.row(0, named=True), column)
            if rival is not None:
                rivals[key] = rival
    sens = plan.sensitivity(pairs, inputs, column, rivals) if pairs else {}
    # plan.csv lists what can run; the rest stays in estimates.csv with its reason
    exported = ranked.filter(pl.col("fits")).select([pl.col(n).cast(SCHEMA[n]) for n in PLAN_EXPORTED])
    notes = [note] if note else []
    if searched.candidates:
        notes.append(searched.note())
    unmet = ranked.group_by(plan.WORKLOAD_KEYS, maintain_order=True).agg(
        pl.col("rank").is_not_null().any().alias("met"),
        pl.col("fits").any().alias("fits"),
        pl.col("reason").drop_nulls().unique().sort().alias("reasons"),
        (pl.col("slo_miss").cast(pl.String) == plan.UNSIZABLE).any().alias("unsizable"),
    )
    for model, s_in, s_out, _met, fits, reasons, unsizable in unmet.filter(~pl.col("met")).rows():
        other = [r for r in reasons if not r.startswith("does not fit")]  # not (only) memory: say why
        why = "meets the latency targets at any batch" if fits else "fits in memory"
        if unsizable:
            why = "can serve the workload (it needs more than 10^12 replicas: no fleet can be sized)"
        if not fits and other:
            why = "can run (" + "; ".join(other) + ")"
        notes.append(f"no option for {model} ({s_in} in, {s_out} out) {why}; none is recommended")
    return Plan(exported, column, tuple(notes), sens)


def manifest(sweep: Sweep, rows: int, files: Sequence[str], notes: Sequence[str], the_plan: Plan) -> dict:
    """What was run, with what, from which facts: enough to reproduce and audit the result."""
    cat = sweep.catalog
    return {
        "llmsweep_version": __version__,
        "polars_version": pl.__version__,
        "python_version": platform.python_version(),
        "sweep": {
            "name": sweep.spec.name,
            "file": Path(sweep.file).name,
            "sha256": sweep.sha256,
            "content": sweep.text,
        },
        "profile": {"name": sweep.profile_name, **sweep.profile.model_dump()},
        "rows": rows,
        "grid_size_before_exclusions": sweep.size,
        "files": list(files),
        "notes": list(notes),
        "engines": {
            g: list(dict.fromkeys(default_engine(cat.gpu(g).family) if e == AUTO else e for e in sweep.axes.engine))
            for g in sweep.axes.gpu
        },
        "rank_by": the_plan.rank_by,
        # each speculative setting as the sweep gives it (acceptance None: the profile's default is assumed)
        "speculative": [
            {
                "label": s.label,
                "method": s.method,
                "draft_tokens": s.draft_tokens,
                "acceptance": s.acceptance,
                "tokens_per_step": s.tokens_per_step,
                "draft_model": s.draft_model,
            }
            for s in sweep.axes.speculative
        ],
        "prices": {f"{g} {o.offer}": vars(o) for g, os in plan.plan_inputs(sweep).offers.items() for o in os},
        "finance": {
            "horizon_years": sweep.spec.horizon_years,
            "rent_paid": sweep.spec.rent_paid,
            "statement": rent_statement(sweep.spec.rent_paid, sweep.spec.horizon_years),
        },
        "sensitivity": the_plan.sensitivity,
        "catalog": {
            "gpus": {g: _entry(cat.gpu(g)) for g in sweep.axes.gpu},
            "models": {m: _entry(cat.model(m)) for m in sweep.axes.model},
            "precisions": {
                p: _entry(cat.precision(p)) for p in dict.fromkeys(p for _, p in model_precisions(cat, sweep.axes))
            },
        },
    }


def _entry(obj) -> dict:
    data = obj.model_dump(exclude_none=True)
    keep = (
        "name",
        "license",
        "bits_per_weight",
        "compute_dtype",
        "memory_gb",
        "memory_bandwidth_gbps",
        "family",
        "dense_tflops",
        "reference_id",
        "sources",
        "derived",
    )
    return {k: data[k] for k in keep if k in data}


@dataclass(frozen=True)
class RunResult:
    folder: Path
    files: tuple[Path, ...]
    rows: int
    notes: tuple[str, ...]


def run(
    path: str | Path,
    out_root: str | Path = "out",
    formats: Sequence[str] | None = None,
    profile: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    progress: Progress | None = None,
    template_dir: str | Path | None = None,
) -> RunResult:
    """Validate the sweep, estimate it and write out/<name>/ atomically. Formats default to the
    sweep's `report.formats`."""
    say = progress or (lambda _msg, _done: None)
    sweep = load(path, max_rows=max_rows, profile=profile)
    wanted = list(dict.fromkeys(formats or sweep.spec.report.formats))
    require_renderer([f for f in wanted if f in REPORT_FORMATS])
    notes = [*sweep.notes, *plan.plan_inputs(sweep).notes]
    say(f"estimating up to {sweep.size:,} configurations", 0.0)
    target = Path(out_root) / sweep.spec.name
    with atomic_folder(target, "run", run_inputs(sweep, profile, template_dir)) as tmp:
        tables = [f for f in wanted if f in TABLE_FORMATS]
        parquet = tmp / "estimates.parquet"
        say("estimating and writing estimates.parquet", 0.02)
        if sweep.size <= IN_MEMORY_ROWS:  # small enough to hold: estimate once, write every table from memory
            table = compute(sweep).collect().lazy()
            write_parquet(table, parquet)
        else:  # stream a chunk of layouts at a time; the other tables read the file, not the grid again
            write_parquet(compute(sweep, CHUNK_ROWS), parquet)
            table = pl.scan_parquet(parquet)
        rows = table.select(pl.len()).collect().item()
        if rows == 0:
            raise LlmsweepError(f"{sweep.file}: the exclusion rules leave no configuration to estimate")
        say("ranking options at the largest batch that meets the targets", 0.45)
        the_plan = compute_plan(sweep)
        opts = the_plan.options
        notes.extend(the_plan.notes)
        notes = list(dict.fromkeys(notes))  # each note once, whichever stage found it
        write_parquet(opts.lazy(), tmp / "plan.parquet")
        # options.csv: one row per GPU x offer, the best layout for it, in human units
        option_table = options_table(opts, the_plan.rank_by, higher_is_better(the_plan.rank_by))
        if "csv" in tables:
            say("writing estimates.csv, plan.csv and options.csv", 0.75)
            write_csv(table, tmp / "estimates.csv")
            write_csv(opts.lazy(), tmp / "plan.csv")
            write_csv(option_table.lazy(), tmp / "options.csv")
        sheet_rows = {"estimates": rows, "plan": opts.height, "options": option_table.height}
        too_long = {name: n for name, n in sheet_rows.items() if n > XLSX_MAX_ROWS}
        if "xlsx" in tables and formats is None and too_long.keys() - {"estimates"}:  # the answer itself is too long
            what = ", ".join(f"{name} has {n:,} rows" for name, n in too_long.items())
            notes.append(f"estimates.xlsx not written: {what}, more than the {XLSX_MAX_ROWS:,}-row limit of a sheet")
            tables.remove("xlsx")
        elif "xlsx" in tables:
            say("writing estimates.xlsx", 0.85)
            # the options sheet keeps every digit (its number formats round what it shows)
            sheets = {
                "options": options_table(opts, the_plan.rank_by, higher_is_better(the_plan.rank_by), False),
                "plan": opts,
            }
            if "estimates" in too_long and formats is None:  # finance still gets the answer, without the grid
                notes.append(
                    f"estimates.xlsx has no estimates sheet: {rows:,} rows, more than the {XLSX_MAX_ROWS:,}-row "
                    "limit of a sheet (its options and plan sheets are there; estimates.csv and .parquet have "
                    "every row)"
                )
            else:
                sheets["estimates"] = table.collect()
            # the About sheet first: the run as manifest.json and the reports state it (its notes are complete
            # here: nothing after this adds one)
            about = about_lines(manifest(sweep, rows, [], notes, the_plan), {n: f.columns for n, f in sheets.items()})
            write_xlsx(sheets, tmp / "estimates.xlsx", about, sweep.spec.title or sweep.spec.name)
        written = ["estimates.csv", "plan.csv", "options.csv"] if "csv" in tables else []
        written += [f"estimates.{f}" for f in ("parquet", "xlsx") if f in tables]
        written.append("plan.parquet")
        reports = [f for f in wanted if f in REPORT_FORMATS]
        if reports:
            say("writing " + " and ".join(f"report.{f}" for f in reports), 0.9)
            written += write_reports(
                tmp, table, opts, manifest(sweep, rows, [], notes, the_plan), reports, template_dir
            )
        if "parquet" not in tables:
            parquet.unlink()
        written.append("manifest.json")
        write_manifest(manifest(sweep, rows, written, notes, the_plan), tmp / "manifest.json")
    return RunResult(target, tuple(target / f for f in written), rows, tuple(notes))


def count_rows(sweep: Sweep) -> int:
    """Configurations after exclusions (and the context axis): what `run` estimates, counted without
    estimating them (disaggregated rows exist only estimated, as pairs of estimated options: a grid
    with them is estimated lazily down to its count)."""
    parts = grid_parts(sweep.catalog, sweep.axes, sweep.profile, sweep.exclude, sweep.contexts)
    frame = parts.estimate() if sweep.axes.disaggregated else parts.frame()
    return frame.select(pl.len()).collect().item()


def require_renderer(reports: Sequence[str]) -> None:
    """Before anything is computed: the reports asked for can be drawn here (report.md's charts
    always need vl-convert's V8 engine, report.html only to build a missing vega bundle)."""
    from llmsweep import vega

    if "md" in reports:
        vega.require_v8("report.md")
    if "html" in reports and not vega.bundle_cached():
        vega.require_v8("report.html (its vega bundle is not cached yet)")


def run_inputs(sweep: Sweep, profile: str | None, template_dir: str | Path | None) -> list[Path]:
    """The files a run reads (sweep, config.json files, profile file, templates): none may lie in
    the folder it replaces."""
    base = Path(sweep.file).resolve().parent
    found = [Path(sweep.file)]
    for fields in sweep.spec.models.values():
        if "config" in fields:
            p = Path(str(fields["config"])).expanduser()
            found.append(p if p.is_absolute() else base / p)
    named = profile or sweep.spec.profile
    if named.endswith((".yaml", ".yml")):
        p = Path(named).expanduser()
        found.append(p if p.is_absolute() or profile else base / p)
    if template_dir:
        found.append(Path(template_dir))
    return found


def rerender(
    estimates: str | Path, formats: Sequence[str] = REPORT_FORMATS, template_dir: str | Path | None = None
) -> list[Path]:
    """Render the reports again from saved results (estimates.parquet + manifest.json beside it),
    without recomputing. The saved files are checked first (`saved.load`); the reports are
    rendered into a temporary folder beside the run's, and replace their old copies only once all
    rendered. Only files llmsweep wrote there (the manifest's `file_sha256`) are replaced or
    removed: a report.md or chart someone else put or changed stops the command, and anything
    else in the folder stays as it is. The manifest's file list is updated to match."""
    import json
    import shutil
    import tempfile

    from llmsweep import outfolder, saved
    from llmsweep.export import write_text_atomic

    path = Path(estimates)
    folder = path.parent
    results = saved.load(path)
    require_renderer(formats)
    listed = outfolder.listed_files(results.manifest)
    _check_replaceable(folder, [f"report.{f}" for f in formats], listed)  # before rendering; charts after
    try:
        tmp = Path(
            tempfile.mkdtemp(
                prefix=f".{folder.resolve().name}.partial-{os.getpid()}@{outfolder.host_id()}-",
                dir=folder.resolve().parent,
            )
        )
    except OSError as e:
        raise LlmsweepError(f"{folder}: cannot write the reports there: {e.strerror or e}") from None
    try:
        try:
            written = write_reports(tmp, results.frame, results.options, results.manifest, formats, template_dir)
        except (LlmsweepError, OSError, MemoryError):
            raise
        except Exception as e:  # data the checks let through but the report cannot show
            raise LlmsweepError(
                f"{folder}: cannot render a report from the saved results ({type(e).__name__}: {e}); "
                "they were not written by llmsweep run (or by a different version)"
            ) from e
        stale = [rel for rel in listed if rel.startswith("charts/") and rel not in written and "md" in formats]
        _check_replaceable(folder, [*written, *stale], listed)
        if written and any(rel.startswith("charts/") for rel in written):
            (folder / "charts").mkdir(exist_ok=True)
        for rel in written:
            os.replace(tmp / rel, folder / rel)
        for rel in stale:
            (folder / rel).unlink(missing_ok=True)
        data = dict(results.manifest)
        files = [f for f in data.get("files", []) if f not in stale]
        data["files"] = [*files, *(rel for rel in written if rel not in files)]
        hashes = {rel: h for rel, h in listed.items() if rel not in stale}
        hashes.update({rel: outfolder.file_sha256(folder / rel) for rel in written})
        data["file_sha256"] = dict(sorted(hashes.items()))
        write_text_atomic(folder / "manifest.json", json.dumps(data, indent=2, allow_nan=False) + "\n")
    except OSError as e:
        raise LlmsweepError(f"{folder}: cannot write the reports there: {outfolder.describe_os_error(e)}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [folder / rel for rel in written]


def _check_replaceable(folder: Path, rels: Sequence[str], listed: dict[str, str | None]) -> None:
    """Every existing file among `rels` is one llmsweep wrote there, unchanged since."""
    from llmsweep import outfolder

    charts = folder / "charts"
    if any(r.startswith("charts/") for r in rels) and (
        charts.is_symlink() or (charts.exists() and not charts.is_dir())
    ):
        raise LlmsweepError(f"{charts}: is not a folder llmsweep wrote; `report` leaves it untouched")
    foreign = []
    for rel in rels:
        dest = folder / rel
        if not os.path.lexists(dest):
            continue
        known = listed.get(rel, "absent")
        ours = not dest.is_symlink() and dest.is_file() and known != "absent"
        if not ours or (known is not None and outfolder.file_sha256(dest) != known):
            foreign.append(rel)
    if foreign:
        names = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise LlmsweepError(
            f"{folder}: {names} {'were' if len(foreign) > 1 else 'was'} not written by llmsweep (or changed since); "
            "`report` replaces only the reports a run wrote and left unchanged. Move "
            f"{'them' if len(foreign) > 1 else 'it'} away first"
        )
