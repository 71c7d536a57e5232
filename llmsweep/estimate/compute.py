"""Time: prefill (compute-bound), decode (memory-bound), and the roofline (DESIGN.md §4).

FLOPs are counted as 2 per multiply-accumulate. Times divide by tp only: pipeline stages of a
replica run one after another for a given token, so pp adds memory, not speed.
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c, text
from llmsweep.estimate import speculative
from llmsweep.estimate.experts import weight_bytes_read
from llmsweep.estimate.memory import kv_sequence_bytes
from llmsweep.estimate.parallel import comm_s

# -- per layout -------------------------------------------------------------------------------


def flops_per_token() -> pl.Expr:
    """2 x (P_a - V d [untied]) [FLOP]: one multiply-accumulate (2 FLOPs, not 2 x bytes) per active
    weight of a decoded token, whose logits the LM head computes, but not per weight of the token
    embedding table: that is a lookup of the token's row, no matmul. With tied embeddings the
    table is the LM head and its V d weights do multiply (P counts them once). Llama-3.1-8B
    (V 128,256, d 4,096, untied): 2 x (8,030,261,248 - 525,336,576) = 1.5010e10 FLOPs per token,
    not 2 P_a = 1.6061e10."""
    table = pl.when(c.tied_embeddings).then(0.0).otherwise(c.embedding_params)
    return 2 * (c.params_active - table)


def prefill_flops_per_token() -> pl.Expr:
    """2 x (P_a - V d - H [untied]) [FLOP]: the matmuls of one prompt token, without the embedding
    lookup and without the LM head: vLLM, SGLang and TensorRT-LLM compute logits only at each
    prompt's last position (vLLM's LogitsProcessor gathers the last token's hidden state of each
    prompt, SGLang's LogitsProcessor prunes to the last index unless input logprobs are asked for,
    TensorRT-LLM's gather_context_logits defaults to off), added once per prompt (prefill_flops).
    Llama-3.1-8B: 2 x (8,030,261,248 - 1,050,673,152) = 1.3959e10 FLOPs per prompt token."""
    head = pl.when(c.tied_embeddings).then(0.0).otherwise(c.lm_head_params)
    return 2 * (c.params_active - c.embedding_params - head)


def unquantized_flop_cost() -> pl.Expr:
    """F_w x f_w / F_16: what one FLOP of a weight kept at 16 bits (the LM head, a checkpoint's
    unconverted modules) costs in FLOPs at the weights' rate (seconds_per_flop): those matmuls run
    in the 16-bit activation dtype (F_16 = attention_peak_flops_per_s). 1 for 16-bit formats and
    weight-only ones (int4, GGUF, fp4 without FP4 units: all compute in 16-bit); in `ideal` fp8 on
    an H100 SXM 1,979 / 989 = 2.0, NVFP4 on a B200 9,000 / 2,250 = 4 (x their dtype_efficiency)."""
    return flop_cost_at(c.attention_peak_flops_per_s, pl.lit("bf16"))


def flop_cost_at(rate: pl.Expr, dtype: pl.Expr) -> pl.Expr:
    """(F x f_weights) / (rate x f_dtype): one FLOP run at `rate` in `dtype`, in FLOPs at the
    weights' rate (seconds_per_flop); 1 where both are the weights' own."""
    return c.peak_flops_per_s * dtype_efficiency(c.compute_dtype) / (rate * dtype_efficiency(dtype))


def attention_flops_per_key() -> pl.Expr:
    """4 x L_attn x h_q x d_h: q.k and attention-weights.v for one query against one cached key,
    all attention layers (2 FLOPs each for d_h multiply-adds, twice). L_attn = L except in hybrid
    models, whose linear-attention / Mamba layers do work per token that does not grow with the
    context (counted in 2 x P_a)."""
    return 4 * c.attention_layers * c.attention_heads * c.attention_head_dim


def decode_attention_flops_per_key() -> pl.Expr:
    """4 x L_attn x h_q x d_dec: a decode step's attention FLOPs for one query against one cached
    key. d_dec = d_h for GQA; MLA (DeepSeek, Kimi, GLM-5) decodes absorbed in its latent: q.k over
    kv_lora_rank + rope (576) and attention.v over kv_lora_rank (512) per head, d_dec = 1,088 / 2 =
    544, 3.4 times the 160 of its prefill (FlashMLA; DeepSeek-V2 report §2.1.2). DeepSeek-V3: 4 x 61
    x 128 x 544 = 16,990,208 FLOPs per cached key, against 4,997,120 prefilled."""
    return 4 * c.attention_layers * c.attention_heads * c.decode_attention_head_dim


def dtype_efficiency(dtype: pl.Expr) -> pl.Expr:
    """f: the share of compute_efficiency a matmul reaches at the rate of `dtype`: the profile's
    fp8_gemm_efficiency at the 8-bit floating-point rate, fp4_gemm_efficiency at the 4-bit one, 1 at
    16-bit and integer rates (and for all of them in `ideal`)."""
    return (
        pl.when(dtype == "fp8")
        .then(c.fp8_gemm_efficiency)
        .when(dtype == "fp4")
        .then(c.fp4_gemm_efficiency)
        .otherwise(1.0)
    )


def seconds_per_flop() -> pl.Expr:
    """1 / (tp x F x eta_c x s x f): compute time per FLOP of the weights' matmuls, split over the tp
    GPUs of a stage, F the peak at the weights' compute dtype, s the GPU family's compute_scale (its
    matmul ceiling against the fitted families'; 1 in `ideal`) and f its dtype_efficiency. Example:
    Qwen3-32B in fp8 on one H100 SXM (1,979 TFLOP/s) at eta_c 0.6, s 1 and f 0.75 computes
    1,979e12 x 0.6 x 0.75 = 890.55e12 FLOP/s, 1.1229e-15 s a FLOP; in bf16 (989 TFLOP/s, f 1),
    593.4e12 FLOP/s, 1.6852e-15 s."""
    rate = c.peak_flops_per_s * c.compute_efficiency * c.compute_scale * dtype_efficiency(c.compute_dtype)
    return 1 / (c.tp * rate)


def attention_flop_cost() -> pl.Expr:
    """What one attention FLOP costs in FLOPs at the matmuls' rate, F / F_attn in `ideal`. The weight GEMMs
    run at the weights' compute dtype (fp8, fp4); attention multiplies activations by the KV
    cache, in the 16-bit activation dtype (FlashAttention-2/3, FlashInfer, FlashMLA in bf16; an int8
    or GGUF cache is dequantised to it) or, over an fp8 or fp4 cache (fp8_attention), at the fp8
    rate (FlashMLA's and TensorRT-LLM's fp8 kernels, FlashAttention-3 fp8 quantise the queries).
    On a B300 an nvfp4 model with a 16-bit cache attends at 2,250 not 14,000 TFLOP/s: 14,000 /
    2,250 = 6.2; with an fp8 cache 14,000 / 4,500 = 3.1; fp8 weights over an fp8 cache 1; bf16
    weights over an fp8 cache 2,250 / 4,500 = 0.5. Each rate counts at the share of it its kernels
    reach (dtype_efficiency): (F x f_weights) / (F_attn x f_attn), the ratios above in `ideal`."""
    rate = pl.when(c.fp8_attention).then(c.fp8_peak_flops_per_s).otherwise(c.attention_peak_flops_per_s)
    # the fp8 rate where the GPU has one of its own; a 16-bit fallback (A100) keeps the 16-bit share
    attention_dtype = pl.when(c.fp8_attention & c.fp8_rate).then(pl.lit("fp8")).otherwise(pl.lit("bf16"))
    return flop_cost_at(rate, attention_dtype)


def seconds_per_byte() -> pl.Expr:
    """1 / (tp x BW x eta_bw): memory time per byte for traffic split over the tp GPUs of a stage."""
    return 1 / (c.tp * c.memory_bandwidth_bytes_per_s * c.bandwidth_efficiency)


def fixed_step_s() -> pl.Expr:
    """Fixed cost of one forward pass: per step + L x per layer + L_moe x per MoE layer (profile).
    DeepSeek-R1 in `literature`: 0.5 ms + 61 x 10 us + 58 x 10 us = 1.69 ms."""
    return c.step_overhead_s + c.layers * c.layer_overhead_s + c.moe_layers * c.moe_layer_overhead_s


def routing_s_per_token() -> pl.Expr:
    """n_r x a x d_moe x L_moe x k / (ep BW eta_bw) (x the routing skew when ep > 1): memory time one
    token passing through the MoE layers adds on the busiest GPU, in the kernels around the expert
    GEMMs. Each of its k routed copies is written in the experts' order (permutation, the activation
    quantised for fp8/fp4 GEMMs), gated (SiLU x up over the expert's width) and read back into a
    weighted sum (combine): n_r passes over a d_moe-wide 16-bit vector per copy
    (routed_activation_passes, profile; 0 in `ideal` and for dense models; d_moe = moe_width: d, or
    the latent Nemotron-3 routes). The copies spread over the ep ranks; with tensor-split experts
    (ep 1) every rank runs these passes at full width for every token. Per pass they run between the
    GEMMs, so their time adds to the roofline's max(compute, memory), like communication, and scales
    with bandwidth, not the FLOP peak: a larger share of a prefill on a GPU with a fast fp8/fp4 peak.
    Count per copy: permute read + write (2), quantise (1.5: a 16-bit read, an 8-bit write), the
    up/gate GEMM's output 2 I_e, SiLU x up reading it and writing I_e (1.4 for DeepSeek's I_e / d =
    0.29), the down GEMM's output (1), combine's read (1): about 7, not fitted (calibrate/fitting.py
    SHARED_PARAMS says why). DeepSeek-R1 (d 7,168, 58 MoE layers, k 8) at n_r = 7 on ep 8:
    7 x 2 x 7,168 x 58 x 8 / 8 = 5,820,416 bytes per token and GPU, 1.04 us at 8 TB/s x 0.7, 8.5 ms
    for an 8k prompt."""
    passes = c.routed_activation_passes * c.moe_layers * c.experts_per_token
    skew = pl.when(c.ep > 1).then(c.expert_imbalance).otherwise(1.0)
    per_gpu = passes * c.activation_bytes_per_element * c.moe_width * skew / c.ep
    return per_gpu / (c.memory_bandwidth_bytes_per_s * c.bandwidth_efficiency)


def ridge_point() -> pl.Expr:
    """F / BW [FLOP/byte]: below it a kernel is memory-bound, above it compute-bound."""
    return c.peak_flops_per_s / c.memory_bandwidth_bytes_per_s


# -- per row ----------------------------------------------------------------------------------


def _windowed_span(tokens: pl.Expr, w: pl.Expr) -> pl.Expr:
    """Sum over positions i = 1..S of min(i, W): S^2 / 2, or S W - W^2 / 2 for W < S (null W: S^2 / 2)."""
    full = tokens * tokens / 2
    return pl.when(tokens > w).then(tokens * w - w * w / 2).otherwise(full)


def _chunked_span(tokens: pl.Expr, w: pl.Expr) -> pl.Expr:
    """Sum over positions i = 1..S of the keys of i's own chunk of W, ((i - 1) mod W) + 1:
    floor(S / W) W^2 / 2 + r^2 / 2, r = S - floor(S / W) W (= S^2 / 2 for S <= W)."""
    chunks = (tokens / w).floor()
    r = tokens - chunks * w
    return chunks * w * w / 2 + r * r / 2


def window_span(tokens: pl.Expr) -> pl.Expr:
    """attention_span of a window layer: _chunked_span for chunked attention (Llama 4), else the
    sliding window's _windowed_span."""
    w = c.sliding_window_tokens
    return pl.when(c.chunked_window).then(_chunked_span(tokens, w)).otherwise(_windowed_span(tokens, w))


