"""NVIDIA AIPerf (checked: aiperf 0.13.0, JSON export schema 1.4; the shape GenAI-Perf also writes).

profile_export_aiperf.json: top-level metrics, each {unit, avg, p50, p90, p99, ...}, plus
`input_config` (models, phases with `concurrency` / `rate`). profile_export_aiperf.csv: a table
`Metric,avg,min,max,sum,p1,...,p99,std` of request metrics ("Time to First Token (ms)"), a blank
line, then `Metric,Value` system metrics ("Output Token Throughput (tokens/sec)"); the CSV holds no
configuration, so --model, --gpu and --batch (the concurrency; not given: the largest batch) apply.

Mapped: time_to_first_token avg / p90 / p99 -> ttft_ms / ttft_p90_ms / ttft_p99_ms;
inter_token_latency avg -> itl_ms; request_latency avg -> e2e_latency_ms; output_token_throughput
avg -> output_throughput_tok_s; lengths = input_sequence_length / output_sequence_length means.
The GPU is --gpu, else the one GPU kind AIPerf's GPU telemetry names (`telemetry_data`).
"""

from __future__ import annotations

import csv
import io

from llmsweep.calibrate.formats.common import FormatError, Row, base, mean_length, measured, metric_rows

TIME_SCALE = {"ms": 1.0, "s": 1e3, "sec": 1e3, "us": 1e-3, "ns": 1e-6}
# (AIPerf tag, statistic, metric, unit llmsweep reads)
MAPPED = (
    ("time_to_first_token", "avg", "ttft_ms", "ms"),
    ("time_to_first_token", "p90", "ttft_p90_ms", "ms"),
    ("time_to_first_token", "p99", "ttft_p99_ms", "ms"),
    ("inter_token_latency", "avg", "itl_ms", "ms"),
    ("request_latency", "avg", "e2e_latency_ms", "ms"),
    ("output_token_throughput", "avg", "output_throughput_tok_s", "tok/s"),
)
# CSV metric names (header + unit as MetricsCsvExporter writes them) -> tag
CSV_NAMES = {
    "time to first token": "time_to_first_token",
    "inter token latency": "inter_token_latency",
    "request latency": "request_latency",
    "output token throughput": "output_token_throughput",
    "input sequence length": "input_sequence_length",
    "output sequence length": "output_sequence_length",
}


def is_json(data) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("time_to_first_token"), dict)
        and ("aiperf_version" in data or "input_config" in data or "request_throughput" in data)
    )


def is_csv(header: list[str]) -> bool:
    return header[:2] == ["Metric", "avg"] or header == ["Metric", "Value"]


def _value(metric: dict, stat: str, unit: str):
    v = measured(metric.get(stat))
    if not isinstance(v, float):
        return v  # absent (None), or no finite number: its text, refused with the row
    if unit == "ms":
        scale = TIME_SCALE.get(str(metric.get("unit", "ms")).strip().lower())
        if scale is None:
            raise FormatError(f"time unit {metric.get('unit')!r} is not ms, s, us or ns")
        return v * scale
    return v


def _config(cfg) -> tuple[str, object, object]:
    """(model, concurrency, request rate) from input_config, as far as it says."""
    if not isinstance(cfg, dict):
        return "", None, None
    model = ""
    models = cfg.get("models") or cfg.get("model") or (cfg.get("endpoint") or {}).get("model_names")
    if isinstance(models, dict):
        models = models.get("items") or [models]
    if isinstance(models, list) and models:
        first = models[0]
        model = first.get("name", "") if isinstance(first, dict) else str(first)
    elif isinstance(models, str):
        model = models
    concurrency = rate = None
    phases = cfg.get("phases")
    if isinstance(phases, dict):
        phases = list(phases.values()) if not {"concurrency", "rate"} & phases.keys() else [phases]
    for phase in phases if isinstance(phases, list) else []:
        if isinstance(phase, dict) and not phase.get("warmup") and phase.get("type") != "warmup":
            concurrency = phase.get("concurrency", concurrency)
            rate = phase.get("rate", rate)
    load = cfg.get("loadgen") or {}
    if isinstance(load, dict):
        concurrency = load.get("concurrency", concurrency)
        rate = load.get("request_rate", rate)
    return model, concurrency, rate


