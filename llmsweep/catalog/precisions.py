"""Weight and KV-cache formats: bytes per element and the dtype the matmuls run in."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

BPW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*bpw\s*$", re.IGNORECASE)
# `fp4` names no one format: each GPU vendor has its own 4-bit float format (a precision's
# `fp4_of`), so a sweep's `fp4` is resolved per GPU (Catalog.fp4_format), as `auto` is per model.
GENERIC_FP4 = "fp4"
# `fp4` where no vendor's format applies: on a GPU of a vendor without one in the catalog (Intel,
# Apple), on a sweep's GPU that names no vendor, and on the KV-cache axis (not resolved per GPU).
# NVFP4, what `fp4` meant before it was resolved per vendor.
FP4_FALLBACK = "nvfp4"


class Precision(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    bits_per_weight: float = Field(gt=0, le=32)
    unquantized_bits: float | None = Field(
        None,
        gt=0,
        le=32,
        description=(
            "Bits per weight of the tensors checkpoints in this format keep unquantised (token embedding, "
            "LM head, modules listed as unconverted); null = bits_per_weight."
        ),
    )
    compute_dtype: str
    activation_dtype: str
    aliases: list[str] = []
    fp4_of: list[str] = Field(
        [], description="GPU vendors whose FP4 format this is: a sweep's `fp4` means it on their GPUs."
    )
    fp4_units: list[str] | None = Field(
        None,
        description=(
            "For compute_dtype fp4: the GPU vendors whose FP4 units take this format's scales; on another "
            "vendor's GPU it runs weight-only (16-bit matmuls). null = any GPU with an fp4 rate."
        ),
    )
    sources: list[str] = []
    notes: str | None = None

    @property
    def bytes_per_weight(self) -> float:
        return self.bits_per_weight / 8

    @property
    def unquantized_bytes_per_weight(self) -> float:
        """b_u: bytes per weight of the token embedding, the LM head and a checkpoint's unconverted
        modules: 2 (16-bit) for quantised formats except GGUF, else b_w."""
        return (self.unquantized_bits or self.bits_per_weight) / 8

    @property
    def activation_bytes(self) -> float:
        return 4.0 if self.activation_dtype == "fp32" else 2.0


def bits_per_weight_format(name: str) -> Precision | None:
    """`4.0bpw` (EXL2 and similar): weight-only at N bits, computing in fp16. N is the decoder
    layers' average: EXL2 keeps the token embedding in fp16 (and quantises the LM head to its
    head_bits, 6 by default), so the embedding and LM head count at 16 bits."""
    m = BPW.match(name)
    if not m:
        return None
    bits = float(m.group(1))
    if not 0 < bits <= 32:
        return None
    return Precision(
        name=f"{bits:g} bits per weight",
        bits_per_weight=bits,
        unquantized_bits=16 if bits < 16 else None,
        compute_dtype="fp16",
        activation_dtype="fp16",
        sources=[f"given as {name.strip()}: {bits:g} bits per weight, scales included (weight-only)"],
    )
