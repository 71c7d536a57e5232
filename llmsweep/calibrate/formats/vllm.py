"""vLLM `vllm bench serve --save-result` and `vllm bench sweep serve` (checked: vllm 0.33.0,
vllm/benchmarks/serve.py and vllm/benchmarks/sweep/serve.py).

`bench serve` writes one JSON object per run (`model_id`, `max_concurrency`, `request_rate`,
`completed`, `total_input_tokens`, `total_output_tokens`, `output_throughput`, `mean_ttft_ms`,
`p90_ttft_ms`/`p99_ttft_ms` with --metric-percentiles, `mean_tpot_ms`, `mean_itl_ms`,
`mean_e2el_ms`): readers._vllm_rows reads it. `bench sweep serve` writes, per combination,
run=N.json (one such object plus `run_number` and the serve and bench overrides) and summary.json
(a list of them): each item is read as one run, with a `tensor_parallel_size` override as its tp.
"""

from __future__ import annotations

TP_KEYS = ("tensor_parallel_size", "tensor-parallel-size", "tp", "tp_size")


def is_run(data) -> bool:
    return isinstance(data, dict) and ("output_throughput" in data or "mean_ttft_ms" in data)


def is_sweep(data) -> bool:
    return isinstance(data, list) and bool(data) and all(is_run(d) for d in data)


def runs(data: list, defaults: dict, name: str) -> list[tuple[dict, dict, str]]:
    """(run, defaults for it, id prefix) per item of a summary.json. The prefix is name[run_number]
    when every run has its own run_number, else name[position from 1]: run_number counts the
    repetitions of one combination, so two combinations in one list both have a run 0, and ids
    must tell every run apart (readers lists a row that repeats a compared row's id)."""
    numbers = [str(run.get("run_number")) for run in data if "run_number" in run]
    by_number = len(numbers) == len(data) and len(set(numbers)) == len(numbers)
    out = []
    for i, run in enumerate(data, start=1):
        tp = next((run[k] for k in TP_KEYS if run.get(k) not in (None, "")), None)
        own = {**defaults, "tp": tp} if tp is not None and defaults.get("tp", 1) == 1 else defaults
        label = f"{name}[{run['run_number']}]" if by_number else f"{name}[{i}]"
        out.append((run, own, label))
    return out
