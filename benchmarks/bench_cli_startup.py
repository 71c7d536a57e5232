"""How fast does `llmsweep --help` answer, and `llmsweep estimate` for one configuration?

    python benchmarks/bench_cli_startup.py [--runs 10]

Prints the median and worst wall-clock seconds of fresh processes (imports included).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "llmsweep --help": [sys.executable, "-m", "llmsweep", "--help"],
    "llmsweep estimate (one row)": [
        sys.executable,
        "-m",
        "llmsweep",
        "estimate",
        "--gpu",
        "h100-sxm",
        "--model",
        "meta-llama/Llama-3.1-8B",
        "--format",
        "json",
    ],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    runs = ap.parse_args().runs
    for name, cmd in COMMANDS.items():
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            times.append(time.perf_counter() - t)
        print(f"{name:32} median {statistics.median(times):.3f} s   worst {max(times):.3f} s   ({runs} runs)")


if __name__ == "__main__":
    main()
