"""Weight and KV-cache formats: bytes per element and the dtype the matmuls run in."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

BPW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*bpw\s*$", re.IGNORECASE)


class Precision(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    bits_per_weight: float = Field(gt=0, le=32)
    compute_dtype: str
    activation_dtype: str
    aliases: list[str] = []
    sources: list[str] = []
    notes: str | None = None

    @property
    def bytes_per_weight(self) -> float:
        return self.bits_per_weight / 8

    @property
    def activation_bytes(self) -> float:
        return 4.0 if self.activation_dtype == "fp32" else 2.0


def bits_per_weight_format(name: str) -> Precision | None:
    """`4.0bpw` (EXL2 and similar): weight-only at N bits, computing in fp16."""
    m = BPW.match(name)
    if not m:
        return None
    bits = float(m.group(1))
    if not 0 < bits <= 32:
        return None
    return Precision(
        name=f"{bits:g} bits per weight",
        bits_per_weight=bits,
        compute_dtype="fp16",
        activation_dtype="fp16",
        sources=[f"given as {name.strip()}: {bits:g} bits per weight, scales included (weight-only)"],
    )
