"""Memory: weights + KV cache + activations + runtime overhead, per GPU (DESIGN.md §4).

All results are bytes. Functions under "per layout" read only GPU, model, precision and
parallelism columns; those under "per row" also read the batch and the lengths.
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c
from llmsweep.estimate import prefix

# -- per layout -------------------------------------------------------------------------------


def unquantized_params() -> pl.Expr:
    """P_u = V d + H [untied] + U [parameters]: the weights a quantised checkpoint keeps at 16 bits,
    its token embedding table and LM head (one table when tied) and the modules its config lists as
    unconverted (unconverted_params: gpt-oss's attention and routers in its own mxfp4; 0 otherwise).
    AutoAWQ and GPTQ quantise only the decoder layers' linear projections, ModelOpt FP8/NVFP4
    exports exclude lm_head (exclude_modules) and never touch the embedding, DeepSeek-V3/R1's fp8
    release keeps embed and head in bf16, gpt-oss lists embed_tokens and lm_head in
    modules_to_not_convert. Llama-3.1-8B (V 128,256, d 4,096): 2 x 525,336,576 = 1,050,673,152;
    gpt-oss-120b in mxfp4 (V 201,088, d 2,880): 2 x 579,133,440 + 969,078,528 = 2,127,345,408."""
    head = pl.when(c.tied_embeddings).then(0.0).otherwise(c.lm_head_params)
    return c.embedding_params + head + c.unconverted_params


def model_weight_bytes() -> pl.Expr:
    """P x b_w + P_u x (b_u - b_w) [bytes]: every weight of one replica, those a quantised checkpoint
    keeps at 16 bits (unquantized_params) at b_u = 2 bytes, the rest at b_w (= P x b_w for 16-bit
    formats and GGUF files, whose b_u is b_w: they quantise the embedding and output tensors too).
    b_w includes quantisation scales (int4 g128 = 4.125 bits = 0.515625 bytes), so no integer
    division can turn half a byte into zero. Llama-3.1-8B int4: 6,979,588,096 x 0.515625 +
    1,050,673,152 x 2 = 3,598,850,112 + 2,101,346,304 = 5.70e9 bytes, not 8.03e9 x 0.515625 = 4.14e9."""
    return weights_at_format(c.params_total, unquantized_params())


def weights_at_format(params: pl.Expr, unquantized: pl.Expr) -> pl.Expr:
    """P x b_w + P_u x (b_u - b_w) [bytes]: `params` weights in the row's format, `unquantized` of them
    kept at b_u (model_weight_bytes; a draft model's, speculative.draft_weight_bytes)."""
    return params * c.bytes_per_weight + unquantized * (c.unquantized_bytes_per_weight - c.bytes_per_weight)


def weight_bytes() -> pl.Expr:
    """Weights held by one GPU. Tensor parallel splits each layer over tp, pipeline parallel the
    layers over pp; with attention data parallelism the attention and dense layers are copied on
    each of the dp_attention groups while the routed experts are spread over all tp x dp_attention
    GPUs of a stage (however ep divides them):
    (P x b_w - routed) / (tp x pp) + routed x placement / (tp x dp_attention x pp) (= P x b_w / (tp x pp)
    at dp 1), placement = the busiest rank's extra experts when ep does not divide them (parallel.py).
    A speculative draft (estimate/speculative.py) is split as the model is: its weights x this GPU's
    share of the model's. DeepSeek-R1 fp8 on 8 GPUs, tp 1, dp_attention 8, ep 8: see
    tests/test_moe_layouts.py."""
    dense = c.model_weight_bytes - c.routed_expert_bytes
    own = dense / (c.tp * c.pp) + c.routed_expert_bytes * c.expert_placement / (c.tp * c.dp_attention * c.pp)
    return own * (1 + c.draft_weight_bytes / c.model_weight_bytes)


def kv_bytes_per_token() -> pl.Expr:
    """KV bytes one token adds over all layers: b_kv x 2 x L x h_kv x d_h (GQA: h_kv, not h_q);
    MLA caches b_kv x L x (kv_lora_rank + qk_rope_head_dim). The element count comes from the
    architecture (catalog/architecture.py)."""
    return c.kv_elements_per_token * c.kv_bytes_per_element


def kv_full_bytes_per_token() -> pl.Expr:
    """The part of kv_bytes_per_token in full-attention layers (every token stays cached)."""
    return (c.kv_elements_per_token - c.kv_window_elements_per_token) * c.kv_bytes_per_element


def kv_window_bytes_per_token() -> pl.Expr:
    """The part of kv_bytes_per_token in sliding-window layers (at most W tokens stay cached)."""
    return c.kv_window_elements_per_token * c.kv_bytes_per_element


def kv_split(heads: pl.Expr | None = None) -> pl.Expr:
    """How many GPUs share one sequence's KV cache: pp x min(tp, h_kv) (`heads`, by default the
    row's kv_heads; a draft model's its own). A KV head is never split, so with tp > h_kv heads are
    replicated (MLA's single latent is replicated on every tp rank). In Gemma 4 this is its window
    layers'; its full layers have full_kv_split."""
    return c.pp * pl.min_horizontal(c.tp, c.kv_heads if heads is None else heads)


def full_kv_split() -> pl.Expr:
    """kv_split of the full-attention layers: pp x min(tp, their h_kv) (Gemma 4's 2 global KV heads
    against its window layers' 8; the same as kv_split in every other model)."""
    return kv_split(c.full_kv_heads)


def state_split() -> pl.Expr:
    """How many GPUs share one sequence's recurrent state (linear-attention / Mamba layers): pp x tp.
    The state is per head and tp splits the heads (Qwen3.5-397B's 64 DeltaNet value heads, Nemotron-H's
    128 Mamba heads; engines refuse a tp that does not divide them), so unlike a KV head it is never
    replicated."""
    return c.pp * c.tp


def kv_read_replicas(heads: pl.Expr | None = None) -> pl.Expr:
    """Copies of each KV head that the tp ranks read per step: tp / min(tp, h_kv) (1 unless
    replicated; `heads` as in kv_split)."""
    return c.tp / pl.min_horizontal(c.tp, c.kv_heads if heads is None else heads)


def full_kv_read_replicas() -> pl.Expr:
    """kv_read_replicas of the full-attention layers: tp / min(tp, their h_kv)."""
    return kv_read_replicas(c.full_kv_heads)


def activation_bytes_per_token() -> pl.Expr:
    """Live activations per prefill token on one GPU, with FlashAttention (no S x S scores): the
    residual stream and its normed copy (2d), q/k/v ((h_q + 2 h_kv) d_h / tp) and the MLP's
    gate and up projections (2 x active intermediate width / tp), at the activation dtype."""
    width = (
        2 * c.hidden_size
        + (c.attention_heads + 2 * c.kv_heads) * c.attention_head_dim / c.tp
        + 2 * c.mlp_active_width / c.tp
    )
    return width * c.activation_bytes_per_element


def logits_bytes_per_sequence() -> pl.Expr:
    """fp32 logits of one sequence's next token, vocabulary split over tp: V x 4 / tp."""
    return c.vocab_size * 4.0 / c.tp


def overhead_bytes() -> pl.Expr:
    """Runtime context and workspaces (profile), plus communication buffers when the replica spans
    more than one GPU."""
    return c.runtime_overhead_bytes + pl.when(c.tp * c.pp > 1).then(c.tp_buffer_bytes).otherwise(0.0)


def usable_memory_bytes() -> pl.Expr:
    """GPU memory the engine may use: capacity x (1 - reserve fraction)."""
    return c.gpu_memory_bytes * (1 - c.memory_reserve_fraction)


def free_bytes() -> pl.Expr:
    """Usable memory left for KV cache and activations: usable - weights - overhead."""
    return c.usable_memory_bytes - c.weight_bytes - c.overhead_bytes


# -- per row ----------------------------------------------------------------------------------


def kv_sequence_bytes(context: pl.Expr) -> pl.Expr:
    """Cache bytes of one sequence at `context` tokens, all layers, one copy: full-attention layers
    hold every token, sliding-window (or chunked) layers at most W (min ignores W = null), and
    linear-attention / Mamba layers a fixed state whatever the context (Qwen3.5, Nemotron-H)."""
    return (
        c.kv_full_bytes_per_token * context
        + c.kv_window_bytes_per_token * pl.min_horizontal(context, c.sliding_window_tokens)
        + c.state_bytes_per_sequence
    )


def attention_kv_gpu_bytes(context: pl.Expr) -> pl.Expr:
    """One GPU's share of one sequence's attention KV at `context` tokens, each kind of layer split
    over its own KV heads: full x context / full_kv_split + window x min(context, W) / kv_split."""
    window = c.kv_window_bytes_per_token * pl.min_horizontal(context, c.sliding_window_tokens)
    return c.kv_full_bytes_per_token * context / c.full_kv_split + window / c.kv_split


def target_kv_gpu_bytes(context: pl.Expr) -> pl.Expr:
    """One GPU's share of one sequence's cache of the target model at `context` tokens: its attention
    KV (attention_kv_gpu_bytes) + state / state_split. Qwen3.5-397B at tp 8: its 2 KV heads are split
    2 ways (each on 4 GPUs), its DeltaNet state 8 ways. What a disaggregated prompt moves, shard by
    shard (estimate/disaggregated.py)."""
    return attention_kv_gpu_bytes(context) + c.state_bytes_per_sequence / state_split()


def draft_kv_gpu_bytes(context: pl.Expr) -> pl.Expr:
    """One GPU's share of one sequence's speculative-draft cache at `context` tokens (bytes; 0
    without speculation; estimate/speculative.py). A draft model caches its own KV elements per token
    at the row's KV format, r x kv_bytes_per_token (r = draft_kv_ratio), split as the target's is over
    its own KV heads: draft elements x b_kv x context / (pp x min(tp, h_kv,draft)) (a KV head is never
    split, kv_split). mtp, eagle: one layer of the target's shape, split as the target's layers are:
    r x attention_kv_gpu_bytes(context), r = 1 / L. Llama-3.1-8B drafting for Llama-3.1-70B at tp 4,
    16-bit: 131,072 / 4 = 32,768 bytes per token on each GPU next to the target's 327,680 / 4 =
    81,920, 0.40 of it (not f = 0.114, the parameter ratio)."""
    own = c.draft_kv_elements_per_token * c.kv_bytes_per_element * context / kv_split(c.draft_kv_heads)
    layer = c.draft_kv_ratio * attention_kv_gpu_bytes(context)
    return pl.when(c.draft_tokens == 0).then(0.0).otherwise(pl.coalesce(own, layer))


def kv_gpu_bytes(context: pl.Expr) -> pl.Expr:
    """One GPU's share of one sequence's cache at `context` tokens: the target's
    (target_kv_gpu_bytes) + the speculative draft's (draft_kv_gpu_bytes; 0 without one)."""
    return target_kv_gpu_bytes(context) + draft_kv_gpu_bytes(context)


def kv_context_bytes_per_sequence() -> pl.Expr:
    """KV cache of one sequence at context_tokens on one GPU (kv_gpu_bytes), less a shared prefix held
    once (shared_prefix_bytes)."""
    return kv_gpu_bytes(c.context_tokens) - shared_prefix_bytes()


def shared_prefix_bytes() -> pl.Expr:
    """One GPU's copy of a prefix common to every request (prefix_shared), t = input_tokens -
    prefill_new_tokens tokens: attention_kv_gpu_bytes(t) + draft_kv_gpu_bytes(t) (no state: that is
    per sequence); 0 otherwise."""
    t = prefix.shared_prefix_tokens()
    return attention_kv_gpu_bytes(t) + draft_kv_gpu_bytes(t)


def kv_cache_bytes(batch: pl.Expr) -> pl.Expr:
    """KV cache on one GPU: batch x one GPU's share of a sequence at context_tokens (kv_gpu_bytes), where
    batch is the sequences of one attention group (each group keeps its own sequences' cache), plus
    one copy of a shared prefix."""
    return batch * c.kv_context_bytes_per_sequence + shared_prefix_bytes()


def activation_bytes(batch: pl.Expr) -> pl.Expr:
    """Peak workspace on one GPU: one prefill chunk (the batch's prompts' new tokens, capped by the
    engine's chunk budget) plus the batch's logits."""
    chunk = pl.min_horizontal(batch * c.prefill_new_tokens, c.prefill_chunk_tokens)
    return chunk * c.activation_bytes_per_token + batch * c.logits_bytes_per_sequence


def max_batch() -> pl.Expr:
    """Largest batch B whose memory fits: mem(B) = W + O + P + min(B n, C) a + B s <= U, where
    s = per-sequence KV + logits, a = activation bytes per prefill token, n the prompt tokens
    computed, C the chunk budget and P a shared prefix's one copy.

    mem(B) rises with B and bends where B n reaches C, so: the answer past the bend,
    B2 = floor((U - W - O - P - C a) / s), holds if B2 n >= C; otherwise it lies before the bend,
    B1 = floor((U - W - O - P) / (n a + s)). Never negative (0 = not even one sequence fits).
    B is per attention group: the replica holds dp_attention times as many."""
    per_seq = c.kv_context_bytes_per_sequence + c.logits_bytes_per_sequence
    free = c.free_bytes - shared_prefix_bytes()
    past_bend = ((free - c.prefill_chunk_tokens * c.activation_bytes_per_token) / per_seq).floor()
    before_bend = (free / (c.prefill_new_tokens * c.activation_bytes_per_token + per_seq)).floor()
    b = pl.when(past_bend * c.prefill_new_tokens >= c.prefill_chunk_tokens).then(past_bend).otherwise(before_bend)
    return (pl.max_horizontal(b, 0.0) * c.dp_attention).cast(pl.Int64)


def memory_per_gpu_bytes() -> pl.Expr:
    """weights + KV cache + activations + overhead on one GPU."""
    return c.weight_bytes + c.kv_cache_bytes + c.activation_bytes + c.overhead_bytes
