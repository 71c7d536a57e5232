"""GPU entries: datasheet facts with their sources, and the peak rate for a compute dtype."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from llmsweep.limits import field as lim
from llmsweep.limits import typed

GIB = 2**30

# When a GPU has no published rate for a dtype, the matmuls run in the next wider one. A 4-bit
# float format (NVFP4, MXFP4) on a GPU without FP4 units is weight-only, W4A16: the kernels
# dequantise the weights to 16-bit, not to fp8 (DESIGN.md §4; vLLM's Marlin FP4 and gpt-oss's
# triton MoE kernels on H100/H200, its MXFP4 path on MI300X), so fp4 falls back to bf16.
FALLBACK: dict[str, tuple[str, ...]] = {
    "fp4": ("fp4", "bf16", "fp16", "fp32"),
    "fp8": ("fp8", "bf16", "fp16", "fp32"),
    "int8": ("int8", "fp16", "bf16", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "fp32": ("fp32",),
}
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8", "int4")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Source(_Strict):
    ref: str
    source: str
    fields: list[str] = []


class DenseRates(_Strict):
    """Dense (no 2:4 sparsity) peak rates in TFLOP/s (TOPS for int8/int4); null = not published."""

    fp32: typed("tflops") | None = lim("tflops", None)
    tf32: typed("tflops") | None = lim("tflops", None)
    fp16: typed("tflops") | None = lim("tflops", None)
    bf16: typed("tflops") | None = lim("tflops", None)
    fp8: typed("tflops") | None = lim("tflops", None)
    fp4: typed("tflops") | None = lim("tflops", None)
    int8: typed("tflops") | None = lim("tflops", None)
    int4: typed("tflops") | None = lim("tflops", None)


class Gpu(_Strict):
    """One GPU. Also the schema of a sweep's inline `gpus:` entries (only the first three are required)."""

    memory_gb: typed("memory_gb") = lim(
        "memory_gb", description="Memory per GPU as the vendor labels it (GB labels are GiB)."
    )
    memory_bandwidth_gbps: typed("memory_bandwidth_gbps") = lim(
        "memory_bandwidth_gbps", description="Peak memory bandwidth, GB/s (10^9 bytes/s)."
    )
    dense_tflops: DenseRates = Field(description="Dense peak TFLOP/s per dtype (int8/int4 in TOPS).")
    name: str | None = None
    vendor: str | None = None
    family: str = Field("custom", description="Selects efficiency-profile overrides (hopper, ada, apple, ...).")
    arch: str | None = None
    form_factor: str | None = None
    reference_id: str | None = None
    aliases: list[str] = []
    memory_type: str | None = None
    tdp_w: typed("tdp_w") | None = lim("tdp_w", None)
    scale_up_gbps_per_direction: typed("link_gbps") | None = lim(
        "link_gbps", None, description="NVLink / Infinity Fabric bandwidth per direction, GB/s."
    )
    nvlink_group: typed("gpu_group") = lim(
        "gpu_group", 1, description="The scale-up domain: GPUs joined by the scale-up link (72 in an NVL72 rack)."
    )
    pcie_gbps_per_direction: typed("link_gbps") | None = lim("link_gbps", None)
    scale_out_gbps_per_direction: typed("link_gbps") | None = lim(
        "link_gbps",
        None,
        description=(
            "Scale-out network (NIC) bandwidth per GPU per direction, GB/s (one 400 Gb/s NIC per GPU = 50); "
            "null = unknown: layouts across servers cannot be costed."
        ),
    )
    gpus_per_node: typed("gpus_per_node") = lim(
        "gpus_per_node", 8, description="GPUs in one server; tp x pp may not exceed it."
    )
    launch_year: typed("launch_year") | None = lim("launch_year", None)
    cloud_prices: list[dict] = []
    sources: list[Source] = []
    derived: list[str] = []
    notes: str | None = None

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * GIB

    def peak_flops(self, dtype: str) -> tuple[float | None, str]:
        """Dense peak FLOP/s for `dtype`, falling back to wider dtypes; returns (rate, dtype used)."""
        for d in FALLBACK[dtype]:
            rate = getattr(self.dense_tflops, d)
            if rate:
                return rate * 1e12, d
        return None, dtype
