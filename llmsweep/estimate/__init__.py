"""The estimator: polars expressions that add memory, time and throughput columns to a grid frame.

`add_estimates` works on a whole (lazy) frame at once, one row per configuration; it sees only
the declared columns, never the sweep spec or the catalog.
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import EXPORTED, SCHEMA, c
from llmsweep.estimate import compute, memory, parallel, serving


def add_estimates(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Add every estimate column. Stages follow the dependencies: memory -> max batch -> the
    batch in force (`max` resolved) -> memory at that batch -> prefill, decode -> serving."""
    return (
        frame.with_columns(
            model_weight_bytes=memory.model_weight_bytes(),
            kv_bytes_per_token=memory.kv_bytes_per_token(),
            usable_memory_bytes=memory.usable_memory_bytes(),
            overhead_bytes=memory.overhead_bytes(),
            layout_reason=parallel.layout_reason(),
        )
        .with_columns(weight_bytes=memory.weight_bytes())
        .with_columns(max_batch=memory.max_batch())
        .with_columns(batch=pl.when(c.batch_is_max).then(pl.max_horizontal(c.max_batch, 1)).otherwise(c.batch))
        .with_columns(
            kv_cache_bytes=memory.kv_cache_bytes(c.batch),
            activation_bytes=memory.activation_bytes(c.batch),
            prefill_flops=compute.prefill_flops(),
            decode_flops_per_step=compute.decode_flops_per_step(),
            decode_bytes_per_step=compute.decode_bytes_per_step(),
            experts_touched=compute.experts_touched(c.batch.cast(pl.Float64)),
            ridge_point=compute.ridge_point(),
        )
        .with_columns(
            memory_per_gpu_bytes=memory.memory_per_gpu_bytes(),
            prefill_s=compute.prefill_s(),
            prefill_arithmetic_intensity=c.prefill_flops / compute.prefill_bytes(),
            arithmetic_intensity=c.decode_flops_per_step / c.decode_bytes_per_step,
            **compute.decode_terms(),
        )
        .with_columns(
            fits=(c.memory_per_gpu_bytes <= c.usable_memory_bytes) & pl.col("layout_reason").is_null(),
            reason=pl.coalesce(pl.col("layout_reason"), parallel.memory_reason()),
            ttft_s=c.prefill_s,
            prefill_tokens_per_s=pl.when(c.input_tokens > 0).then(c.input_tokens / c.prefill_s),
            tpot_s=compute.tpot_s(),
            bound=compute.bound(),
        )
        .with_columns(
            decode_tokens_per_s_per_seq=1 / c.tpot_s,
            decode_tokens_per_s=c.batch / c.tpot_s,
            output_tokens_per_s=serving.output_tokens_per_s(),
            request_latency_s=serving.request_latency_s(),
        )
        .with_columns(output_tokens_per_s_per_gpu=c.output_tokens_per_s / c.gpus)
        .drop("layout_reason")
    )


def select_exported(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The exported columns in declared order, cast to their declared dtypes."""
    return frame.select([pl.col(n).cast(SCHEMA[n]) for n in EXPORTED])
