"""Prefix caching: a share h of each prompt's tokens is already in the KV cache (vLLM's automatic
prefix caching, SGLang's RadixAttention).

Prefill then computes the n = S_in (1 - h) new tokens only (at least one: the last prompt token
always runs, to give the first output token's logits), each attending to the whole context before
it: linear FLOPs 2 (P_a - embedding - LM head) n + the LM head once (the last position's logits),
attention over the positions S_in - n + 1 .. S_in (compute.prefill_flops).
Decode is unchanged: its context is the same. Memory: with `prefix_shared` (a system prompt common
to every request) the cached prefix is held once per attention group rather than once per sequence;
otherwise each request's prefix is its own (earlier turns of its conversation) and costs what it did.
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c


def new_prompt_tokens() -> pl.Expr:
    """n = max(S_in (1 - h), 1) for a prompt, 0 without one: the tokens prefill computes.
    8,192 tokens at h = 0.75: 2,048."""
    s = c.input_tokens.cast(pl.Float64)
    return pl.when(s > 0).then(pl.max_horizontal(s * (1 - c.prefix_hit_rate), 1.0)).otherwise(0.0)


def shared_prefix_tokens() -> pl.Expr:
    """Tokens of a prefix common to every request (held once): S_in - n with prefix_shared, else 0."""
    return pl.when(c.prefix_shared).then(c.input_tokens - c.prefill_new_tokens).otherwise(0.0)
