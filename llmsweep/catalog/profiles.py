"""Efficiency profiles: what fraction of peak real engines reach, and the fixed costs they pay."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

REQUEST_OVERHEAD_S = 0.01  # fitted (grid capped at 10 ms): scripts/validate_load.py --fit
BURST_SHARE = 0.2  # fitted on measured-load-dev.csv: scripts/validate_load.py --fit


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
    # Serving under load (estimate/load.py). Defaults are the values fitted on measured-load-dev.csv by
    # scripts/validate_load.py --fit, so that a profile file written before they existed keeps working.
    request_overhead_s: float = Field(REQUEST_OVERHEAD_S, ge=0)
    burst_share: float = Field(BURST_SHARE, ge=0, le=1)


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
