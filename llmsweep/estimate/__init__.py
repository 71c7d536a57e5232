"""The estimator: polars expressions that add memory, time and throughput columns to a grid frame.

It works on whole (lazy) frames, one row per configuration, and sees only the declared columns,
never the sweep spec or the catalog. Work that depends only on the layout (GPU, model, precision,
parallelism) is done once per layout, work that depends on the lengths once per length pair,
and only the rest once per row:

    layouts -> add_layout_estimates -> x lengths -> add_length_estimates -> x batches -> add_batch_estimates

`add_estimates(frame)` does both on a frame that already holds every row.
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import EXPORTED, SCHEMA, c, text
from llmsweep.estimate import compute, experts, load, memory, parallel, prefix, speculative
from llmsweep.estimate import disaggregated as disagg


def add_layout_estimates(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Columns that depend only on GPU, model, precision, KV precision and the layout (and the profile):
    the links each collective crosses (estimate/parallel.py) first, then what reads them."""
    return (
        frame.with_columns(worker_gpus=c.tp * c.pp * c.dp_attention, network_unit_gpus=parallel.network_unit_gpus())
        .with_columns(gpus=c.worker_gpus, acceptance_rate=speculative.acceptance_rate())
        .with_columns(
            servers_per_replica=parallel.servers_per_replica(),
            tp_link=parallel.tp_link(),
            expert_link=parallel.expert_link(),
            expert_inside_link=parallel.inside_unit_kind(parallel.expert_group_gpus()),
            pp_inside_link=parallel.inside_unit_kind(c.gpus),
        )
        .with_columns(
            pp_link=parallel.pp_link(),
            link_bandwidth_bytes_per_s=parallel.link_bandwidth(c.tp_link),
            expert_link_bandwidth_bytes_per_s=parallel.link_bandwidth(c.expert_inside_link),
            pp_link_bandwidth_bytes_per_s=parallel.link_bandwidth(c.pp_inside_link),
        )
        .with_columns(
            model_weight_bytes=memory.model_weight_bytes(),
            kv_bytes_per_token=memory.kv_bytes_per_token(),
            kv_full_bytes_per_token=memory.kv_full_bytes_per_token(),
            kv_window_bytes_per_token=memory.kv_window_bytes_per_token(),
            kv_split=memory.kv_split(),
            full_kv_split=memory.full_kv_split(),
            kv_read_replicas=memory.kv_read_replicas(),
            full_kv_read_replicas=memory.full_kv_read_replicas(),
            activation_bytes_per_token=memory.activation_bytes_per_token(),
            logits_bytes_per_sequence=memory.logits_bytes_per_sequence(),
            usable_memory_bytes=memory.usable_memory_bytes(),
            overhead_bytes=memory.overhead_bytes(),
            flops_per_token=compute.flops_per_token(),
            prefill_flops_per_token=compute.prefill_flops_per_token(),
            unquantized_flop_cost=compute.unquantized_flop_cost(),
            attention_flops_per_key=compute.attention_flops_per_key(),
            decode_attention_flops_per_key=compute.decode_attention_flops_per_key(),
            routed_expert_bytes=experts.routed_expert_bytes(),
            embedding_table_bytes=experts.embedding_table_bytes(),
            embedding_row_bytes=experts.embedding_row_bytes(),
            expert_miss_log=experts.expert_miss_log(),
            seconds_per_flop=compute.seconds_per_flop(),
            attention_flop_cost=compute.attention_flop_cost(),
            seconds_per_byte=compute.seconds_per_byte(),
            fixed_step_s=compute.fixed_step_s(),
            ridge_point=compute.ridge_point(),
            allreduce_fixed_s=parallel.allreduce_fixed_s(),
            allreduce_s_per_token=parallel.allreduce_s_per_token(),
            alltoall_fixed_s=parallel.alltoall_fixed_s(),
            alltoall_s_per_token=parallel.alltoall_s_per_token(),
            pp_fixed_s=parallel.pp_fixed_s(),
            pp_s_per_token=parallel.pp_s_per_token(),
            expert_placement=parallel.expert_placement(),
            expert_spread=experts.expert_spread(),
            layout_reason=parallel.layout_reason(),
            tokens_per_step=speculative.tokens_per_step(),
            draft_fraction=speculative.draft_fraction(),
            draft_kv_ratio=speculative.draft_kv_ratio(),
        )
        .with_columns(
            comm_fixed_s=parallel.comm_fixed_s(),
            comm_s_per_token=parallel.comm_s_per_token(),
            routing_s_per_token=compute.routing_s_per_token(),
            expert_share=experts.expert_share(),
            spec_token_factor=speculative.token_factor(),
            spec_kv_factor=speculative.kv_factor(),
            draft_weight_bytes=speculative.draft_weight_bytes(),
        )
        .with_columns(weight_bytes=memory.weight_bytes(), spec_fixed_s=speculative.fixed_s())
        .with_columns(free_bytes=memory.free_bytes())
    )