def telemetry_gpu(data: dict) -> str:
    """The GPU AIPerf's telemetry saw (`telemetry_data.endpoints.*.gpus.*.gpu_name`, as DCGM prints
    it: "NVIDIA H100 80GB HBM3"), when every GPU it saw is the same kind; '' otherwise."""
    telemetry = data.get("telemetry_data")
    endpoints = telemetry.get("endpoints") if isinstance(telemetry, dict) else None
    names = {
        str(g.get("gpu_name")).strip()
        for e in (endpoints.values() if isinstance(endpoints, dict) else [])
        if isinstance(e, dict) and isinstance(e.get("gpus"), dict)
        for g in e["gpus"].values()
        if isinstance(g, dict) and g.get("gpu_name")
    }
    return names.pop() if len(names) == 1 else ""


def _rows(metrics: dict, defaults: dict, name: str, model: str, concurrency, rate, version: str) -> list[Row]:
    try:
        values = [(metric, _value(metrics.get(tag) or {}, stat, unit), unit) for tag, stat, metric, unit in MAPPED]
    except FormatError as e:
        return [(f"{name}:aiperf", str(e))]
    isl = (metrics.get("input_sequence_length") or {}).get("avg")
    osl = (metrics.get("output_sequence_length") or {}).get("avg")
    row = base(
        defaults,
        f"AIPerf {version} {name}".replace("  ", " "),
        "AIPerf (OpenAI-compatible server)",
        model=model,
        gpu=telemetry_gpu(metrics),
        batch="" if concurrency in (None, "") else concurrency,
        input_len=mean_length(isl),
        output_len=mean_length(osl),
        request_rate="" if rate in (None, "") else rate,
        notes="lengths are the dataset's means",
    )
    return metric_rows(name, row, values)


def json_rows(data: dict, defaults: dict, name: str) -> list[Row]:
    model, concurrency, rate = _config(data.get("input_config"))
    if concurrency in (None, "") and rate in (None, ""):
        concurrency = defaults.get("batch")
    return _rows(data, defaults, name, model, concurrency, rate, str(data.get("aiperf_version") or ""))


def csv_rows(text: str, defaults: dict, name: str) -> list[Row]:
    metrics: dict[str, dict] = {}
    header: list[str] = []
    for values in csv.reader(io.StringIO(text, newline="")):
        if not values or not any(v.strip() for v in values):
            header = []
            continue
        if values[0] == "Metric":
            header = values
            continue
        if not header:
            raise FormatError("a row before the `Metric,...` header line AIPerf writes")
        label, _, unit = values[0].partition(" (")
        tag = CSV_NAMES.get(label.strip().lower())
        if tag is None:
            continue
        stats = dict(zip(header[1:], values[1:], strict=False))
        if header == ["Metric", "Value"]:
            stats = {"avg": values[1] if len(values) > 1 else ""}
        parsed = {}
        for k, v in stats.items():
            try:  # nan and inf stay, for the row's checks to list in unmapped.csv
                parsed[k] = float(v) if v.strip() else None
            except ValueError:
                raise FormatError(f"{values[0]}: {k} {v!r} is not a number") from None
        metrics[tag] = {"unit": unit.rstrip(")") or "ms", **parsed}
    if "time_to_first_token" not in metrics and "output_token_throughput" not in metrics:
        raise FormatError("no Time to First Token or Output Token Throughput row (AIPerf profile_export_aiperf.csv)")
    return _rows(metrics, defaults, name, "", defaults.get("batch"), None, "")
