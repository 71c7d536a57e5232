"""Time: prefill (compute-bound), decode (memory-bound), and the roofline (DESIGN.md §4).

FLOPs are counted as 2 per multiply-accumulate. Times divide by tp only: pipeline stages of a
replica run one after another for a given token, so pp adds memory, not speed.
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c
from llmsweep.estimate.memory import kv_sequence_bytes
from llmsweep.estimate.parallel import allreduce_s


def window_fraction() -> pl.Expr:
    """Share of layers that use a sliding window (0 for full attention everywhere)."""
    return (c.kv_window_elements_per_token / c.kv_elements_per_token).fill_nan(0.0)


def attention_span(tokens: pl.Expr) -> pl.Expr:
    """Sum over positions i = 1..S of the keys attended to, min(i, W): S^2 / 2 for full causal
    attention; S W - W^2 / 2 for a window W < S."""
    full = tokens * tokens / 2
    w = c.sliding_window_tokens
    windowed = pl.when(w.is_not_null() & (tokens > w)).then(tokens * w - w * w / 2).otherwise(full)
    return (1 - window_fraction()) * full + window_fraction() * windowed


def experts_touched(tokens: pl.Expr) -> pl.Expr:
    """Routed experts that `tokens` tokens use in one MoE layer, if routing is uniform:
    E x (1 - (1 - k/E)^tokens). One token reads k; a large batch reads all E."""
    e, k = c.experts.cast(pl.Float64), c.experts_per_token.cast(pl.Float64)
    return pl.when(c.experts > 0).then(e * (1 - (1 - k / e).pow(tokens))).otherwise(0.0)


def weight_bytes_read(tokens: pl.Expr) -> pl.Expr:
    """Weights one forward pass over `tokens` tokens reads, all GPUs: every dense weight once, and
    of the routed experts only those touched: (P - MoE layers x (E - touched) x expert) x b_w."""
    untouched = c.moe_layers * (c.experts - experts_touched(tokens)) * c.expert_params
    return (c.params_total - untouched) * c.bytes_per_weight


def step_overhead_s() -> pl.Expr:
    """Fixed cost of one forward pass: per step + per layer (profile)."""
    return c.step_overhead_s + c.layers * c.layer_overhead_s


def roofline_s(flops: pl.Expr, bytes_: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(compute time, memory time) of work spread over the tp GPUs of a stage:
    FLOPs / (tp x F x eta_c) and bytes / (tp x BW x eta_bw)."""
    compute = flops / (c.tp * c.peak_flops_per_s * c.compute_efficiency)
    memory = bytes_ / (c.tp * c.memory_bandwidth_bytes_per_s * c.bandwidth_efficiency)
    return compute, memory


# -- prefill: one prompt of S_in tokens ------------------------------------------------------
def prefill_flops() -> pl.Expr:
    """2 x P_a x S_in + causal attention 4 x L x h_q x d_h x span(S_in)
    (= 2 L S_in^2 h_q d_h without windows). Example: Llama-3.1-8B, 2,048 tokens:
    2 x 8.03e9 x 2048 + 2 x 32 x 2048^2 x 32 x 128 = 3.29e13 + 1.10e12 = 3.40e13 FLOPs."""
    s = c.input_tokens.cast(pl.Float64)
    attention = 4 * c.layers * c.attention_heads * c.attention_head_dim * attention_span(s)
    return 2 * c.params_active * s + attention


def prefill_bytes() -> pl.Expr:
    """Weights read once (the experts the prompt touches) + the prompt's KV written."""
    return weight_bytes_read(c.input_tokens.cast(pl.Float64)) + kv_sequence_bytes(c.input_tokens)


def prefill_s() -> pl.Expr:
    """max(FLOPs / (tp F eta_c), bytes / (tp BW eta_bw)) + all-reduces + fixed costs; 0 without a prompt.
    Example (ideal): 3.40e13 FLOPs / 989e12 FLOP/s = 34.4 ms (Llama-3.1-8B bf16, H100 SXM, 2,048 tokens)."""
    compute, memory = roofline_s(c.prefill_flops, prefill_bytes())
    t = pl.max_horizontal(compute, memory) + allreduce_s(c.input_tokens) + step_overhead_s()
    return pl.when(c.input_tokens > 0).then(t).otherwise(0.0)


# -- decode: one step of the whole batch at the mean context ---------------------------------
def mean_decode_context() -> pl.Expr:
    """Mean context over the generation: S_in + S_out / 2 (TPOT averages over it)."""
    return c.input_tokens + c.output_tokens / 2


def decode_flops_per_step() -> pl.Expr:
    """2 x P_a x B + attention over the cache 4 x L x B x c x h_q x d_h (windowed layers read
    min(c, W) keys). 2 FLOPs per weight per token, not 2 x bytes."""
    ctx = mean_decode_context()
    keys = (1 - window_fraction()) * ctx + window_fraction() * pl.min_horizontal(ctx, c.sliding_window_tokens)
    keys = keys.fill_null(ctx)
    return 2 * c.params_active * c.batch + 4 * c.layers * c.batch * keys * c.attention_heads * c.attention_head_dim


def decode_bytes_per_step() -> pl.Expr:
    """Weights read once per step for the whole batch (MoE: the experts the batch touches) + every
    sequence's KV cache, counted on every tp rank that holds a replica of it."""
    replicas = c.tp / pl.min_horizontal(c.tp, c.kv_heads)
    return weight_bytes_read(c.batch.cast(pl.Float64)) + c.batch * kv_sequence_bytes(mean_decode_context()) * replicas


def decode_terms() -> dict[str, pl.Expr]:
    """The four decode-step terms [s]; TPOT = max(compute, memory) + communication + overhead."""
    compute, memory = roofline_s(c.decode_flops_per_step, c.decode_bytes_per_step)
    return {
        "decode_compute_s": compute,
        "decode_memory_s": memory,
        "decode_comm_s": allreduce_s(c.batch),
        "decode_overhead_s": step_overhead_s(),
    }


def tpot_s() -> pl.Expr:
    """Time per output token: max(compute, memory) + all-reduces + fixed costs."""
    return pl.max_horizontal(c.decode_compute_s, c.decode_memory_s) + c.decode_comm_s + c.decode_overhead_s


def bound() -> pl.Expr:
    """The largest decode term names what limits the step."""
    terms = {
        "compute": c.decode_compute_s,
        "memory": c.decode_memory_s,
        "communication": c.decode_comm_s,
        "overhead": c.decode_overhead_s,
    }
    top = pl.max_horizontal(*terms.values())
    expr = pl.lit(None, dtype=pl.String)
    for name, term in reversed(terms.items()):
        expr = pl.when(term == top).then(pl.lit(name)).otherwise(expr)
    return expr


def ridge_point() -> pl.Expr:
    """F / BW [FLOP/byte]: below it a kernel is memory-bound, above it compute-bound."""
    return c.peak_flops_per_s / c.memory_bandwidth_bytes_per_s
