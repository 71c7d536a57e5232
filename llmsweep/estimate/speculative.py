"""Speculative decoding: a draft proposes k tokens per sequence, the target verifies k + 1 in one step.

Methods (column `speculative`):

    none    one token per sequence and step
    mtp     the model's own multi-token-prediction module (DeepSeek-V3 §2.2): one decoder layer of
            the target's architecture, run k times per step (how SGLang and TensorRT-LLM chain it)
    eagle   an EAGLE-style head (Li et al., 2024): one decoder layer over the target's hidden
            states, run k times per step
    draft   a separate small model (`draft_model`), run k times per step

One step of b sequences (the shared decode-step terms of compute.py and load.step_s, with factors):

- the target verifies q = k + 1 tokens per sequence: its weights are read once for the whole step
  (the routed experts that q x b tokens touch), its FLOPs and communication scale with q; the KV
  cache is read once, since the q queries of a sequence attend in one kernel pass (FlashMLA's and
  FlashInfer's query-length dimension) — DESIGN.md says "KV reads scale with k + 1"; reading the
  cache once is what the kernels do, and the difference matters only at long contexts;
- each of the k draft passes costs a fraction f of a one-token target pass in weights, FLOPs and
  communication: f = 1 / layers for mtp and eagle (one layer of the target's size), f = draft
  active parameters / target active parameters for a draft model; plus its own fixed costs (a
  forward pass: step overhead + its layers' overheads);
- and reads its own KV cache, a fraction r of the target's (draft_kv_ratio): r = 1 / layers for
  mtp and eagle (one layer of the target's shape: r = f), r = the draft model's KV bytes per token
  over the target's for a draft model, which is not f: a small GQA model keeps a larger share of
  its parameters in KV heads (Llama-3.1-8B drafting for Llama-3.1-70B: f = 0.114, r = 0.40). The
  draft's cache is held next to the target's (memory.kv_gpu_bytes).

So with g the sequences of an attention group, F and KV one sequence's FLOPs and KV bytes:

    compute = g (q + k f) F s/FLOP,   memory = (W(q b) + k f W(b) + g (1 + k r') KV) s/byte,
    communication = comm(g (q + k f)),  fixed = fixed_step_s + k (step overhead + draft layers x layer overhead)

(load.step_s; W(t) = weights t tokens read, compute.weight_bytes_read; r' = r with each side's
tp replicas of a KV head, kv_factor). The draft's attention FLOPs are taken at f with the rest of
its pass (compute.py multiplies a whole one-token pass by q + k f), though they scale with its own
layers x query heads x head dim: 0.2 of the target's for Llama-3.1-8B under 70B, not 0.114; at
8,192 tokens of context that is about 1 % of the step's FLOPs. The step yields E tokens
per sequence on average (tokens_per_step): for an i.i.d. per-token acceptance alpha,
E = (1 - alpha^(k+1)) / (1 - alpha) (Leviathan et al., ICML 2023, eq. 1); for per-position rates
a_1..a_k, E = 1 + a_1 + a_1 a_2 + ... (the spec resolves them). TPOT = step / E, and the S_out - 1
tokens after the first take (S_out - 1) / E steps, a mean that leaves out the last step's overshoot
(it may accept more tokens than the request has left): renewal theory adds about
(E[J^2] - E) / (2 E^2) steps, J the tokens a step yields, 0.42 at alpha = 0.7 and k = 3, so the
decode phase is short by that much, 1 % of a 100-token answer and more of a shorter one. With k = 0 every
factor is 1 and the terms are the plain decode step. Nothing here decides when speculation pays:
at a small batch the step is memory-bound and barely grows with q (TPOT ~ step / E); at a large
batch it is compute-bound and grows by (q + k f), which E no longer covers.
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c
from llmsweep.estimate.experts import weight_bytes_read
from llmsweep.estimate.memory import kv_read_replicas, weights_at_format

METHODS = ("none", "mtp", "eagle", "draft")


def acceptance_rate() -> pl.Expr:
    """alpha: the sweep's acceptance, else the profile's default for the method (null without
    speculation)."""
    default = (
        pl.when(c.speculative == "mtp")
        .then(c.mtp_acceptance)
        .when(c.speculative == "eagle")
        .then(c.eagle_acceptance)
        .when(c.speculative == "draft")
        .then(c.draft_acceptance)
    )
    return pl.when(c.draft_tokens > 0).then(pl.coalesce(c.acceptance_rate, default))


def tokens_per_step() -> pl.Expr:
    """E = (1 - alpha^(k+1)) / (1 - alpha) (= k + 1 at alpha = 1), or the sweep's own from
    per-position rates; 1 without speculation. k = 1, alpha = 0.8: 1.8; k = 3, alpha = 0.7: 2.533."""
    k, alpha = c.draft_tokens, c.acceptance_rate
    iid = pl.when(alpha < 1).then((1 - alpha.pow(k + 1)) / (1 - alpha)).otherwise(k + 1.0)
    return pl.when(k > 0).then(pl.coalesce(c.given_tokens_per_step, iid)).otherwise(1.0)


def draft_fraction() -> pl.Expr:
    """f: one draft pass's weights, weight FLOPs and communication over one target pass's (not its
    KV: draft_kv_ratio). mtp, eagle: one decoder layer, 1 / L (DeepSeek-R1: 1 / 61); draft: active
    parameters over the target's (Llama-3.2-1B for Llama-3.1-70B: 1.24e9 / 70.6e9 = 0.0175). 0
    without speculation."""
    layer = 1 / c.layers.cast(pl.Float64)
    own = pl.coalesce(c.draft_params_active / c.params_active, layer)
    return pl.when(c.draft_tokens > 0).then(own).otherwise(0.0)


def draft_kv_ratio() -> pl.Expr:
    """r: the KV bytes one draft pass caches per token over the target's, both at the row's KV
    format (the engine keeps both caches in it), so the element counts' ratio. mtp, eagle: one
    decoder layer of the target's shape, 1 / L, as f. draft: the draft model's KV elements per token
    (2 x L x h_kv x d_h, catalog/architecture.py) over the target's. Llama-3.1-8B drafting for
    Llama-3.1-70B: 2 x 32 x 8 x 128 / (2 x 80 x 8 x 128) = 65,536 / 163,840 = 0.40 (131,072 /
    327,680 bytes per token at 16 bits), where its parameters are f = 8.03e9 / 70.55e9 = 0.114 of the
    target's. The draft's cache is taken as full attention over the whole context (a draft with
    sliding-window layers holds less). 0 without speculation, and for a target that caches no KV
    per token (no catalog model)."""
    layer = 1 / c.layers.cast(pl.Float64)
    own = c.draft_kv_elements_per_token / c.kv_elements_per_token
    return (
        pl.when(c.draft_tokens == 0)
        .then(0.0)
        .when(c.draft_kv_elements_per_token.is_null())
        .then(layer)
        .when(c.kv_elements_per_token > 0)
        .then(own)
        .otherwise(0.0)
    )


def draft_weight_bytes() -> pl.Expr:
    """Weights the draft adds to a worker: the draft model's, as the target's are counted (its
    parameters at b_w, its embedding and LM head at b_u: memory.weights_at_format; Llama-3.1-8B in int4,
    5.70e9 bytes as a draft as it is as a target), or one decoder layer of the target (mtp, eagle): the
    target's weight bytes / L. DeepSeek-V3 ships its MTP module as a 61st+1 layer (about 11.5 B of
    its 14 B extra parameters sit in that layer's experts)."""
    draft = weights_at_format(c.draft_params_total, c.draft_unquantized_params)
    own = pl.coalesce(draft, c.model_weight_bytes / c.layers)
    return pl.when(c.draft_tokens > 0).then(own).otherwise(0.0)


