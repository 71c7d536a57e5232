"""The sweep file: YAML -> a validated, frozen `SweepSpec` -> a resolved `Sweep`.

Every problem in the file is collected and reported together as `file:line: key.path: message`
(unknown keys and names come with a did-you-mean). See DESIGN.md §3 for the format; the JSON
Schema (`llmsweep schema`) is generated from the models below.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from llmsweep.catalog import Catalog, Gpu, ModelEntry, Profile, load_catalog
from llmsweep.catalog.architecture import load_config_file, read_config
from llmsweep.catalog.gpus import Source
from llmsweep.catalog.names import normalize
from llmsweep.errors import LlmsweepError, Problem, SpecError, did_you_mean, suggestion_budget
from llmsweep.grid import MAX, Axes
from llmsweep.limits import field as lim
from llmsweep.limits import number, typed
from llmsweep.outfolder import SAFE_NAME
from llmsweep.yamlfile import KeyPath, YamlDoc, format_path, load_yaml

DEFAULT_MAX_ROWS = 5_000_000
AXES = (
    "gpu",
    "engine",
    "model",
    "precision",
    "kv_precision",
    "input_tokens",
    "context",
    "output_tokens",
    "batch",
    "tp",
    "pp",
    "ep",
    "dp_attention",
)
FORMATS = ("csv", "parquet", "xlsx", "html", "md")


def _as_list(v: Any) -> Any:
    """An axis may be written as one value instead of a list of one."""
    return v if isinstance(v, list) else [v]


def _batches(v: Any) -> Any:
    """The batch axis as a list, `max` in any case (MAX, Max) as the names are."""
    return [b.strip().lower() if isinstance(b, str) and b.strip().lower() == "max" else b for b in _as_list(v)]


def _axis(item: Any, description: str, default: list | None = None) -> Any:
    kwargs = {"min_length": 1, "description": description}
    if default is None:
        return Annotated[list[item], BeforeValidator(_as_list), Field(**kwargs)]
    return Annotated[list[item], BeforeValidator(_as_list), Field(default=default, **kwargs)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


PositiveTokens = number("tokens")


class GridSpec(_Strict):
    """Every list is an axis; the grid is their product."""

    gpu: _axis(str, "GPU ids or names (see `llmsweep gpus`), or ids defined under `gpus:`.")  # type: ignore[valid-type]
    engine: _axis(  # type: ignore[valid-type]
        str,
        "Serving engines: vllm, sglang, trtllm, llama.cpp, mlx, exllamav2, generic; auto = by GPU "
        "(vLLM on data-centre GPUs, llama.cpp on desktop GPUs and Macs).",
        ["auto"],
    )
    model: _axis(str, "Hugging Face ids or aliases (see `llmsweep models`), or names under `models:`.")  # type: ignore[valid-type]
    precision: _axis(  # type: ignore[valid-type]
        str,
        "Weight formats (see `llmsweep precisions`; any '<N>bpw'); auto = each model's own: the format its name "
        "states (-FP8, -AWQ, -NVFP4), else its checkpoint's, else bf16.",
        ["auto"],
    )
    kv_precision: _axis(
        str,
        "KV-cache formats; auto = the engine's choice (see kv_cache_format), mostly the 16-bit activation dtype.",
        ["auto"],
    )  # type: ignore[valid-type]
    input_tokens: _axis(PositiveTokens, "Prompt lengths (or give `context`).", None) | None = None  # type: ignore[valid-type]
    context: _axis(PositiveTokens, "Context lengths = input + output (instead of input_tokens).", None) | None = None  # type: ignore[valid-type]
    output_tokens: _axis(PositiveTokens, "Generated tokens per request.", [256])  # type: ignore[valid-type]
    batch: Annotated[  # type: ignore[valid-type]
        list[number("batch") | Literal["max"]],
        BeforeValidator(_batches),
        Field(default=[1], min_length=1, description="Concurrent sequences; max (any case) = the largest that fits."),
    ]
    tp: _axis(number("parallel"), "Tensor-parallel sizes.", [1])  # type: ignore[valid-type]
    pp: _axis(number("parallel"), "Pipeline-parallel sizes.", [1])  # type: ignore[valid-type]
    ep: _axis(number("parallel"), "Expert-parallel sizes (MoE; must divide tp x dp_attention).", [1])  # type: ignore[valid-type]
    dp_attention: _axis(  # type: ignore[valid-type]
        number("parallel"), "Attention data-parallel groups (MoE); a replica uses tp x pp x this GPUs.", [1]
    )

    @model_validator(mode="after")
    def _one_length_axis(self) -> GridSpec:
        if self.input_tokens is not None and self.context is not None:
            raise ValueError("give either input_tokens or context, not both")
        return self


class WorkloadSpec(_Strict):
    """Traffic to plan capacity for (used by capacity planning)."""

    requests_per_s: typed("requests_per_s") | None = lim(
        "requests_per_s", None, description="Average requests per second."
    )
    tokens_per_day: typed("tokens_per_day") | None = lim(
        "tokens_per_day", None, description="Average output tokens per day (instead)."
    )
    users: typed("batch") | None = lim(
        "batch",
        None,
        description="Concurrent users (instead): each sends a request, reads the answer, thinks for think_time_s, "
        "and sends the next; requests/s = users / think_time_s (a closed loop, sized on the safe side).",
    )
    think_time_s: typed("seconds") | None = lim(
        "seconds", None, description="With users: seconds a user spends between getting an answer and asking again."
    )
    input_tokens: PositiveTokens | None = Field(None, description="Prompt length of a typical request.")
    output_tokens: PositiveTokens | None = Field(None, description="Output length of a typical request.")
    peak_factor: typed("peak_factor") = lim("peak_factor", 1.0, description="Peak load / average load.")
    headroom: typed("headroom") = lim("headroom", 0.2, description="Spare capacity on top of the peak (0.2 = 20 %).")
    redundancy: number("redundancy") | Annotated[str, Field(pattern=r"^n\+\d+$")] = Field(
        0, description="Spare replicas: 0, 1, ... or 'n+1'."
    )

    @field_validator("redundancy")
    @classmethod
    def _spare_replicas(cls, v: int | str) -> int | str:
        """'n+K' holds K spare replicas: the same range as a number."""
        if isinstance(v, str):
            from llmsweep.limits import check

            problem = check("redundancy", int(v[2:]) if len(v) <= 40 else 10**40)
            if problem:
                raise ValueError(f"the spare replicas in {v[:40]!r} {problem.split(', got')[0]}")
        return v

    @model_validator(mode="after")
    def _one_rate(self) -> WorkloadSpec:
        given = [self.requests_per_s, self.tokens_per_day, self.users]
        if sum(v is not None for v in given) != 1:
            raise ValueError("give exactly one of requests_per_s, tokens_per_day or users (with think_time_s)")
        if (self.users is None) != (self.think_time_s is None):
            raise ValueError("users and think_time_s go together: users / think_time_s is the request rate")
        return self

    @property
    def average_requests_per_s(self) -> float | None:
        """The average request rate, when it does not depend on the grid's lengths: requests_per_s, or
        users / think_time_s (a user who thinks Z seconds between answers and waits R for each sends one
        request every Z + R seconds, so N users send N / (Z + R) requests/s (the interactive response
        time law); R is not known before the plan, and leaving it out sizes for at least the real rate)."""
        if self.requests_per_s is not None:
            return self.requests_per_s
        if self.users is not None and self.think_time_s is not None:
            return self.users / self.think_time_s
        return None


class SloSpec(_Strict):
    """Latency targets under load (the serving operating point, DESIGN.md §4); any subset."""

    ttft_s: typed("seconds") | None = lim("seconds", None, description="Time to first token, seconds.")
    tpot_s: typed("seconds") | None = lim("seconds", None, description="Time per output token, seconds.")
    request_latency_s: typed("seconds") | None = lim("seconds", None, description="Whole-request latency, seconds.")
    percentile: Literal["mean", "p90", "p99"] = Field(
        "mean", description="Which TTFT ttft_s bounds: the mean, or the 90th or 99th percentile."
    )


OFFER_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
EVERY_GPU = "*"  # `costs: example` is stored as {EVERY_GPU: [example offer]}


class CostSpec(_Strict):
    """One price offer for a GPU: rented (`rent`, USD per GPU-hour) or bought (`buy`, USD per GPU,
    with the servers, network, power, hosting and racks that come with it). The older keys
    (`usd_per_gpu_hour`, `usd_per_gpu_hour_reserved`, `purchase_usd`, `purchase_usd_per_server`,
    `amortization_years`) still work. Ranges: llmsweep/limits.py."""

    name: str | None = Field(
        None, description="The offer's id in the plan (default: rent, rent-<term>, buy-<years>y, example)."
    )
    rent: typed("usd_per_gpu_hour") | None = lim("usd_per_gpu_hour", None, description="Rental price per GPU-hour.")
    term: str | None = Field(None, description="Rental term, e.g. on-demand, 1y-reserved, spot (names the offer).")
    buy: typed("purchase_usd") | None = lim("purchase_usd", None, description="Purchase price per GPU.")
    years: typed("amortization_years") | None = lim(
        "amortization_years", None, description="Years over which a purchase is written off (default 4)."
    )
    server_usd: typed("server_usd") = lim(
        "server_usd", 0, description="Purchase price of one server without its GPUs (chassis, CPUs, memory, NICs)."
    )
    network_usd_per_server: typed("server_usd") = lim(
        "server_usd", 0, description="Each server's share of switches, optics and cables."
    )
    host_kw: typed("host_kw") = lim(
        "host_kw", 0, description="Power of one server beyond its GPUs' TDP (CPUs, fans, NICs), kW."
    )
    rack_kw: typed("rack_kw") | None = lim(
        "rack_kw", None, description="Power limit of one rack, kW (servers per rack follow)."
    )
    servers_per_rack: typed("servers_per_rack") | None = lim(
        "servers_per_rack", None, description="Servers one rack holds (space limit)."
    )
    rack_usd_per_month: typed("rack_usd_per_month") = lim(
        "rack_usd_per_month", 0, description="Colocation price per rack per month."
    )
    usd_per_gpu_hour: typed("usd_per_gpu_hour") | None = lim(
        "usd_per_gpu_hour", None, description="Older form of `rent` (on-demand)."
    )
    usd_per_gpu_hour_reserved: typed("usd_per_gpu_hour") | None = lim(
        "usd_per_gpu_hour", None, description="Older form: a reserved rate, listed as its own offer (rent-reserved)."
    )
    purchase_usd: typed("purchase_usd") | None = lim("purchase_usd", None, description="Older form of `buy`.")
    purchase_usd_per_server: typed("purchase_usd_per_server") | None = lim(
        "purchase_usd_per_server",
        None,
        description="Older form: purchase price per server with all its GPUs (instead of `buy`).",
    )
    amortization_years: typed("amortization_years") | None = lim(
        "amortization_years", None, description="Older form of `years`."
    )
    power_usd_per_kwh: typed("power_usd_per_kwh") = lim("power_usd_per_kwh", 0.12, description="Electricity price.")
    pue: typed("pue") = lim("pue", 1.3, description="Data-centre power usage effectiveness.")
    power_utilization: typed("power_utilization") = lim(
        "power_utilization", 0.7, description="Average share of TDP drawn."
    )
    hosting_usd_per_kw_month: typed("hosting_usd_per_kw_month") = lim(
        "hosting_usd_per_kw_month", 0, description="Colocation price per kW (TDP x PUE) per month."
    )
    example: bool = Field(False, description="Internal: the catalog's dated example price (`costs: example`).")

    @field_validator("name", "term")
    @classmethod
    def _offer_id(cls, v: str | None) -> str | None:
        if v is not None and not OFFER_ID.match(v):
            raise ValueError(f"{v!r}: use lowercase letters, digits, '.', '_' or '-' (e.g. 1y-reserved)")
        return v

    @model_validator(mode="after")
    def _rent_or_buy(self) -> CostSpec:
        if self.example:
            return self
        rents = [k for k in ("rent", "usd_per_gpu_hour", "usd_per_gpu_hour_reserved") if getattr(self, k) is not None]
        buys = [k for k in ("buy", "purchase_usd", "purchase_usd_per_server") if getattr(self, k) is not None]
        if not rents and not buys:
            raise ValueError("give rent (USD per GPU-hour) or buy (USD per GPU)")
        if rents and buys:
            raise ValueError(f"an offer either rents or buys: {rents[0]} and {buys[0]} are two offers (use a list)")
        if "rent" in rents and len(rents) > 1:
            raise ValueError(f"give rent or {rents[1]}, not both")
        if len(buys) > 1:
            raise ValueError(f"give one purchase price: {buys[0]} or {buys[1]}")
        if self.years is not None and self.amortization_years is not None:
            raise ValueError("give years or amortization_years, not both")
        return self

    @property
    def buys(self) -> bool:
        return not self.example and (
            self.buy is not None or self.purchase_usd is not None or self.purchase_usd_per_server is not None
        )

    @property
    def amortization(self) -> float:
        """Years a purchase is written off (years, amortization_years, else 4)."""
        return self.years or self.amortization_years or 4.0

    def rents(self) -> list[tuple[str, float, str]]:
        """(offer id, USD per GPU-hour, term) for each rental rate this entry gives."""
        out = []
        if self.rent is not None:
            term = self.term or "on-demand"
            out.append((self.name or ("rent" if term == "on-demand" else f"rent-{term}"), self.rent, term))
        if self.usd_per_gpu_hour is not None:
            out.append((self.name or "rent", self.usd_per_gpu_hour, self.term or "on-demand"))
        if self.usd_per_gpu_hour_reserved is not None:
            name = f"{self.name}-reserved" if self.name and self.usd_per_gpu_hour is not None else self.name
            out.append((name or "rent-reserved", self.usd_per_gpu_hour_reserved, "reserved"))
        return out

    def ids(self) -> list[str]:
        """The offer ids this entry becomes in the plan."""
        if self.example:
            return [self.name or "example"]
        if self.buys:
            return [self.name or f"buy-{self.amortization:g}y"]
        return [oid for oid, _, _ in self.rents()]


def _offers(v: Any) -> Any:
    """A GPU's prices: one offer (a mapping), a list of offers, or `example`."""
    if isinstance(v, str) and v.strip().lower() == "example":
        return [{"example": True}]
    items = v if isinstance(v, list) else [v]
    return [{"example": True} if isinstance(i, str) and i.strip().lower() == "example" else i for i in items]


