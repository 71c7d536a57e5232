"""Files -> measurements: the measured-dev.csv schema (see shared/reference/README.md), vLLM's
`benchmark_serving` JSON results and llama.cpp `llama-bench -o json|csv` output. Every row is either
mapped to a configuration or listed with the reason it was not; nothing is dropped silently."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from llmsweep.calibrate.measurement import (
    ASSUMED_TOKENS,
    DISAGGREGATED_SPELLINGS,
    KNOWN,
    LIMITED,
    MEDIAN_NOTE,
    METRICS,
    NOT_ESTIMATED,
    PLACEHOLDER_GPU,
    REQUIRED,
    SCENARIOS,
    VALUE_RANGES,
    Measurement,
    ReadResult,
    metric_problem,
    not_estimable,
    noting_replicas,
)
from llmsweep.catalog import Catalog, load_catalog
from llmsweep.catalog.engines import GENERIC, engine_from_framework, served
from llmsweep.errors import LlmsweepError, did_you_mean
from llmsweep.grid import MAX
from llmsweep.limits import MAX_MEASUREMENTS_BYTES, RANGES, UnreadableFile, read_regular_file

# Sanity limits: larger values are typos (or hostile), and would overflow the estimator's integers.
MAX_TOKENS = 100_000_000
MAX_BATCH = 10_000_000
MAX_GPUS = 65_536


class RowError(ValueError):
    """One row cannot be used; the message names the field and what is wrong with it."""


def _text(row: dict, key: str) -> str:
    """A field as stripped text ('' when absent); numbers from JSON are written as text."""
    value = row.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowError(f"{key} {value!r} is not a single value")
    return str(value).strip()


def _float(text: str, key: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise RowError(f"{key} {text!r} is not a number") from None


def _int(row: dict, key: str, default: int | None = None, minimum: int = 0, maximum: int = MAX_TOKENS) -> int:
    """A whole number in [minimum, maximum]; blank = `default` (an error when there is none)."""
    text = _text(row, key)
    if not text:
        if default is None:
            raise RowError(f"{key} is empty")
        return default
    value = _float(text, key)
    if not math.isfinite(value):
        raise RowError(f"{key} {text!r} is not a finite number")
    if value != int(value):
        raise RowError(f"{key} {text!r} is not a whole number")
    if not minimum <= value <= maximum:
        raise RowError(f"{key} {text!r} must be between {minimum:,} and {maximum:,}")
    return int(value)


def _number(row: dict, key: str) -> float:
    """A positive, finite number (a measured value)."""
    text = _text(row, key)
    if not text:
        raise RowError(f"{key} is empty")
    value = _float(text, key)
    if not math.isfinite(value):
        raise RowError(f"{key} {text!r} is not a finite number")
    if value <= 0:
        raise RowError(f"{key} {text!r} must be a positive number")
    return value


def _plausible(row: dict, key: str, value: float, unit: str, metric: str = "") -> float:
    """`value` when it lies in the plausible range of a measurement in `unit` (VALUE_RANGES)."""
    r = RANGES[VALUE_RANGES[unit]]
    if not r.contains(value):
        what = f" is not a plausible {metric}: it" if metric else ""
        raise RowError(f"{key} {_text(row, key)!r}{what} must be {r.describe()}")
    return value


def _rate(row: dict, key: str) -> float | None:
    """Requests/s: blank = None (closed loop); `inf` = every request at once (closed loop too)."""
    text = _text(row, key)
    if not text:
        return None
    value = _float(text, key)
    if math.isnan(value) or value <= 0:
        raise RowError(f"{key} {text!r} must be a positive number of requests per second (or inf)")
    if math.isfinite(value) and not RANGES["requests_per_s"].contains(value):  # the range a sweep's workload has
        raise RowError(f"{key} {text!r} must be {RANGES['requests_per_s'].describe()}, or inf (every request at once)")
    return value


class _Names:
    """The catalog's name resolution, remembered per name: a file repeats the same few names, and
    an unknown one costs a did-you-mean search."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.seen: dict[tuple[str, str], tuple[str | None, str | None]] = {}

    def __call__(self, kind: str, name: str) -> str:
        key = (kind, name)
        if key not in self.seen:
            try:
                rid = getattr(self.catalog, f"resolve_{kind}")(name).id
                if kind == "model":
                    self.catalog.model(rid)  # a local config.json must load
                self.seen[key] = (rid, None)
            except LlmsweepError as e:
                self.seen[key] = (None, str(e))
        rid, problem = self.seen[key]
        if problem is not None:
            raise RowError(problem)
        return rid  # type: ignore[return-value]


