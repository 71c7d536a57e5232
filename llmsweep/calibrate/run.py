"""The `calibrate` command: read, compare, optionally fit, then write the files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from llmsweep import __version__
from llmsweep.calibrate.comparison import compare, summary
from llmsweep.calibrate.fitting import FitResult, by_source, calibrate
from llmsweep.calibrate.measurement import source_key
from llmsweep.calibrate.readers import read_file
from llmsweep.catalog import load_catalog
from llmsweep.errors import LlmsweepError, printable
from llmsweep.export import safe_csv_frame, write_manifest
from llmsweep.outfolder import atomic_folder


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


MAX_FOLDS = 10  # cross-validation folds of --fit: a fit takes seconds, one per fold (and one on everything)
FIT_FILES = ("profile.yaml", "out_of_sample.csv")  # written by --fit; a run without it removes them
_printable = printable  # text for the terminal: control characters shown as '?'


def _text_table(frame: pl.DataFrame, by: str) -> list[str]:
    lines = [f"  {by:<44} {'rows':>5} {'median |err|':>13} {'p90 |err|':>10} {'median ratio':>13}"]
    for r in frame.iter_rows(named=True):
        lines.append(
            f"  {_printable(r[by])[:44]:<44} {r['rows']:>5} {r['median_abs_error']:>13.1%} "
            f"{r['p90_abs_error']:>10.1%} {r['median_ratio']:>13.2f}"
        )
    return lines


def _csv_text(frame: pl.DataFrame) -> str:
    """CSV for spreadsheets: cells that would run as formulas are neutralised (ids and sources come
    from the input file)."""
    return safe_csv_frame(frame).write_csv(null_value="")


UNSTATED_BATCH = "batch not stated"  # the assumption comparison.py writes for such rows


def run_calibration(path: str | Path, folder: Path, profile: str, do_fit: bool, defaults: dict) -> CalibrationReport:
    """The `calibrate` command: read, compare, optionally fit, then write the files into `folder`.
    Everything is computed before anything is written; the folder is replaced whole (only if
    llmsweep wrote it, like `run`'s), so a run without --fit drops an earlier --fit's files."""
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
    # rows that do not say how many requests ran at once are estimated at the largest batch that fits:
    # they measure the benchmark's unknown setting, not the estimator, so they are shown apart
    unstated = pl.col("assumptions").fill_null("").str.contains(UNSTATED_BATCH, literal=True)
    stated, apart = comparison.filter(~unstated), comparison.filter(unstated)
    headline = stated if stated.height else comparison
    lines = [
        *(f"note: {_printable(n)}" for n in read.notes),
        f"{len(read.measurements)} rows compared, {len(read.skipped)} not mapped (see unmapped.csv)",
        f"profile {profile}, per metric"
        + (f" ({stated.height} rows with a stated batch; {apart.height} without are below):" if apart.height else ":"),
        *_text_table(summary(headline, "metric"), "metric"),
        "per source:",
        *_text_table(summary(headline, "source"), "source"),
        "per engine:",
        *_text_table(summary(headline, "engine"), "engine"),
    ]
    if apart.height and stated.height:
        lines += [
            f"{apart.height} rows state no batch (client concurrency): each is estimated at the largest batch that "
            "fits in memory, while the benchmark may have run one client or a few, so throughput is over- and "
            "latency under-estimated by up to that ratio; they say more about the unstated setting than about the "
            "estimator and are left out of the figures above (comparison.csv has them, `batch not stated` in "
            "assumptions). Per metric:",
            *_text_table(summary(apart, "metric"), "metric"),
        ]
    if do_fit:
        keys = sorted({source_key(m.source) for m in read.measurements})
        group = by_source
        if len(keys) > MAX_FOLDS:  # one fit per source left out costs seconds each: bound the folds
            fold = {k: i % MAX_FOLDS for i, k in enumerate(keys)}
            group = lambda m: f"fold {fold[source_key(m.source)]}"  # noqa: E731
            lines.append(
                f"note: {len(keys):,} sources: the out-of-sample figures leave out {MAX_FOLDS} folds of sources in "
                f"turn (about {len(keys) // MAX_FOLDS:,} sources each), not one source at a time: {MAX_FOLDS + 1} fits "
                f"instead of {len(keys) + 1:,}"
            )
        result = calibrate(read.measurements, start, catalog, group=group)
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
    removed = [] if do_fit else [folder / n for n in FIT_FILES if (folder / n).is_file()]
    manifest = {
        "llmsweep_version": __version__,
        "command": "calibrate",
        "measurements": Path(path).name,
        "profile": profile,
        "fit": do_fit,
        "files": [*outputs, "manifest.json"],
    }
    inputs = [path, *([profile] if str(profile).endswith((".yaml", ".yml")) else [])]
    with atomic_folder(folder, "calibrate", inputs) as tmp:  # replaced whole: an earlier --fit's files go with it
        for name, text in outputs.items():
            (tmp / name).write_text(text, encoding="utf-8", newline="")
        write_manifest(manifest, tmp / "manifest.json")
    lines += [f"removed {f} (from an earlier --fit)" for f in removed]
    files = [folder / name for name in outputs]
    lines += [str(f) for f in files]
    return CalibrationReport(tuple(files), tuple(lines))
