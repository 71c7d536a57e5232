"""Report rendering on a one-million-row sweep: seconds and report.html size.

    python benchmarks/bench_report.py

Runs the ~1M-configuration benchmark sweep to Parquet, then times `llmsweep report` (HTML and
Markdown with SVG charts) on the saved results.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench_sweep import SIZES, sweep_yaml

from llmsweep.pipeline import rerender, run


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        path.write_text(sweep_yaml("bench-1m", *SIZES["1M"]))
        result = run(path, Path(tmp) / "out", formats=["parquet"], max_rows=20_000_000)
        for formats in (["html"], ["md"]):
            t = time.perf_counter()
            rerender(result.folder / "estimates.parquet", formats)
            seconds = time.perf_counter() - t
            extra = ""
            if formats == ["html"]:
                extra = f", report.html {(result.folder / 'report.html').stat().st_size / 1e6:.2f} MB"
            print(f"{result.rows:,} rows: report.{formats[0]} in {seconds:.2f} s{extra}")


if __name__ == "__main__":
    main()