# Variable-length datasets, as a row's notes describe them. InferenceX (measured-serving-dev.csv):
# "random-range-ratio 0.8 so ISL/OSL are uniform in [0.8L, L] around nominal 1024/1024".
_UNIFORM = re.compile(r"uniform in \[\s*([0-9]*\.?[0-9]+)\s*L\s*,\s*L\s*\]", re.I)
_MEANS = re.compile(
    r"\blengths? (?:are|is) (?:the )?(?:means?|averages?)\b|\bmean (?:input |output |prompt |sequence )?lengths?\b",
    re.I,
)


def _length(row: dict, key: str, means: bool) -> int:
    """A length in tokens; a mean (the row says its lengths are means) may be fractional and is
    rounded to the nearest whole token."""
    if not means:
        return _int(row, key, ASSUMED_TOKENS)
    value = _float(_text(row, key), key)
    if not math.isfinite(value) or not 0 <= value <= MAX_TOKENS:
        raise RowError(f"{key} {_text(row, key)!r} must be between 0 and {MAX_TOKENS:,}")
    return math.floor(value + 0.5)


def _lengths(row: dict, notes: list[str]) -> list[int]:
    """(input, output) tokens to compare at. Blank = ASSUMED_TOKENS. Where the row's notes say the
    lengths are a dataset's means, they are taken as stated (fractions rounded); where they say the
    lengths are uniform in [x L, L] around a nominal L (InferenceX's random dataset), both lengths
    are compared at the mean (1 + x) / 2 x L (0.9 L for x = 0.8). The estimator serves identical
    requests at those lengths: the spread of the dataset is not modelled."""
    text = _text(row, "notes")
    uniform, means = _UNIFORM.search(text), bool(_MEANS.search(text))
    lengths = []
    for key in ("input_len", "output_len"):
        if not _text(row, key):
            notes.append(f"{key} not stated: {ASSUMED_TOKENS} assumed")
            lengths.append(ASSUMED_TOKENS)
        else:
            lengths.append(_length(row, key, means))
    if uniform:
        x = float(uniform.group(1))
        if not 0 < x <= 1:
            raise RowError(f"notes: {uniform.group(0)!r} is not an interval below the nominal length L")
        stated = [bool(_text(row, k)) for k in ("input_len", "output_len")]
        nominal = list(lengths)
        lengths = [math.floor(n * (1 + x) / 2 + 0.5) if s else n for n, s in zip(nominal, stated, strict=True)]
        notes.append(
            f"lengths uniform in [{x:g} L, L] (notes): compared at their means {lengths[0]} / {lengths[1]} tokens "
            f"({(1 + x) / 2:g} x the nominal {nominal[0]} / {nominal[1]})"
        )
    elif means:
        notes.append("lengths are a dataset's means (notes): compared as identical requests of those lengths")
    return lengths


def _limit(row: dict, key: str) -> float | None:
    """A latency limit in ms, as seconds; blank = none."""
    return _plausible(row, key, _number(row, key), "ms") * 1e-3 if _text(row, key) else None


def _scenario(row: dict, metric: str, batch: int | str, notes: list[str]) -> tuple[str, float | None, float | None]:
    """(scenario, p99 TTFT limit s, p99 TPOT limit s) of an MLPerf-style row; ("", None, None) without one."""
    scenario = _text(row, "scenario").lower()
    ttft, tpot = _limit(row, "ttft_limit_ms"), _limit(row, "tpot_limit_ms")
    if scenario and scenario not in SCENARIOS:
        hint = did_you_mean(scenario, SCENARIOS, n=1)
        raise RowError(
            f"scenario {_text(row, 'scenario')!r} must be one of {', '.join(SCENARIOS)}"
            + (f"; did you mean {hint[0]!r}?" if hint else "")
        )
    if scenario not in LIMITED:
        if ttft is not None or tpot is not None:
            raise RowError("ttft_limit_ms / tpot_limit_ms apply to the server and interactive scenarios only")
        if scenario == "offline" and batch == MAX:
            notes.remove("batch not stated: the largest that fits")
            notes.append("scenario offline: every query at once (the largest batch that fits)")
        return scenario, None, None
    if metric != "output_throughput_tok_s":
        raise RowError(f"scenario {scenario!r} measures output_throughput_tok_s, not {metric}")
    if ttft is None and tpot is None:
        raise RowError(f"scenario {scenario!r} needs ttft_limit_ms or tpot_limit_ms (the p99 latency limits)")
    if batch != MAX or _text(row, "request_rate"):
        raise RowError(f"scenario {scenario!r}: the rate is what the row measures; leave batch and request_rate blank")
    limits = []
    if ttft is not None:
        limits.append(f"p99 TTFT <= {ttft * 1e3:g} ms")
    if tpot is not None:
        limits.append(f"mean TPOT <= {tpot * 1e3:g} ms (no TPOT percentile is estimated)")
    notes.remove("batch not stated: the largest that fits")
    notes.append(f"scenario {scenario}: the largest request rate whose {' and '.join(limits)}")
    return scenario, ttft, tpot


