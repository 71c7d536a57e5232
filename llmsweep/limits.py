"""The one place that says which numbers llmsweep accepts, and how big its input files may be.

Every numeric input (sweep grid axes, workload, slo, costs, inline GPUs and models, config.json
fields, efficiency profiles, `estimate` options) has a finite range here. The ranges are wide
enough for any real or planned hardware and model, and narrow enough that the arithmetic of the
estimator (float64 and Int64 columns) stays finite and exact: no NaN, no infinity, no overflow.
NaN and ±inf are never accepted, and rates, sizes and speeds have a physical minimum (not just
"> 0"), since a denormal bandwidth or power would turn times and energies into infinity. Pydantic
fields are annotated with `typed(name)` (so the JSON Schema from `llmsweep schema` shows the
bounds); plain values (config.json fields) use `check()`; the `estimate` options repeat three
of the bounds as literals (a test keeps them equal).

    name                      low          high        unit        why the bounds
    tokens                    1            10,000,000  tokens      prompt / output / context lengths
    batch                     1            1,000,000   sequences   concurrent sequences
    parallel                  1            1,024       GPUs        tp and pp sizes
    requests_per_s            0.000001     10,000,000  1/s
    tokens_per_day            1            1e15        tokens/day
    peak_factor               1            1,000       ratio
    headroom                  0            10          ratio
    redundancy                0            10,000      replicas
    seconds (slo)             0.000001     1,000,000   s           a microsecond to 11.6 days
    usd_per_gpu_hour          0            10,000      USD
    purchase_usd              0            100,000,000 USD         per GPU
    purchase_usd_per_server   0            1e9         USD
    amortization_years        0.1          100         years       five weeks to a century
    power_usd_per_kwh         0            100         USD/kWh
    pue                       1            5           ratio
    power_utilization         0.01         1           ratio
    hosting_usd_per_kw_month  0            100,000     USD
    top_n                     1            10,000      options
    memory_gb                 0.1          100,000     GB (GiB)    per GPU
    memory_bandwidth_gbps     1            1,000,000   GB/s
    tflops                    0.001        1,000,000   TFLOP/s     per dtype, dense
    tdp_w                     1            100,000     W
    link_gbps                 0.1          100,000     GB/s        NVLink / PCIe / scale-out NIC per direction
    gpu_group                 1            100,000     GPUs        nvlink_group
    gpus_per_node             1            1,024       GPUs
    launch_year               1990         2100        year
    efficiency                0.001        1           fraction    bandwidth / compute efficiency
    scale                     0.1          2           ratio       compute_scale (a GPU family's matmul ceiling)
    overhead_s                0            10          s           per step / layer / all-reduce
    reserve_fraction          0            <1          fraction
    overhead_bytes            0            1e13        bytes       runtime / tp buffers
    prefill_chunk_tokens      1            10,000,000  tokens
    band_factor               0.001        1,000       ratio       uncertainty bands
    expert_imbalance          1            4           ratio       busiest expert-parallel GPU / mean
    server_usd                0            1e9         USD         server_usd, network_usd_per_server
    host_kw                   0            1,000       kW          a server's power beyond its GPUs
    rack_kw                   0.1          10,000      kW
    servers_per_rack          1            10,000      servers
    rack_usd_per_month        0            1e7         USD
    horizon_years             0.1          100         years
    share                     0            1           fraction    burst_share (closed-loop waves)
    passes                    0            1,000       passes      routed_activation_passes (MoE routing traffic)
    running_requests          0            1,000,000   requests    max_running_requests (0 = no limit)
    workers                   1            1,024       workers     prefill / decode workers of a disaggregated replica
    draft_tokens              1            16          tokens      speculative decoding: tokens drafted per step
    acceptance                >0           1           fraction    speculative decoding: a drafted token's acceptance
    hit_rate                  0            <1          fraction    prefix cache: share of prompt tokens cached
    config_width              1            1,048,576   elements    hidden, intermediate, head dims, ranks
    config_count              1            65,536                  layers, heads, experts
    config_vocab              1            100,000,000 tokens      vocab_size
    config_context            1            2^31        tokens      max_position_embeddings, windows
    params_total              1            1e15        parameters  a model's computed size
    measured_tokens_per_s     0.001        1e10        tok/s       a measured speed or throughput (calibrate)
    measured_tokens_per_s_per_gpu 0.001    10,000,000  tok/s/gpu   a measured throughput per GPU
    measured_ms               0.001        1e9         ms          a measured latency or latency limit (1 us to
                                                                   11.6 days: the `seconds` range, in ms)
    measured_gb               0.001        1,000,000   GB          a measured size (model weights)
    measured_sequences        1            1e8         sequences   a measured max_batch

Every file llmsweep reads must be a regular file (never a FIFO, a device or a socket: they are
opened without blocking and refused) of a bounded size: sweeps, config.json and profiles at most
MAX_FILE_BYTES; a run's manifest.json MAX_MANIFEST_BYTES; calibration measurements
MAX_MEASUREMENTS_BYTES; estimates.parquet and plan.parquet MAX_ESTIMATES_BYTES and MAX_PLAN_BYTES
(plan.parquet is read whole). A YAML document (a sweep, a profile, the sweep inside a manifest)
may nest at most MAX_YAML_DEPTH levels and expand to at most MAX_YAML_NODES nodes once its
aliases are followed; JSON (manifest.json, config.json) may nest at most MAX_YAML_DEPTH levels.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
from dataclasses import dataclass
from typing import Annotated, Any

from annotated_types import Interval
from pydantic import AllowInfNan, BeforeValidator, Field

MAX_FILE_BYTES = 4 * 2**20  # 4 MiB: the largest real sweep or config.json is a few tens of KiB
MAX_MANIFEST_BYTES = 64 * 2**20  # a manifest holds its sweep (<= 4 MiB), catalog facts and notes
MAX_MEASUREMENTS_BYTES = 64 * 2**20  # about 500,000 measurements in the measured-dev.csv schema
MAX_ESTIMATES_BYTES = 16 * 2**30  # estimates.parquet is scanned lazily; 100M+ rows
MAX_PLAN_BYTES = 2**30  # plan.parquet is read into memory whole
MAX_YAML_DEPTH = 50  # nesting of mappings and sequences (a sweep needs about 6)
MAX_YAML_NODES = 100_000  # nodes after following aliases (a large sweep has a few thousand)


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    unit: str
    integer: bool = False
    low_open: bool = False  # low itself is not allowed (> low)
    high_open: bool = False  # high itself is not allowed (< high)

    def describe(self) -> str:
        lo = f"greater than {_num(self.low)}" if self.low_open else f"at least {_num(self.low)}"
        hi = f"less than {_num(self.high)}" if self.high_open else f"at most {_num(self.high)}"
        kind = "an integer" if self.integer else "a finite number"
        return f"{kind} {lo} and {hi}" + (f" ({self.unit})" if self.unit else "")

    def contains(self, v: float) -> bool:
        if not math.isfinite(v):
            return False
        above = v > self.low if self.low_open else v >= self.low
        below = v < self.high if self.high_open else v <= self.high
        return above and below


def _num(v: float) -> str:
    if v == int(v) and abs(v) <= 1e8:
        return f"{int(v):,}"
    return f"{v:g}"


RANGES: dict[str, Range] = {
    "tokens": Range(1, 10_000_000, "tokens", integer=True),
    "batch": Range(1, 1_000_000, "sequences", integer=True),
    "parallel": Range(1, 1024, "GPUs", integer=True),
    "requests_per_s": Range(1e-6, 10_000_000, "requests/s"),
    "tokens_per_day": Range(1, 1e15, "tokens/day"),
    "peak_factor": Range(1, 1000, "ratio"),
    "headroom": Range(0, 10, "ratio"),
    "redundancy": Range(0, 10_000, "replicas", integer=True),
    "seconds": Range(1e-6, 1_000_000, "s"),
    "usd_per_gpu_hour": Range(0, 10_000, "USD"),
    "purchase_usd": Range(0, 100_000_000, "USD"),
    "purchase_usd_per_server": Range(0, 1e9, "USD"),
    "amortization_years": Range(0.1, 100, "years"),
    "power_usd_per_kwh": Range(0, 100, "USD/kWh"),
    "pue": Range(1, 5, "ratio"),
    "power_utilization": Range(0.01, 1, "fraction"),
    "hosting_usd_per_kw_month": Range(0, 100_000, "USD"),
    "server_usd": Range(0, 1e9, "USD"),
    "host_kw": Range(0, 1_000, "kW"),
    "rack_kw": Range(0.1, 10_000, "kW"),
    "servers_per_rack": Range(1, 10_000, "servers", integer=True),
    "rack_usd_per_month": Range(0, 1e7, "USD"),
    "horizon_years": Range(0.1, 100, "years"),
    "top_n": Range(1, 10_000, "options", integer=True),
    "memory_gb": Range(0.1, 100_000, "GB"),
    "memory_bandwidth_gbps": Range(1, 1_000_000, "GB/s"),
    "tflops": Range(0.001, 1_000_000, "TFLOP/s"),
    "tdp_w": Range(1, 100_000, "W"),
    "link_gbps": Range(0.1, 100_000, "GB/s"),
    "gpu_group": Range(1, 100_000, "GPUs", integer=True),
    "gpus_per_node": Range(1, 1024, "GPUs", integer=True),
    "launch_year": Range(1990, 2100, "year", integer=True),
    "efficiency": Range(0.001, 1, "fraction"),
    "scale": Range(0.1, 2, "ratio"),
    "overhead_s": Range(0, 10, "s"),
    "reserve_fraction": Range(0, 1, "fraction", high_open=True),
    "overhead_bytes": Range(0, 1e13, "bytes"),
    "prefill_chunk_tokens": Range(1, 10_000_000, "tokens", integer=True),
    "band_factor": Range(0.001, 1000, "ratio"),
    "expert_imbalance": Range(1, 4, "ratio"),
    "share": Range(0, 1, "fraction"),
    "passes": Range(0, 1000, "passes"),
    "running_requests": Range(0, 1_000_000, "requests", integer=True),
    "workers": Range(1, 1024, "workers", integer=True),
    "draft_tokens": Range(1, 16, "tokens", integer=True),
    "acceptance": Range(0, 1, "fraction", low_open=True),
    "hit_rate": Range(0, 1, "fraction", high_open=True),
    "config_width": Range(1, 2**20, "", integer=True),
    "config_count": Range(1, 65_536, "", integer=True),
    "config_vocab": Range(1, 100_000_000, "tokens", integer=True),
    "config_context": Range(1, 2**31, "tokens", integer=True),
    "params_total": Range(1, 1e15, "parameters", integer=True),
    # measured values read by `calibrate` (calibrate/measurement.VALUE_RANGES picks one per unit):
    # physically plausible for any system of up to 65,536 GPUs (the published rows span 2.7 ms to
    # 462 s and 3 to 19,694 tok/s per GPU), so that a typo or a hostile 1e300 is refused, not compared
    "measured_tokens_per_s": Range(0.001, 1e10, "tok/s"),
    "measured_tokens_per_s_per_gpu": Range(0.001, 10_000_000, "tok/s/gpu"),
    "measured_ms": Range(0.001, 1e9, "ms"),
    "measured_gb": Range(0.001, 1_000_000, "GB"),
    "measured_sequences": Range(1, 100_000_000, "sequences"),
}

# config.json fields read by catalog/architecture.py -> their range (any other key: config_width)
CONFIG_FIELDS: dict[str, str] = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_layers"), "config_count"),
    **dict.fromkeys(("num_attention_heads", "n_head", "num_key_value_heads"), "config_count"),
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts"), "config_count"),
    **dict.fromkeys(("num_experts_per_tok", "experts_per_token", "n_shared_experts"), "config_count"),
    "first_k_dense_replace": "config_count",
    "vocab_size": "config_vocab",
    **dict.fromkeys(("max_position_embeddings", "n_positions", "sliding_window"), "config_context"),
}


# a number with an exponent that YAML 1.1 (PyYAML) reads as a string: no dot, or no sign after the e
_EXPONENT_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")
_YAML_FLOAT = re.compile(r"[-+]?\d*\.\d*[eE][-+]\d+")  # what YAML 1.1 does read as a number


def yaml_number_hint(value: Any) -> str:
    """A hint for a number YAML read as text: PyYAML follows YAML 1.1, where 1e9 (no dot, no sign
    after the e) is a string; '' for anything else."""
    text = value.strip() if isinstance(value, str) else ""
    if not _EXPONENT_TEXT.fullmatch(text) or _YAML_FLOAT.fullmatch(text) or not math.isfinite(float(text)):
        return ""
    number = float(text)
    digits = f" or {int(number)}" if number.is_integer() and abs(number) < 1e16 else ""
    return f" (text, not a number: YAML reads {text} as text; write {number:.1e}{digits})"


def check(name: str, value: Any) -> str | None:
    """None when `value` is in the range `name`, else what is wrong (a phrase to follow the key)."""
    r = RANGES[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be {r.describe()}, got {value!r}{yaml_number_hint(value)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be {r.describe()}, got {value!r} (NaN and infinity are not numbers llmsweep can use)"
    if r.integer and int(value) != value:
        return f"must be {r.describe()}, got {value!r}"
    if not r.contains(value):
        return f"must be {r.describe()}, got {value!r}"
    return None


def reject_bool(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"expected a number, got {str(v).lower()}")
    return v


def field(name: str, default: Any = ..., description: str | None = None) -> Any:
    """The pydantic Field for a value of range `name` (the bounds live in `typed(name)`)."""
    RANGES[name]  # noqa: B018 - a typo in the name fails at import
    return Field(default, description=description)


def number(name: str) -> Any:
    """The annotated type (int or float, booleans refused) for range `name`, for use in lists."""
    r = RANGES[name]
    if r.integer:
        # "greater than 0" reads better than "greater than or equal to 1"; "greater than -1" does not
        low = {"gt": int(r.low) - 1} if r.low >= 1 else {"ge": int(r.low)}
        return Annotated[Annotated[int, Interval(**low, le=int(r.high))], BeforeValidator(reject_bool)]
    low = {"gt": r.low} if r.low_open else {"ge": r.low}
    high = {"lt": r.high} if r.high_open else {"le": r.high}
    return Annotated[Annotated[float, Interval(**low, **high), AllowInfNan(False)], BeforeValidator(reject_bool)]


def typed(name: str) -> Any:
    """The same as `number`: the annotation of a field of range `name` (pair with `field(name, ...)`)."""
    return number(name)


class UnreadableFile(Exception):
    """An input path that is not a regular file of a sane size (the message follows the path)."""


NOT_REGULAR = "is not a regular file (a FIFO, device or socket); give the path of a file"


def _mib(limit: int) -> str:
    return f"{limit / 2**30:g} GiB" if limit >= 2**30 else f"{limit / 2**20:g} MiB"


def too_big(limit: int, what: str = "an input file") -> str:
    return f"is larger than {_mib(limit)}, the limit for {what}; is this the right file?"


def _open_regular(path: str | os.PathLike, limit: int, what: str) -> tuple[int, os.stat_result]:
    """An open descriptor of `path` (links followed) and its stat, when it is a regular file of
    at most `limit` bytes. Opened without blocking (a FIFO never waits for a writer) and checked
    on the descriptor itself, so what is read is what was checked."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except ValueError:
        raise UnreadableFile("the path contains a NUL character; give the path of a file") from None
    except IsADirectoryError:
        raise
    except OSError as e:
        if e.errno == errno.ENXIO:  # a socket, or a FIFO on some systems
            raise UnreadableFile(NOT_REGULAR) from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(NOT_REGULAR)
        if st.st_size > limit:
            raise UnreadableFile(too_big(limit, what))
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular_file(path: str | os.PathLike, limit: int = MAX_FILE_BYTES, what: str = "an input file") -> bytes:
    """The bytes of a regular file of at most `limit` bytes.

    FileNotFoundError, IsADirectoryError and other OSErrors pass through; FIFOs, devices
    (/dev/zero), sockets, paths with a NUL character and files over the limit raise
    UnreadableFile, so nothing ever blocks on or reads an endless stream. Every file llmsweep
    reads goes through here or `check_regular_file`.
    """
    fd, _ = _open_regular(path, limit, what)
    with os.fdopen(fd, "rb") as f:
        raw = f.read(limit + 1)
    if len(raw) > limit:  # grew while being read
        raise UnreadableFile(too_big(limit, what))
    return raw


