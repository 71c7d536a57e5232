"""The refit of the shipped `default` profile: wall time and peak memory.

    python benchmarks/bench_refit.py

Runs scripts/calibrate_default.py's `refit()` in this process (the fit on every row of the three
development files, leave one model out, leave one GPU out, leave one engine out, and the ideal
comparison; it writes nothing) and prints its wall time, its CPU time and the process's peak
resident memory. Issue 17 asks for under 2 minutes on the CI machine (two cores).
"""

from __future__ import annotations

import importlib.util
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 120


def _script():
    spec = importlib.util.spec_from_file_location("calibrate_default", ROOT / "scripts" / "calibrate_default.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def main() -> None:
    script = _script()
    wall, cpu = time.perf_counter(), time.process_time()
    refit = script.refit()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    rows = len(refit.measurements)
    verdict = "within" if wall < TARGET_S else "OVER"
    print(f"refit of default ({rows:,} measurements; fit + 3 cross-validations + ideal)")
    print(f"  wall {wall:6.1f} s   cpu {cpu:6.1f} s   peak RSS {peak_mib:,.0f} MiB")
    print(f"  {verdict} the {TARGET_S} s target")


if __name__ == "__main__":
    main()
