"""End-to-end sweep timings on generated grids.

    python benchmarks/bench_sweep.py            # ~1M configurations: estimate step, CSV + Parquet
    python benchmarks/bench_sweep.py --big      # also ~10M configurations to Parquet (peak memory)

Prints configurations per second for the estimate step (in memory) and the whole run (validate,
estimate, write), and the peak resident memory of a child process doing the run.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

GPUS = [
    "h100-sxm",
    "h200-sxm",
    "a100-80gb-sxm",
    "a100-40gb-sxm",
    "b200",
    "l40s",
    "l4",
    "mi300x",
    "mi325x",
    "gaudi3",
    "rtx-4090",
    "rtx-5090",
    "rtx-6000-ada",
    "a10g",
    "m2-ultra",
    "h100-pcie",
    "h100-nvl",
    "l40",
    "rtx-3090",
    "gb200",
]
MODELS = [
    "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B",
    "meta-llama/Llama-2-7b-hf",
    "Qwen/Qwen2.5-7B",
    "Qwen/Qwen2.5-32B",
    "mistralai/Mixtral-8x7B-v0.1",
    "Qwen/Qwen3-30B-A3B",
    "google/gemma-2-9b",
    "openai/gpt-oss-20b",
    "mistralai/Mistral-7B-v0.1",
]


def sweep_yaml(name: str, inputs: list[int], outputs: list[int], batch: list) -> str:
    return textwrap.dedent(f"""\
        name: {name}
        grid:
          gpu: {GPUS}
          model: {MODELS}
          precision: [bf16, fp8, int4, q4_k_m, fp16]
          input_tokens: {inputs}
          output_tokens: {outputs}
          batch: {batch}
          tp: [1, 2, 4, 8]
        report: {{formats: [csv, parquet]}}
        """)


SIZES = {  # 20 GPUs x 10 models x 5 precisions x 4 tp = 4,000 layouts
    "1M": (
        [128, 256, 512, 1024, 2048, 4096, 8192, 16384],
        [64, 128, 256, 512, 1024, 2048, 4096, 8192],
        [1, 2, 4, "max"],
    ),  # x 8 x 8 x 4 = 1,024,000
    "10M": ([2**k for k in range(6, 16)], [2**k for k in range(4, 14)], [*range(1, 25), "max"]),  # x 10 x 10 x 25
}


def child_run(path: Path, out: Path, formats: str) -> tuple[float, float]:
    code = textwrap.dedent(f"""\
        import resource, time
        from llmsweep.pipeline import run
        t = time.perf_counter()
        r = run({str(path)!r}, {str(out)!r}, formats={formats.split(",")!r}, max_rows=20_000_000)
        print(time.perf_counter() - t, r.rows, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6)
        """)
    out_text = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    seconds, rows, peak = out_text.split()
    return float(seconds), float(peak)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="also run the ten-million-row sweep")
    args = ap.parse_args()
    from llmsweep.pipeline import compute
    from llmsweep.spec import load

    with tempfile.TemporaryDirectory() as tmp:
        for label in ["1M", "10M"] if args.big else ["1M"]:
            path = Path(tmp) / f"bench-{label}.yaml"
            path.write_text(sweep_yaml(f"bench-{label.lower()}", *SIZES[label]))
            sweep = load(path, max_rows=20_000_000)
            rows = sweep.size
            if label == "1M":
                best = min(_timed(lambda s=sweep: estimates_only(s).collect()) for _ in range(3))
                print(
                    f"{label}: estimate step        {rows:>11,} rows  {best:6.2f} s  {rows / best / 1e6:5.2f} M rows/s"
                )
                best = min(_timed(lambda s=sweep: compute(s).collect()) for _ in range(3))
                print(
                    f"{label}: + cost/SLO/bands     {rows:>11,} rows  {best:6.2f} s  {rows / best / 1e6:5.2f} M rows/s"
                )
                seconds, peak = child_run(path, Path(tmp) / "out", "csv,parquet")
                print(
                    f"{label}: run to CSV + Parquet {rows:>11,} rows  {seconds:6.2f} s  "
                    f"{rows / seconds / 1e6:5.2f} M rows/s"
                    f"  peak RSS {peak:.2f} GB"
                )
            else:
                seconds, peak = child_run(path, Path(tmp) / "out", "parquet")
                print(
                    f"{label}: run to Parquet       {rows:>11,} rows  {seconds:6.2f} s  "
                    f"{rows / seconds / 1e6:5.2f} M rows/s"
                    f"  peak RSS {peak:.2f} GB"
                )


def estimates_only(sweep):
    """The estimator alone: every exported estimate column, without the cost and capacity columns."""
    from llmsweep.columns import BY_NAME, EXPORTED
    from llmsweep.grid import grid_parts

    parts = grid_parts(sweep.catalog, sweep.axes, sweep.profile, sweep.exclude, sweep.contexts)
    return parts.estimate().select([n for n in EXPORTED if BY_NAME[n].kind != "plan"])


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
    print(f"(this process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB)")