def token_factor() -> pl.Expr:
    """q + k f: one-token passes per sequence a step costs in FLOPs and communication (1 without
    speculation; mtp k = 1 on DeepSeek-R1: 2 + 1/61 = 2.0164)."""
    return c.draft_tokens + 1 + c.draft_tokens * c.draft_fraction


def kv_factor() -> pl.Expr:
    """1 + k r': KV bytes a step reads per sequence over the target's reads alone (the target reads
    its cache once, each of the k draft passes its own). The reads count a KV head on every tp rank
    that holds a copy (compute.decode_kv_bytes_per_sequence), so a draft model's share is
    r' = r x min(tp, h_kv) / min(tp, h_kv,draft) (r = draft_kv_ratio; the factor is 1 unless one
    side's heads are fewer than tp), and r' = r = 1 / L for mtp and eagle (the target's own shape).
    Llama-3.1-70B with Llama-3.1-8B, k = 3, tp 4 (8 KV heads each): 1 + 3 x 0.40 = 2.2. Exact when
    every target layer caches every token (dense GQA, MLA); with window, DSA or recurrent layers in
    the target the draft's reads are taken as the same share of the target's."""
    replicas = kv_read_replicas(c.draft_kv_heads) / kv_read_replicas(c.full_kv_heads)
    return 1 + c.draft_tokens * c.draft_kv_ratio * pl.coalesce(replicas, pl.lit(1.0))


def fixed_s() -> pl.Expr:
    """The k draft passes' fixed costs: k x (step overhead + draft layers x layer overhead), plus
    their share f of the target's communication latency."""
    layers = pl.coalesce(c.draft_layers, pl.lit(1)).cast(pl.Float64)
    per_pass = c.step_overhead_s + layers * c.layer_overhead_s + c.draft_fraction * c.comm_fixed_s
    return c.draft_tokens * per_pass


def weights_read(b: pl.Expr) -> pl.Expr:
    """Weight bytes one step of b sequences reads, all GPUs of an attention group: the target's at
    the q b tokens it verifies, and each of the k draft passes its share f of the target's at b
    tokens: W(q b) + k f W(b) (= W(b) without speculation)."""
    q = c.draft_tokens + 1
    return weight_bytes_read(q * b) + c.draft_tokens * c.draft_fraction * weight_bytes_read(b)
