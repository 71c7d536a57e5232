"""Efficiency profiles: what fraction of peak real engines reach, and the fixed costs they pay."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from llmsweep.catalog.engines import ENGINES
from llmsweep.columns import BAND_GROUPS
from llmsweep.errors import did_you_mean
from llmsweep.limits import RANGES, check, reject_bool, typed
from llmsweep.limits import field as lim

# Defaults for profile files written before these parameters existed: a 10 ms request overhead and
# a burst share of 0.15 (a benchmark's first wave, 0.05 of aiperf's measured requests, and the
# clustering identical requests keep after it: docs/serving.md step 6); the shipped `default` fits
# the overhead per engine (scripts/calibrate_default.py, docs/fidelity.md).
REQUEST_OVERHEAD_S = 0.01
BURST_SHARE = 0.15
# alpha of a collective across the scale-out network (InfiniBand / RoCE), before any fit: see
# catalog/profiles.yaml (`literature` sources); `default` fits it on the rows that decode across
# servers (calibrate/network.py).
NETWORK_LATENCY_S = 2.5e-5
# Serving modes (estimate/disaggregated.py, estimate/speculative.py), before any fit.
# KV transfer between pools reaches this share of the link's bandwidth: the Mooncake transfer
# engine moves 87 GB/s over 8 x 200 Gb/s RoCE (0.87 of line rate; Qin et al., FAST 2025, §4).
KV_TRANSFER_EFFICIENCY = 0.8
# A disaggregated request's hand-off between the pools, beyond moving its KV cache: the router's
# bootstrap of a prefill and a decode server, the prefill queue's dispatch, the transfer's setup and
# the decode worker's admission. 50 ms is an assumption before any fit (single-request disaggregated
# runs of SGLang and Dynamo in measured-serving-dev.csv show 0.1-0.2 s beyond the prefill).
HANDOFF_OVERHEAD_S = 0.05
# Per-token acceptance of a drafted token when the sweep states none. MTP: DeepSeek-V3's second-token
# acceptance is 85-90 % (DeepSeek-V3 technical report, §5.4.3). EAGLE and draft models: 0.7, an
# assumption inside the 0.6-0.8 the EAGLE papers (Li et al., 2024-2025) and Leviathan et al. (ICML 2023,
# alpha 0.5-0.9 by task) report for chat; all three depend on the traffic (random-token benchmark
# prompts accept far fewer).
MTP_ACCEPTANCE = 0.85
EAGLE_ACCEPTANCE = 0.7
DRAFT_ACCEPTANCE = 0.7


class Efficiency(BaseModel):
    """One set of profile parameters (see catalog/profiles.yaml for their meaning and units)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    bandwidth_efficiency: typed("efficiency") = lim("efficiency")
    compute_efficiency: typed("efficiency") = lim("efficiency")
    # A GPU family's matmul ceiling against the fitted families' (its best measured matmul's share of
    # its datasheet peak over theirs): a hardware trait that scales every engine's compute_efficiency
    # on it (estimate/compute.py seconds_per_flop); 1 = as the fitted families (and profiles written
    # before it). Set per family in `literature` where a measurement is published (profiles.yaml).
    compute_scale: typed("scale") = lim("scale", 1.0)
    # The share of compute_efficiency that matmuls at 8-bit and 4-bit floating point reach (their
    # datasheet peaks are 2x and 4x the 16-bit one, and kernels reach less of them): estimate/compute.py
    # dtype_efficiency; 1 = the plain roofline (and profiles written before them).
    fp8_gemm_efficiency: typed("efficiency") = lim("efficiency", 1.0)
    fp4_gemm_efficiency: typed("efficiency") = lim("efficiency", 1.0)
    step_overhead_s: typed("overhead_s") = lim("overhead_s")
    layer_overhead_s: typed("overhead_s") = lim("overhead_s")
    # MoE layers run kernels a dense MLP does not (router top-k, token permutation, grouped GEMMs,
    # un-permutation): a fixed time per MoE layer per forward pass; 0 in profiles written before it.
    moe_layer_overhead_s: typed("overhead_s") = lim("overhead_s", 0.0)
    # Memory passes over a d-wide activation per routed copy of a token in an MoE layer (permutation,
    # activation quantisation, gating, combine): estimate/compute.py routing_s_per_token; 0 = the
    # plain roofline (and profiles written before it).
    routed_activation_passes: typed("passes") = lim("passes", 0.0)
    allreduce_latency_s: typed("overhead_s") = lim("overhead_s")
    # Across servers (estimate/parallel.py); defaulted so that older profile files keep working.
    network_latency_s: typed("overhead_s") = lim("overhead_s", NETWORK_LATENCY_S)
    memory_reserve_fraction: typed("reserve_fraction") = lim("reserve_fraction")
    runtime_overhead_bytes: typed("overhead_bytes") = lim("overhead_bytes")
    tp_buffer_bytes: typed("overhead_bytes") = lim("overhead_bytes")
    prefill_chunk_tokens: typed("prefill_chunk_tokens") = lim("prefill_chunk_tokens")
    # With expert parallelism, routing skew beyond uniform: the busiest rank's experts over what
    # uniform routing gives it (whose own spread the estimator derives, experts.expert_spread).
    # 1 = uniform, an assumption, not fitted: balancers (DeepSeek's EPLB) keep real routing near it.
    expert_imbalance: typed("expert_imbalance") = lim("expert_imbalance", 1.0)
    # Serving under load (estimate/load.py); defaulted so that older profile files keep working.
    request_overhead_s: typed("overhead_s") = lim("overhead_s", REQUEST_OVERHEAD_S)
    burst_share: typed("share") = lim("share", BURST_SHARE)
    # The engine's limit on running requests per attention data-parallel rank (vLLM max_num_seqs,
    # SGLang max_running_requests, TensorRT-LLM max_batch_size); 0 = none beyond the KV cache.
    max_running_requests: typed("running_requests") = lim("running_requests", 0)
    # Serving modes; defaulted so that older profile files keep working.
    kv_transfer_efficiency: typed("efficiency") = lim("efficiency", KV_TRANSFER_EFFICIENCY)
    handoff_overhead_s: typed("overhead_s") = lim("overhead_s", HANDOFF_OVERHEAD_S)
    mtp_acceptance: typed("share") = lim("share", MTP_ACCEPTANCE)
    eagle_acceptance: typed("share") = lim("share", EAGLE_ACCEPTANCE)
    draft_acceptance: typed("share") = lim("share", DRAFT_ACCEPTANCE)