def _pools(row: dict, notes: list[str]) -> dict:
    """A disaggregated row's pools (mode disagg with prefill_workers and decode_workers given): the
    decode worker's layout as the row's tp, pp, dp_attention, ep and moe_tp, the prefill worker's as
    prefill_*, and the worker counts; {} for any other row (blank pool sizes: not_estimable says so)."""
    if _text(row, "mode").lower() not in DISAGGREGATED_SPELLINGS or not _text(row, "prefill_workers"):
        return {}
    if not _text(row, "decode_workers"):
        return {}

    def size(key: str, default: int = 1, minimum: int = 1) -> int:
        return max(_int(row, key, default, minimum=minimum, maximum=MAX_GPUS), 1)

    out = {
        "prefill_workers": size("prefill_workers"),
        "decode_workers": size("decode_workers"),
        "prefill_tp": size("prefill_tp"),
        "prefill_pp": size("prefill_pp"),
        "prefill_dp_attention": size("prefill_dp_attention"),
        "prefill_ep": size("prefill_ep", minimum=0),
        "prefill_moe_tp": size("prefill_moe_tp", minimum=0),
        "tp": size("decode_tp"),
        "pp": size("decode_pp"),
        "dp_attention": size("decode_dp_attention"),
        "ep": size("decode_ep", minimum=0),
        "moe_tp": size("decode_moe_tp", minimum=0),
    }
    notes.append(f"disaggregated {out['prefill_workers']}P{out['decode_workers']}D (prefill workers, decode workers)")
    return out


