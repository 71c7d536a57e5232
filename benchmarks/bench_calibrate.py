"""Calibration timings on synthesised measurements.

    python benchmarks/bench_calibrate.py              # 5,000 measurements: read + compare, one fit
    python benchmarks/bench_calibrate.py --rows 20000 --no-fit

The measurements are the rows of shared/reference/measured-load-dev.csv and measured-dev.csv
(tests/data/measured-dev.csv where shared/ is absent), replicated with perturbed batch, lengths and
values (seeded, so every run compares the same file); only rows llmsweep can map are copied, so
every synthesised row is compared. Prints rows per second for reading, for the
comparison (one frame, one estimator pass) and for the whole `calibrate` command, and the seconds
one fit of the profile takes on every row.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "reference"  # the project's reference data, beside the checkout
SOURCES = [
    SHARED / "measured-load-dev.csv",
    SHARED / "measured-dev.csv"
    if (SHARED / "measured-dev.csv").exists()
    else ROOT / "tests" / "data" / "measured-dev.csv",
]


def synthesise(rows: int, path: Path, seed: int = 0) -> int:
    """Write `rows` measurements to `path` (the measured-dev.csv schema plus the layout columns)."""
    base: list[dict] = []
    for src in SOURCES:
        if src.exists():
            with src.open(encoding="utf-8") as f:
                base += list(csv.DictReader(f))
    if not base:
        sys.exit("no reference measurements found")
    # copy only rows llmsweep can map (known model, single layout), so every synthesised row is compared
    from llmsweep.calibrate import read_file

    mappable = {m.id for src in SOURCES if src.exists() for m in read_file(src).measurements}
    base = [r for r in base if r["id"] in mappable]
    fields = list(dict.fromkeys(k for r in base for k in r))
    rng = random.Random(seed)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for i in range(rows):
            r = dict(base[i % len(base)])
            if i >= len(base):  # a perturbed copy: another batch, other lengths, a noisy value
                r["id"] = f"{r['id']}-{i}"
                if r.get("batch"):
                    r["batch"] = str(max(1, int(int(r["batch"]) * rng.choice((0.5, 1, 2)))))
                for key in ("input_len", "output_len"):
                    if r.get(key) and int(r[key]) > 0:
                        r[key] = str(int(r[key]) * rng.choice((1, 2)))
                r["value"] = f"{float(r['value']) * rng.uniform(0.8, 1.25):.6g}"
            w.writerow(r)
    return rows


def timed(label: str, rows: int, fn):
    t0 = time.perf_counter()
    out = fn()
    s = time.perf_counter() - t0
    print(f"{label:<44} {rows:>7,} rows {s:>8.2f} s {rows / s:>10,.0f} rows/s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--no-fit", action="store_true", help="skip the fit timing")
    args = ap.parse_args()

    from llmsweep.calibrate import Evaluator, compare, fit, read_file, run_calibration
    from llmsweep.catalog import load_catalog

    catalog = load_catalog()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "measured.csv"
        n = synthesise(args.rows, path)
        read = timed("read (CSV -> measurements)", n, lambda: read_file(path, catalog))
        mapped = len(read.measurements)
        print(f"  {mapped:,} mapped, {len(read.skipped):,} listed in unmapped.csv")
        profile = catalog.profile("default")
        timed("compare (one frame, one estimator pass)", mapped, lambda: compare(read.measurements, profile, catalog))
        timed(
            "calibrate command (read, compare, write)",
            n,
            lambda: run_calibration(path, Path(tmp) / "out", "default", False, {}),
        )
        if not args.no_fit:
            ev = timed("evaluator build", mapped, lambda: Evaluator.build(read.measurements, profile, catalog))
            timed("one estimate (a candidate profile)", mapped, lambda: ev.estimate(profile))
            rows = list(range(mapped))
            start = catalog.profile("literature")
            timed("one fit (shared + per-family parameters)", mapped, lambda: fit(ev, start, rows))


if __name__ == "__main__":
    main()