def _costs(v: Any) -> Any:
    """`costs: example` prices every data-centre GPU of the grid from the catalog's dated examples."""
    if isinstance(v, str) and v.strip().lower() == "example":
        return {EVERY_GPU: [{"example": True}]}
    if isinstance(v, str):
        raise ValueError(f"give price offers per GPU, or `example` (got {v!r})")
    return v


Offers = Annotated[list[CostSpec], BeforeValidator(_offers), Field(min_length=1)]


class ReportSpec(_Strict):
    formats: list[Literal["csv", "parquet", "xlsx", "html", "md"]] = Field(
        default=list(FORMATS), min_length=1, description="Files to write."
    )
    top_n: typed("top_n") = lim("top_n", 10, description="Recommendations per model.")


class SweepSpec(_Strict):
    """A sweep file (DESIGN.md §3)."""

    name: str = Field(
        max_length=100,
        description="Folder name under out/: lowercase letters, digits, '.', '_', '-'; not starting with '.'.",
        json_schema_extra={"pattern": SAFE_NAME.pattern},
    )
    title: str | None = Field(None, description="Title for the reports.")
    grid: GridSpec
    exclude: list[dict[str, Any]] = Field(default=[], description="Rules that drop combinations: {axis: value(s)}.")
    gpus: dict[str, dict[str, Any]] = Field(default={}, description="Extra or overridden GPUs (catalog fields).")
    models: dict[str, dict[str, Any]] = Field(
        default={}, description="Extra models: {config: path/to/config.json} or inline config.json fields."
    )
    workload: WorkloadSpec | None = None
    slo: SloSpec | None = None
    costs: Annotated[dict[str, Offers], BeforeValidator(_costs)] = Field(
        default={},
        description="Price offers per GPU (ids or names): one offer or a list, each rented (rent: USD per "
        "GPU-hour, term) or bought (buy: USD per GPU, years, servers, power, racks); `example` (for the whole "
        "sweep or one GPU) = the catalog's dated example cloud price, data-centre GPUs only.",
    )
    horizon_years: typed("horizon_years") = lim(
        "horizon_years", 3, description="Years the total cost of ownership (tco_usd) covers."
    )
    rent_paid: Literal["24/7", "per-hour-used"] = Field(
        "24/7",
        description="How rented GPUs are paid: reserved around the clock (24/7), or only for the GPU-hours "
        "the traffic uses (per-hour-used). Fleet cost, TCO and the rent-or-buy break-even all use it.",
    )
    rank_by: str = Field("usd_per_million_output_tokens", description="Numeric column that ranks the options.")
    profile: str = Field("default", description="Efficiency profile: ideal, default, or a profile file.")
    report: ReportSpec = ReportSpec()

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        if not SAFE_NAME.match(v):
            raise ValueError(
                f"{v!r} is not a safe folder name: use lowercase letters, digits, '.', '_' or '-', "
                "starting with a letter or digit (e.g. chatbot-2027q1)"
            )
        return v


