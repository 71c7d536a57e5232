"""Run folders read back for `publish` and `diff`: which folders are runs, and what each one says.

A run folder is what `llmsweep run` wrote: a manifest.json of command `run` (checked by
saved.read_manifest, the same checks `llmsweep report` makes) and, beside it, plan.parquet (checked
by saved.read_frame). An argument may name one run folder or a folder of runs (its immediate
subfolders that are runs; folders written by other commands, such as a published site or a
calibration, are passed over).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from llmsweep.columns import PLAN_EXPORTED, higher_is_better
from llmsweep.errors import LlmsweepError
from llmsweep.outfolder import MANIFEST, manifest_kind

MAX_RUNS = 10_000  # runs one command reads


def _kind(folder: Path) -> str | None:
    """The command that wrote `folder` (its manifest.json), None when it holds no llmsweep manifest."""
    from llmsweep.outfolder import _read_manifest

    data = _read_manifest(folder) if (folder / MANIFEST).exists() else None
    return manifest_kind(data) if data is not None else None


@dataclass(frozen=True)
class Run:
    folder: Path
    manifest: dict
    plan: pl.DataFrame  # plan.parquet (empty when the run wrote none)
    spec: dict = field(default_factory=dict)  # the sweep file, parsed
    finished: float = 0.0  # when the run wrote its manifest (the file's modification time, POSIX seconds)
    missing: tuple[str, ...] = ()  # plan columns this run's llmsweep did not write yet (read as empty)

    @property
    def name(self) -> str:
        return self.manifest["sweep"]["name"]

    @property
    def title(self) -> str:
        return str(self.spec.get("title") or self.name)

    @property
    def rank_by(self) -> str:
        return self.manifest.get("rank_by") or "usd_per_million_output_tokens"

    def options(self) -> pl.DataFrame:
        """Per model x lengths x GPU x offer, the best layout under the targets, ranked 1..n (the
        rows of options.csv, in plan columns and SI units)."""
        from llmsweep.finance import option_rows

        if self.plan.height == 0 or self.rank_by not in self.plan.columns:
            return pl.DataFrame()
        return option_rows(self.plan, self.rank_by, higher_is_better(self.rank_by))

    def answers(self) -> list[str]:
        """The headline answer per model and lengths, as the report's first lines say it."""
        from llmsweep.answer import answer

        rows = self.options()
        if rows.height == 0:
            return []
        out = []
        horizon = self.manifest.get("finance", {}).get("horizon_years") or self.spec.get("horizon_years") or 3
        for (model, s_in, s_out), group in rows.group_by(
            ["model", "input_tokens", "output_tokens"], maintain_order=True
        ):
            table = [{k: _clean(v) for k, v in r.items()} for r in group.iter_rows(named=True)]
            fleets = any(o.get("gpus_needed") is not None for o in table)
            try:
                out.append(
                    answer(model, s_in, s_out, table, self.spec.get("workload"), self.spec.get("slo"), horizon, fleets)
                )
            except (KeyError, TypeError, ValueError):  # a plan the sentence cannot be made from
                out.append(f"{model}: see the report")
        return out


