"""Efficiency profiles: what fraction of peak real engines reach, and the fixed costs they pay."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from llmsweep.limits import RANGES, check, typed
from llmsweep.limits import field as lim


class Efficiency(BaseModel):
    """One set of profile parameters (see catalog/profiles.yaml for their meaning and units)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    bandwidth_efficiency: typed("efficiency") = lim("efficiency")
    compute_efficiency: typed("efficiency") = lim("efficiency")
    step_overhead_s: typed("overhead_s") = lim("overhead_s")
    layer_overhead_s: typed("overhead_s") = lim("overhead_s")
    allreduce_latency_s: typed("overhead_s") = lim("overhead_s")
    memory_reserve_fraction: typed("reserve_fraction") = lim("reserve_fraction")
    runtime_overhead_bytes: typed("overhead_bytes") = lim("overhead_bytes")
    tp_buffer_bytes: typed("overhead_bytes") = lim("overhead_bytes")
    prefill_chunk_tokens: typed("prefill_chunk_tokens") = lim("prefill_chunk_tokens")


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str
    defaults: Efficiency
    families: dict[str, dict[str, float]] = {}
    sources: list[str] = []
    # Uncertainty: per metric group (decode, prefill, throughput), factors [low, high] that cover the
    # middle 80 % of cross-validated errors (from `llmsweep calibrate --fit`); empty = no bands.
    bands: dict[str, list[float]] = {}

    @model_validator(mode="after")
    def _families_and_bands(self) -> Profile:
        for family in self.families:
            try:
                self.for_family(family)
            except ValueError as e:  # pydantic's ValidationError is a ValueError
                raise ValueError(f"families.{family}: {_first_error(e)}") from None
        for group, band in self.bands.items():
            if len(band) != 2 or any(check("band_factor", f) for f in band) or band[0] > band[1]:
                raise ValueError(
                    f"bands.{group}: expected [low, high] with {RANGES['band_factor'].describe()} "
                    f"and low <= high, got {band!r}"
                )
        return self

    def for_family(self, family: str) -> Efficiency:
        override = self.families.get(family)
        if not override:
            return self.defaults
        return Efficiency.model_validate({**self.defaults.model_dump(), **override})


def _first_error(e: ValueError) -> str:
    errors = getattr(e, "errors", None)
    if callable(errors):
        err = errors()[0]
        return f"{'.'.join(map(str, err['loc']))}: {err['msg']} (got {err.get('input')!r})"
    return str(e)