def check_regular_file(path: str | os.PathLike, limit: int, what: str) -> int:
    """The size of `path` when it is a regular file of at most `limit` bytes (for files another
    library opens by name, such as Parquet); raises like `read_regular_file`."""
    fd, st = _open_regular(path, limit, what)
    os.close(fd)
    return st.st_size


MAX_TEMPLATE_FILES = 1_000  # files looked at in a --template-dir


def check_template_folder(folder: str | os.PathLike) -> None:
    """Every .j2 file under `folder` (a --template-dir) is a regular file of at most MAX_FILE_BYTES,
    checked before jinja2 opens any (it would block on a FIFO). Raises UnreadableFile with the
    file's path; NotADirectoryError when `folder` is not a folder."""
    if not os.path.isdir(folder):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
    seen = 0
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            seen += 1
            if seen > MAX_TEMPLATE_FILES:
                raise UnreadableFile(f"{folder}: holds more than {MAX_TEMPLATE_FILES:,} files; a template folder?")
            if not name.endswith(".j2"):
                continue
            path = os.path.join(root, name)
            try:
                check_regular_file(path, MAX_FILE_BYTES, "a template")
            except UnreadableFile as e:
                raise UnreadableFile(f"{path}: {e}") from None
            except OSError as e:
                raise UnreadableFile(f"{path}: cannot read the template: {e.strerror or e}") from None