def _clean(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def load_run(folder: str | Path) -> Run:
    """One run folder, checked: a folder, with the manifest.json of `llmsweep run` and its plan."""
    from llmsweep import saved
    from llmsweep.saved import PLAN_REQUIRED

    path = Path(folder)
    _exists(path)
    kind = _kind(path)
    if kind is None:
        raise LlmsweepError(
            f"{path}: not a run folder (no manifest.json written by `llmsweep run`); give the folder "
            "`llmsweep run` wrote, e.g. out/example"
        )
    if kind != "run":
        raise LlmsweepError(f"{path}: holds the output of `llmsweep {kind}`, not a run of `llmsweep run`")
    manifest = saved.read_manifest(path / MANIFEST)
    plan, missing = pl.DataFrame(), ()
    if (path / "plan.parquet").exists() or (path / "plan.parquet").is_symlink():
        plan, missing = read_plan(path / "plan.parquet", PLAN_REQUIRED)
    elif "plan.parquet" in saved.listed_files(manifest):  # the run wrote it: its answer would be empty
        raise LlmsweepError(
            f"{path / 'plan.parquet'}: not found, though {path / MANIFEST} lists it: the index's answer comes "
            "from it; put it back (or run the sweep again)"
        )
    import yaml

    try:
        spec = yaml.safe_load(manifest["sweep"]["content"]) or {}
    except yaml.YAMLError:  # read_manifest parsed it already; kept for safety
        spec = {}
    finished = (path / MANIFEST).stat().st_mtime
    return Run(path, manifest, plan, spec if isinstance(spec, dict) else {}, finished, tuple(missing))


def read_plan(path: Path, required: tuple[str, ...]) -> tuple[pl.DataFrame, list[str]]:
    """plan.parquet as the declared plan columns, and the declared columns it lacks. A run of an
    older llmsweep may lack columns added since (last quarter's run, compared with this one's):
    they are read as empty, not refused; the columns every run writes (`required`) must be there,
    and a column of the wrong type is an error, as for `llmsweep report`."""
    from llmsweep import saved
    from llmsweep.columns import SCHEMA
    from llmsweep.limits import MAX_PLAN_BYTES, UnreadableFile, check_regular_file

    try:
        check_regular_file(path, MAX_PLAN_BYTES, "a run's plan.parquet")
        frame = pl.scan_parquet(path)
        schema = frame.collect_schema()
    except UnreadableFile as e:
        raise LlmsweepError(f"{path}: {e}") from None
    except OSError as e:
        raise LlmsweepError(f"{path}: cannot read it: {e.strerror or e}") from None
    except (pl.exceptions.PolarsError, ValueError) as e:
        raise saved._unreadable(path, e) from None
    problems = [f"column {n} is missing" for n in required if n not in schema]
    problems += [
        f"column {n} is {schema[n]}, expected {SCHEMA[n]}"
        for n in PLAN_EXPORTED
        if n in schema and not saved._compatible(schema[n], SCHEMA[n])
    ]
    if problems:
        raise saved._problems(path, problems)
    floats = [n for n in PLAN_EXPORTED if n in schema and schema[n] == pl.Float64]
    try:
        infinite = frame.select(pl.col(n).is_infinite().sum() for n in floats).collect().row(0) if floats else ()
    except pl.exceptions.PolarsError as e:
        raise saved._unreadable(path, e) from None
    problems = [
        f"column {n} has {k:,} infinite value{'s' * (k != 1)}" for n, k in zip(floats, infinite, strict=True) if k
    ]
    if problems:
        raise saved._problems(path, problems)
    missing = [n for n in PLAN_EXPORTED if n not in schema]
    columns = [pl.col(n).cast(SCHEMA[n]) if n in schema else pl.lit(None, SCHEMA[n]).alias(n) for n in PLAN_EXPORTED]
    try:
        plan = frame.select(columns).with_columns(pl.col(pl.Float64).fill_nan(None)).collect()
    except pl.exceptions.PolarsError as e:
        raise saved._unreadable(path, e) from None
    return plan, missing


def _exists(path: Path) -> None:
    if not path.exists() and not path.is_symlink():
        raise LlmsweepError(f"{path}: no such folder")
    if not path.is_dir():
        raise LlmsweepError(f"{path}: is not a folder; give a run folder (e.g. out/example) or a folder of runs")


def run_folders(paths: list[str | Path]) -> list[Path]:
    """The run folders the arguments name: each a run folder, or a folder holding run folders.
    The same run named twice (directly, through a link or inside a folder also given) is an error."""
    found: list[Path] = []
    seen: dict[str, str] = {}  # real path -> the argument that named it first
    for arg in paths:
        path = Path(arg)
        _exists(path)
        kind = _kind(path)
        if kind is not None:
            if kind != "run":
                raise LlmsweepError(f"{path}: holds the output of `llmsweep {kind}`, not a run of `llmsweep run`")
            runs = [path]
        else:
            try:
                subs = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
            except OSError as e:
                raise LlmsweepError(f"{path}: cannot read the folder: {e.strerror or e}") from None
            runs = [p for p in subs if _kind(p) == "run"]
            if not runs:
                raise LlmsweepError(
                    f"{path}: not a run folder and holds none (no manifest.json written by `llmsweep run` in it or "
                    "its subfolders); give out/<name> or the folder `llmsweep run -o` wrote into"
                )
        for run in runs:
            real = os.path.realpath(run)
            if real in seen:
                again = "" if str(arg) == str(run) else f" (in {arg})"
                raise LlmsweepError(f"{run}: given twice, as {seen[real]} and again{again}; give each run once")
            seen[real] = str(run)
            found.append(run)
        if len(found) > MAX_RUNS:
            raise LlmsweepError(f"more than {MAX_RUNS:,} runs given; publish fewer at a time")
    return found
