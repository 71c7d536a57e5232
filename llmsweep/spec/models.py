"""The sweep file's pydantic models (DESIGN.md §3): strict (an unknown key is an error), frozen, each
field's description its documentation. The JSON Schema (`llmsweep schema`) is generated from them.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from llmsweep.columns import POOL_COLUMNS
from llmsweep.limits import field as lim
from llmsweep.limits import number, typed
from llmsweep.outfolder import SAFE_NAME
from llmsweep.spec.base import _as_list, _axis, _Strict
from llmsweep.spec.serving import SPECULATIVE_AXIS, DecodeSpec, Mode, PrefillSpec

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
    "mode",
    *POOL_COLUMNS,
    "speculative",
    "prefix_hit_rate",
)
FORMATS = ("csv", "parquet", "xlsx", "html", "md")


def _batches(v: Any) -> Any:
    """The batch axis as a list, `max` in any case (MAX, Max) as the names are."""
    return [b.strip().lower() if isinstance(b, str) and b.strip().lower() == "max" else b for b in _as_list(v)]


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
        "states (-FP8, -AWQ, -NVFP4), else its checkpoint's, else bf16; fp4 = each GPU vendor's FP4 format "
        "(nvfp4 on NVIDIA, mxfp4 on AMD).",
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
    mode: _axis(  # type: ignore[valid-type]
        Mode,
        "Serving modes: aggregated (prefill and decode on the same GPUs) and disaggregated (a prefill pool and a "
        "decode pool per replica, the KV cache moved between them; tp, pp, ep and dp_attention are then a decode "
        "worker's layout).",
        ["aggregated"],
    )
    prefill: PrefillSpec | None = Field(
        None, description="Mode disaggregated: the prefill pool's workers and their layout (default: 1, the grid's)."
    )
    decode: DecodeSpec | None = Field(None, description="Mode disaggregated: the decode pool's workers (default: 1).")
    speculative: SPECULATIVE_AXIS  # type: ignore[valid-type]
    prefix_hit_rate: (
        _axis(  # type: ignore[valid-type]
            number("hit_rate"),
            "Prefix-cache hit rates to compare (0 <= h < 1: the share of prompt tokens already cached); default: "
            "the workload's prefix_hit_rate, else 0.",
            None,
        )
        | None
    ) = None

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
        description="Concurrent users (instead): each sends a request, waits R seconds for the answer, thinks for "
        "think_time_s (Z) and sends the next (a closed loop), so they send users / (Z + R) requests/s and never have "
        "more than users in flight; each option is sized at that rate with R its own request latency at the "
        "operating point its fleet runs at (at the peak, users x peak_factor users).",
    )
    think_time_s: typed("seconds") | None = lim(
        "seconds",
        None,
        description="With users: seconds a user spends between getting an answer and asking again (Z in "
        "users / (Z + R)).",
    )
    input_tokens: PositiveTokens | None = Field(None, description="Prompt length of a typical request.")
    output_tokens: PositiveTokens | None = Field(None, description="Output length of a typical request.")
    peak_factor: typed("peak_factor") = lim(
        "peak_factor", 1.0, description="Peak load / average load (with users: users at the peak / users on average)."
    )
    headroom: typed("headroom") = lim("headroom", 0.2, description="Spare capacity on top of the peak (0.2 = 20 %).")
    redundancy: number("redundancy") | Annotated[str, Field(pattern=r"^n\+\d+$")] = Field(
        0, description="Spare replicas: 0, 1, ... or 'n+1'."
    )
    prefix_hit_rate: typed("hit_rate") | None = lim(
        "hit_rate",
        None,
        description="Share of prompt tokens served from the prefix cache (0 <= h < 1): prefill computes the rest "
        "(the default of grid.prefix_hit_rate).",
    )
    prefix_shared: bool = Field(
        False,
        description="True when the cached prefix is common to every request (a system prompt: held once, not once "
        "per sequence); false when each request's own (earlier turns of its conversation).",
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
            raise ValueError("users and think_time_s go together: each user thinks think_time_s between requests")
        return self


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
        if self.rack_usd_per_month and self.servers_per_rack is None and self.rack_kw is None:
            raise ValueError(
                "rack_usd_per_month needs servers_per_rack or rack_kw: how many servers share a rack's price "
                "(without either the racks are not counted, and neither is their price)"
            )
        return self

    @property
    def buys(self) -> bool:
        return not self.example and (
            self.buy is not None or self.purchase_usd is not None or self.purchase_usd_per_server is not None
        )

    def server_kw(self, tdp_w: float | None, gpus_per_node: int) -> float:
        """One server's power: its GPUs' TDP + host_kw, kW (the host alone without a TDP)."""
        return gpus_per_node * (tdp_w or 0.0) / 1000 + self.host_kw

    def rack_limits(self, tdp_w: float | None, gpus_per_node: int) -> dict[str, int]:
        """Servers one rack holds under each limit given: servers_per_rack (space) and rack_kw (power:
        floor(rack_kw / server kW), a part per billion spared for rounding; left out without a TDP)."""
        limits = {}
        if self.servers_per_rack is not None:
            limits["servers_per_rack"] = self.servers_per_rack
        server_kw = self.server_kw(tdp_w, gpus_per_node)
        if self.rack_kw is not None and server_kw > 0:
            limits["rack_kw"] = math.floor(self.rack_kw / server_kw * (1 + 1e-9))
        return limits

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


def json_schema() -> dict:
    """JSON Schema of the sweep file, for editors (`llmsweep schema`)."""
    schema = SweepSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "llmsweep sweep file"
    return schema