def attention_span(tokens: pl.Expr) -> pl.Expr:
    """Sum over positions i = 1..S of the keys attended to, min(i, W): S^2 / 2 for full causal
    attention; S W - W^2 / 2 for a window W < S (layers mixed by window_fraction; in W-token chunks
    for chunked attention, window_span). DSA attends to the top-k cached keys of each query: a
    window of k for the FLOPs (the indexer scores all)."""
    full = _windowed_span(tokens, c.attention_topk)
    return full + c.window_fraction * (window_span(tokens) - full)


def sparse_span(tokens: pl.Expr) -> pl.Expr:
    """The part of attention_span that DSA's positions beyond the top-k attend to: (S - k) x k for
    S > k, else 0 (0 without DSA). Those queries run in MLA's MQA (latent) mode, at the decode dims
    (the DeepSeek-V3.2 report: a masked MHA mode only for short prefills; SGLang's flashmla_sparse)."""
    k = c.attention_topk
    return pl.when(tokens > k).then((tokens - k) * k).otherwise(0.0)  # k null (no DSA): the predicate is null, so 0


def decode_window_keys() -> pl.Expr:
    """Keys a decode query of a window layer attends to, over the generation: min(c, W) at the mean
    context c (mean_decode_context); with chunked attention the mean over the generated positions of
    their place in their chunk, (window_span(S_in + S_out) - window_span(S_in)) / S_out (about W / 2
    over a long generation, not W). Scout (W 8,192), 8,192 in and 8,192 out: the second chunk's
    positions, 8,192^2 / 2 / 8,192 = 4,096 keys."""
    sliding = pl.min_horizontal(mean_decode_context(), c.sliding_window_tokens)
    end = c.input_tokens + c.output_tokens
    chunked = (window_span(end) - window_span(c.input_tokens)) / c.output_tokens
    return pl.when(c.chunked_window & (c.output_tokens > 0)).then(chunked).otherwise(sliding)