def _measurement(names: _Names, row: dict, rid: str) -> Measurement:
    metric, unit = _text(row, "metric"), _text(row, "unit")
    if (metric, unit) in METRICS:
        column, scale = METRICS[(metric, unit)]
    elif (metric, unit) in NOT_ESTIMATED:
        column, scale = "", 1e-3  # read, then listed by not_estimable with the reason
    else:
        raise RowError(metric_problem(metric, unit))
    notes = [MEDIAN_NOTE] if "_median_" in metric else []
    gpu = _text(row, "gpu")
    if gpu in ("", "n/a") and column == "model_weight_bytes":
        gpu = PLACEHOLDER_GPU
        notes.append("weights only (no GPU named)")
    if not gpu:
        raise RowError("gpu is empty")
    model = _text(row, "model")
    if not model:
        raise RowError("model is empty")
    precision = _text(row, "weight_precision")
    if precision in ("", "unknown"):
        raise RowError("weight precision not stated")
    kv = _text(row, "kv_precision")
    cache = None if kv in ("", "unknown") else names.catalog.kv_format(names("precision", kv))
    kv = "auto" if cache is None else cache.id
    if cache is not None and cache.note:
        notes.append(cache.note)
    batch: int | str = _int(row, "batch", minimum=1, maximum=MAX_BATCH) if _text(row, "batch") else MAX
    if batch == MAX:
        notes.append("batch not stated: the largest that fits")
    lengths = _lengths(row, notes)
    if lengths == [0, 0]:
        raise RowError("input_len and output_len are both 0")
    value = _plausible(row, "value", _number(row, "value"), unit, metric)
    measured = value * scale  # finite: the range keeps it so
    num_gpus = _int(row, "num_gpus", minimum=1, maximum=MAX_GPUS) if _text(row, "num_gpus") else None
    scenario, ttft_limit, tpot_limit = _scenario(row, metric, batch, notes)
    pools = _pools(row, notes)
    framework = _text(row, "framework")
    front_end = served(framework)
    if framework and engine_from_framework(framework) == GENERIC:
        notes.append(f"framework {framework!r} names no engine llmsweep knows: the profile's shared values (generic)")
    if not front_end:
        notes.append("timed by an offline harness: no serving front end, no request_overhead_s before the first token")
    gpu_id, model_id = names("gpu", gpu), names("model", model)
    # `fp4` is the GPU vendor's FP4 format, or the checkpoint's own (Catalog.weight_format): said per row
    weights = names.catalog.weight_format(names("precision", precision), gpu_id, model_id)
    if weights.note:
        notes.append(weights.note)
    m = Measurement(
        id=rid,
        source=_text(row, "source"),
        gpu=gpu_id,
        model=model_id,
        precision=weights.id,
        kv_precision=kv,
        **(pools or {"tp": _int(row, "tp", 1, minimum=1, maximum=MAX_GPUS)}),
        **({} if pools else {"pp": _int(row, "pp", 1, minimum=1, maximum=MAX_GPUS)}),
        batch=batch,
        input_tokens=lengths[0],
        output_tokens=lengths[1],
        metric=metric,
        column=column,
        measured=measured,
        assumptions="; ".join(notes),
        engine=engine_from_framework(framework),
        served=front_end,
        request_rate=_rate(row, "request_rate"),
        **(
            {}
            if pools
            else {
                "dp_attention": _int(row, "dp_attention", 1, minimum=1, maximum=MAX_GPUS),
                # 0 = not used (dense models in some sources): the same as 1
                "ep": max(_int(row, "ep", 1, minimum=0, maximum=MAX_GPUS), 1),
                "moe_tp": max(_int(row, "moe_tp", 1, minimum=0, maximum=MAX_GPUS), 1),
            }
        ),
        unit=unit,
        value=value,
        num_gpus=num_gpus,
        # a row of pools states each pool's layout (its decode worker's tp); num_gpus counts both pools
        layout_chosen=num_gpus is not None and not pools and not _text(row, "tp"),
        mode=_text(row, "mode"),
        speculative=_text(row, "speculative"),
        scenario=scenario,
        ttft_limit_s=ttft_limit,
        tpot_limit_s=tpot_limit,
    )
    reason = not_estimable(m) or _mtp_problem(names.catalog, m)
    if reason:
        raise RowError(reason)
    return m if m.layout_chosen else noting_replicas(m)


def _mtp_problem(catalog: Catalog, m: Measurement) -> str | None:
    """An mtp row of a model without an MTP module: what `estimate` and `validate` refuse."""
    from llmsweep.spec.serving import mtp_problem

    return mtp_problem(catalog, [m.model]) if m.speculative.lower() == "mtp" else None


# A row is a dict of fields, or the text of the problem that kept a record from becoming one.
Row = tuple[str, dict | str]


def _rows_to_result(rows: list[Row], catalog: Catalog, lines: list[int] | None = None) -> ReadResult:
    """Each row mapped to a measurement or listed with its reason. An id is compared once: a row
    that repeats the id of a row already compared is listed ("line 9 repeats id 'x' of line 4"),
    so no measurement counts twice; `lines` are the rows' line numbers in a CSV file (else the
    rows are counted from 1)."""
    result, names = ReadResult(), _Names(catalog)
    counts: dict[str, int] = {}
    for rid, _ in rows:
        counts[rid] = counts.get(rid, 0) + 1
    repeated = [f"{rid!r} ({n} rows)" for rid, n in counts.items() if n > 1]
    if repeated:
        more = f" and {len(repeated) - 5:,} more" if len(repeated) > 5 else ""
        result.notes.append(
            f"id {', '.join(repeated[:5])}{more} appear{'s' if len(repeated) == 1 else ''} more than once: a row that "
            "repeats the id of a compared row is listed in unmapped.csv, not compared; give each row its own id"
        )
    where = (lambda i: f"line {lines[i]}") if lines else (lambda i: f"row {i + 1}")
    compared: dict[str, int] = {}  # id -> index of the row compared under it
    for i, (rid, row) in enumerate(rows):
        try:
            if isinstance(row, str):  # the row could not be read: that comes first
                raise RowError(row)
            if rid in compared:
                first = where(compared[rid])
                raise RowError(f"{where(i)} repeats id {rid!r} of {first} (compared there); give each row its own id")
            result.measurements.append(_measurement(names, row, rid))
            compared[rid] = i
        except (ValueError, LlmsweepError) as e:
            result.skipped.append({"id": rid, "reason": str(e)})
    return result


