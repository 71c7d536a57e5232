"""Files -> measurements: the measured-dev.csv schema (see shared/reference/README.md), vLLM's
`benchmark_serving` JSON results and llama.cpp `llama-bench -o json|csv` output. Every row is either
mapped to a configuration or listed with the reason it was not; nothing is dropped silently."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

from llmsweep.calibrate.measurement import (
    ASSUMED_TOKENS,
    KNOWN,
    METRICS,
    PLACEHOLDER_GPU,
    REQUIRED,
    Measurement,
    ReadResult,
)
from llmsweep.catalog import Catalog, load_catalog
from llmsweep.errors import LlmsweepError
from llmsweep.grid import MAX


def _int(row: dict, key: str, default: int | None = None) -> int:
    text = str(row.get(key) if row.get(key) is not None else "").strip()
    if not text:
        if default is None:
            raise ValueError(f"{key} is empty")
        return default
    try:
        return int(float(text))
    except ValueError:
        raise ValueError(f"{key} {text!r} is not a number") from None


def _number(text, key: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ValueError(f"{key} {text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{key} {text!r} must be a positive number")
    return value


def _measurement(catalog: Catalog, row: dict, rid: str) -> Measurement:
    metric, unit = str(row.get("metric", "")).strip(), str(row.get("unit", "")).strip()
    if (metric, unit) not in METRICS:
        raise ValueError(f"metric {metric!r} in unit {unit!r} is not one llmsweep estimates")
    column, scale = METRICS[(metric, unit)]
    notes = []
    gpu = str(row.get("gpu") or "").strip()
    if gpu in ("", "n/a") and column == "model_weight_bytes":
        gpu = PLACEHOLDER_GPU
        notes.append("weights only (no GPU named)")
    if not gpu:
        raise ValueError("gpu is empty")
    precision = str(row.get("weight_precision") or "").strip()
    if precision in ("", "unknown"):
        raise ValueError("weight precision not stated")
    kv = str(row.get("kv_precision") or "").strip()
    kv = "auto" if kv in ("", "unknown") else catalog.resolve_precision(kv).id
    batch: int | str = _int(row, "batch") if str(row.get("batch") or "").strip() else MAX
    if batch == MAX:
        notes.append("batch not stated: the largest that fits")
    lengths = []
    for key in ("input_len", "output_len"):
        if not str(row.get(key) or "").strip():
            notes.append(f"{key} not stated: {ASSUMED_TOKENS} assumed")
        lengths.append(_int(row, key, ASSUMED_TOKENS))
    return Measurement(
        id=rid,
        source=str(row.get("source") or ""),
        gpu=catalog.resolve_gpu(gpu).id,
        model=catalog.resolve_model(str(row.get("model") or "").strip()).id,
        precision=catalog.resolve_precision(precision).id,
        kv_precision=kv,
        tp=_int(row, "tp", 1),
        pp=_int(row, "pp", 1),
        batch=batch,
        input_tokens=lengths[0],
        output_tokens=lengths[1],
        metric=metric,
        column=column,
        measured=_number(row.get("value"), "value") * scale,
        assumptions="; ".join(notes),
        engine=str(row.get("framework") or ""),
    )


def _rows_to_result(rows: list[tuple[str, dict]], catalog: Catalog) -> ReadResult:
    result = ReadResult()
    for rid, row in rows:
        try:
            result.measurements.append(_measurement(catalog, row, rid))
        except (ValueError, LlmsweepError) as e:
            result.skipped.append({"id": rid, "reason": str(e)})
    return result


def _read_measured_csv(path: Path, rows: list[dict], fields: list[str], catalog: Catalog) -> ReadResult:
    missing = [k for k in REQUIRED if k not in fields]
    if missing:
        raise LlmsweepError(
            f"{path}: missing column(s) {', '.join(missing)}; expected the measured-dev.csv schema "
            f"({', '.join(REQUIRED)}), llama-bench CSV or vLLM benchmark_serving JSON"
        )
    result = _rows_to_result([(r.get("id") or f"line {i}", r) for i, r in enumerate(rows, start=2)], catalog)
    unknown = [f for f in fields if f not in KNOWN]
    if unknown:
        result.notes.append(f"{path}: ignored unknown column(s) {', '.join(unknown)}")
    return result


# llama-bench's model_type spells GGUF types as "Q4_K - Medium", "Q8_0", "F16".
_GGUF_TYPE = re.compile(r"\b(Q\d_K)\s*-\s*(Small|Medium|Large)\b|\b(Q\d_K|Q\d_\d|BF16|F16|F32)\b", re.I)


def _gguf_precision(model_type: str) -> str:
    m = _GGUF_TYPE.search(model_type or "")
    if not m:
        return ""
    if m.group(1):
        return f"{m.group(1).lower()}_{m.group(2)[0].lower()}"
    return {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}.get(m.group(3).lower(), m.group(3).lower())


def _llama_bench_rows(records: list[dict], defaults: dict) -> list[tuple[str, dict]]:
    """llama-bench `-o json|csv`: one record per test; n_prompt > 0 is a prompt test (pp), else a
    generation test (tg); avg_ts is tokens/s. The model id is not in the file: --model gives it."""
    out = []
    for i, r in enumerate(records, start=1):
        n_prompt, n_gen = _int(r, "n_prompt", 0), _int(r, "n_gen", 0)
        prefill = n_prompt > 0 and n_gen == 0
        out.append(
            (
                f"{defaults.get('prefix', 'llama-bench')}-{i}",
                {
                    "source": f"llama-bench ({r.get('build_commit', 'unknown build')})",
                    "gpu": defaults.get("gpu") or r.get("gpu_info", ""),
                    "tp": 1,
                    "pp": defaults.get("pp", 1),
                    "model": defaults.get("model") or "",
                    "weight_precision": defaults.get("precision") or _gguf_precision(str(r.get("model_type", ""))),
                    "kv_precision": {"f16": "fp16", "q8_0": "q8_0", "q4_0": "q4_0"}.get(
                        str(r.get("type_k", "f16")), "fp16"
                    ),
                    "batch": 1,
                    "input_len": n_prompt if prefill else 0,
                    "output_len": 0 if prefill else n_gen,
                    "metric": "prefill_tok_s" if prefill else "decode_tok_s_per_seq",
                    "value": r.get("avg_ts"),
                    "unit": "tok/s",
                    "framework": "llama.cpp (llama-bench)",
                },
            )
        )
    return out


def _vllm_rows(data: dict, defaults: dict, name: str) -> list[tuple[str, dict]]:
    """vLLM `benchmark_serving.py --save-result` JSON: one run; its mean TTFT/TPOT and output
    throughput at the run's concurrency. The GPU is not in the file: --gpu gives it."""
    completed = _int(data, "completed", 0) or _int(data, "num_prompts", 0)
    if not completed:
        raise LlmsweepError(f"{name}: no 'completed' requests in this vLLM result")
    concurrency = data.get("max_concurrency") or defaults.get("batch") or ""
    base = {
        "source": f"vLLM benchmark_serving {name}",
        "gpu": defaults.get("gpu") or "",
        "tp": defaults.get("tp", 1),
        "pp": defaults.get("pp", 1),
        "model": defaults.get("model") or data.get("model_id") or "",
        "weight_precision": defaults.get("precision") or "bf16",
        "kv_precision": "",
        "batch": concurrency,
        "input_len": round(_number(data.get("total_input_tokens"), "total_input_tokens") / completed),
        "output_len": round(_number(data.get("total_output_tokens"), "total_output_tokens") / completed),
        "framework": f"vLLM ({data.get('backend', 'vllm')})",
    }
    rows = []
    for key, metric, unit in (
        ("mean_ttft_ms", "ttft_ms", "ms"),
        ("mean_tpot_ms", "tpot_ms", "ms"),
        ("output_throughput", "output_throughput_tok_s", "tok/s"),
    ):
        if data.get(key) is not None:
            rows.append((f"{name}:{metric}", {**base, "metric": metric, "value": data[key], "unit": unit}))
    return rows