def attended_keys() -> pl.Expr:
    """Keys one decode query attends to at the mean context c: c, decode_window_keys in window layers
    (mixed by window_fraction), at most the top-k with DSA."""
    full = pl.min_horizontal(mean_decode_context(), c.attention_topk)
    return full + c.window_fraction * (decode_window_keys() - full)


# prefill: one prompt of S_in tokens, of which n = prefill_new_tokens are computed (estimate/prefix.py)
def prompt_logits() -> pl.Expr:
    """Positions of a prompt whose logits prefill computes: 1 (the last, which gives the first output
    token) when it computes any token, else 0."""
    return pl.when(c.prefill_new_tokens > 0).then(1.0).otherwise(0.0)


def prefill_linear_flops() -> pl.Expr:
    """2 (P_a - V d - H [untied]) x n + 2 H x 1 [FLOP]: the n new tokens' matmuls without the LM
    head (prefill_flops_per_token), and the LM head at the last position only (prompt_logits)."""
    return c.prefill_flops_per_token * c.prefill_new_tokens + 2 * c.lm_head_params * prompt_logits()


def prefill_flops() -> pl.Expr:
    """2 x (P_a - V d - H) x n + 2 x H + causal attention of the n new tokens against all before them,
    4 x L x h_q x d_h x (span(S_in) - span(S_in - n)) (= 2 L S_in^2 h_q d_h without windows or cache),
    DSA's positions beyond the top-k at the decode dims instead (sparse_span), + DSA's indexer over
    every earlier token. The linear part (prefill_linear_flops) leaves out the embedding lookup and
    runs the LM head (H = V d) at the last position only. Example: Llama-3.1-8B, 2,048 tokens, no
    cache: 2 x (8.03e9 - 1.0507e9) x 2048 + 2 x 5.253e8 + 2 x 32 x 2048^2 x 32 x 128 = 2.859e13 +
    1.05e9 + 1.10e12 = 2.969e13 FLOPs (2 P_a S_in would give 3.40e13)."""
    s, n = c.input_tokens.cast(pl.Float64), c.prefill_new_tokens
    cached = s - n
    indexer = c.indexer_flops_per_key * (s * s - cached * cached) / 2  # DSA's indexer scores every earlier token
    attention = c.attention_flops_per_key * (attention_span(s) - attention_span(cached))
    sparse = (c.decode_attention_flops_per_key - c.attention_flops_per_key) * (sparse_span(s) - sparse_span(cached))
    return prefill_linear_flops() + attention + sparse + indexer