# Separators other than commas, as spreadsheets in many locales save "CSV" (or as tab-separated text).
_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}


def _read_measured_csv(
    path: Path, rows: list[Row], fields: list[str], catalog: Catalog, lines: list[int] | None = None
) -> ReadResult:
    missing = [k for k in REQUIRED if k not in fields]
    unknown = [f or f"(unnamed column {i})" for i, f in enumerate(fields, start=1) if f not in KNOWN]
    if missing:
        if not any(f.strip() for f in fields):
            raise LlmsweepError(f"{path}: the file is empty (no header line; expected the measured-dev.csv schema)")
        sep = next((s for s in _SEPARATORS if len(fields) == 1 and s in fields[0] and "id" in fields[0].split(s)), None)
        if sep:
            names = fields[0].split(sep)
            shown = sep.join(names[:9]) + (sep + "..." if len(names) > 9 else "")
            raise LlmsweepError(
                f"{path}:1: the header is one column, {shown!r}: its fields are separated by {_SEPARATORS[sep]}; "
                "save the file with commas between fields (Excel: 'CSV UTF-8')"
            )
        slips = [f"{f!r} for {hint[0]!r}" for f in unknown[:100] if (hint := did_you_mean(f, missing, n=1))]
        raise LlmsweepError(
            f"{path}: missing column(s) {', '.join(missing)}"
            + (f" (the header has {', '.join(slips)}: misspelt?)" if slips else "")
            + f"; expected the measured-dev.csv schema ({', '.join(REQUIRED)}), llama-bench CSV or vLLM "
            "benchmark_serving JSON"
        )
    result = _rows_to_result(rows, catalog, lines)
    if unknown:
        more = f" and {len(unknown) - 10:,} more" if len(unknown) > 10 else ""
        result.notes.append(f"{path}: ignored unknown column(s) {', '.join(unknown[:10])}{more}")
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


