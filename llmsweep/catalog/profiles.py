"""Efficiency profiles: what fraction of peak real engines reach, and the fixed costs they pay."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Efficiency(BaseModel):
    """One set of profile parameters (see catalog/profiles.yaml for their meaning and units)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bandwidth_efficiency: float = Field(gt=0, le=1)
    compute_efficiency: float = Field(gt=0, le=1)
    step_overhead_s: float = Field(ge=0)
    layer_overhead_s: float = Field(ge=0)
    allreduce_latency_s: float = Field(ge=0)
    memory_reserve_fraction: float = Field(ge=0, lt=1)
    runtime_overhead_bytes: float = Field(ge=0)
    tp_buffer_bytes: float = Field(ge=0)
    prefill_chunk_tokens: int = Field(gt=0)
    # An assumption, not fitted: with expert parallelism the busiest GPU's expert load over the
    # mean. Routing is never perfectly even; balancers (DeepSeek's EPLB) exist because of it.
    expert_imbalance: float = Field(1.2, ge=1, le=4)


class EngineOverrides(BaseModel):
    """One engine's values: `defaults` for every GPU, `families` per GPU family on top."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    defaults: dict[str, float] = {}
    families: dict[str, dict[str, float]] = {}


class Profile(BaseModel):
    """Efficiency parameters, most specific last: `defaults`, then `families[F]` (the GPU
    family's hardware traits, any engine), then `engines[E].defaults`, then
    `engines[E].families[F]`. An engine without an entry (and `generic`) gets the first two."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str
    defaults: Efficiency
    families: dict[str, dict[str, float]] = {}
    engines: dict[str, EngineOverrides] = {}
    sources: list[str] = []
    # Uncertainty: per metric group (decode, prefill, throughput), factors [low, high] that cover the
    # middle 80 % of cross-validated errors (from `llmsweep calibrate --fit`); empty = no bands.
    bands: dict[str, list[float]] = {}

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