def prefill_compute_s() -> pl.Expr:
    """Prefill FLOPs at their rates: (linear + 16-bit extra + (attention + indexer) x
    attention_flop_cost) x seconds_per_flop, the matmuls at the weights' dtype, attention at its
    own, 16-bit or fp8, each at its dtype's share of the peak. The weights kept at 16 bits compute
    at the 16-bit rate: their FLOPs, 2 U n for a checkpoint's unconverted modules (U =
    unconverted_params: gpt-oss's attention and routers) and 2 H at the last position, cost
    unquantized_flop_cost each, so the extra is (2 U n + 2 H) x (unquantized_flop_cost - 1) (0 for
    16-bit formats)."""
    linear = prefill_linear_flops()
    last = prompt_logits()
    sixteen = (2 * c.unconverted_params * c.prefill_new_tokens + 2 * c.lm_head_params * last) * (
        c.unquantized_flop_cost - 1
    )
    attention = (c.prefill_flops - linear) * c.attention_flop_cost
    return (linear + sixteen + attention) * c.seconds_per_flop


def prefill_bytes() -> pl.Expr:
    """Weights read once (the experts the new tokens touch) + the prompt's KV (the cached prefix
    read, the new tokens' written)."""
    return weight_bytes_read(c.prefill_new_tokens) + kv_sequence_bytes(c.input_tokens)