# -- resolution -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sweep:
    """A validated sweep with every name resolved: what the pipeline runs."""

    spec: SweepSpec
    file: str
    text: str
    sha256: str
    catalog: Catalog  # the packaged catalog plus the sweep's own GPUs and models
    axes: Axes
    exclude: tuple[dict[str, tuple], ...]
    contexts: tuple[int, ...] | None  # the `context` axis, when given instead of input_tokens
    profile: Profile
    profile_name: str
    notes: tuple[str, ...]

    @property
    def size(self) -> int:
        """Rows before exclusions: the product of the axes (with `context` in place of input_tokens)."""
        if self.contexts is None:
            return self.axes.size
        return self.axes.size // len(self.axes.input_tokens) * len(self.contexts)


def _pydantic_problems(doc: YamlDoc, e: ValidationError, model: type[BaseModel], prefix: KeyPath = ()) -> list[Problem]:
    """One problem per location; alternatives of a union (e.g. batch: N or max) are joined with 'or'."""
    by_loc: dict[KeyPath, list[str]] = {}
    got: dict[KeyPath, str] = {}
    for err in e.errors():
        loc: KeyPath = _written(doc.data, tuple(p for p in err["loc"] if not _is_union_tag(p)), prefix)
        if err["type"] == "extra_forbidden":
            key = str(loc[-1])
            known = _fields_at(model, loc[:-1])
            hint = did_you_mean(key, known, n=1)
            msg = f"unknown key {key!r}" + (f"; did you mean {hint[0]!r}?" if hint else f" (known: {', '.join(known)})")
        elif err["type"] == "missing":
            msg = "required key is missing"
        else:
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] != "value_error" and not isinstance(err.get("input"), dict | list):
                got[loc] = f" (got {err['input']!r})"
        by_loc.setdefault(loc, [])
        if msg not in by_loc[loc]:
            by_loc[loc].append(msg)
    return [doc.problem((*prefix, *loc), " or ".join(msgs) + got.get(loc, "")) for loc, msgs in by_loc.items()]


