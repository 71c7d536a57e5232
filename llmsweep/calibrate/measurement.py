"""One measurement: what was measured (metric, value in SI units), on which configuration, and
which estimate column it is compared with."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

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
# Optional: `request_rate` (requests/s; blank = closed loop at `batch` concurrency) and the layout
# columns of measured-load-dev.csv (attention data parallel, expert parallel, MoE tensor parallel).
KNOWN = (*REQUIRED, "num_gpus", "params_b", "framework", "notes", "request_rate", "dp_attention", "ep", "moe_tp")


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
    engine: str = "generic"  # an engine id (catalog/engines.py), from the `framework` text
    request_rate: float | None = None  # requests/s offered (open loop); None or inf = closed loop at `batch`
    dp_attention: int = 1  # attention data-parallel replicas
    ep: int = 1  # expert parallel
    moe_tp: int = 1  # tensor parallel of the MoE experts

    @property
    def open_loop(self) -> bool:
        """Requests arrive at a stated rate and no concurrency is stated."""
        return self.request_rate is not None and math.isfinite(self.request_rate) and self.batch == MAX

    @property
    def fittable(self) -> bool:
        """Rows that can inform speed parameters: a stated batch, a speed metric."""
        return self.batch != MAX and GROUPS.get(self.metric) in ("decode", "prefill", "throughput")


LAYOUT_INCONSISTENT = (
    "layout: moe_tp x ep must equal tp x dp_attention (the experts of a stage span its tp x dp_attention GPUs)"
)


def not_estimable(m: Measurement) -> str | None:
    """Why the estimator cannot represent `m`, or None: the one place each gap is checked.
    (Layouts the estimator can describe but that cannot run, such as more GPUs than one server,
    are estimated and keep the estimator's reason.)"""
    if m.ep > 1 and m.moe_tp * m.ep != m.tp * m.dp_attention:
        return LAYOUT_INCONSISTENT
    return None


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