# an override is a number: YAML's true would otherwise pass as 1.0
Number = Annotated[float, BeforeValidator(reject_bool)]


class EngineOverrides(BaseModel):
    """One engine's values: `defaults` for every GPU, `families` per GPU family on top."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    defaults: dict[str, Number] = {}
    families: dict[str, dict[str, Number]] = {}


class Profile(BaseModel):
    """Efficiency parameters, most specific last: `defaults`, then `families[F]` (the GPU
    family's hardware traits, any engine), then `engines[E].defaults`, then
    `engines[E].families[F]`. An engine without an entry (and `generic`) gets the first two."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str
    defaults: Efficiency
    families: dict[str, dict[str, Number]] = {}
    engines: dict[str, EngineOverrides] = {}
    sources: list[str] = []
    # Uncertainty: per metric group (decode, prefill, throughput), factors [low, high] that cover the
    # middle 80 % of cross-validated errors (from `llmsweep calibrate --fit`); empty = no bands.
    bands: dict[str, list[float]] = {}

    @model_validator(mode="after")
    def _families_and_bands(self) -> Profile:
        for engine in self.engines:
            if engine not in ENGINES:
                message = _not_one_of(f"engines.{engine}", engine, "an engine", "engines", ENGINES)
                raise AtKey(message, ("engines", engine))
        checks = [(("families", f), f, "generic") for f in self.families]
        for engine, o in self.engines.items():
            checks += [(("engines", engine, "defaults"), "", engine)]
            checks += [(("engines", engine, "families", f), f, engine) for f in o.families]
        for where, family, engine in checks:
            try:
                self.for_family(family, engine)
            except ValidationError as e:
                key = tuple(e.errors()[0]["loc"])
                raise AtKey(f"{'.'.join(where)}: {_first_error(e)}", (*where, *key)) from None
        for group, band in self.bands.items():
            if group not in BAND_GROUPS:
                message = _not_one_of(f"bands.{group}", group, "a band group", "groups", BAND_GROUPS)
                raise AtKey(message, ("bands", group))
            if len(band) != 2 or any(check("band_factor", f) for f in band) or band[0] > band[1]:
                raise AtKey(
                    f"bands.{group}: expected [low, high] with {RANGES['band_factor'].describe()} "
                    f"and low <= high, got {band!r}",
                    ("bands", group),
                )
        return self

    def for_family(self, family: str, engine: str = "generic") -> Efficiency:
        """The parameters in force for a GPU family served by an engine."""
        by_engine = self.engines.get(engine) or EngineOverrides()
        layers = (self.families.get(family), by_engine.defaults, by_engine.families.get(family))
        if not any(layers):
            return self.defaults
        merged = self.defaults.model_dump()
        for layer in layers:
            merged.update(layer or {})
        return Efficiency.model_validate(merged)


class AtKey(ValueError):
    """A profile problem found once the whole profile is read, with the key path it is at (so that a
    file's error can name its line: pydantic keeps the exception in the error's ctx)."""

    def __init__(self, message: str, loc: tuple) -> None:
        super().__init__(message)
        self.loc = loc


def _not_one_of(where: str, name: str, what: str, plural: str, known) -> str:
    """'<where>: not <what> (did you mean <closest>?); <plural>: <known>'."""
    hint = did_you_mean(name, known, n=1)
    meant = f" (did you mean {hint[0]}?)" if hint else ""
    return f"{where}: not {what}{meant}; {plural}: {', '.join(known)}"


def _first_error(e: ValidationError) -> str:
    """'<key>: <message> (got <value>)' for the first of an Efficiency's errors, with a did-you-mean
    for a parameter it does not have."""
    err = e.errors()[0]
    key = ".".join(map(str, err["loc"]))
    hint = did_you_mean(key, Efficiency.model_fields) if err["type"] == "extra_forbidden" else []
    message = err["msg"] + (f" (did you mean {' or '.join(hint)}?)" if hint else "")
    return f"{key}: {message} (got {err.get('input')!r})"
