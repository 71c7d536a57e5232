"""Tensor- and pipeline-parallel costs and the rules a parallel layout must satisfy."""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c, text


def allreduce_fixed_s() -> pl.Expr:
    """Latency part of one forward pass's tensor-parallel communication: two all-reduces per layer
    (after attention and after the MLP), 2 x L x alpha. Zero when tp = 1."""
    return pl.when(c.tp > 1).then(2 * c.layers * c.allreduce_latency_s).otherwise(0.0)


def allreduce_s_per_token() -> pl.Expr:
    """Bandwidth part per token: a ring all-reduce moves 2 (tp - 1) / tp of the message (d x
    activation bytes per token) over the per-direction link, twice per layer. Pipeline stages pass
    activations point to point, which is small against the all-reduces and is not counted."""
    per_token = 2 * c.layers * 2 * (c.tp - 1) / c.tp * c.hidden_size * c.activation_bytes_per_element
    return pl.when(c.tp > 1).then(per_token / c.link_bandwidth_bytes_per_s).otherwise(0.0)


def allreduce_s(tokens: pl.Expr) -> pl.Expr:
    """Tensor-parallel communication of one forward pass over `tokens` tokens [s]:
    2 L (alpha + 2 (tp - 1) / tp x tokens x d x bytes / link bandwidth)."""
    return c.allreduce_fixed_s + tokens * c.allreduce_s_per_token


def alltoall_fixed_s() -> pl.Expr:
    """Latency part of one forward pass's expert-parallel communication: a dispatch and a combine
    all-to-all per MoE layer, 2 x L_moe x alpha (alpha = the profile's collective latency). Zero
    when ep = 1 (experts split by tensor parallelism use the all-reduces instead)."""
    return pl.when(c.ep > 1).then(2 * c.moe_layers * c.allreduce_latency_s).otherwise(0.0)


def alltoall_s_per_token() -> pl.Expr:
    """Bandwidth part per token of an attention group: dispatch sends the token's hidden state
    (d x activation bytes) to its k experts, (ep - 1) / ep of them on other GPUs, and combine
    brings the results back; the group's tp GPUs share the sending:
    2 x L_moe x k x d x bytes x (ep - 1) / ep / tp / link bandwidth (DeepSeek-V3 report §3.2:
    dispatch/combine all-to-all over NVLink within a node)."""
    volume = 2 * c.moe_layers * c.experts_per_token * c.hidden_size * c.activation_bytes_per_element
    per_token = volume * (c.ep - 1) / c.ep / c.tp / c.expert_link_bandwidth_bytes_per_s
    return pl.when(c.ep > 1).then(per_token).otherwise(0.0)


def alltoall_s(tokens: pl.Expr) -> pl.Expr:
    """Expert-parallel communication of one forward pass over `tokens` tokens of a group [s]."""
    return c.alltoall_fixed_s + tokens * c.alltoall_s_per_token


def layout_reason() -> pl.Expr:
    """Why a (GPU, model, tp, pp, lengths) combination cannot run at all, or null.

    Rules as the engines enforce them (vLLM, SGLang, TensorRT-LLM): tp divides the attention heads;
    tp and the KV heads divide one another (else heads cannot be split or replicated evenly);
    pp <= layers; ep and dp_attention only for MoE models, ep dividing tp x dp_attention and the
    experts; tp x pp x dp_attention GPUs fit in one server (multi-node is not modelled); the GPU
    has a link for tp > 1 (and ep > 1) and a published rate for the compute dtype. Messages are literals (the
    numbers are in the row).
    """
    rules = [
        (c.attention_heads % c.tp != 0, "tp does not divide the model's attention heads"),
        ((c.kv_heads % c.tp != 0) & (c.tp % c.kv_heads != 0), "tp and the model's KV heads do not divide one another"),
        (c.pp > c.layers, "pp exceeds the model's layers"),
        (
            ((c.ep > 1) | (c.dp_attention > 1)) & (c.experts == 0),
            "ep and dp_attention apply to MoE models; a dense model's data parallelism is more replicas",
        ),
        (
            (c.tp * c.dp_attention) % c.ep != 0,
            "ep does not divide tp x dp_attention (the experts of a stage are spread over those GPUs)",
        ),
        (c.experts % c.ep != 0, "ep does not divide the model's routed experts"),
        (
            c.tp * c.pp * c.dp_attention > c.gpus_per_node,
            "tp x pp x dp_attention exceeds the GPUs of one server (gpus_per_node); multi-node is not modelled",
        ),
        ((c.tp > 1) & c.link_bandwidth_bytes_per_s.is_null(), "no known interconnect bandwidth for tp > 1"),
        (
            (c.ep > 1) & c.expert_link_bandwidth_bytes_per_s.is_null(),
            "no known interconnect bandwidth for the experts' all-to-all (ep > 1)",
        ),
        (c.peak_flops_per_s.is_null(), "no published peak rate for the compute dtype or any wider one"),
    ]
    expr = text(None)
    for condition, message in reversed(rules):
        expr = pl.when(condition).then(text(message)).otherwise(expr)
    return expr


def row_reason() -> pl.Expr:
    """The layout's reason, else a context longer than the model's, else memory that does not fit."""
    return (
        pl.when(c.layout_reason.is_not_null())
        .then(c.layout_reason)
        .when(c.context_tokens > c.max_context_tokens)
        .then(text("context_tokens exceeds the model's maximum context"))
        .otherwise(memory_reason())
    )


def memory_reason() -> pl.Expr:
    """The row does not fit (memory_per_gpu_bytes and usable_memory_bytes say by how much)."""
    return pl.when(c.memory_per_gpu_bytes > c.usable_memory_bytes).then(
        text("does not fit: memory_per_gpu_bytes exceeds usable_memory_bytes")
    )
