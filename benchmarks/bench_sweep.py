"""End-to-end sweep timings on generated grids.

    python benchmarks/bench_sweep.py            # ~1M configurations: estimate step, CSV + Parquet; the
                                                # serving modes' estimate step; the xPyD plan search
    python benchmarks/bench_sweep.py --big      # also ~10M configurations to Parquet (peak memory)
    python benchmarks/bench_sweep.py --modes    # only the serving modes and the xPyD search

Prints configurations per second for the estimate step (in memory) and the whole run (validate,
estimate, write), and the peak resident memory of a child process doing the run. The serving-modes
case (MODES_SWEEP) has every mode in its grid: aggregated and disaggregated replicas with a few
worker pairs, speculative decoding off and MTP, and a prefix hit rate; its bar is 2 M
configurations/s for the estimate step (issue 18). The xPyD case plans DeepSeek-R1 on a GB200
NVL72 for one traffic, searching every pool layout and worker pair up to 72 GPUs; its bar is one
second.
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


# Every serving mode in one grid: 8 data-centre GPUs x the 9 catalog models with an MTP module x 2
# precisions x tp 1-8 x speculative none/mtp = 1,152 layouts; x 3 prompts x 2 outputs x prefix hit rate
# 0 / 0.5 x 4 batches; each layout aggregated, and disaggregated with 2 prefill x 3 decode worker counts
# x 4 prefill tp: 1 + 24 rows: 1,382,400 configurations.
MODES_SWEEP = textwrap.dedent("""\
    name: bench-modes
    grid:
      gpu: [h100-sxm, h200-sxm, b200, gb200, mi300x, mi325x, h100-nvl, a100-80gb-sxm]
      model: [deepseek-ai/DeepSeek-V3, deepseek-ai/DeepSeek-R1, deepseek-ai/DeepSeek-V3.2, Qwen/Qwen3.5-27B,
              Qwen/Qwen3.5-122B-A10B, Qwen/Qwen3.5-397B-A17B, zai-org/GLM-5, MiniMaxAI/MiniMax-M2.5,
              nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8]
      precision: [bf16, fp8]
      input_tokens: [1024, 4096, 8192]
      output_tokens: [256, 1024]
      batch: [1, 16, 64, max]
      tp: [1, 2, 4, 8]
      mode: [aggregated, disaggregated]
      prefill: {workers: [1, 2]}
      decode: {workers: [1, 2, 4]}
      speculative: [none, mtp]
      prefix_hit_rate: [0, 0.5]
    report: {formats: [parquet]}
    """)
# The xPyD search of one model x GPU x traffic: DeepSeek-R1 fp8 on GB200 NVL72, every layout of tp 1-8,
# attention DP 1-32 and ep 1-64 for both pools (168 each, 95 valid), no worker lists: the plan searches
# x, y in 1..16 within 72 GPUs.
XPYD_SWEEP = textwrap.dedent("""\
    name: bench-xpyd
    grid:
      gpu: [gb200]
      model: [deepseek-ai/DeepSeek-R1]
      precision: [fp8]
      input_tokens: [8192]
      output_tokens: [1024]
      batch: [max]
      tp: [1, 2, 4, 8]
      dp_attention: [1, 2, 4, 8, 16, 32]
      ep: [1, 2, 4, 8, 16, 32, 64]
      mode: [disaggregated]
    workload: {requests_per_s: 10, input_tokens: 8192, output_tokens: 1024, peak_factor: 1.5, headroom: 0.2}
    slo: {ttft_s: 2.0, tpot_s: 0.05, percentile: p90}
    costs: {gb200: {rent: 6.50}}
    """)


def bench_modes(tmp: Path) -> None:
    """The estimate step with every serving mode in the grid, and the xPyD plan search."""
    from llmsweep.spec import load

    path = tmp / "bench-modes.yaml"
    path.write_text(MODES_SWEEP)
    sweep = load(path, max_rows=20_000_000)
    rows = estimates_only(sweep).select(pl_len()).collect().item()
    best = min(_timed(lambda: estimates_only(sweep).collect()) for _ in range(3))
    print(f"modes: estimate step     {rows:>11,} rows  {best:6.2f} s  {rows / best / 1e6:5.2f} M rows/s  (bar: 2 M)")
    path = tmp / "bench-xpyd.yaml"
    path.write_text(XPYD_SWEEP)
    sweep = load(path)
    times, found = [], None
    for _ in range(3):
        t = time.perf_counter()
        found = xpyd_search(sweep)
        times.append(time.perf_counter() - t)
    stats, opts = found
    r = opts.filter(opts["rank"] == 1).row(0, named=True)
    print(
        f"xpyd: plan search        {stats.candidates:>11,} pairs {min(times):6.2f} s  ({stats.evaluated:,} evaluated, "
        f"{stats.decode_options} decode options; bar: 1 s)"
    )
    pools = f"{r['prefill_workers']}P{r['decode_workers']}D"
    prefill = f"tp{r['prefill_tp']} dp-attn{r['prefill_dp_attention']} ep{r['prefill_ep']}"
    decode = f"tp{r['tp']} dp-attn{r['dp_attention']} ep{r['ep']}"
    fleet = f"{r['gpus']} GPUs a replica, {r['gpus_needed']} in all"
    print(f"      cheapest: {pools}, prefill {prefill}, decode {decode}: {fleet}")


def xpyd_search(sweep):
    """What the plan does for a disaggregated sweep without worker lists (pipeline.compute_plan):
    candidates within 72 GPUs, the search, then every decode option's best pair planned and ranked."""
    from llmsweep import plan
    from llmsweep.grid import grid_parts

    inputs = plan.plan_inputs(sweep)
    axes = plan.search_axes(sweep.axes, inputs.worker_search)
    parts = grid_parts(sweep.catalog, axes, sweep.profile, sweep.exclude, sweep.contexts)
    chosen, stats = plan.search(plan.candidates(parts, inputs.worker_search).collect(), inputs)
    opts = plan.options(chosen.lazy(), inputs)
    column, _ = plan.rank_column(opts, sweep.spec.rank_by, inputs)
    return stats, plan.rank(opts, column)


def pl_len():
    import polars as pl

    return pl.len()


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
    ap.add_argument("--modes", action="store_true", help="only the serving modes and the xPyD search")
    args = ap.parse_args()
    from llmsweep.pipeline import compute
    from llmsweep.spec import load

    with tempfile.TemporaryDirectory() as tmp:
        bench_modes(Path(tmp))
        for label in [] if args.modes else ["1M", "10M"] if args.big else ["1M"]:
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
