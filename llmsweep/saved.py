"""Saved results read back for `llmsweep report`: estimates.parquet, plan.parquet and manifest.json.

These files may have been edited, truncated or written by something else, so everything a report
reads is checked before rendering: the frames against the declared columns (columns.py), the
manifest against the keys the reports use. Every problem becomes one LlmsweepError naming the
file and what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr, ValidationError

from llmsweep.columns import EXPORTED, PLAN_EXPORTED, SCHEMA
from llmsweep.errors import LlmsweepError, SpecError
from llmsweep.limits import (
    MAX_ESTIMATES_BYTES,
    MAX_MANIFEST_BYTES,
    MAX_PLAN_BYTES,
    UnreadableFile,
    check_regular_file,
    read_regular_file,
)
from llmsweep.outfolder import listed_files

NOT_OURS = "this file was not written by llmsweep run (or by a different version)"
MAX_LISTED = 5  # problems named in one message
# columns a run always fills: a missing value here means the file is not a run's
REQUIRED_VALUES = ("gpu", "model", "precision", "kv_precision", "tp", "pp", "gpus", "batch", "input_tokens")
REQUIRED_VALUES += ("output_tokens", "fits", "max_batch", "bound")
PLAN_REQUIRED = (*REQUIRED_VALUES, "slo_batch", "meets_slo")
_TEXT = (pl.String, pl.Categorical, pl.Enum)


@dataclass(frozen=True)
class Saved:
    frame: pl.LazyFrame  # estimates, exported columns in declared dtypes
    options: pl.DataFrame  # plan.parquet (empty when absent)
    manifest: dict


def load(estimates: str | Path) -> Saved:
    """Read and check the results a run saved beside `estimates` (its estimates.parquet)."""
    path = Path(estimates)
    folder = path.parent
    frame = read_frame(path, EXPORTED, REQUIRED_VALUES)  # first: the file the user named
    manifest = read_manifest(folder / "manifest.json")
    plan_path = folder / "plan.parquet"
    options = pl.DataFrame()
    if plan_path.exists() or plan_path.is_symlink():
        options = read_frame(plan_path, PLAN_EXPORTED, PLAN_REQUIRED).collect()
    elif "plan.parquet" in listed_files(manifest):  # the run wrote it: without it the answer would be empty
        raise LlmsweepError(
            f"{plan_path}: not found, though {folder / 'manifest.json'} lists it: the report's answer and "
            "charts come from it; put it back (or run the sweep again)"
        )
    return Saved(frame, options, manifest)


def _problems(path: Path, problems: list[str]) -> LlmsweepError:
    shown = problems[:MAX_LISTED]
    more = f" (and {len(problems) - MAX_LISTED} more)" if len(problems) > MAX_LISTED else ""
    return LlmsweepError(f"{path}: {'; '.join(shown)}{more}; {NOT_OURS}")


def _compatible(found: pl.DataType, declared: pl.DataType) -> bool:
    if isinstance(declared, _TEXT) or declared in _TEXT:
        return isinstance(found, _TEXT)
    if declared == pl.Boolean:
        return found == pl.Boolean
    if declared.is_integer():
        return found.is_integer()
    return found.is_numeric()  # Float64: any number


def _unreadable(path: Path, e: Exception) -> LlmsweepError:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return LlmsweepError(f"{path}: not a readable Parquet file ({first}); {NOT_OURS}")


def _os_error(path: Path, e: OSError, kind: str) -> LlmsweepError:
    """A file a run wrote that cannot be opened: missing, a folder, or unreadable (`kind` names it)."""
    if isinstance(e, FileNotFoundError):
        return LlmsweepError(f"{path}: not found; `report` needs the estimates.parquet and manifest.json a run wrote")
    if isinstance(e, IsADirectoryError):
        return LlmsweepError(f"{path}: is a folder, not {kind} a run wrote")
    return LlmsweepError(f"{path}: cannot read it: {e.strerror or e}")


def read_frame(path: Path, columns: tuple[str, ...], required: tuple[str, ...]) -> pl.LazyFrame:
    """`path` (a Parquet file) as the declared `columns` in declared dtypes, NaN read as missing,
    lazily (a large run's estimates need not fit in memory). It must be a regular file within its
    size limit (plan.parquet is read whole), checked before polars opens it: a FIFO would block
    inside polars, where no signal reaches."""
    limit = MAX_PLAN_BYTES if path.name == "plan.parquet" else MAX_ESTIMATES_BYTES
    try:
        check_regular_file(path, limit, f"a run's {path.name}")
        frame = pl.scan_parquet(path)
        schema = frame.collect_schema()
    except UnreadableFile as e:
        raise LlmsweepError(f"{path}: {e}") from None
    except OSError as e:
        raise _os_error(path, e, "a Parquet file") from None
    except (pl.exceptions.PolarsError, ValueError) as e:
        raise _unreadable(path, e) from None
    problems = []
    for name in columns:
        if name not in schema:
            problems.append(f"column {name} is missing")
        elif not _compatible(schema[name], SCHEMA[name]):
            problems.append(f"column {name} is {schema[name]}, expected {SCHEMA[name]}")
    if problems:
        raise _problems(path, problems)
    frame = frame.select([pl.col(n).cast(SCHEMA[n]) for n in columns])
    frame = frame.with_columns(pl.col(pl.Float64).fill_nan(None))
    floats = [n for n in columns if SCHEMA[n] == pl.Float64]
    try:  # reads every value once: a damaged file or a value its type cannot hold fails here, not mid-report
        rows, *counts = (
            frame.select(
                pl.len(),
                pl.col(required).null_count(),
                *(pl.col(n).is_infinite().sum().alias(f"{n} infinite") for n in floats),
            )
            .collect()
            .row(0)
        )
    except pl.exceptions.PolarsError as e:
        raise _unreadable(path, e) from None
    if rows == 0 and path.name != "plan.parquet":
        raise LlmsweepError(f"{path}: holds no configurations; a run writes at least one row")
    nulls, infinite = counts[: len(required)], counts[len(required) :]
    empty = [f"column {n} has {k:,} missing value{'s' * (k != 1)}" for n, k in zip(required, nulls, strict=True) if k]
    # every number a run writes is finite (a NaN, which it never writes either, reads as missing above)
    empty += [
        f"column {n} has {k:,} infinite value{'s' * (k != 1)}" for n, k in zip(floats, infinite, strict=True) if k
    ]
    if empty:
        raise _problems(path, empty)
    return frame


# -- the manifest: the keys reports read --------------------------------------------------------------------
class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _Sweep(_Model):
    name: StrictStr
    file: StrictStr
    sha256: StrictStr
    content: StrictStr


class _Profile(_Model):
    name: StrictStr
    description: StrictStr = ""
    defaults: dict[StrictStr, Any]  # shown as text
    families: dict[StrictStr, dict[StrictStr, Any]] = {}
    sources: list[StrictStr] = []


class _Source(_Model):
    source: StrictStr


class _Fact(_Model):
    name: StrictStr | None = None
    license: StrictStr | None = None
    sources: list[_Source] = []


class _Precision(_Model):
    bits_per_weight: float
    compute_dtype: StrictStr
    sources: list[StrictStr] = []


class _Catalog(_Model):
    gpus: dict[StrictStr, _Fact]
    models: dict[StrictStr, _Fact]
    precisions: dict[StrictStr, _Precision]


class _Sensitivity(_Model):
    assumption: StrictStr
    change: StrictStr
    top: float | None
    runner_up: float | None
    flips: StrictBool | None = None
    column: StrictStr | None = None


class _Manifest(_Model):
    llmsweep_version: StrictStr
    sweep: _Sweep
    profile: _Profile
    catalog: _Catalog
    rank_by: StrictStr | None = None
    prices: dict[StrictStr, dict[StrictStr, Any]] = {}
    notes: list[StrictStr] = []
    sensitivity: dict[StrictStr, list[_Sensitivity]] = {}


def _where(error: dict) -> str:
    return ".".join(str(p) for p in error["loc"]) or "(top level)"


def read_manifest(path: Path) -> dict:
    """manifest.json, checked for every key the reports read, within the limits of any input: a
    regular file of at most MAX_MANIFEST_BYTES, JSON at most MAX_YAML_DEPTH deep, and the sweep it
    keeps parsed and validated as a sweep file is (nesting, aliases, integer size, SweepSpec)."""
    from llmsweep.spec import SweepSpec
    from llmsweep.yamlfile import parse_json, parse_yaml

    try:
        data = parse_json(read_regular_file(path, MAX_MANIFEST_BYTES, "a run's manifest.json"))
    except UnreadableFile as e:
        raise LlmsweepError(f"{path}: {e}") from None
    except OSError as e:
        raise _os_error(path, e, "the manifest.json") from None
    except UnicodeDecodeError:
        raise LlmsweepError(f"{path}: not UTF-8 text; {NOT_OURS}") from None
    except json.JSONDecodeError as e:
        raise LlmsweepError(f"{path}: not valid JSON (line {e.lineno}: {e.msg}); {NOT_OURS}") from None
    except ValueError as e:
        raise LlmsweepError(f"{path}: {e}; {NOT_OURS}") from None
    if not isinstance(data, dict):
        raise LlmsweepError(f"{path}: holds a JSON {type(data).__name__}, not an object; {NOT_OURS}")
    problems = []
    try:
        _Manifest.model_validate(data)
    except ValidationError as e:
        problems = [f"{_where(err)}: {err['msg'].lower()}" for err in e.errors()]
    rank_by = data.get("rank_by")
    if rank_by in SCHEMA and not SCHEMA[rank_by].is_numeric():
        problems.append(f"rank_by: {rank_by!r} is not a numeric column, so nothing can be ranked by it")
    if data.get("command", "run") != "run":
        problems.append(f"command: {data['command']!r}: this folder was written by `llmsweep {data['command']}`")
    if problems:
        raise _problems(path, problems)
    try:
        spec = parse_yaml(data["sweep"]["content"], "sweep.content").data
    except SpecError as e:
        first = e.problems[0]
        where = f" line {first.line}" if first.line else ""
        raise _problems(path, [f"sweep.content{where}: {first.message}"]) from None
    if spec is not None and not isinstance(spec, dict):
        raise _problems(path, [f"sweep.content holds a YAML {type(spec).__name__}, not a sweep"])
    try:  # the rules the sweep was run with: what a run accepted, a report accepts
        SweepSpec.model_validate(spec or {})
    except ValidationError as e:
        raise _problems(path, [f"sweep.content: {_where(err)}: {err['msg'].lower()}" for err in e.errors()]) from None
    return data
