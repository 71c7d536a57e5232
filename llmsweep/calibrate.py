"""Published (or your own) measurements <-> estimates: compare, fit the efficiency profile, and
say how accurate the estimator is, out of sample.

Readers: the schema of shared/reference/measured-dev.csv (see its README), vLLM's
`benchmark_serving` JSON results and llama.cpp `llama-bench -o json|csv` output. Every row is
either mapped to a configuration or listed with the reason it was not; nothing is dropped silently.

Fitting minimises the squared log error of estimated against measured values over the profile's
parameters (bandwidth and compute efficiency shared, then per GPU family where a family has
enough rows; per-step and per-layer overheads shared). The error it reports is out of sample:
leave-one-source-out cross-validation, so no row is scored by a profile that was fitted on it.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from llmsweep.catalog import Catalog, Profile, load_catalog
from llmsweep.catalog.profiles import Efficiency
from llmsweep.errors import LlmsweepError
from llmsweep.estimate import add_estimates
from llmsweep.grid import MAX, Axes, expand

# measured metric (and unit) -> (estimate column, factor from the measured unit to SI)
METRICS: dict[tuple[str, str], tuple[str, float]] = {
    ("decode_tok_s_per_seq", "tok/s"): ("decode_tokens_per_s_per_seq", 1.0),
    ("prefill_tok_s", "tok/s"): ("prefill_tokens_per_s", 1.0),
    ("output_throughput_tok_s", "tok/s"): ("output_tokens_per_s", 1.0),
    ("output_throughput_tok_s", "tok/s/gpu"): ("output_tokens_per_s_per_gpu", 1.0),
    ("ttft_ms", "ms"): ("ttft_s", 1e-3),
    ("tpot_ms", "ms"): ("tpot_s", 1e-3),
    ("itl_ms", "ms"): ("tpot_s", 1e-3),
    ("max_batch", ""): ("max_batch", 1.0),
    ("memory_gb", "GB"): ("model_weight_bytes", 2.0**30),  # the source's "GB" are GiB (see its notes)
}
# Metric groups for error summaries and uncertainty bands.
GROUPS = {
    "decode_tok_s_per_seq": "decode",
    "tpot_ms": "decode",
    "itl_ms": "decode",
    "prefill_tok_s": "prefill",
    "ttft_ms": "prefill",
    "output_throughput_tok_s": "throughput",
    "max_batch": "memory",
    "memory_gb": "memory",
}
ASSUMED_TOKENS = 256  # for lengths a source does not state
PLACEHOLDER_GPU = "h100-sxm"  # weight-size rows name no GPU; weights do not depend on it
REQUIRED = (
    "id",
    "source",
    "gpu",
    "tp",
    "pp",
    "model",
    "weight_precision",
    "kv_precision",
    "batch",
    "input_len",
    "output_len",
    "metric",
    "value",
    "unit",
)
KNOWN = (*REQUIRED, "num_gpus", "params_b", "framework", "notes")


@dataclass(frozen=True)
class Measurement:
    id: str
    source: str
    gpu: str
    model: str
    precision: str
    kv_precision: str
    tp: int
    pp: int
    batch: int | str
    input_tokens: int
    output_tokens: int
    metric: str
    column: str
    measured: float  # SI units
    assumptions: str
    engine: str = ""

    @property
    def fittable(self) -> bool:
        """Rows that can inform speed parameters: a stated batch, a speed metric."""
        return self.batch != MAX and GROUPS.get(self.metric) in ("decode", "prefill", "throughput")


@dataclass
class ReadResult:
    measurements: list[Measurement] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {id, reason}
    notes: list[str] = field(default_factory=list)


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


def source_key(source: str) -> str:
    """A short name for a source (its repository or site), for per-source summaries."""
    m = re.search(r"github\.com/([^/\s]+/[^/\s]+)", source)
    if m:
        return m.group(1)
    return source.split(" ")[0][:60] or "unknown"


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


# -- readers -------------------------------------------------------------------------------------------------
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


# -- evaluation ----------------------------------------------------------------------------------------------
PARAMS = ("bandwidth_efficiency", "compute_efficiency", "step_overhead_s", "layer_overhead_s")


@dataclass
class Evaluator:
    """One grid row per measurement, built once; profile parameters are then swapped in as columns,
    so a fit can evaluate thousands of parameter sets quickly."""

    measurements: list[Measurement]
    base: pl.DataFrame  # grid rows (facts + the starting profile's columns), in measurement order

    @classmethod
    def build(cls, measurements: list[Measurement], profile: Profile, catalog: Catalog | None = None) -> Evaluator:
        catalog = catalog or load_catalog()
        parts = [
            expand(
                catalog,
                Axes(
                    gpu=[m.gpu],
                    model=[m.model],
                    precision=[m.precision],
                    kv_precision=[m.kv_precision],
                    input_tokens=[m.input_tokens],
                    output_tokens=[m.output_tokens],
                    batch=[m.batch],
                    tp=[m.tp],
                    pp=[m.pp],
                ),
                profile,
            )
            for m in measurements
        ]
        base = pl.concat(pl.collect_all(parts), how="vertical_relaxed") if parts else pl.DataFrame()
        return cls(measurements, base)

    def estimate(self, profile: Profile) -> list[float | None]:
        if not self.measurements:
            return []
        families = self.base["gpu_family"].cast(pl.String).to_list()
        effs = [profile.for_family(f) for f in families]
        frame = self.base.with_columns(
            [
                pl.Series(n, [getattr(e, n) for e in effs], dtype=pl.Float64)
                for n in (
                    *PARAMS,
                    "allreduce_latency_s",
                    "memory_reserve_fraction",
                    "runtime_overhead_bytes",
                    "tp_buffer_bytes",
                )
            ]
        )
        columns = sorted({m.column for m in self.measurements})
        out = add_estimates(frame.lazy()).select(columns).collect()
        values = [out[m.column][i] for i, m in enumerate(self.measurements)]
        return [float(v) if v is not None else None for v in values]


def comparison_frame(
    measurements: list[Measurement], estimated: Sequence[float | None], base: pl.DataFrame | None = None
) -> pl.DataFrame:
    rows = []
    for i, (m, e) in enumerate(zip(measurements, estimated, strict=True)):
        rows.append(
            {
                "id": m.id,
                "metric": m.metric,
                "measured": m.measured,
                "estimated": e,
                "ratio": (e / m.measured) if e else None,
                "gpu": m.gpu,
                "model": m.model,
                "precision": m.precision,
                "kv_precision": m.kv_precision,
                "tp": m.tp,
                "pp": m.pp,
                "batch": str(m.batch),
                "input_tokens": m.input_tokens,
                "output_tokens": m.output_tokens,
                "fits": bool(base["fits"][i]) if base is not None and "fits" in base.columns else None,
                "engine": m.engine,
                "source": source_key(m.source),
                "assumptions": m.assumptions,
            }
        )
    return pl.DataFrame(rows, infer_schema_length=None)


def compare(
    measurements: list[Measurement], profile: str | Profile = "default", catalog: Catalog | None = None
) -> pl.DataFrame:
    """One row per measurement: id, metric, measured, estimated, ratio (estimated / measured), and
    the configuration it was estimated as."""
    catalog = catalog or load_catalog()
    prof = catalog.profile(profile) if isinstance(profile, str) else profile
    ev = Evaluator.build(measurements, prof, catalog)
    if not measurements:
        return comparison_frame([], [])
    fits = add_estimates(ev.base.lazy()).select("fits").collect()
    return comparison_frame(measurements, ev.estimate(prof), fits)


def summary(comparison: pl.DataFrame, by: str) -> pl.DataFrame:
    """Per `by` (metric or source): count, median and 90th-percentile absolute error, median ratio."""
    err = (pl.col("ratio") - 1).abs()
    return (
        comparison.filter(pl.col("ratio").is_not_null())
        .group_by(by)
        .agg(
            pl.len().alias("rows"),
            err.median().alias("median_abs_error"),
            err.quantile(0.9).alias("p90_abs_error"),
            pl.col("ratio").median().alias("median_ratio"),
        )
        .sort(by)
    )


# -- fitting -------------------------------------------------------------------------------------------------
BOUNDS = {
    "bandwidth_efficiency": (0.3, 0.95),
    "compute_efficiency": (0.1, 0.95),
    "step_overhead_s": (0.0, 0.01),
    "layer_overhead_s": (0.0, 0.0001),
}
# A weak prior keeps the fit near the literature values unless the data clearly disagree: the penalty
# is PRIOR_WEIGHT x (squared log change of each efficiency + squared overhead change in units of SCALE).
PRIOR_WEIGHT = 0.1
SCALE = {"step_overhead_s": 0.001, "layer_overhead_s": 0.00002}
MIN_FAMILY_ROWS = 8  # a GPU family gets its own efficiencies when it has this many fittable rows


def _nelder_mead(
    f: Callable[[list[float]], float], x0: list[float], step: list[float], iterations: int = 300
) -> list[float]:
    """A small, dependency-free Nelder-Mead minimiser (bounds are handled by the caller's clipping)."""
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (step[j] if j == i else 0.0) for j in range(n)] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if abs(values[-1] - values[0]) < 1e-10:
            break
        centroid = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflect = [centroid[j] + (centroid[j] - worst[j]) for j in range(n)]
        fr = f(reflect)
        if fr < values[0]:
            expand_ = [centroid[j] + 2 * (centroid[j] - worst[j]) for j in range(n)]
            fe = f(expand_)
            simplex[-1], values[-1] = (expand_, fe) if fe < fr else (reflect, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflect, fr
        else:
            contract = [centroid[j] + 0.5 * (worst[j] - centroid[j]) for j in range(n)]
            fc = f(contract)
            if fc < values[-1]:
                simplex[-1], values[-1] = contract, fc
            else:
                best = simplex[0]
                simplex = [best] + [[best[j] + 0.5 * (x[j] - best[j]) for j in range(n)] for x in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def _loss(measurements: list[Measurement], estimated: list[float | None], rows: list[int]) -> float:
    total, n = 0.0, 0
    for i in rows:
        e = estimated[i]
        if e and e > 0:
            total += math.log(e / measurements[i].measured) ** 2
            n += 1
        else:
            total += 25.0  # an estimate that cannot be made (does not fit) counts as a large miss
            n += 1
    return total / max(n, 1)


def _with(profile: Profile, shared: dict[str, float], families: dict[str, dict[str, float]]) -> Profile:
    defaults = Efficiency.model_validate({**profile.defaults.model_dump(), **shared})
    merged = {f: {**o} for f, o in profile.families.items()}
    for fam, override in families.items():
        merged[fam] = {**merged.get(fam, {}), **override}
    return profile.model_copy(update={"defaults": defaults, "families": merged})


def _prior(start: Efficiency, params: dict[str, float]) -> float:
    total = 0.0
    for name, value in params.items():
        if name in SCALE:
            total += ((value - getattr(start, name)) / SCALE[name]) ** 2
        else:
            total += math.log(value / getattr(start, name)) ** 2
    return PRIOR_WEIGHT * total


def _clip(name: str, v: float) -> float:
    lo, hi = BOUNDS[name]
    return min(max(v, lo), hi)


# What the fit moves. Compute efficiency stays at its literature value: engines reach very different
# fractions of the tensor peak (llama.cpp runs prompt matmuls on GeForce at the FP16-accumulate rate,
# twice the FP32-accumulate peak the catalog uses; TensorRT-LLM and vLLM do not), so a value fitted on
# one engine's prefill mispredicts the others'. Cross-validation showed it: fitting it made the
# out-of-sample prefill error worse (38 %) than leaving it (26 %).
SHARED_PARAMS = ("bandwidth_efficiency", "step_overhead_s", "layer_overhead_s")
FAMILY_PARAMS = ("bandwidth_efficiency",)
STEPS = {"bandwidth_efficiency": 0.1, "compute_efficiency": 0.1, "step_overhead_s": 0.0005, "layer_overhead_s": 0.00001}


def fit(ev: Evaluator, start: Profile, rows: list[int]) -> Profile:
    """Fit on the measurements at `rows`: the shared parameters first, then each GPU family's
    bandwidth efficiency where the family has enough rows (overheads stay shared)."""
    ms = ev.measurements
    rows = [i for i in rows if ms[i].fittable]
    if not rows:
        return start

    def shared_loss(x: list[float]) -> float:
        params = {n: _clip(n, v) for n, v in zip(SHARED_PARAMS, x, strict=True)}
        return _loss(ms, ev.estimate(_with(start, params, {})), rows) + _prior(start.defaults, params)

    x0 = [getattr(start.defaults, n) for n in SHARED_PARAMS]
    best = _nelder_mead(shared_loss, x0, [STEPS[n] for n in SHARED_PARAMS])
    profile = _with(start, {n: _clip(n, v) for n, v in zip(SHARED_PARAMS, best, strict=True)}, {})
    families = ev.base["gpu_family"].cast(pl.String).to_list()
    for fam in sorted(set(families[i] for i in rows)):
        fam_rows = [i for i in rows if families[i] == fam]
        if len(fam_rows) < MIN_FAMILY_ROWS:
            continue

        def fam_loss(x: list[float], fam: str = fam, fam_rows: list[int] = fam_rows, base: Profile = profile) -> float:
            override = {n: _clip(n, v) for n, v in zip(FAMILY_PARAMS, x, strict=True)}
            prior = _prior(base.for_family(fam), override)
            return _loss(ms, ev.estimate(_with(base, {}, {fam: override})), fam_rows) + prior

        eff = profile.for_family(fam)
        x = _nelder_mead(
            fam_loss, [getattr(eff, n) for n in FAMILY_PARAMS], [STEPS[n] for n in FAMILY_PARAMS], iterations=150
        )
        profile = _with(profile, {}, {fam: {n: _clip(n, v) for n, v in zip(FAMILY_PARAMS, x, strict=True)}})
    return profile


@dataclass(frozen=True)
class FitResult:
    profile: Profile  # fitted on every row
    in_sample: pl.DataFrame  # comparison with the fitted profile (for reference only)
    out_of_sample: pl.DataFrame  # each source's rows scored by a profile fitted without that source
    before: pl.DataFrame  # comparison with the starting profile
    bands: dict[str, list[float]]  # metric group -> [low, high] factors covering the middle 80 %


def cross_validate(ev: Evaluator, start: Profile) -> pl.DataFrame:
    """Leave one source out: fit on the other sources, score the held-out one. Every row is
    scored by a profile that never saw it."""
    ms = ev.measurements
    sources = [source_key(m.source) for m in ms]
    estimated: list[float | None] = [None] * len(ms)
    for held in sorted(set(sources)):
        train = [i for i, s in enumerate(sources) if s != held]
        test = [i for i, s in enumerate(sources) if s == held]
        profile = fit(ev, start, train)
        values = ev.estimate(profile)
        for i in test:
            estimated[i] = values[i]
    return comparison_frame(ms, estimated)


def bands(out_of_sample: pl.DataFrame) -> dict[str, list[float]]:
    """Per metric group, factors [low, high] such that estimate x factor covers the middle 80 % of
    the out-of-sample errors: measured / estimated at its 10th and 90th percentiles. For
    time-like metrics (TTFT, TPOT) the same factors apply inverted."""
    out = {}
    # rows whose batch the source did not state are errors of missing information, not of the model
    frame = out_of_sample.filter(pl.col("ratio").is_not_null() & (pl.col("ratio") > 0) & (pl.col("batch") != MAX))
    frame = frame.with_columns(
        group=pl.col("metric").replace_strict(GROUPS, default=None),
        # speed metrics: measured/estimated = 1/ratio; time metrics: estimated/measured = ratio
        speed_factor=pl.when(pl.col("metric").is_in(["ttft_ms", "tpot_ms", "itl_ms"]))
        .then(pl.col("ratio"))
        .otherwise(1 / pl.col("ratio")),
    )
    for (group,), rows in frame.group_by(["group"]):
        if group in (None, "memory") or rows.height < 5:
            continue
        out[str(group)] = [round(rows["speed_factor"].quantile(0.1), 4), round(rows["speed_factor"].quantile(0.9), 4)]
    return dict(sorted(out.items()))


def calibrate(measurements: list[Measurement], start: Profile, catalog: Catalog | None = None) -> FitResult:
    ev = Evaluator.build(measurements, start, catalog)
    before = comparison_frame(measurements, ev.estimate(start))
    oos = cross_validate(ev, start)
    profile = fit(ev, start, list(range(len(measurements))))
    band = bands(oos)
    profile = profile.model_copy(update={"bands": band})
    return FitResult(profile, comparison_frame(measurements, ev.estimate(profile)), oos, before, band)


def profile_document(result: FitResult, description: str, sources: Sequence[str]) -> dict:
    """The fitted profile as profiles.yaml-style data (what `--profile FILE` reads)."""
    data = result.profile.model_dump()
    data["description"] = description
    data["sources"] = list(sources)
    return data


@dataclass(frozen=True)
class CalibrationReport:
    files: tuple[Path, ...]
    lines: tuple[str, ...]  # what the command prints


def _text_table(frame: pl.DataFrame, by: str) -> list[str]:
    lines = [f"  {by:<44} {'rows':>5} {'median |err|':>13} {'p90 |err|':>10} {'median ratio':>13}"]
    for r in frame.iter_rows(named=True):
        lines.append(
            f"  {str(r[by])[:44]:<44} {r['rows']:>5} {r['median_abs_error']:>13.1%} "
            f"{r['p90_abs_error']:>10.1%} {r['median_ratio']:>13.2f}"
        )
    return lines


def run_calibration(path: str | Path, folder: Path, profile: str, do_fit: bool, defaults: dict) -> CalibrationReport:
    """The `calibrate` command: read, compare, optionally fit, then write the files into `folder`.
    Everything is computed before anything is written, and each file is replaced whole."""
    import yaml

    from llmsweep.export import write_text_atomic

    catalog = load_catalog()
    read = read_file(path, catalog, {k: v for k, v in defaults.items() if v})
    if not read.measurements:
        reasons = "; ".join(f"{s['id']}: {s['reason']}" for s in read.skipped[:5])
        raise LlmsweepError(f"{path}: no row could be mapped to a configuration ({reasons})")
    start = catalog.profile(profile)
    comparison = compare(read.measurements, start, catalog)
    outputs = {
        "comparison.csv": comparison.write_csv(),
        "unmapped.csv": pl.DataFrame(read.skipped, schema={"id": pl.String, "reason": pl.String}).write_csv(),
    }
    lines = [
        *(f"note: {n}" for n in read.notes),
        f"{len(read.measurements)} rows compared, {len(read.skipped)} not mapped (see unmapped.csv)",
        f"profile {profile}, per metric:",
        *_text_table(summary(comparison, "metric"), "metric"),
        "per source:",
        *_text_table(summary(comparison, "source"), "source"),
    ]
    if do_fit:
        result = calibrate(read.measurements, start, catalog)
        doc = profile_document(
            result,
            f"Fitted by llmsweep calibrate on {Path(path).name}, starting from {profile}.",
            [f"{Path(path).name}: {len(read.measurements)} measurements"],
        )
        outputs["profile.yaml"] = yaml.safe_dump(doc, sort_keys=False)
        outputs["out_of_sample.csv"] = result.out_of_sample.write_csv()
        lines += [
            "fitted profile, out of sample (leave one source out), per metric:",
            *_text_table(summary(result.out_of_sample, "metric"), "metric"),
        ]
        if len({source_key(m.source) for m in read.measurements}) < 2:
            lines.append(
                "note: one source only: the out-of-sample figures need at least two sources; these are in-sample"
            )
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / name for name in outputs]
    for name, text in outputs.items():
        write_text_atomic(folder / name, text)
    lines += [str(f) for f in files]
    return CalibrationReport(tuple(files), tuple(lines))


__all__ = [
    "FitResult",
    "Measurement",
    "ReadResult",
    "calibrate",
    "compare",
    "read_file",
    "read_measurements",
    "summary",
]
