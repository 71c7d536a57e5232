"""The main job: a sweep file -> estimates -> files in out/<name>/.

`compute(sweep)` is pure (a lazy frame, no I/O); `run(...)` writes the outputs atomically and
returns what it wrote.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from llmsweep import __version__
from llmsweep.errors import LlmsweepError
from llmsweep.estimate import select_exported
from llmsweep.export import XLSX_MAX_ROWS, atomic_folder, write_csv, write_manifest, write_parquet, write_xlsx
from llmsweep.grid import grid_parts
from llmsweep.report import write_reports
from llmsweep.spec import DEFAULT_MAX_ROWS, Sweep, load

TABLE_FORMATS = ("csv", "parquet", "xlsx")
REPORT_FORMATS = ("html", "md")
CHUNK_ROWS = 1_000_000  # rows estimated at a time when writing: bounds memory on huge grids
Progress = Callable[[str], None]


def compute(sweep: Sweep, chunk_rows: int | None = None) -> pl.LazyFrame:
    """The estimates of every configuration in the sweep (exported columns, declared order)."""
    parts = grid_parts(sweep.catalog, sweep.axes, sweep.profile, sweep.exclude, sweep.contexts)
    return select_exported(parts.estimate(chunk_rows))


def manifest(sweep: Sweep, rows: int, files: Sequence[str], notes: Sequence[str]) -> dict:
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
        "catalog": {
            "gpus": {g: _entry(cat.gpu(g)) for g in sweep.axes.gpu},
            "models": {m: _entry(cat.model(m)) for m in sweep.axes.model},
            "precisions": {p: _entry(cat.precision(p)) for p in sweep.axes.precision},
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
    say = progress or (lambda _msg: None)
    sweep = load(path, max_rows=max_rows, profile=profile)
    wanted = list(dict.fromkeys(formats or sweep.spec.report.formats))
    notes = list(sweep.notes)
    say(f"estimating up to {sweep.size:,} configurations")
    frame = compute(sweep, CHUNK_ROWS)
    target = Path(out_root) / sweep.spec.name
    with atomic_folder(target) as tmp:
        tables = [f for f in wanted if f in TABLE_FORMATS]
        parquet = tmp / "estimates.parquet"
        say("estimating and writing estimates.parquet")
        write_parquet(frame, parquet)  # streamed; the other tables read this file, not the grid again
        table = pl.scan_parquet(parquet)
        rows = table.select(pl.len()).collect().item()
        if rows == 0:
            raise LlmsweepError(f"{sweep.file}: the exclusion rules leave no configuration to estimate")
        if "csv" in tables:
            say("writing estimates.csv")
            write_csv(table, tmp / "estimates.csv")
        if "xlsx" in tables and rows > XLSX_MAX_ROWS and formats is None:
            notes.append(f"estimates.xlsx not written: {rows:,} rows exceed the {XLSX_MAX_ROWS:,}-row limit")
            tables.remove("xlsx")
        elif "xlsx" in tables:
            say("writing estimates.xlsx")
            write_xlsx(table.collect(), tmp / "estimates.xlsx")
        written = [f"estimates.{f}" for f in TABLE_FORMATS if f in tables]
        reports = [f for f in wanted if f in REPORT_FORMATS]
        if reports:
            say("writing " + " and ".join(f"report.{f}" for f in reports))
            written += write_reports(tmp, table, manifest(sweep, rows, [], notes), reports, template_dir)
        if "parquet" not in tables:
            parquet.unlink()
        written.append("manifest.json")
        write_manifest(manifest(sweep, rows, written, notes), tmp / "manifest.json")
    return RunResult(target, tuple(target / f for f in written), rows, tuple(notes))


def rerender(
    estimates: str | Path, formats: Sequence[str] = REPORT_FORMATS, template_dir: str | Path | None = None
) -> list[Path]:
    """Render the reports again from saved results (estimates.parquet + manifest.json beside it),
    without recomputing. Each file is replaced whole."""
    import json
    import os
    import shutil
    import tempfile

    path = Path(estimates)
    folder = path.parent
    try:
        manifest_data = json.loads((folder / "manifest.json").read_text("utf-8"))
        table = pl.scan_parquet(path)
        table.collect_schema()
    except FileNotFoundError as e:
        raise LlmsweepError(
            f"{e.filename}: not found; `report` needs the estimates.parquet and manifest.json a run wrote"
        ) from None
    except (OSError, ValueError, pl.exceptions.PolarsError) as e:
        raise LlmsweepError(f"{path}: cannot read saved results: {e}") from None
    tmp = Path(tempfile.mkdtemp(prefix=".report-", dir=folder))
    try:
        written = write_reports(tmp, table, manifest_data, formats, template_dir)
        if (tmp / "charts").is_dir():
            shutil.rmtree(folder / "charts", ignore_errors=True)
            os.replace(tmp / "charts", folder / "charts")
        for rel in written:
            if not rel.startswith("charts/"):
                os.replace(tmp / rel, folder / rel)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [folder / rel for rel in written]