def _llama_bench_rows(records: list, defaults: dict) -> list[Row]:
    """llama-bench `-o json|csv`: one record per test; n_prompt > 0 is a prompt test (pp), else a
    generation test (tg); avg_ts is tokens/s. The model id is not in the file: --model gives it."""
    out: list[Row] = []
    for i, r in enumerate(records, start=1):
        rid = f"{defaults.get('prefix', 'llama-bench')}-{i}"
        if isinstance(r, str):  # the problem that kept the record from being read
            out.append((rid, r))
            continue
        try:
            n_prompt, n_gen = _int(r, "n_prompt", 0), _int(r, "n_gen", 0)
            model_type, type_k = _text(r, "model_type"), _text(r, "type_k") or "f16"
            commit, gpu_info = _text(r, "build_commit") or "unknown build", _text(r, "gpu_info")
        except RowError as e:
            out.append((rid, str(e)))
            continue
        prefill = n_prompt > 0 and n_gen == 0
        out.append(
            (
                rid,
                {
                    "source": f"llama-bench ({commit})",
                    "gpu": defaults.get("gpu") or gpu_info,
                    "tp": 1,
                    "pp": defaults.get("pp", 1),
                    "model": defaults.get("model") or "",
                    "weight_precision": defaults.get("precision") or _gguf_precision(model_type),
                    "kv_precision": {"f16": "fp16", "q8_0": "q8_0", "q4_0": "q4_0"}.get(type_k, "fp16"),
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


def _mean_tokens(data: dict, key: str, completed: int) -> int:
    total = _int(data, key, maximum=MAX_TOKENS * 1_000_000)
    return round(total / completed)


def _vllm_rows(data: dict, defaults: dict, name: str) -> list[Row]:
    """vLLM `benchmark_serving.py --save-result` JSON: one run; its mean TTFT/TPOT, its TTFT p90 and
    p99 where the run recorded them, and output throughput at the run's concurrency
    (`max_concurrency`; else --batch; else the largest batch that fits) and its `request_rate`.
    The GPU is not in the file: --gpu gives it."""
    metrics = [
        (key, metric, unit)
        for key, metric, unit in (
            ("mean_ttft_ms", "ttft_ms", "ms"),
            ("p90_ttft_ms", "ttft_p90_ms", "ms"),  # with --metric-percentiles 90,99
            ("p99_ttft_ms", "ttft_p99_ms", "ms"),
            ("mean_tpot_ms", "tpot_ms", "ms"),
            ("output_throughput", "output_throughput_tok_s", "tok/s"),
        )
        if data.get(key) is not None
    ]
    try:
        completed = _int(data, "completed", 0) or _int(data, "num_prompts", 0)
        if not completed:
            raise RowError("completed is 0 or missing: no request finished, so the mean lengths are unknown")
        lengths = {k: _mean_tokens(data, f"total_{k}_tokens", completed) for k in ("input", "output")}
        concurrency = str(defaults.get("batch") or "")
        if _text(data, "max_concurrency"):  # closed loop at this many requests in flight
            concurrency = str(_int(data, "max_concurrency", minimum=1, maximum=MAX_BATCH))
        request_rate, backend = _text(data, "request_rate"), _text(data, "backend") or "vllm"
        model = defaults.get("model") or _text(data, "model_id")
    except RowError as e:
        return [(f"{name}:{metric}", str(e)) for _, metric, _ in metrics]
    base = {
        "source": f"vLLM benchmark_serving {name}",
        "gpu": defaults.get("gpu") or "",
        "tp": defaults.get("tp", 1),
        "pp": defaults.get("pp", 1),
        "model": model,
        "weight_precision": defaults.get("precision") or "bf16",
        "kv_precision": "",
        "batch": concurrency,
        "input_len": lengths["input"],
        "output_len": lengths["output"],
        "request_rate": request_rate,
        "framework": f"vLLM ({backend})",
    }
    return [
        (f"{name}:{metric}", {**base, "metric": metric, "value": data[key], "unit": unit})
        for key, metric, unit in metrics
    ]


def read_file(path: str | Path, catalog: Catalog | None = None, defaults: dict | None = None) -> ReadResult:
    """Read measurements from a measured-dev.csv-style CSV, a llama-bench JSON/CSV or a vLLM
    benchmark_serving JSON (detected from the content). `defaults` supplies what a format does not
    record (gpu, model, precision, tp, pp, batch)."""
    catalog, defaults, p = catalog or load_catalog(), defaults or {}, Path(path)
    raw = b""
    try:  # a regular file of bounded size: never a FIFO (it would block) or /dev/zero (endless)
        raw = read_regular_file(p, MAX_MEASUREMENTS_BYTES, "a measurements file")
        # Excel's "CSV UTF-8" starts with a byte-order mark; a file saved twice may have two
        text = raw.decode("utf-8-sig").lstrip("\ufeff")
    except FileNotFoundError:
        raise LlmsweepError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise LlmsweepError(f"{path}: is a folder, not a measurements file") from None
    except UnreadableFile as e:
        raise LlmsweepError(f"{path}: {e}") from None
    except UnicodeDecodeError as e:
        raise LlmsweepError(_not_utf8(path, raw, e)) from None
    except OSError as e:
        raise LlmsweepError(f"{path}: cannot read measurements: {e.strerror or e}") from None
    from llmsweep.calibrate import formats  # AIPerf, GuideLLM, SGLang, vLLM sweeps, llama-batched-bench

    rows = formats.read(p, text, defaults, _vllm_rows)
    if rows is not None:
        return _rows_to_result(rows, catalog)
    if p.suffix.lower() in (".json", ".jsonl") or text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise LlmsweepError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
        except (ValueError, RecursionError) as e:  # an integer too long to read, nesting too deep
            raise LlmsweepError(f"{path}: invalid JSON: {e}") from None
        if isinstance(data, list) and any(isinstance(r, dict) and "avg_ts" in r for r in data):
            needs = [k for k in ("model",) if not defaults.get(k)]
            if needs:
                raise LlmsweepError(f"{path}: llama-bench results do not name the Hugging Face model; give --model")
            records = [r if isinstance(r, dict) else "record is not a JSON object" for r in data]
            return _rows_to_result(_llama_bench_rows(records, {**defaults, "prefix": p.stem}), catalog)
        if isinstance(data, dict) and ("output_throughput" in data or "mean_ttft_ms" in data):
            if not defaults.get("gpu"):
                raise LlmsweepError(f"{path}: vLLM results do not name the GPU; give --gpu")
            return _rows_to_result(_vllm_rows(data, defaults, p.name), catalog)
        raise LlmsweepError(
            f"{path}: not a llama-bench (-o json) or vLLM benchmark_serving result, nor a vLLM bench sweep, SGLang "
            "bench_serving, AIPerf profile_export, GuideLLM benchmarks.json or llama-batched-bench file"
        )
    table = _csv_rows(p, text)
    if "avg_ts" in table.header and "n_prompt" in table.header:
        if not defaults.get("model"):
            raise LlmsweepError(f"{path}: llama-bench results do not name the Hugging Face model; give --model")
        records = [r for _, r in table.rows]
        return _rows_to_result(_llama_bench_rows(records, {**defaults, "prefix": p.stem}), catalog)
    result = _read_measured_csv(p, table.rows, table.header, catalog, table.lines)
    if table.short:
        result.notes.append(_short_note(p, table))
    return result


def _not_utf8(path: str | Path, raw: bytes, e: UnicodeDecodeError) -> str:
    """The message for a file that is not UTF-8: its line and byte (counted in the file as it is)."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # Excel's "Unicode Text", Windows' "Unicode"
        return f"{path}: not UTF-8 text but UTF-16 (it starts with a UTF-16 byte-order mark); {_SAVE_UTF8}"
    start = e.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)  # utf-8-sig counts after its mark
    before = raw[:start]
    line = before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1
    return f"{path}:{line}: not UTF-8 text (byte {start + 1:,} is not valid UTF-8); {_SAVE_UTF8}"


_SAVE_UTF8 = "save it as UTF-8 (Excel: 'CSV UTF-8')"


@dataclass
class _Table:
    """A CSV file's header and rows: (row id or "line N", fields or the row's problem), each row's
    first line, and the (line, fields) of rows shorter than the header that were still read."""

    header: list[str]
    rows: list[Row] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    short: list[tuple[int, int]] = field(default_factory=list)


def _csv_rows(path: Path, text: str) -> _Table:
    """The file's header and rows; a header that cannot be read is a whole-file error. A row with
    fewer fields than the header that lacks a required column is truncated (a file cut off
    mid-line) and listed as such; one that lacks only optional columns (a hand-written file, or
    a spreadsheet that drops a row's blank trailing cells) is read with them blank, and noted."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        table = _Table([h.strip() for h in next(reader, [])])
        header = table.header
        counts = Counter(h for h in header if h)
        doubled = sorted(h for h, n in counts.items() if n > 1)
        if doubled:
            raise LlmsweepError(f"{path}: column(s) {', '.join(doubled)} appear more than once in the header")
        start = reader.line_num + 1
        for values in reader:
            line, start = start, reader.line_num + 1
            if not any(v.strip() for v in values):
                continue  # a blank line
            fields = dict(zip(header, values, strict=False))
            rid = (fields.get("id") or "").strip() or f"line {line}"
            row: dict | str = fields
            extra = [v for v in values[len(header) :] if v.strip()]
            if extra:
                row = f"line {line} has {len(extra)} more value(s) than the header has columns"
            elif len(values) < len(header) and any(k in REQUIRED for k in header[len(values) :]):
                row = (
                    f"line {line} is truncated: it has {len(values):,} of the header's {len(header):,} fields "
                    f"(up to {header[len(values) - 1] or f'column {len(values)}'}); was the file cut off?"
                )
            elif len(values) < len(header):
                table.short.append((line, len(values)))
            table.rows.append((rid, row))
            table.lines.append(line)
    except csv.Error as e:
        raise LlmsweepError(f"{path}:{reader.line_num}: not a readable CSV file: {e}") from None
    return table


def _short_note(path: Path, table: _Table) -> str:
    """The note for rows read without their last, optional columns."""
    (line, n), more = table.short[0], len(table.short) - 1
    others = f" (and {more:,} more row(s) have fewer fields than the header)" if more else ""
    return (
        f"{path}: line {line} has {n:,} of the header's {len(table.header):,} fields{others}: the missing last "
        "column(s) are read as blank; if the file was cut off, complete the row"
    )


def read_measurements(path: str | Path, catalog: Catalog | None = None) -> tuple[list[Measurement], list[dict]]:
    """(rows mapped to configurations, [{id, reason}] for rows that could not be mapped)."""
    result = read_file(path, catalog)
    return result.measurements, result.skipped