def prefill_s() -> pl.Expr:
    """max(compute (prefill_compute_s), bytes / (tp BW eta_bw)) + communication (all-reduces, all-to-alls, pp
    sends: estimate/parallel.py) + fixed costs; 0 without a prompt.
    Example (ideal): 3.40e13 FLOPs / 989e12 FLOP/s = 34.4 ms (Llama-3.1-8B bf16, H100 SXM, 2,048 tokens)."""
    t = (
        pl.max_horizontal(c.prefill_compute_s, prefill_bytes() * c.seconds_per_byte)
        + comm_s(c.prefill_new_tokens)
        + c.prefill_new_tokens * c.routing_s_per_token
        + c.fixed_step_s
    )
    return pl.when(c.input_tokens > 0).then(t).otherwise(0.0)


def mixed_prefill_s(decode_tokens: pl.Expr) -> pl.Expr:
    """p_mix: what a prompt adds to an engine iteration it shares with `decode_tokens` decoding
    tokens (chunked prefill with decodes riding along; prompts packed up to the token budget
    likewise): its FLOPs at their rates (prefill_compute_s) or, if longer, its memory traffic, and its
    tokens' share of communication and routing. The memory traffic is its KV (written, and a cached
    prefix read) and the routed experts its tokens touch that the decoding tokens do not (MoE); the
    rest of the weights, the per-pass fixed costs and the collectives' latencies are the iteration's,
    paid once however many prompts and decodes share it (Sarathi-Serve, Agrawal et al., OSDI 2024).
    p_mix <= p = prefill_s, the prompt alone. Example (ideal): a 128-token Llama-3.1-8B prompt on an
    H100 alone reads its 15.01 GB of weights (all but the embedding table), 4.5 ms at 3.35 TB/s; in
    an iteration others decode in it adds its 2 x (8.03e9 - 1.05e9) x 128 = 1.79e12 FLOPs (+ the LM
    head once, + attention), 1.8 ms at 989 TFLOP/s. (The difference of weight_bytes_read also counts
    the prompt's embedding rows, n x d x b_u: 1 MB here.)"""
    n = c.prefill_new_tokens
    experts = weight_bytes_read(decode_tokens + n) - weight_bytes_read(decode_tokens)
    memory = (kv_sequence_bytes(c.input_tokens) + experts) * c.seconds_per_byte
    t = pl.max_horizontal(c.prefill_compute_s, memory) + n * (c.comm_s_per_token + c.routing_s_per_token)
    return pl.when(c.input_tokens > 0).then(t).otherwise(0.0)


# decode: one step of the whole batch at the mean context
def mean_decode_context() -> pl.Expr:
    """Mean context over the generation: S_in + S_out / 2 (TPOT averages over it)."""
    return c.input_tokens + c.output_tokens / 2


def decode_flops_per_sequence() -> pl.Expr:
    """One sequence's share of a decode step: 2 x (P_a - V d [untied]) (flops_per_token: the LM head
    computes, the embedding is looked up) + attention over its cache
    4 x L x h_q x d_dec x keys (decode_attention_flops_per_key; windowed layers read min(c, W) keys,
    DSA the top-k) + DSA's indexer over all c cached keys."""
    ctx = mean_decode_context()
    attention = c.decode_attention_flops_per_key * attended_keys()
    return c.flops_per_token + attention + c.indexer_flops_per_key * ctx