def _written(data: Any, loc: KeyPath, prefix: KeyPath = ()) -> KeyPath:
    """`loc` as the file wrote it: a list index pydantic added to a single value that stands for a
    list of one (a GPU's one price offer, an axis of one value) is dropped."""
    node: Any = data
    for part in prefix:
        node = node.get(part) if isinstance(node, dict) else None
    out: list = []
    for part in loc:
        if isinstance(part, int) and not isinstance(node, list):
            continue
        out.append(part)
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return tuple(out)


_UNION_TAG = re.compile(r"^(int|str|float|bool|none|constrained-\w+|[a-z_-]+\[.*\])$")


def _is_union_tag(part: str | int) -> bool:
    """pydantic adds the member type of a union to error locations ('int', "literal['max']", ...)."""
    return isinstance(part, str) and bool(_UNION_TAG.match(part))


def _fields_at(model: type[BaseModel], loc: KeyPath) -> list[str]:
    """Field names of the sub-model at `loc` (for did-you-mean on unknown keys)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            continue
        field = current.model_fields.get(part)
        if field is None:
            return []
        ann = field.annotation
        args = [a for a in getattr(ann, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)]
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            current = ann
        elif args:
            current = args[-1]
        else:
            current = None
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


class _Resolver:
    """Resolves the names in a validated spec, collecting problems instead of stopping."""

    def __init__(self, doc: YamlDoc, spec: SweepSpec, base: Path):
        self.doc, self.spec, self.base = doc, spec, base
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.named_precision: dict[str, str] = {}
        self.broken: set[str] = set()  # `gpus:` / `models:` keys already reported as invalid
        self.catalog = self._extend_catalog(load_catalog())

    def fail(self, path: KeyPath, message: str) -> None:
        self.problems.append(self.doc.problem(path, message))

    def _inherited(self, path: KeyPath, existing: str | None, inherit: Any, catalog: Catalog) -> str | None | bool:
        """The catalog GPU a new `gpus:` entry inherits from (`inherit: h200-sxm`), None without
        one, False after reporting a problem."""
        if inherit is None:
            return None
        if existing:
            self.fail(
                (*path, "inherit"), f"{path[-1]!r} is already the catalog's {existing}; `inherit` is for new GPUs"
            )
            return False
        try:
            return catalog.resolve_gpu(str(inherit)).id
        except LlmsweepError as e:
            self.fail((*path, "inherit"), str(e))
            return False

    def _warn_custom_gpu(self, gid: str, fields: dict) -> None:
        """Notes for a new GPU that lacks a fact deciding what can run or how fast (validate prints them)."""
        where = f"gpus.{gid}"
        if "family" not in fields:
            self.notes.append(
                f"{where}: no `family` or `inherit`: the profile's defaults apply, not a GPU family's "
                "(say e.g. `family: hopper`, or `inherit: h100-sxm` to start from a catalog GPU)"
            )
        if not fields.get("scale_up_gbps_per_direction") and not fields.get("pcie_gbps_per_direction"):
            self.notes.append(
                f"{where}: no interconnect bandwidth (scale_up_gbps_per_direction or pcie_gbps_per_direction): "
                "every row with tp > 1 or ep > 1 inside a server on it cannot run"
            )
        if "gpus_per_node" not in fields:
            self.notes.append(
                f"{where}: gpus_per_node not given: 8 per server assumed (a larger replica spans servers)"
            )
        if not fields.get("scale_out_gbps_per_direction"):
            self.notes.append(
                f"{where}: no scale_out_gbps_per_direction (network bandwidth per GPU between servers): "
                "layouts across servers cannot be costed"
            )

    def _path(self, text: str) -> Path:
        p = Path(text).expanduser()
        return p if p.is_absolute() else self.base / p

    def _extend_catalog(self, catalog: Catalog) -> Catalog:
        gpus, models = dict(catalog.gpus), dict(catalog.models)
        given: dict[str, str] = {}  # the GPU each `gpus:` key names -> the first key naming it
        for gid, fields in self.spec.gpus.items():
            path: KeyPath = ("gpus", gid)
            existing = catalog.resolve_gpu(gid).id if gid in catalog._index("gpu") else None
            same = existing or normalize(gid)
            if same in given:
                self.fail(
                    path,
                    f"{gid!r} and {given[same]!r} both name " + (existing or "the same GPU") + "; give each GPU once",
                )
                continue
            given[same] = gid
            fields = dict(fields)
            base = self._inherited(path, existing, fields.pop("inherit", None), catalog)
            if base is False:
                self.broken.add(gid)
                continue
            if existing:
                data = {**catalog.gpu(existing).model_dump(), **fields}
            elif base is not None:  # a new GPU like a catalog one: its facts, not its names or prices
                parent = catalog.gpu(base).model_dump()
                parent.update(name=gid, aliases=[], reference_id=None, cloud_prices=[])
                data = {**parent, **fields}
            else:
                data = {"name": gid, **fields}
                self._warn_custom_gpu(gid, fields)
            parent_id = existing or base
            if parent_id and isinstance(fields.get("dense_tflops", {}), dict):  # else the model says what is wrong
                data["dense_tflops"] = {
                    **catalog.gpu(parent_id).dense_tflops.model_dump(),
                    **fields.get("dense_tflops", {}),
                }
            try:
                gpu = Gpu.model_validate(data)
            except ValidationError as e:
                self.problems.extend(_pydantic_problems(self.doc, e, Gpu, prefix=path))
                self.broken.add(gid)
                continue
            what = f"{self.doc.file}: gpus.{gid}" + (f" (the rest inherited from {base})" if base else "")
            sweep_source = Source(ref="sweep", source=what, fields=sorted(fields))
            gpus[existing or gid] = gpu.model_copy(update={"sources": [*gpu.sources, sweep_source]})
        named: dict[str, str] = {}
        for mid, fields in self.spec.models.items():
            path = ("models", mid)
            if normalize(mid) in named:
                self.fail(path, f"{mid!r} and {named[normalize(mid)]!r} name the same model; give each model once")
                continue
            named[normalize(mid)] = mid
            meta = {k: fields[k] for k in ("name", "license", "aliases") if k in fields}
            try:
                if "config" in fields:
                    extra = sorted(set(fields) - {"config", "name", "license", "aliases"})
                    if extra:
                        self.fail(
                            (*path, extra[0]), "give either `config:` (a config.json path) or inline config fields"
                        )
                        continue
                    cfg, _ = load_config_file(self._path(str(fields["config"])))
                    source = f"config.json at {fields['config']}"
                else:
                    cfg = {k: v for k, v in fields.items() if k not in meta}
                    read_config(cfg, where=f"models.{mid}")
                    source = f"{self.doc.file}: models.{mid}"
            except LlmsweepError as e:
                self.fail((*path, "config") if "config" in fields else path, str(e).removeprefix(f"models.{mid}: "))
                self.broken.add(mid)
                continue
            try:
                models[mid] = ModelEntry(
                    name=meta.get("name", mid),
                    config=cfg,
                    license=meta.get("license", "unknown: check the model card"),
                    aliases=meta.get("aliases", []),
                    sources=[{"ref": "sweep", "source": source, "fields": ["config"]}],
                )
            except ValidationError as e:
                self.problems.extend(_pydantic_problems(self.doc, e, ModelEntry, prefix=path))
                self.broken.add(mid)
        return replace(catalog, gpus=gpus, models=models)

    def names(self, axis: str, values: list[str], kind: str) -> list[str]:
        resolve = getattr(self.catalog, f"resolve_{kind}")
        out: list[str] = []
        first: dict[str, int] = {}
        for i, name in enumerate(values):
            if kind == "precision" and str(name).strip().lower() == "auto":
                rid = "auto"
            else:
                try:
                    r = resolve(str(name))
                except LlmsweepError as e:
                    if name not in self.broken:  # else its definition was reported already
                        self.fail(("grid", axis, i), str(e))
                    continue
                rid = r.id
                if r.note:
                    self.notes.append(r.note)
                if getattr(r, "precision", None):  # a model name that states its format (…-FP8)
                    self.named_precision[rid] = r.precision
                if kind == "model":
                    try:
                        self.catalog.model(rid)
                    except LlmsweepError as e:
                        self.fail(("grid", axis, i), str(e))
                        continue
            if rid in first:
                self.fail(("grid", axis, i), f"{name!r} repeats grid.{axis}[{first[rid]}] (both are {rid})")
                continue
            first[rid] = i
            out.append(rid)
        return out

    def numbers(self, axis: str, values: list) -> list:
        first: dict[Any, int] = {}
        out = []
        for i, v in enumerate(values):
            if v in first:
                self.fail(("grid", axis, i), f"{v!r} repeats grid.{axis}[{first[v]}]")
                continue
            first[v] = i
            out.append(v)
        return out


MAX_SUGGESTIONS = 100  # unknown names of one file given a did-you-mean (the rest are still reported)


def load(
    path: str | Path,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    profile: str | None = None,
) -> Sweep:
    """Read, validate and resolve a sweep file. Raises SpecError listing every problem (a bad
    `profile` option is an error of its own, not the file's)."""
    if profile is not None:
        try:
            load_catalog().profile(profile)
        except LlmsweepError as e:
            raise LlmsweepError(f"--profile: {e}") from None
    with suggestion_budget(MAX_SUGGESTIONS):
        return _load(path, max_rows, profile)


def _load(path: str | Path, max_rows: int, profile: str | None) -> Sweep:
    doc = load_yaml(path)
    problems = list(doc.problems)
    data = doc.data
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        problems.append(Problem(doc.file, 1, "(top level)", f"expected a mapping of sweep keys, got {got}"))
        raise SpecError(problems)
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as e:
        problems.extend(_pydantic_problems(doc, e, SweepSpec))
        problems.extend(_precheck_names(doc, data))
        raise SpecError(_dedupe(problems)) from None
    r = _Resolver(doc, spec, Path(path).resolve().parent)
    g = spec.grid
    gpus = r.names("gpu", g.gpu, "gpu")
    engines = r.names("engine", g.engine, "engine")
    models = r.names("model", g.model, "model")
    precisions = r.names("precision", g.precision, "precision")
    kv = r.names("kv_precision", g.kv_precision, "precision")
    outputs = r.numbers("output_tokens", g.output_tokens)
    if g.context is not None:
        contexts = r.numbers("context", g.context)
        inputs = sorted({ctx - out for ctx in contexts for out in outputs})
        bad = [(i, ctx) for i, ctx in enumerate(g.context) if ctx <= max(outputs, default=0)]
        for i, ctx in bad:
            r.fail(("grid", "context", i), f"context {ctx} must exceed every output_tokens value (max {max(outputs)})")
    else:
        contexts = None
        inputs = r.numbers("input_tokens", g.input_tokens or [1024])
    axes = Axes(
        gpu=gpus,
        engine=engines,
        model=models,
        precision=precisions,
        kv_precision=kv,
        input_tokens=inputs,
        output_tokens=outputs,
        batch=r.numbers("batch", g.batch),
        tp=r.numbers("tp", g.tp),
        pp=r.numbers("pp", g.pp),
        ep=r.numbers("ep", g.ep),
        dp_attention=r.numbers("dp_attention", g.dp_attention),
        named_precision=dict(r.named_precision),
    )
    exclude = tuple(_exclusion(r, i, rule) for i, rule in enumerate(spec.exclude))
    _check_exclusions_leave_rows(r, exclude, axes, contexts)
    _check_costs(r, spec)
    profile_name = profile or spec.profile
    prof = None
    try:  # a profile file named in the sweep is relative to the sweep; on the command line, to the cwd
        is_file = profile_name.endswith((".yaml", ".yml")) and not profile
        prof = r.catalog.profile(str(r._path(profile_name)) if is_file else profile_name)
    except LlmsweepError as e:
        r.fail(("profile",), str(e))
    _check_rank_by(r, spec.rank_by)
    problems.extend(r.problems)
    size = axes.size if contexts is None else axes.size // max(len(inputs), 1) * len(contexts)
    if not problems and size > max_rows:
        dims = " x ".join(f"{len(v)} {k}" for k, v in _axis_sizes(axes, contexts).items())
        problems.append(
            Problem(
                doc.file,
                doc.line(("grid",)),
                "grid",
                f"the grid has {size:,} configurations ({dims}), more than --max-rows {max_rows:,}; "
                "shrink an axis, add `exclude` rules, or raise --max-rows",
            )
        )
    if problems:
        raise SpecError(_dedupe(problems))
    sweep = Sweep(
        spec=spec,
        file=doc.file,
        text=doc.text,
        sha256=hashlib.sha256(doc.text.encode()).hexdigest(),
        catalog=r.catalog,
        axes=axes,
        exclude=exclude,
        contexts=tuple(contexts) if contexts is not None else None,
        profile=prof,  # type: ignore[arg-type]
        profile_name=profile_name,
        notes=tuple(dict.fromkeys(r.notes)),
    )
    problem = _plan_size_problem(sweep, max_rows)
    if problem:
        raise SpecError([doc.problem(("costs",) if spec.costs else ("grid",), problem)])
    return sweep


OPTION_BYTES = 4_000  # memory one priced option takes while it is planned (measured: 3.9-4.8 KB)
OPTIONS_PER_ROW = 5  # so --max-rows N allows N / 5 options, about the memory of N streamed rows


def plan_size(sweep: Sweep) -> tuple[int, int]:
    """(layouts, priced options) the plan builds and holds in memory: every layout of the grid (the
    batch axis collapses to the batch chosen) once per price offer of its GPU, before exclusions."""
    from llmsweep.plan import plan_inputs  # plan imports this module

    offers = plan_inputs(sweep).offers
    per_gpu = sweep.size // max(len(sweep.axes.gpu), 1) // max(len(sweep.axes.batch), 1)
    layouts = per_gpu * len(sweep.axes.gpu)
    options = sum(per_gpu * max(len(offers.get(g, ())), 1) for g in sweep.axes.gpu)
    return layouts, options


def _plan_size_problem(sweep: Sweep, max_rows: int) -> str | None:
    layouts, options = plan_size(sweep)
    limit = max(max_rows // OPTIONS_PER_ROW, 1)
    if options <= limit:
        return None
    return (
        f"the plan would hold {options:,} priced options ({layouts:,} layouts, each once per price offer of its "
        f"GPU), about {options * OPTION_BYTES / 1e9:,.1f} GB of memory, more than the {limit:,} options that "
        f"--max-rows {max_rows:,} allows (an option takes {OPTIONS_PER_ROW} rows' worth); give fewer offers or "
        "layouts, or raise --max-rows"
    )


def _axis_sizes(axes: Axes, contexts: list | None) -> dict[str, list]:
    sizes = {
        "gpu": axes.gpu,
        "engine": axes.engine,
        "model": axes.model,
        "precision": axes.precision,
        "kv_precision": axes.kv_precision,
        "context" if contexts is not None else "input_tokens": contexts if contexts is not None else axes.input_tokens,
        "output_tokens": axes.output_tokens,
        "batch": axes.batch,
        "tp": axes.tp,
        "pp": axes.pp,
        "ep": axes.ep,
        "dp_attention": axes.dp_attention,
    }
    return {k: v for k, v in sizes.items() if len(v) > 1} or {"gpu": axes.gpu}


def _exclusion(r: _Resolver, i: int, rule: dict[str, Any]) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    if not rule:
        r.fail(("exclude", i), "an empty rule would drop every configuration; name at least one axis")
    for key, value in rule.items():
        path: KeyPath = ("exclude", i, key)
        if key not in AXES:
            hint = did_you_mean(str(key), AXES, n=1)
            r.fail(
                path,
                f"unknown axis {key!r}" + (f"; did you mean {hint[0]!r}?" if hint else f" (axes: {', '.join(AXES)})"),
            )
            continue
        values = value if isinstance(value, list) else [value]
        resolved = []
        for v in values:
            if key == "engine" and str(v).strip().lower() == "auto":
                r.fail(path, "exclude rules name engines (vllm, trtllm, ...), not auto")
            elif key in ("gpu", "engine", "model", "precision") or (key == "kv_precision" and str(v).lower() != "auto"):
                kind = "precision" if key == "kv_precision" else key
                try:
                    resolved.append(getattr(r.catalog, f"resolve_{kind}")(str(v)).id)
                except LlmsweepError as e:
                    r.fail(path, str(e))
            elif key == "kv_precision":
                resolved.append("auto")
            elif key == "batch" and v == MAX:
                resolved.append(MAX)
            elif isinstance(v, int) and not isinstance(v, bool) and v > 0:
                resolved.append(v)
            else:
                r.fail(path, f"expected a positive integer{' or max' if key == 'batch' else ''}, got {v!r}")
        out[key] = tuple(resolved)
    return out


def _check_exclusions_leave_rows(r: _Resolver, exclude: tuple[dict[str, tuple], ...], axes: Axes, contexts) -> None:
    """A rule that names every value of each axis it mentions drops the whole grid: `run` would
    refuse the sweep, so `validate` must too."""

    def values(key: str) -> tuple:
        return tuple(contexts if key == "context" and contexts is not None else getattr(axes, key, ()))

    alone = False
    for i, rule in enumerate(exclude):
        if rule and all(set(values(key)) <= set(vals) for key, vals in rule.items()):
            r.fail(("exclude", i), "the exclusion rules leave no configuration to estimate (this rule drops every one)")
            alone = True
    rules = [rule for rule in exclude if rule]
    if alone or len(rules) < 2 or r.problems:
        return
    # together: is any combination of the axes the rules name matched by none of them?
    import polars as pl

    keys = sorted({k for rule in rules for k in rule})
    grid = None
    for key in keys:
        axis = pl.LazyFrame({key: [str(v) for v in values(key)]})
        grid = axis if grid is None else grid.join(axis, how="cross")
    dropped = pl.any_horizontal(
        pl.all_horizontal(pl.col(k).is_in([str(v) for v in vals]) for k, vals in rule.items()) for rule in rules
    )
    if grid is not None and grid.filter(~dropped).head(1).collect().height == 0:
        r.fail(
            ("exclude",),
            f"the exclusion rules leave no configuration to estimate (together, the {len(rules)} rules drop every one)",
        )


def _check_costs(r: _Resolver, spec: SweepSpec) -> None:
    """GPU names under costs resolve, and each GPU's offers have distinct ids."""
    priced: dict[str, str] = {}
    for gpu_name, offers in spec.costs.items():
        if gpu_name == EVERY_GPU:
            continue
        try:
            gid = r.catalog.resolve_gpu(gpu_name).id
        except LlmsweepError as e:
            if gpu_name not in r.broken:
                r.fail(("costs", gpu_name), str(e))
            continue
        if gid in priced:
            r.fail(
                ("costs", gpu_name),
                f"{gpu_name!r} and {priced[gid]!r} both name {gid}; give one price entry per GPU "
                "(a list holds several offers)",
            )
        priced.setdefault(gid, gpu_name)
        seen: dict[str, int] = {}
        for i, offer in enumerate(offers):
            for oid in offer.ids():
                if oid in seen:
                    r.fail(
                        ("costs", gpu_name, i),
                        f"offer id {oid!r} repeats offer {seen[oid]}: give each offer its own `name:`",
                    )
                seen.setdefault(oid, i)


def _check_rank_by(r: _Resolver, column: str) -> None:
    from llmsweep.columns import NUMERIC

    if column not in NUMERIC:
        hint = did_you_mean(column, NUMERIC, n=1)
        r.fail(("rank_by",), f"{column!r} is not a numeric column" + (f"; did you mean {hint[0]!r}?" if hint else ""))


def _precheck_names(doc: YamlDoc, data: dict) -> list[Problem]:
    """Name problems in the grid, reported even when other parts of the file are invalid."""
    grid = data.get("grid")
    if not isinstance(grid, dict):
        return []
    catalog = load_catalog()
    extra = {"gpu": set(data.get("gpus") or {}), "model": set(data.get("models") or {})}
    problems = []
    for axis, kind in (("gpu", "gpu"), ("model", "model"), ("precision", "precision")):
        values = grid.get(axis)
        for i, v in enumerate(values if isinstance(values, list) else [values] if values is not None else []):
            if not isinstance(v, str) or v in extra.get(kind, ()):
                continue
            try:
                getattr(catalog, f"resolve_{kind}")(v)
            except LlmsweepError as e:
                path: KeyPath = ("grid", axis, i) if isinstance(values, list) else ("grid", axis)
                problems.append(doc.problem(path, str(e)))
    return problems


def _dedupe(problems: list[Problem]) -> list[Problem]:
    """Each problem once, in file order (grid.gpu[2] before grid.gpu[10])."""

    def order(p: Problem) -> tuple:
        return (p.line if p.line is not None else math.inf, re.sub(r"\d+", lambda m: m[0].zfill(12), p.path))

    return sorted(dict.fromkeys(problems), key=order)


def json_schema() -> dict:
    """JSON Schema of the sweep file, for editors (`llmsweep schema`)."""
    schema = SweepSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "llmsweep sweep file"
    return schema


__all__ = ["AXES", "DEFAULT_MAX_ROWS", "Sweep", "SweepSpec", "format_path", "json_schema", "load"]
