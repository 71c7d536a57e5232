"""Benchmark files as the tools write them, one small module per format: AIPerf, GuideLLM, SGLang
bench_serving, vLLM bench serve / sweep, llama-batched-bench. `read` recognises a file by its
content and turns it into rows of the measured-dev.csv schema (readers.read_file maps them)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable

from llmsweep.calibrate.formats import aiperf, guidellm, llama_batched, sglang, vllm
from llmsweep.calibrate.formats.common import FormatError, Row
from llmsweep.errors import LlmsweepError

MAX_LINES = 1_000_000  # JSON lines read from one file


def _json_lines(text: str) -> list[dict | str]:
    records: list[dict | str] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(records) >= MAX_LINES:
            raise FormatError(f"more than {MAX_LINES:,} JSON lines")
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError) as e:
            records.append(f"line {n}: invalid JSON: {getattr(e, 'msg', e)}")
    if not any(isinstance(r, dict) for r in records):
        raise FormatError("no line holds a JSON object")
    return records


def _lines_rows(records: list, defaults: dict, name: str) -> tuple[str, list[Row]]:
    first = next(r for r in records if isinstance(r, dict))
    if sglang.detect_line(first):
        return "SGLang bench_serving", sglang.rows(records, defaults, name)
    if llama_batched.detect_line(first):
        return "llama-batched-bench", llama_batched.rows(records, defaults, name)
    raise FormatError(
        "JSON lines that are neither SGLang bench_serving nor llama-batched-bench (--output-format jsonl)"
    )


def _detect(text: str, defaults: dict, name: str, vllm_rows: Callable) -> tuple[str, list[Row]] | None:
    if text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            if e.msg != "Extra data":
                return None  # readers reports the invalid JSON with its line and column
            return _lines_rows(_json_lines(text), defaults, name)
        except (ValueError, RecursionError):
            return None
        if aiperf.is_json(data):
            return "AIPerf", aiperf.json_rows(data, defaults, name)
        if guidellm.detect(data):
            return "GuideLLM", guidellm.rows(data, defaults, name)
        if vllm.is_sweep(data):
            return "vLLM bench sweep", [
                r for run, d, label in vllm.runs(data, defaults, name) for r in vllm_rows(run, d, label)
            ]
        if sglang.detect_line(data) or llama_batched.detect_line(data):
            return _lines_rows([data], defaults, name)
        return None
    if llama_batched.is_table(text):
        return "llama-batched-bench", llama_batched.rows(llama_batched.table_records(text), defaults, name)
    first = text.splitlines()[0] if text else ""  # \r, \r\n or \n ends a line
    header = next(csv.reader(io.StringIO(first)), [])
    if aiperf.is_csv([h.strip() for h in header]):
        return "AIPerf", aiperf.csv_rows(text, defaults, name)
    return None


def read(path, text: str, defaults: dict, vllm_rows: Callable) -> list[Row] | None:
    """Rows of a benchmark file in one of these formats, None for a file in none of them. A file
    that is not what its format says, or that names no GPU or model where the tool does not record
    them and no --gpu / --model was given, is one LlmsweepError."""
    from pathlib import Path

    name = Path(path).name
    try:
        found = _detect(text, defaults, name, vllm_rows)
    except FormatError as e:
        raise LlmsweepError(f"{path}: {e}") from None
    if found is None:
        return None
    tool, rows = found
    fields = [r for _, r in rows if isinstance(r, dict)]
    for key, option in (("gpu", "--gpu"), ("model", "--model")):
        if fields and not any(r.get(key) for r in fields):
            raise LlmsweepError(
                f"{path}: {tool} results do not name the {key.upper() if key == 'gpu' else key}; give {option}"
            )
    return rows