def decode_compute_s_per_sequence() -> pl.Expr:
    """One sequence's share of a step's compute time: (linear + 2 (U + H) x (unquantized_flop_cost -
    1) + attention x attention_flop_cost) x seconds_per_flop, attention at its own rate, 16-bit or
    fp8, each at its dtype's share; the LM head H and a checkpoint's unconverted modules U at the
    16-bit rate (prefill_compute_s)."""
    attention = c.decode_flops_per_sequence - c.flops_per_token
    sixteen = 2 * (c.unconverted_params + c.lm_head_params) * (c.unquantized_flop_cost - 1)
    return (c.flops_per_token + sixteen + attention * c.attention_flop_cost) * c.seconds_per_flop


def decode_kv_bytes_per_sequence() -> pl.Expr:
    """Cache bytes one sequence's decode step moves at the mean context: its attention KV, counted on
    every tp rank that holds a replica of it, and its recurrent state (linear-attention / Mamba
    layers), read and written back, 2 x state, split over the tp ranks (memory.state_split). With DSA
    the step reads the latents of the top-k keys only, and the indexer keys of every cached token:
    KV(min(c, k)) + indexer bytes x (c - min(c, k)); window layers read the keys they attend to
    (decode_window_keys)."""
    ctx = mean_decode_context()
    read = pl.min_horizontal(ctx, c.attention_topk)
    indexer = c.indexer_elements_per_token * c.kv_bytes_per_element * (ctx - read)
    full = c.kv_full_bytes_per_token * read * c.full_kv_read_replicas
    window = (c.kv_window_bytes_per_token * decode_window_keys() + indexer) * c.kv_read_replicas
    return full + window + 2 * c.state_bytes_per_sequence


def decode_flops_per_step() -> pl.Expr:
    """B x (2 x (P_a - V d [untied]) + 4 x L x c x h_q x d_h) x q': the whole batch's step (with attention data
    parallelism, B = the busiest group's ceil(batch / dp_attention) sequences), q' = the speculative
    token passes per sequence (1 without it; estimate/speculative.py)."""
    return c.group_batch * c.decode_flops_per_sequence * c.spec_token_factor


def decode_bytes_per_step() -> pl.Expr:
    """Weights read once per step for the whole batch (MoE: the experts the batch touches; with
    speculation the verified tokens' and the draft's) + every sequence's KV cache (per attention
    group when dp_attention > 1)."""
    kv = c.group_batch * c.decode_kv_bytes_per_sequence * c.spec_kv_factor
    return speculative.weights_read(c.worker_batch) + kv


def decode_terms() -> dict[str, pl.Expr]:
    """The five decode-step terms [s]; the step = max(compute, memory) + communication + MoE routing
    traffic + overhead (decode_step_s; under load the step users see is stretched by prefill:
    estimate/load.py)."""
    return {
        "decode_compute_s": c.group_batch * c.spec_token_factor * c.decode_compute_s_per_sequence,
        "decode_memory_s": c.decode_bytes_per_step * c.seconds_per_byte,
        "decode_comm_s": comm_s(c.group_batch * c.spec_token_factor),
        # every attention group's tokens pass the MoE layers, spread over the ep ranks
        "decode_routing_s": c.worker_batch * c.spec_token_factor * c.routing_s_per_token,
        "decode_overhead_s": c.fixed_step_s + c.spec_fixed_s,
    }


def decode_step_s() -> pl.Expr:
    """The bare decode step at batch = concurrency, no prefill: max(compute, memory) + communication
    + MoE routing traffic + overhead (decode_terms)."""
    roof = pl.max_horizontal(c.decode_compute_s, c.decode_memory_s)
    return roof + c.decode_comm_s + c.decode_routing_s + c.decode_overhead_s


def bound() -> pl.Expr:
    """The largest decode term names what limits the step (ties: memory, compute, communication)."""
    # the MoE routing traffic is memory traffic too
    memory = c.decode_memory_s + c.decode_routing_s
    roof = pl.when(memory >= c.decode_compute_s).then(text("memory")).otherwise(text("compute"))
    rest = pl.when(c.decode_comm_s >= c.decode_overhead_s).then(text("communication")).otherwise(text("overhead"))
    return (
        pl.when(
            pl.max_horizontal(memory, c.decode_compute_s) >= pl.max_horizontal(c.decode_comm_s, c.decode_overhead_s)
        )
        .then(roof)
        .otherwise(rest)
    )