def read_file(path: str | Path, catalog: Catalog | None = None, defaults: dict | None = None) -> ReadResult:
    """Read measurements from a measured-dev.csv-style CSV, a llama-bench JSON/CSV or a vLLM
    benchmark_serving JSON (detected from the content). `defaults` supplies what a format does not
    record (gpu, model, precision, tp, pp, batch)."""
    catalog, defaults, p = catalog or load_catalog(), defaults or {}, Path(path)
    try:
        text = p.read_text("utf-8")
    except FileNotFoundError:
        raise LlmsweepError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise LlmsweepError(f"{path}: cannot read measurements: {e}") from None
    if p.suffix.lower() == ".json" or text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise LlmsweepError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
        if isinstance(data, list) and data and isinstance(data[0], dict) and "avg_ts" in data[0]:
            needs = [k for k in ("model",) if not defaults.get(k)]
            if needs:
                raise LlmsweepError(f"{path}: llama-bench results do not name the Hugging Face model; give --model")
            return _rows_to_result(_llama_bench_rows(data, {**defaults, "prefix": p.stem}), catalog)
        if isinstance(data, dict) and ("output_throughput" in data or "mean_ttft_ms" in data):
            if not defaults.get("gpu"):
                raise LlmsweepError(f"{path}: vLLM results do not name the GPU; give --gpu")
            return _rows_to_result(_vllm_rows(data, defaults, p.name), catalog)
        raise LlmsweepError(f"{path}: not a llama-bench (-o json) or vLLM benchmark_serving result")
    reader = csv.DictReader(text.splitlines())
    fields = list(reader.fieldnames or [])
    rows = list(reader)
    if "avg_ts" in fields and "n_prompt" in fields:
        if not defaults.get("model"):
            raise LlmsweepError(f"{path}: llama-bench results do not name the Hugging Face model; give --model")
        return _rows_to_result(_llama_bench_rows(rows, {**defaults, "prefix": p.stem}), catalog)
    return _read_measured_csv(p, rows, fields, catalog)


def read_measurements(path: str | Path, catalog: Catalog | None = None) -> tuple[list[Measurement], list[dict]]:
    """(rows mapped to configurations, [{id, reason}] for rows that could not be mapped)."""
    result = read_file(path, catalog)
    return result.measurements, result.skipped
