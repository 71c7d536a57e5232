"""GuideLLM benchmarks.json (checked: guidellm 0.8.1, GenerativeBenchmarksReport, metadata version 2).

{"metadata": {"guidellm_version": ...}, "config": {...}, "benchmarks": [GenerativeBenchmark]}: each
benchmark has `config.strategy` ({"type_": "synchronous"} = 1 stream, "concurrent" with `streams`,
"constant"/"poisson" with `rate` requests/s, "throughput" = all at once) and `metrics`, where every
metric is a StatusDistributionSummary {successful, incomplete, errored, total}, each a
DistributionSummary {mean, median, percentiles: {p90, p99, ...}}.

Mapped (successful requests): time_to_first_token_ms mean / p90 / p99 -> ttft_ms / ttft_p90_ms /
ttft_p99_ms; time_per_output_token_ms mean -> tpot_ms; inter_token_latency_ms mean -> itl_ms;
request_latency mean (seconds) -> e2e_latency_ms; output_tokens_per_second mean (the benchmark's
rate over time) -> output_throughput_tok_s; lengths = prompt_token_count / output_token_count means.
"""

from __future__ import annotations

from llmsweep.calibrate.formats.common import FormatError, Row, base, mean_length, measured, metric_rows


def detect(data) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("benchmarks"), list)
        and (
            "guidellm_version" in (data.get("metadata") or {})
            or any(isinstance(b, dict) and b.get("type_") == "generative_benchmark" for b in data["benchmarks"])
        )
    )


def _stat(metrics: dict, key: str, stat: str = "mean"):
    summary = metrics.get(key)
    if not isinstance(summary, dict):
        return None
    dist = summary.get("successful") or summary.get("total") or {}
    if not isinstance(dist, dict):
        return None
    if stat == "mean":
        return measured(dist.get("mean"))
    return measured((dist.get("percentiles") or {}).get(stat))


def _load(strategy) -> tuple[object, object]:
    """(concurrency, request rate) of a scheduling strategy."""
    if not isinstance(strategy, dict):
        raise FormatError("config.strategy is missing")
    kind = str(strategy.get("type_") or strategy.get("type") or "")
    if kind == "synchronous":
        return 1, ""
    if kind == "concurrent":
        return strategy.get("streams", ""), ""
    if kind in ("constant", "poisson", "async"):
        return "", strategy.get("rate", "")
    if kind == "throughput":
        return strategy.get("max_concurrency", "") or "", "inf"
    raise FormatError(f"config.strategy type {kind!r} is not one GuideLLM writes")


def rows(data: dict, defaults: dict, name: str) -> list[Row]:
    version = str((data.get("metadata") or {}).get("guidellm_version") or "")
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    out: list[Row] = []
    for i, bench in enumerate(data["benchmarks"], start=1):
        rid = f"{name}[{i}]"
        if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
            out.append((rid, "benchmark is not an object with metrics"))
            continue
        cfg = bench.get("config") if isinstance(bench.get("config"), dict) else {}
        try:
            concurrency, rate = _load(cfg.get("strategy"))
        except FormatError as e:
            out.append((rid, str(e)))
            continue
        backend = cfg.get("backend") if isinstance(cfg.get("backend"), dict) else {}
        model = config.get("model") or backend.get("model") or ""
        m = bench["metrics"]
        latency = _stat(m, "request_latency")
        values = [
            ("ttft_ms", _stat(m, "time_to_first_token_ms"), "ms"),
            ("ttft_p90_ms", _stat(m, "time_to_first_token_ms", "p90"), "ms"),
            ("ttft_p99_ms", _stat(m, "time_to_first_token_ms", "p99"), "ms"),
            ("tpot_ms", _stat(m, "time_per_output_token_ms"), "ms"),
            ("itl_ms", _stat(m, "inter_token_latency_ms"), "ms"),
            ("e2e_latency_ms", latency * 1e3 if isinstance(latency, float) else latency, "ms"),
            ("output_throughput_tok_s", _stat(m, "output_tokens_per_second"), "tok/s"),
        ]
        row = base(
            defaults,
            f"GuideLLM {version} {name}".replace("  ", " "),
            "GuideLLM (OpenAI-compatible server)",
            model=str(model),
            batch=concurrency,
            input_len=mean_length(_stat(m, "prompt_token_count")),
            output_len=mean_length(_stat(m, "output_token_count")),
            request_rate=rate,
            notes="lengths are the dataset's means",
        )
        found = metric_rows(rid, row, values)
        out.extend(found or [(rid, "no metric llmsweep compares (TTFT, TPOT, ITL, latency, output tokens/s)")])
    return out
