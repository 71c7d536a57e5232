"""The `calibrate` command: read, compare, optionally fit, then write the files."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from llmsweep.calibrate.comparison import compare, summary
from llmsweep.calibrate.fitting import FitResult, calibrate
from llmsweep.calibrate.measurement import source_key
from llmsweep.calibrate.readers import read_file
from llmsweep.catalog import load_catalog
from llmsweep.errors import LlmsweepError


def profile_document(result: FitResult, description: str, sources: Sequence[str]) -> dict:
    """The fitted profile as profiles.yaml-style data (what `--profile FILE` reads)."""
    data = result.profile.model_dump()
    data["description"] = description
    data["sources"] = list(sources)
    return data


@dataclass(frozen=True)
class CalibrationReport:
    files: tuple[Path, ...]
    lines: tuple[str, ...]  # what the command prints


FIT_FILES = ("profile.yaml", "out_of_sample.csv")  # written by --fit; a run without it removes them
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _printable(value: object) -> str:
    """Text for the terminal: control characters (escape sequences, newlines) shown as '?'."""
    return _CONTROL.sub("?", str(value))


def _text_table(frame: pl.DataFrame, by: str) -> list[str]:
    lines = [f"  {by:<44} {'rows':>5} {'median |err|':>13} {'p90 |err|':>10} {'median ratio':>13}"]
    for r in frame.iter_rows(named=True):
        lines.append(
            f"  {_printable(r[by])[:44]:<44} {r['rows']:>5} {r['median_abs_error']:>13.1%} "
            f"{r['p90_abs_error']:>10.1%} {r['median_ratio']:>13.2f}"
        )
    return lines


def _csv_text(frame: pl.DataFrame) -> str:
    """CSV for spreadsheets: a text cell starting with = + - @ tab or CR gets a leading ' so a
    spreadsheet shows it instead of running it as a formula (ids and sources come from the input)."""
    risky = r"^[=+\-@\t\r]"
    return frame.with_columns(
        pl.when(pl.col(c).str.contains(risky)).then(pl.lit("'") + pl.col(c)).otherwise(pl.col(c)).alias(c)
        for c, dtype in frame.schema.items()
        if dtype == pl.String
    ).write_csv(null_value="")


def _write_outputs(folder: Path, outputs: dict[str, str], remove: Sequence[str]) -> list[Path]:
    """Write every file to a temporary name first, then rename them all into place (so a failure
    leaves the folder as it was), with the permissions `run` gives its files (0o666 & ~umask);
    then remove the stale files named in `remove`. Returns the paths removed."""
    umask = os.umask(0)
    os.umask(umask)
    temps: dict[str, Path] = {}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in outputs.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
            temps[name] = Path(tmp)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            os.chmod(tmp, 0o666 & ~umask)
        for name, tmp in temps.items():
            os.replace(tmp, folder / name)
    except OSError as e:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise LlmsweepError(f"{folder}: cannot write the calibration files: {e.strerror or e}") from None
    except BaseException:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise
    removed = [folder / name for name in remove if (folder / name).is_file()]
    for stale in removed:
        stale.unlink(missing_ok=True)
    return removed


def run_calibration(path: str | Path, folder: Path, profile: str, do_fit: bool, defaults: dict) -> CalibrationReport:
    """The `calibrate` command: read, compare, optionally fit, then write the files into `folder`.
    Everything is computed before anything is written; the files appear together or not at all,
    and a run without --fit removes the profile.yaml and out_of_sample.csv of an earlier --fit."""
    import yaml

    catalog = load_catalog()
    read = read_file(path, catalog, {k: v for k, v in defaults.items() if v})
    if not read.measurements:
        if not read.skipped:
            raise LlmsweepError(f"{path}: no measurements in the file (only a header, or empty)")
        reasons = "; ".join(f"{s['id']}: {s['reason']}" for s in read.skipped[:5])
        more = f"; and {len(read.skipped) - 5:,} more" if len(read.skipped) > 5 else ""
        raise LlmsweepError(f"{path}: no row could be mapped to a configuration ({_printable(reasons)}{more})")
    start = catalog.profile(profile)
    comparison = compare(read.measurements, start, catalog)
    outputs = {
        "comparison.csv": _csv_text(comparison),
        "unmapped.csv": _csv_text(pl.DataFrame(read.skipped, schema={"id": pl.String, "reason": pl.String})),
    }
    lines = [
        *(f"note: {_printable(n)}" for n in read.notes),
        f"{len(read.measurements)} rows compared, {len(read.skipped)} not mapped (see unmapped.csv)",
        f"profile {profile}, per metric:",
        *_text_table(summary(comparison, "metric"), "metric"),
        "per source:",
        *_text_table(summary(comparison, "source"), "source"),
    ]
    if do_fit:
        result = calibrate(read.measurements, start, catalog)
        doc = profile_document(
            result,
            f"Fitted by llmsweep calibrate on {Path(path).name}, starting from {profile}.",
            [f"{Path(path).name}: {len(read.measurements)} measurements"],
        )
        outputs["profile.yaml"] = yaml.safe_dump(doc, sort_keys=False)
        outputs["out_of_sample.csv"] = _csv_text(result.out_of_sample)
        lines += [
            "fitted profile, out of sample (leave one source out), per metric:",
            *_text_table(summary(result.out_of_sample, "metric"), "metric"),
        ]
        if len({source_key(m.source) for m in read.measurements}) < 2:
            lines.append(
                "note: one source only: the out-of-sample figures need at least two sources; these are in-sample"
            )
    removed = _write_outputs(folder, outputs, () if do_fit else FIT_FILES)
    lines += [f"removed {f} (from an earlier --fit)" for f in removed]
    files = [folder / name for name in outputs]
    lines += [str(f) for f in files]
    return CalibrationReport(tuple(files), tuple(lines))
