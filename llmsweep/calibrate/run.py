"""The `calibrate` command: read, compare, optionally fit, then write the files."""

from __future__ import annotations

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


def _text_table(frame: pl.DataFrame, by: str) -> list[str]:
    lines = [f"  {by:<44} {'rows':>5} {'median |err|':>13} {'p90 |err|':>10} {'median ratio':>13}"]
    for r in frame.iter_rows(named=True):
        lines.append(
            f"  {str(r[by])[:44]:<44} {r['rows']:>5} {r['median_abs_error']:>13.1%} "
            f"{r['p90_abs_error']:>10.1%} {r['median_ratio']:>13.2f}"
        )
    return lines


def run_calibration(path: str | Path, folder: Path, profile: str, do_fit: bool, defaults: dict) -> CalibrationReport:
    """The `calibrate` command: read, compare, optionally fit, then write the files into `folder`.
    Everything is computed before anything is written, and each file is replaced whole."""
    import yaml

    from llmsweep.export import write_text_atomic

    catalog = load_catalog()
    read = read_file(path, catalog, {k: v for k, v in defaults.items() if v})
    if not read.measurements:
        reasons = "; ".join(f"{s['id']}: {s['reason']}" for s in read.skipped[:5])
        raise LlmsweepError(f"{path}: no row could be mapped to a configuration ({reasons})")
    start = catalog.profile(profile)
    comparison = compare(read.measurements, start, catalog)
    outputs = {
        "comparison.csv": comparison.write_csv(),
        "unmapped.csv": pl.DataFrame(read.skipped, schema={"id": pl.String, "reason": pl.String}).write_csv(),
    }
    lines = [
        *(f"note: {n}" for n in read.notes),
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
        outputs["out_of_sample.csv"] = result.out_of_sample.write_csv()
        lines += [
            "fitted profile, out of sample (leave one source out), per metric:",
            *_text_table(summary(result.out_of_sample, "metric"), "metric"),
        ]
        if len({source_key(m.source) for m in read.measurements}) < 2:
            lines.append(
                "note: one source only: the out-of-sample figures need at least two sources; these are in-sample"
            )
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / name for name in outputs]
    for name, text in outputs.items():
        write_text_atomic(folder / name, text)
    lines += [str(f) for f in files]
    return CalibrationReport(tuple(files), tuple(lines))
