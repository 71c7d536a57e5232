"""Serving with continuous batching: throughput and request latency (DESIGN.md §4)."""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c


def output_tokens_per_s() -> pl.Expr:
    """B x S_out / (S_out x TPOT + B x prefill time): each of B concurrent requests generates
    S_out tokens, and every new request's prefill steals decode steps."""
    denominator = c.output_tokens * c.tpot_s + c.batch * c.prefill_s
    return pl.when(denominator > 0).then(c.batch * c.output_tokens / denominator)


def request_latency_s() -> pl.Expr:
    """TTFT + S_out x TPOT."""
    return c.ttft_s + c.output_tokens * c.tpot_s
