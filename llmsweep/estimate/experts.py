"""Routed experts (MoE): which experts a pass over some tokens reads, and how unevenly the
expert-parallel ranks share them (DESIGN.md §4). A dense model (experts = 0) reads every weight.
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c


def routed_expert_bytes() -> pl.Expr:
    """Bytes of every routed expert in every MoE layer: MoE layers x E x expert params x b_w."""
    return c.moe_layers * c.experts * c.expert_params * c.bytes_per_weight


def expert_miss_log() -> pl.Expr:
    """ln(1 - k/E): with uniform routing a token skips a given expert with probability 1 - k/E,
    so T tokens all skip it with probability exp(T x this). 0 for dense models."""
    miss = pl.when(c.experts > 0).then((1 - c.experts_per_token / c.experts).log()).otherwise(0.0)
    return miss.clip(lower_bound=-50.0)  # k = E: every expert is read; keeps 0 tokens x log free of NaN


# -- per row ----------------------------------------------------------------------------------


def touch_probability(tokens: pl.Expr) -> pl.Expr:
    """p = 1 - (1 - k/E)^tokens: the chance that `tokens` tokens, routed uniformly, use a given
    expert of an MoE layer (0 for dense models)."""
    return 1 - (tokens * c.expert_miss_log).exp()


def experts_touched(tokens: pl.Expr) -> pl.Expr:
    """Routed experts that `tokens` tokens use in one MoE layer, if routing is uniform: E x p.
    One token reads k; a large batch reads all E."""
    return c.experts * touch_probability(tokens)


def expert_share() -> pl.Expr:
    """The busiest attention group's share of the routed experts' work: 1 / dp_attention (the
    experts are spread over all tp x dp_attention GPUs while each group reads its own dense
    weights), times a routing skew beyond uniform when ep > 1 (expert_imbalance, profile; 1 =
    uniform routing, whose own spread is expert_spread's), times the busiest rank's extra experts
    when ep does not divide them (expert_placement)."""
    skew = pl.when(c.ep > 1).then(c.expert_imbalance).otherwise(1.0)
    return skew * c.expert_placement / c.dp_attention


def expected_max_normal(n: pl.Expr) -> pl.Expr:
    """E[max of n standard normal variables], by Blom's (1958) plotting position
    Phi^-1((n - 0.375) / (n + 0.25)), Phi^-1 by Abramowitz & Stegun 26.2.23 (|error| < 4.5e-4):
    t = sqrt(-2 ln(1 - q)), Phi^-1(q) = t - (2.515517 + 0.802853 t + 0.010328 t^2) /
    (1 + 1.432788 t + 0.189269 t^2 + 0.001308 t^3). n = 8: q = 7.625 / 8.25 = 0.924242, t = 2.271555,
    1.4344 (the exact expectation is 1.4236; sqrt(2 ln n), its leading asymptotic term, gives 2.039).
    0 for n = 1."""
    n = n.cast(pl.Float64)
    t = (-2 * (1 - (n - 0.375) / (n + 0.25)).log()).sqrt()
    ratio = (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308)))
    return pl.when(n > 1).then(t - ratio).otherwise(0.0)


def expert_spread() -> pl.Expr:
    """z / sqrt(n): how far the busiest of the ep ranks' touched experts lies above the mean, per
    unit of the binomial spread. Each rank holds n = E / ep experts, each touched with probability
    p, so a rank touches n p +- sqrt(n p (1 - p)); the largest of ep such counts lies about z =
    E[max of ep standard normals] spreads above the mean (expected_max_normal). 0 when ep = 1.
    DeepSeek-R1 on ep 8: 1.4344 / sqrt(32) = 1.4344 / 5.6569 = 0.2536."""
    n = c.experts.cast(pl.Float64) / c.ep
    return pl.when((c.ep > 1) & (c.experts > 0)).then(expected_max_normal(c.ep) / n.sqrt()).otherwise(0.0)


def busiest_touched(tokens: pl.Expr) -> pl.Expr:
    """Share of its experts the busiest expert-parallel rank touches in a pass over `tokens` tokens
    with uniform routing: min(1, p + z sqrt(p (1 - p) / n)), p = 1 - (1 - k/E)^tokens (= p at ep 1).
    Large against p when few tokens reach each expert (decode at a small batch), 1 for a prompt."""
    p = touch_probability(tokens)
    return pl.min_horizontal(p + c.expert_spread * (p * (1 - p)).sqrt(), 1.0)


def embedding_table_bytes() -> pl.Expr:
    """V d b_u [untied] [bytes]: the token embedding table a pass does not stream (a lookup gathers
    rows of it); 0 when tied, the table then being the LM head, read whole. Llama-3.1-8B bf16:
    128,256 x 4,096 x 2 = 1,050,673,152."""
    return pl.when(c.tied_embeddings).then(0.0).otherwise(c.embedding_params * c.unquantized_bytes_per_weight)


def embedding_row_bytes() -> pl.Expr:
    """d b_u [bytes]: one token's row of the embedding table (Llama-3.1-8B bf16: 4,096 x 2 = 8,192)."""
    return c.hidden_size * c.unquantized_bytes_per_weight


def weight_bytes_read(tokens: pl.Expr) -> pl.Expr:
    """Weights one forward pass over `tokens` tokens reads [bytes], all GPUs of an attention group:
    every dense weight once and, of the routed experts, those the busiest rank touches, at the
    group's share, but of the token embedding table only the tokens' rows:
    (W - routed) + routed x busiest_touched(tokens) x expert_share - V d b_u [untied] + T d b_u,
    W = model_weight_bytes (= W - routed x (1 - k/E)^T - V d b_u + T d b_u without attention data
    parallelism or ep). The embedding is a lookup (a gather of T rows of d weights at b_u bytes,
    embedding_row_bytes), not a matmul that streams the table (embedding_table_bytes); with tied
    embeddings the table is also the LM head, which the pass reads whole. Llama-3.1-8B bf16 at batch
    1: 16,060,522,496 - 128,256 x 4,096 x 2 + 4,096 x 2 = 15,009,857,536 bytes (not 16.06e9, +7 %)."""
    touched = c.routed_expert_bytes * busiest_touched(tokens)
    rows = tokens * c.embedding_row_bytes - c.embedding_table_bytes
    return c.model_weight_bytes - c.routed_expert_bytes + touched * c.expert_share + rows
