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


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str
    defaults: Efficiency
    families: dict[str, dict[str, float]] = {}
    sources: list[str] = []
    # Uncertainty: per metric group (decode, prefill, throughput), factors [low, high] that cover the
    # middle 80 % of cross-validated errors (from `llmsweep calibrate --fit`); empty = no bands.
    bands: dict[str, list[float]] = {}

    def for_family(self, family: str) -> Efficiency:
        override = self.families.get(family)
        if not override:
            return self.defaults
        return Efficiency.model_validate({**self.defaults.model_dump(), **override})
