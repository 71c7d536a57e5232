"""SGLang bench_serving JSONL (checked: sglang 0.5.23, sglang/benchmark/serving.py): one JSON object
per line, appended per run, with `backend`, `dataset_name`, `request_rate`, `max_concurrency`,
`server_info` (the server's /get_server_info: `model_path`, `tp_size`), `completed`,
`total_input_tokens`, `total_output_tokens`, `output_throughput`, `mean_/median_/p90_/p99_ttft_ms`,
`mean_tpot_ms`, `mean_itl_ms`, `mean_e2e_latency_ms`. The GPU is not in the file: --gpu.

Mapped: mean_ttft_ms, p90_ttft_ms, p99_ttft_ms, median_ttft_ms, mean_tpot_ms, mean_itl_ms,
mean_e2e_latency_ms, output_throughput; lengths = totals / completed.
"""

from __future__ import annotations

from llmsweep.calibrate.formats.common import Row, base, mean_length, measured, metric_rows, number

MAPPED = (
    ("mean_ttft_ms", "ttft_ms", "ms"),
    ("p90_ttft_ms", "ttft_p90_ms", "ms"),
    ("p99_ttft_ms", "ttft_p99_ms", "ms"),
    ("median_ttft_ms", "ttft_median_ms", "ms"),
    ("mean_tpot_ms", "tpot_ms", "ms"),
    ("mean_itl_ms", "itl_ms", "ms"),
    ("mean_e2e_latency_ms", "e2e_latency_ms", "ms"),
    ("output_throughput", "output_throughput_tok_s", "tok/s"),
)


def detect_line(record) -> bool:
    return isinstance(record, dict) and "mean_e2e_latency_ms" in record and "output_throughput" in record


def rows(records: list, defaults: dict, name: str) -> list[Row]:
    out: list[Row] = []
    for i, r in enumerate(records, start=1):
        rid = f"{name}:{i}"
        if isinstance(r, str):
            out.append((rid, r))
            continue
        if not isinstance(r, dict):
            out.append((rid, "line is not a JSON object"))
            continue
        completed = number(r.get("completed"))
        if not completed:
            out.append((rid, "completed is 0 or missing: no request finished, so the mean lengths are unknown"))
            continue
        info = r.get("server_info") if isinstance(r.get("server_info"), dict) else {}
        lengths = []
        for key in ("total_input_tokens", "total_output_tokens"):
            total = measured(r.get(key))
            lengths.append(mean_length(total / completed) if isinstance(total, float) else total or "")
        rate = r.get("request_rate")
        row = base(
            defaults,
            f"SGLang bench_serving {name}",
            "sglang",
            model=str(info.get("model_path") or r.get("model_id") or ""),
            tp=info.get("tp_size"),
            batch="" if r.get("max_concurrency") is None else r["max_concurrency"],
            input_len=lengths[0],
            output_len=lengths[1],
            request_rate="" if rate is None or rate == "trace" else rate,
            notes="lengths are the dataset's means",
        )
        found = metric_rows(rid, row, [(metric, r.get(key), unit) for key, metric, unit in MAPPED])
        out.extend(found or [(rid, "no metric llmsweep compares")])
    return out