def add_length_estimates(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Columns that depend on the layout and the lengths but not the batch: context, max batch,
    prefill (one prompt) and each sequence's share of a decode step."""
    return (
        frame.with_columns(
            context_tokens=c.input_tokens + c.output_tokens, prefill_new_tokens=prefix.new_prompt_tokens()
        )
        .with_columns(
            kv_context_bytes_per_sequence=memory.kv_context_bytes_per_sequence(),
            prefill_flops=compute.prefill_flops(),
            decode_flops_per_sequence=compute.decode_flops_per_sequence(),
            decode_kv_bytes_per_sequence=compute.decode_kv_bytes_per_sequence(),
        )
        .with_columns(
            decode_compute_s_per_sequence=compute.decode_compute_s_per_sequence(),
            prefill_compute_s=compute.prefill_compute_s(),
        )
        .with_columns(
            max_batch=memory.max_batch(),
            prefill_s=compute.prefill_s(),
            prefill_arithmetic_intensity=c.prefill_flops / compute.prefill_bytes(),
        )
        .with_columns(
            prefill_tokens_per_s=pl.when(c.input_tokens > 0).then(c.input_tokens / c.prefill_s),
            **load.step_coefficients(),
        )
    )


def add_batch_estimates(frame: pl.LazyFrame, disaggregated: bool = False) -> pl.LazyFrame:
    """Columns that depend on the batch: the concurrency in force (`max` resolved), memory at that
    batch, the decode step, and the serving operating point at that concurrency (estimate/load.py;
    with `disaggregated`, rows of disaggregated.pair and estimate/disaggregated.py)."""
    frame = frame.with_columns(
        batch=pl.when(c.batch_is_max).then(pl.max_horizontal(c.max_batch, 1) * _workers()).otherwise(c.batch)
    )
    frame = frame.with_columns(worker_batch=(c.batch / _workers()).ceil().cast(pl.Int64) if disaggregated else c.batch)
    frame = (
        frame.with_columns(group_batch=(c.worker_batch / c.dp_attention).ceil().cast(pl.Int64))
        .with_columns(
            kv_cache_bytes=memory.kv_cache_bytes(c.group_batch),
            activation_bytes=memory.activation_bytes(c.group_batch),
            decode_flops_per_step=compute.decode_flops_per_step(),
            decode_bytes_per_step=compute.decode_bytes_per_step(),
            experts_touched=experts.experts_touched(c.worker_batch),
        )
        .with_columns(
            memory_per_gpu_bytes=memory.memory_per_gpu_bytes(),
            arithmetic_intensity=c.decode_flops_per_step / c.decode_bytes_per_step,
            decode_weight_fraction=speculative.weights_read(c.worker_batch) / c.decode_bytes_per_step,
            **compute.decode_terms(),
        )
    )
    fits = (c.memory_per_gpu_bytes <= c.usable_memory_bytes) & c.layout_reason.is_null()
    if disaggregated:
        fits = fits & disagg.prefill_fits()
    frame = frame.with_columns(
        fits=fits & (c.context_tokens <= c.max_context_tokens).fill_null(True),
        reason=parallel.row_reason() if not disaggregated else disagg.row_reason(),
        bound=compute.bound(),
    )
    if disaggregated:
        frame = frame.pipe(disagg.closed_loop)
    else:
        frame = frame.pipe(load.closed_loop).with_columns(
            mode=text(disagg.AGGREGATED),
            prefill_pool_gpus=pl.lit(0, pl.Int64),
            decode_pool_gpus=c.gpus,
            **{n: pl.lit(None, SCHEMA[n]) for n in disagg.DISAGGREGATED_ONLY},
        )
    return frame.with_columns(
        decode_tokens_per_s=c.batch / c.decode_step_s * c.tokens_per_step,
        output_tokens_per_s_per_gpu=c.output_tokens_per_s / c.gpus,
    )


def _workers() -> pl.Expr:
    """Decode workers of a disaggregated row, 1 for an aggregated one (whose decode_workers is null)."""
    return c.decode_workers.fill_null(1)


def add_estimates(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Every estimate column, on a frame that already holds one row per configuration."""
    return add_batch_estimates(add_length_estimates(add_layout_estimates(frame)))


def select_exported(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The exported columns in declared order, cast to their declared dtypes."""
    return frame.select([pl.col(n).cast(SCHEMA[n]) for n in EXPORTED])
