"""One measurement: what was measured (metric, value in SI units), on which configuration, and
which estimate column it is compared with.

Systems. A row may give more GPUs (`num_gpus`) than one replica uses (tp x pp x dp_attention): the
rest are data-parallel replicas, r = num_gpus / (tp x pp x dp_attention), a whole number (else
the row is not estimable). Each replica serves ceil(C / r) of the client concurrency C (exactly
C / r when r divides C: the busiest replica's share otherwise) or lambda / r of an offered rate.
TTFT and TPOT are per request: the replica's. Output throughput in `tok/s` is the whole system's:
C x each user's tokens/s at the replica's concurrency (Little's law; r x the replica's throughput
when r divides C, at `max` or at a rate); in `tok/s/gpu` it is that over num_gpus. A row with
`num_gpus` and no `tp` is compared at the layout llmsweep picks (comparison.choose_layouts).

Percentiles. `ttft_p90_ms` and `ttft_p99_ms` are compared with ttft_p90_s / ttft_p99_s;
`ttft_median_ms`, `tpot_median_ms` and `itl_median_ms` with the means (ttft_s, tpot_s), with a
note; the estimator has no TPOT/ITL percentile, so `tpot_p90_ms`, `tpot_p99_ms`, `itl_p90_ms` and
`itl_p99_ms` rows are listed as not estimable. Percentile and median rows are compared, not fitted.

Variable-length datasets (readers._lengths) and MLPerf-style scenarios (readers._scenario,
comparison._at_limits) are described where they are read and estimated.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from llmsweep.catalog.engines import mtp_draft_tokens
from llmsweep.errors import did_you_mean
from llmsweep.grid import MAX

DECODE_RATE = "decode_rate_per_seq"  # 1 / tpot_s: see DERIVED in comparison.py
# measured metric (and unit) -> (estimate column, factor from the measured unit to SI)
METRICS: dict[tuple[str, str], tuple[str, float]] = {
    # one sequence's generation speed (llama-bench tg, ExLlamaV2): 1 / time per output token, which at
    # batch 1 is the single-stream step (decode_tokens_per_s_per_seq also counts the prompt's TTFT)
    ("decode_tok_s_per_seq", "tok/s"): (DECODE_RATE, 1.0),
    ("prefill_tok_s", "tok/s"): ("prefill_tokens_per_s", 1.0),
    ("output_throughput_tok_s", "tok/s"): ("output_tokens_per_s", 1.0),
    ("output_throughput_tok_s", "tok/s/gpu"): ("output_tokens_per_s_per_gpu", 1.0),
    ("ttft_ms", "ms"): ("ttft_s", 1e-3),
    ("tpot_ms", "ms"): ("tpot_s", 1e-3),
    ("itl_ms", "ms"): ("tpot_s", 1e-3),
    ("max_batch", ""): ("max_batch", 1.0),
    ("memory_gb", "GB"): ("model_weight_bytes", 2.0**30),  # the source's "GB" are GiB (see its notes)
    ("ttft_p90_ms", "ms"): ("ttft_p90_s", 1e-3),
    ("ttft_p99_ms", "ms"): ("ttft_p99_s", 1e-3),
    ("ttft_median_ms", "ms"): ("ttft_s", 1e-3),
    ("tpot_median_ms", "ms"): ("tpot_s", 1e-3),
    ("itl_median_ms", "ms"): ("tpot_s", 1e-3),
    # end-to-end request latency (LLM-Inference-Bench's e2e_latency_ms; AIPerf/GuideLLM/SGLang means)
    ("e2e_latency_ms", "ms"): ("request_latency_s", 1e-3),
}
MEDIAN_NOTE = "median compared with the estimated mean (the estimator gives means and TTFT p90/p99)"
# Metrics read but not estimated: their rows are listed in unmapped.csv with the reason.
NOT_ESTIMATED = {
    (f"{name}_{p}_ms", "ms"): (
        f"{name}_{p}_ms: the estimator gives the mean time per output token only, no percentile of it "
        f"(compare {name}_ms or {name}_median_ms)"
    )
    for name in ("tpot", "itl")
    for p in ("p90", "p99")
}
# The plausible range of a measured value, per unit (a name in limits.RANGES, checked in the unit as
# the file gives it): a value outside it (1e-300 tok/s, 1e300 ms) is a typo or a wrong unit, listed
# in unmapped.csv with the range rather than compared (its ratio would say nothing about the estimator).
VALUE_RANGES = {
    "tok/s": "measured_tokens_per_s",
    "tok/s/gpu": "measured_tokens_per_s_per_gpu",
    "ms": "measured_ms",
    "GB": "measured_gb",
    "": "measured_sequences",  # max_batch
}
_PERCENTILE = re.compile(r"(ttft|tpot|itl)_(p\d+(?:\.\d+)?|median|mean|avg|average)_ms")
# Metrics whose values are times (an estimate above the measurement is pessimistic, not optimistic).
TIME_METRICS = frozenset(m for (m, unit) in METRICS if unit == "ms")
# Compared columns that are totals of the whole system (times its replicas); per-GPU throughput is
# the system's over its GPUs. Everything else is per request, per sequence or per replica.
SYSTEM_COLUMNS = ("output_tokens_per_s", "max_batch")
PER_GPU_COLUMNS = ("output_tokens_per_s_per_gpu",)
# Metric groups for error summaries, uncertainty bands and fitting (percentiles and medians are
# compared only: the fit uses the means the model is built on).
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
# Optional: `request_rate` (requests/s; blank = closed loop at `batch` concurrency), the layout
# columns of measured-load-dev.csv (attention data parallel, expert parallel, MoE tensor parallel),
# `num_gpus` (the system's GPUs: data-parallel replicas beyond one), and measured-serving-dev.csv's
# `mode` and `speculative` (rows in a serving mode the estimator does not model are listed, not
# compared) with its per-pool layout columns (the pools of a disaggregated row; prefill_moe_tp only checked,
# prefill_batch and decode_batch not read).
POOL_FILE_COLUMNS = tuple(
    f"{pool}_{k}"
    for pool in ("prefill", "decode")
    for k in ("workers", "tp", "pp", "dp_attention", "ep", "moe_tp", "batch")
)
KNOWN = (
    *REQUIRED,
    "num_gpus",
    "params_b",
    "framework",
    "notes",
    "request_rate",
    "dp_attention",
    "ep",
    "moe_tp",
    "mode",
    "speculative",
    *POOL_FILE_COLUMNS,
    "scenario",
    "ttft_limit_ms",
    "tpot_limit_ms",
)
# MLPerf-style scenarios: offline = every query at once (the closed loop at the largest batch, or at a
# stated batch); server and interactive = the largest Poisson rate whose p99 TTFT and TPOT meet
# `ttft_limit_ms` / `tpot_limit_ms` (comparison.py, _at_limits).
SCENARIOS = ("offline", "server", "interactive")
LIMITED = ("server", "interactive")


@dataclass(frozen=True)
class Measurement:
    id: str
    source: str
    gpu: str
    model: str
    precision: str
    kv_precision: str
    tp: int  # one replica's
    pp: int
    batch: int | str  # the system's client concurrency, as stated (`max`: not stated)
    input_tokens: int
    output_tokens: int
    metric: str
    column: str  # "" for a metric read but not estimated (NOT_ESTIMATED)
    measured: float  # SI units
    assumptions: str
    engine: str = "generic"  # an engine id (catalog/engines.py), from the `framework` text
    # timed through a serving front end (HTTP server, tokeniser), whose request_overhead_s the first
    # token pays; False for an offline harness (catalog/engines.served)
    served: bool = True
    request_rate: float | None = None  # requests/s offered to the system (open loop); None or inf = closed loop
    dp_attention: int = 1  # attention data-parallel replicas
    ep: int = 1  # expert parallel
    moe_tp: int = 1  # tensor parallel of the MoE experts
    unit: str = ""  # the measured value's unit as the file gives it (comparison.csv writes values in it)
    value: float | None = None  # the measured value in `unit`, as read (None: measured / si_factor)
    num_gpus: int | None = None  # GPUs of the measured system (None: one replica's)
    layout_chosen: bool = False  # num_gpus without tp: llmsweep picks tp (comparison.choose_layouts)
    mode: str = ""  # serving mode as stated (agg, disagg; "" = not stated, aggregated)
    speculative: str = ""  # speculative decoding as stated ("" = none)
    # disaggregated: worker counts and the prefill worker's layout (tp, pp, dp_attention, ep, moe_tp
    # above are then the decode worker's); None = aggregated
    prefill_workers: int | None = None
    decode_workers: int | None = None
    prefill_tp: int | None = None
    prefill_pp: int | None = None
    prefill_dp_attention: int | None = None
    prefill_ep: int | None = None
    prefill_moe_tp: int | None = None  # checked against the prefill worker's layout only: the estimator derives it
    scenario: str = ""  # MLPerf-style scenario (SCENARIOS; "" = none)
    ttft_limit_s: float | None = None  # server/interactive: the p99 TTFT limit
    tpot_limit_s: float | None = None  # server/interactive: the p99 TPOT limit (checked on the mean TPOT)

    @property
    def open_loop(self) -> bool:
        """Requests arrive at a stated rate and no concurrency is stated."""
        return self.request_rate is not None and math.isfinite(self.request_rate) and self.batch == MAX

    @property
    def fittable(self) -> bool:
        """Rows that can inform speed parameters: a stated batch, a speed metric, aggregated serving
        without speculation (rows of the other serving modes are compared, and fit only their own
        parameters: fitting.fit_serving)."""
        speed = self.batch != MAX and GROUPS.get(self.metric) in ("decode", "prefill", "throughput")
        return speed and not self.serving_mode

    @property
    def serving_mode(self) -> bool:
        """Disaggregated or speculative: a serving mode beyond one aggregated replica."""
        return self.disaggregated or self.draft_tokens > 0

    @property
    def disaggregated(self) -> bool:
        return self.mode.lower() in DISAGGREGATED_SPELLINGS

    @property
    def worker_gpus(self) -> int:
        """GPUs of one (decode) worker: tp x pp x dp_attention."""
        return self.tp * self.pp * self.dp_attention

    @property
    def replica_gpus(self) -> int:
        """GPUs of one replica: the worker's, or every worker of both pools when disaggregated."""
        if not self.disaggregated or self.prefill_workers is None or self.decode_workers is None:
            return self.worker_gpus
        prefill = (self.prefill_tp or 1) * (self.prefill_pp or 1) * (self.prefill_dp_attention or 1)
        return self.prefill_workers * prefill + self.decode_workers * self.worker_gpus

    @property
    def draft_tokens(self) -> int:
        """Tokens drafted per step: the engine's default for an MTP row (the sources state none;
        catalog/engines.MTP_DRAFT_TOKENS: SGLang 3, TensorRT-LLM and vLLM 1), else 0."""
        return mtp_draft_tokens(self.engine) if self.speculative.lower() == "mtp" else 0

    @property
    def replicas(self) -> int:
        """r = num_gpus / (tp x pp x dp_attention): data-parallel replicas of the system (1 when
        num_gpus is not stated). Whole by construction: not_estimable lists the other rows."""
        return max(self.num_gpus // self.replica_gpus, 1) if self.num_gpus else 1

    @property
    def replica_batch(self) -> int | str:
        """One replica's concurrency: ceil(C / r) (C / r when r divides C); `max` stays `max`."""
        return self.batch if self.batch == MAX else -(-int(self.batch) // self.replicas)

    @property
    def replica_rate(self) -> float | None:
        """One replica's offered rate: lambda / r (open loop; otherwise as stated)."""
        return self.request_rate / self.replicas if self.open_loop else self.request_rate  # type: ignore[operator]

    @property
    def scale(self) -> float:
        """Factor from the replica's estimate to the measured system's: for throughput in tok/s,
        C / ceil(C / r) (each of the C users at the replica's per-user rate; = r when r divides C)
        or r (at `max` or an offered rate); per GPU that over r; max_batch x r; else 1."""
        r = self.replicas
        if self.column in PER_GPU_COLUMNS and self.disaggregated and self.decode_workers:
            # per decode GPU, as InferenceX states disaggregated throughput: all GPUs over the decode pool's
            return self.replica_gpus / (self.decode_workers * self.worker_gpus)
        if r == 1 or self.column not in (*SYSTEM_COLUMNS, *PER_GPU_COLUMNS):
            return 1.0
        closed = self.batch != MAX and not self.open_loop and self.column != "max_batch"
        system = int(self.batch) / int(self.replica_batch) if closed else float(r)
        return system / r if self.column in PER_GPU_COLUMNS else system

    @property
    def si_factor(self) -> float:
        """From the measured unit to SI: measured = value x si_factor (a unit not given: the metric's)."""
        if (self.metric, self.unit) in METRICS:
            return METRICS[(self.metric, self.unit)][1]
        return next((f for (name, _), (_, f) in METRICS.items() if name == self.metric), 1.0)

    @property
    def stated(self) -> float:
        """The measured value in its unit (`unit`), as the file gives it."""
        return self.value if self.value is not None else self.measured / self.si_factor


DISAGGREGATED_SPELLINGS = ("disagg", "disaggregated")

LAYOUT_INCONSISTENT = (
    "layout: moe_tp x ep must equal tp x dp_attention (the experts of a stage span its tp x dp_attention GPUs)"
)


PREFILL_LAYOUT_INCONSISTENT = (
    "prefill layout: prefill_moe_tp x prefill_ep must equal prefill_tp x prefill_dp_attention (the experts of a "
    "prefill stage span its GPUs)"
)


def metric_problem(metric: str, unit: str) -> str:
    """Why (metric, unit) is not one llmsweep reads, in one sentence that says what it does read."""
    m = _PERCENTILE.fullmatch(metric)
    if m and unit == "ms":
        name = m.group(1)
        if name == "ttft":
            return (
                f"metric {metric!r}: TTFT percentiles are estimated at p90 and p99 (ttft_p90_ms, ttft_p99_ms); "
                "write a median as ttft_median_ms and a mean as ttft_ms"
            )
        return (
            f"metric {metric!r}: the estimator gives the mean {name.upper()} only "
            f"(write {name}_ms, or {name}_median_ms for a median)"
        )
    units = sorted({u or "no unit (blank)" for name, u in METRICS if name == metric})
    if units:  # the metric is read, in another unit
        return f"metric {metric!r} in unit {unit!r} is not one llmsweep estimates: it is read in {', '.join(units)}"
    hint = did_you_mean(metric, sorted({name for name, _ in METRICS}), n=1)
    return f"metric {metric!r} in unit {unit!r} is not one llmsweep estimates" + (
        f"; did you mean {hint[0]!r}?" if hint else f" (metrics read: {', '.join(sorted({n for n, _ in METRICS}))})"
    )


def tp_candidates(m: Measurement) -> list[int]:
    """The tensor-parallel sizes llmsweep tries for a row that gives num_gpus but no tp, smallest
    first (a tie keeps the smaller): the divisors of num_gpus / (pp x dp_attention) (and with
    expert parallelism or an expert tensor split, those with moe_tp x ep = tp x dp_attention)."""
    n = (m.num_gpus or 1) // (m.pp * m.dp_attention)
    small = [t for t in range(1, math.isqrt(n) + 1) if n % t == 0]
    tps = sorted({*small, *(n // t for t in small)})
    return [t for t in tps if (m.ep == 1 and m.moe_tp == 1) or m.moe_tp * m.ep == t * m.dp_attention]


def not_estimable(m: Measurement) -> str | None:
    """Why the estimator cannot represent `m`, or None: the one place each gap is checked.
    (Layouts the estimator can describe but that cannot run, such as more GPUs than one server,
    are estimated and keep the estimator's reason.)"""
    if not m.column:
        return NOT_ESTIMATED.get((m.metric, m.unit), f"metric {m.metric!r} is not estimated")
    # lengths that leave nothing to measure
    if m.metric == "prefill_tok_s" and m.input_tokens < 1:
        return "prefill_tok_s with input_len 0: no prompt to prefill"
    if m.metric in ("output_throughput_tok_s", "decode_tok_s_per_seq") and m.output_tokens < 1:
        return f"{m.metric} with output_len 0: no output tokens"
    if m.metric.startswith(("tpot", "itl")) and m.output_tokens < 2:
        return f"{m.metric} with output_len {m.output_tokens}: no interval between tokens (it needs 2 or more)"
    if m.mode.lower() not in ("", "agg", "aggregated", *DISAGGREGATED_SPELLINGS):
        hint = did_you_mean(m.mode.lower(), ["agg", "aggregated", *DISAGGREGATED_SPELLINGS], n=1)
        return f"mode {m.mode!r}: serving modes estimated are agg (aggregated) and disagg (disaggregated)" + (
            f"; did you mean {hint[0]!r}?" if hint else ""
        )
    if m.disaggregated and (m.prefill_workers is None or m.decode_workers is None):
        return "disaggregated, with no pool sizes (prefill_workers, decode_workers): the replica cannot be built"
    if m.speculative.lower() not in ("", "none", "no", "off", "mtp"):
        return f"speculative {m.speculative!r}: speculative decoding is estimated for mtp rows only"
    per_replica = m.replica_gpus if m.disaggregated else m.pp * m.dp_attention * (1 if m.layout_chosen else m.tp)
    if m.num_gpus is not None and m.num_gpus % per_replica:
        if m.disaggregated:
            layout = (
                f"{m.prefill_workers} prefill worker(s) of {m.prefill_tp or 1} x {m.prefill_pp or 1} x "
                f"{m.prefill_dp_attention or 1} and {m.decode_workers} decode worker(s) of {m.tp} x {m.pp} x "
                f"{m.dp_attention} GPUs (tp x pp x dp_attention)"
            )
        else:
            layout = "pp x dp_attention" if m.layout_chosen else "tp x pp x dp_attention"
        return (
            f"num_gpus {m.num_gpus} is not a whole number of replicas of {layout} = {per_replica} GPUs "
            f"({m.num_gpus} / {per_replica} = {m.num_gpus / per_replica:g})"
        )
    split = m.ep > 1 or m.moe_tp > 1  # the experts split some way: the split must cover the stage's GPUs
    if split and m.moe_tp * m.ep != m.tp * m.dp_attention and not (m.layout_chosen and tp_candidates(m)):
        return LAYOUT_INCONSISTENT
    if m.disaggregated and m.prefill_ep is not None:
        ep, moe_tp = max(m.prefill_ep, 1), max(m.prefill_moe_tp or 1, 1)
        stage = (m.prefill_tp or 1) * (m.prefill_dp_attention or 1)
        if (ep > 1 or moe_tp > 1) and moe_tp * ep != stage:
            return PREFILL_LAYOUT_INCONSISTENT
    return None


def _layout_text(m: Measurement) -> str:
    parts = [f"tp {m.tp}"] + [f"pp {m.pp}"] * (m.pp > 1) + [f"dp_attention {m.dp_attention}"] * (m.dp_attention > 1)
    return " x ".join(parts)


def noting_replicas(m: Measurement) -> Measurement:
    """`m` with the assumptions its system adds: the layout llmsweep chose (when it did), the
    replicas and each one's share of the traffic; unchanged for a single replica as stated."""
    r = m.replicas
    notes = []
    if m.layout_chosen:
        replicas = f"{r} replica" + "s" * (r > 1)
        notes.append(f"layout chosen by llmsweep: {_layout_text(m)} x {replicas} for {m.num_gpus} GPUs")
    elif r > 1:
        notes.append(f"{m.num_gpus} GPUs = {r} replicas of {_layout_text(m)}")
    if r > 1 and m.open_loop:
        notes.append(f"request rate {m.request_rate:g}/s: {m.replica_rate:g}/s per replica")
    elif r > 1 and m.batch != MAX:
        c, share = int(m.batch), int(m.replica_batch)
        if c % r == 0:
            notes.append(f"concurrency {c}: {share} per replica")
        else:
            notes.append(
                f"concurrency {c}: {share} per replica (ceil of {c} / {r}; throughput = {c} x the per-user rate there)"
            )
    if not notes:
        return m
    return replace(m, assumptions="; ".join(n for n in (*notes, m.assumptions) if n))


@dataclass
class ReadResult:
    measurements: list[Measurement] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {id, reason}
    notes: list[str] = field(default_factory=list)


def source_key(source: str) -> str:
    """A short name for a source (its repository or site), for per-source summaries."""
    m = re.search(r"github\.com/([^/\s]+/[^/\s]+)", source)
    if m:
        return m.group(1)
    return source.split(" ")[0][:60] or "unknown"
