"""Every column of llmsweep's frames, declared once: name, dtype, unit, label, description.

The CSV column order, report labels, the README's column dictionary and the tests all read this
table. Values are SI base units (bytes, seconds, FLOP, FLOP/s); the unit is in the name.
Expressions refer to columns through `c`, which refuses undeclared names:

    from llmsweep.columns import c
    c.params_total * c.bytes_per_weight
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

Kind = Literal["identity", "fact", "derived", "estimate", "plan"]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    dtype: type[pl.DataType] | pl.DataType
    unit: str
    label: str
    description: str
    kind: Kind
    exported: bool = True  # written to estimates.csv / .parquet / .xlsx


# Text columns are categorical: a few distinct values repeated over millions of rows.
F, I, S, B = pl.Float64, pl.Int64, pl.Categorical, pl.Boolean  # noqa: E741 - short names keep the table readable


# Groups of the profile's uncertainty bands (calibrate/bands.py): the aggregated rows' per metric
# group, and the disaggregated deployments' own (their errors differ: docs/fidelity.md, serving modes).
METRIC_GROUPS = ("decode", "prefill", "throughput")
BAND_GROUPS = (*METRIC_GROUPS, *(f"disaggregated_{g}" for g in METRIC_GROUPS))
# The efficiencies a row ran with (the profile's, per engine and GPU family): exported with the plan
# and shown by the reports and `llmsweep estimate`.
EFFICIENCY_COLUMNS = (
    "bandwidth_efficiency",
    "compute_efficiency",
    "compute_scale",
    "fp8_gemm_efficiency",
    "fp4_gemm_efficiency",
)


def _band_description(group: str, end: str) -> str:
    rows = "" if group in METRIC_GROUPS else " of disaggregated rows"
    return f"Profile uncertainty factor{rows} ({group.removeprefix('disaggregated_')}, {end}): estimate x this."


def _cols(kind: Kind, *rows: tuple) -> list[Column]:
    return [Column(r[0], r[1], r[2], r[3], r[4], kind, *(r[5:])) for r in rows]


COLUMNS: tuple[Column, ...] = tuple(
    _cols(
        "identity",
        ("gpu", S, "", "GPU", "GPU catalog id (e.g. h100-sxm)."),
        (
            "engine",
            S,
            "",
            "Engine",
            "Serving engine whose efficiency profile applies (vllm, sglang, trtllm, llama.cpp, mlx, exllamav2, "
            "generic); the `auto` default is vllm on data-centre GPUs, llama.cpp on desktop GPUs and Macs.",
        ),
        ("model", S, "", "Model", "Model id: the Hugging Face id of its architecture."),
        (
            "precision",
            S,
            "",
            "Weights",
            "Weight format (e.g. bf16, fp8, int4, q4_k_m, 4.0bpw); `auto` and `fp4` resolved (fp4: nvfp4 on "
            "NVIDIA, mxfp4 on AMD; notes says so).",
        ),
        (
            "kv_precision",
            S,
            "",
            "KV cache",
            "KV-cache format asked for; `auto` = the engine's choice (kv_cache_format says which).",
        ),
        ("tp", I, "GPUs", "TP", "Tensor-parallel size: GPUs that split every layer."),
        ("pp", I, "GPUs", "PP", "Pipeline-parallel size: GPUs that each hold a slice of the layers."),
        (
            "ep",
            I,
            "GPUs",
            "EP",
            "Expert-parallel size (MoE): the routed experts of a stage are divided among ep groups of its "
            "tp x dp_attention GPUs, each expert tensor-split over the (tp x dp_attention) / ep GPUs of its group; "
            "1 = every expert split over all of them.",
        ),
        (
            "dp_attention",
            I,
            "GPUs",
            "Attention DP",
            "Attention data-parallel groups (MoE): copies of the attention and dense layers, each on tp GPUs and "
            "serving its own share of the batch, sharing the experts.",
        ),
        (
            "gpus",
            I,
            "GPUs",
            "GPUs",
            "GPUs in one model replica = tp x pp x dp_attention (disaggregated: every worker of both pools, "
            "prefill_workers x prefill_worker_gpus + decode_workers x worker_gpus).",
        ),
        (
            "batch",
            I,
            "sequences",
            "Concurrency",
            "Concurrency C: clients each keeping one request in flight (closed loop; for `max`: max_batch).",
        ),
        ("batch_is_max", B, "", "Batch = max", "True when the batch was asked for as `max`."),
        ("input_tokens", I, "tokens", "Input", "Prompt length S_in."),
        ("output_tokens", I, "tokens", "Output", "Generated tokens S_out."),
        ("context_tokens", I, "tokens", "Context", "S_in + S_out: the longest context a sequence reaches."),
        # Serving modes (estimate/disaggregated.py, estimate/speculative.py, estimate/prefix.py).
        (
            "mode",
            S,
            "",
            "Serving mode",
            "aggregated (prefill and decode on the same GPUs) or disaggregated (a prefill pool and a decode "
            "pool; tp, pp, ep and dp_attention are then the decode worker's layout).",
        ),
        ("prefill_workers", I, "workers", "Prefill workers", "x: prefill workers of a disaggregated replica."),
        ("decode_workers", I, "workers", "Decode workers", "y: decode workers of a disaggregated replica."),
        ("prefill_tp", I, "GPUs", "Prefill TP", "Tensor-parallel size of a prefill worker (disaggregated)."),
        ("prefill_pp", I, "GPUs", "Prefill PP", "Pipeline-parallel size of a prefill worker (disaggregated)."),
        ("prefill_ep", I, "GPUs", "Prefill EP", "Expert-parallel size of a prefill worker (disaggregated)."),
        (
            "prefill_dp_attention",
            I,
            "GPUs",
            "Prefill attention DP",
            "Attention data-parallel groups of a prefill worker (disaggregated).",
        ),
        (
            "speculative",
            S,
            "",
            "Speculative decoding",
            "none, mtp (the model's multi-token-prediction layer), eagle (an EAGLE draft head) or draft (a "
            "draft model).",
        ),
        ("draft_tokens", I, "tokens", "Draft tokens", "k: tokens drafted per sequence and step (0 = none)."),
        ("draft_model", S, "", "Draft model", "The draft model's id (speculative = draft)."),
        (
            "acceptance_rate",
            F,
            "fraction",
            "Acceptance",
            "alpha: per-token acceptance of a drafted token, as the sweep states it or the profile's default "
            "for the method (with per-position rates: the i.i.d. rate with the same tokens_per_step).",
        ),
        (
            "prefix_hit_rate",
            F,
            "fraction",
            "Prefix hit rate",
            "h: share of prompt tokens served from the prefix cache (the workload's).",
        ),
        (
            "prefix_shared",
            B,
            "",
            "Shared prefix",
            "True when the cached prefix is common to every request (one copy per replica), false when each "
            "request's own (e.g. earlier turns of its conversation).",
        ),
    )
    + _cols(
        "fact",
        ("gpu_name", S, "", "GPU name", "The GPU's full name."),
        ("gpu_family", S, "", "GPU family", "Architecture family (selects efficiency-profile overrides)."),
        ("gpu_memory_bytes", F, "bytes", "GPU memory", "Memory of one GPU (vendor 'GB' labels are GiB)."),
        ("memory_bandwidth_bytes_per_s", F, "bytes/s", "Bandwidth", "Peak memory bandwidth of one GPU."),
        (
            "compute_dtype",
            S,
            "",
            "Compute dtype",
            "Dtype the matmuls run in on this GPU (after any fallback).",
        ),
        (
            "peak_flops_per_s",
            F,
            "FLOP/s",
            "Peak FLOP/s",
            "Dense peak of one GPU for compute_dtype (no sparsity).",
        ),
        (
            "attention_peak_flops_per_s",
            F,
            "FLOP/s",
            "Attention peak FLOP/s",
            "Dense peak of one GPU for the 16-bit activation dtype attention runs in (no sparsity).",
            False,
        ),
        (
            "fp8_peak_flops_per_s",
            F,
            "FLOP/s",
            "FP8 peak FLOP/s",
            "Dense fp8 peak of one GPU (its 16-bit peak without fp8): attention over an 8-bit KV cache.",
            False,
        ),
        ("fp8_rate", B, "", "", "The GPU has an fp8 tensor rate of its own (not a 16-bit fallback).", False),
        (
            "scale_up_bandwidth_bytes_per_s",
            F,
            "bytes/s",
            "Scale-up bandwidth",
            "Per-GPU, per-direction NVLink / Infinity Fabric bandwidth inside the scale-up domain (null: none).",
            False,
        ),
        (
            "scale_up_domain_gpus",
            I,
            "GPUs",
            "Scale-up domain",
            "GPUs joined by the scale-up link (8 on HGX and MI3xx platforms, 72 on GB200/GB300 NVL72).",
        ),
        (
            "pcie_bandwidth_bytes_per_s",
            F,
            "bytes/s",
            "PCIe bandwidth",
            "Per-direction PCIe bandwidth of one GPU (null: not known).",
            False,
        ),
        (
            "scale_out_bandwidth_bytes_per_s",
            F,
            "bytes/s",
            "Scale-out bandwidth",
            "Per-GPU, per-direction NIC bandwidth between servers / NVLink domains (400 Gb/s = 5e10; null: not known).",
        ),
        (
            "gpus_per_node",
            I,
            "GPUs",
            "GPUs per node",
            "GPUs in one server (a GB200/GB300 compute tray holds 4; its NVLink domain spans 18 trays).",
        ),
        ("gpu_tdp_w", F, "W", "TDP", "Maximum board power of one GPU."),
        ("params_total", F, "parameters", "Parameters", "P: all parameters of the model."),
        (
            "params_active",
            F,
            "parameters",
            "Active parameters",
            "P_a: parameters used per token (MoE: k of E).",
        ),
        (
            "embedding_params",
            F,
            "parameters",
            "Embedding",
            "V x d: the token embedding table (a lookup: a pass reads only its tokens' rows).",
            False,
        ),
        (
            "lm_head_params",
            F,
            "parameters",
            "LM head",
            "The d -> V output projection (V x d; GPT-J adds a V bias); the embedding table itself when tied.",
            False,
        ),
        ("tied_embeddings", B, "", "Tied embeddings", "The LM head is the embedding table (counted once in P).", False),
        (
            "unconverted_params",
            F,
            "parameters",
            "Unconverted modules",
            "Parameters the checkpoint keeps at 16 bits beyond the embedding and LM head (its config's "
            "modules_to_not_convert / ignore: gpt-oss's attention and routers), in its own format only; else 0.",
            False,
        ),
        ("layers", I, "layers", "Layers", "L.", False),
        (
            "tp_allreduces",
            I,
            "",
            "All-reduces per pass",
            "Tensor-parallel all-reduces of one forward pass: 2 L (after attention and after the MLP); L for "
            "Nemotron-H, whose blocks hold one mixer each.",
            False,
        ),
        ("hidden_size", I, "", "Hidden size", "d.", False),
        (
            "moe_width",
            I,
            "",
            "Routed width",
            "Width a routed token travels at through the MoE layers: d, or Nemotron-3's latent (moe_latent_size).",
            False,
        ),
        ("attention_heads", I, "heads", "Query heads", "h_q.", False),
        ("kv_heads", I, "heads", "KV heads", "h_kv (MLA: 1 shared latent).", False),
        (
            "full_kv_heads",
            I,
            "heads",
            "Full-attention KV heads",
            "h_kv of the full-attention layers (Gemma 4's global heads; otherwise h_kv).",
            False,
        ),
        (
            "window_fraction",
            F,
            "fraction",
            "Window share",
            "The window layers' share of the attention FLOPs per key (their share of the layers unless their head "
            "dim differs, as in Gemma 4).",
            False,
        ),
        ("attention_head_dim", F, "", "Attention head dim", "d_h used for attention FLOPs.", False),
        (
            "decode_attention_head_dim",
            F,
            "",
            "Decode attention head dim",
            "Per-head width of decode attention: d_h, or MLA's absorbed (2 x kv_lora_rank + rope) / 2.",
            False,
        ),
        (
            "attention_topk",
            I,
            "tokens",
            "Attention top-k",
            "DSA (DeepSeek-V3.2, GLM-5): cached tokens each query attends to (null: all).",
            False,
        ),
        (
            "indexer_flops_per_key",
            F,
            "FLOP",
            "Indexer FLOPs per key",
            "DSA lightning indexer: 2 x L x index heads x index dim per (query, cached key); 0 without one.",
            False,
        ),
        (
            "indexer_elements_per_token",
            F,
            "elements",
            "Indexer elements per token",
            "DSA indexer keys cached per token, all layers (part of kv_elements_per_token).",
            False,
        ),
        ("vocab_size", I, "tokens", "Vocabulary", "V.", False),
        ("max_context_tokens", I, "tokens", "Max context", "The model's max_position_embeddings.", False),
        ("experts", I, "experts", "Experts", "E routed experts per MoE layer (0 = dense).", False),
        ("experts_per_token", I, "experts", "Experts per token", "k.", False),
        ("moe_layers", I, "layers", "MoE layers", "Layers with routed experts.", False),
        (
            "expert_params",
            F,
            "parameters",
            "Expert size",
            "Parameters of one routed expert in one layer.",
            False,
        ),
        (
            "kv_elements_per_token",
            F,
            "elements",
            "KV elements per token",
            "K and V elements one token adds, over all layers.",
            False,
        ),
        (
            "kv_window_elements_per_token",
            F,
            "elements",
            "Windowed KV elements",
            "The part of kv_elements_per_token in sliding-window layers.",
            False,
        ),
        ("sliding_window_tokens", I, "tokens", "Sliding window", "W (null = none).", False),
        (
            "chunked_window",
            B,
            "",
            "Chunked window",
            "The window layers attend within fixed chunks of W tokens (Llama 4), not over the last W.",
            False,
        ),
        (
            "attention_layers",
            I,
            "layers",
            "Attention layers",
            "Layers that attend over cached tokens (full or window); linear-attention and Mamba layers do not.",
            False,
        ),
        (
            "state_bytes_per_sequence",
            F,
            "bytes",
            "Fixed state per sequence",
            "Recurrent state one sequence keeps in linear-attention / Mamba layers, whatever its length.",
            False,
        ),
        ("mlp_active_width", I, "", "Active MLP width", "Intermediate width a token passes through.", False),
        ("bytes_per_weight", F, "bytes", "Bytes per weight", "b_w, quantisation scales included."),
        (
            "unquantized_bytes_per_weight",
            F,
            "bytes",
            "Bytes per unquantised weight",
            "b_u: the embedding, LM head and unconverted modules: 2 (16-bit) in quantised formats but GGUF, else b_w.",
            False,
        ),
        (
            "kv_cache_format",
            S,
            "",
            "KV format",
            # catalog/engines.py AUTO_KV_RULE (not imported: the catalog imports this module)
            "The KV-cache format in force: kv_precision, or for `auto` the engine's choice: fp8 for NVFP4 and ModelOpt "
            "FP8 checkpoints (TensorRT-LLM, vLLM, SGLang: their kv_cache_quant_algo) and for fp8/fp4 MLA models "
            "(SGLang's DeepSeek recipes); otherwise the 16-bit activation dtype.",
        ),
        ("kv_bytes_per_element", F, "bytes", "Bytes per KV element", "b_kv."),
        (
            "fp8_attention",
            B,
            "",
            "FP8 attention",
            "Attention runs at the fp8 rate: the KV cache is fp8 or fp4 (else the 16-bit rate).",
            False,
        ),
        ("activation_bytes_per_element", F, "bytes", "Bytes per activation", "16-bit (fp32: 4).", False),
        ("bandwidth_efficiency", F, "fraction", "eta_bw", "Share of peak bandwidth reached (profile)."),
        ("compute_efficiency", F, "fraction", "eta_c", "Share of peak FLOP/s reached (profile)."),
        (
            "compute_scale",
            F,
            "",
            "Compute scale",
            "The GPU family's matmul ceiling against the fitted families' (profile; scales eta_c; 1 = as those).",
        ),
        (
            "fp8_gemm_efficiency",
            F,
            "fraction",
            "FP8 GEMM efficiency",
            "Share of eta_c that matmuls at the fp8 rate reach (profile; 1 = as at 16-bit).",
        ),
        (
            "fp4_gemm_efficiency",
            F,
            "fraction",
            "FP4 GEMM efficiency",
            "Share of eta_c that matmuls at the fp4 rate reach (profile; 1 = as at 16-bit).",
        ),
        ("step_overhead_s", F, "s", "Step overhead", "Fixed time per forward pass (profile).", False),
        (
            "layer_overhead_s",
            F,
            "s",
            "Layer overhead",
            "Fixed time per layer per forward pass (profile).",
            False,
        ),
        (
            "max_running_requests",
            I,
            "requests",
            "Max running requests",
            "The engine's limit on running requests per attention DP rank (profile; 0 = the KV cache's only).",
        ),
        (
            "moe_layer_overhead_s",
            F,
            "s",
            "MoE layer overhead",
            "Further fixed time per MoE layer per forward pass: router, permutation, grouped GEMMs (profile).",
            False,
        ),
        (
            "routed_activation_passes",
            F,
            "passes",
            "Routed activation passes",
            "Memory passes over a d-wide activation per routed copy of a token in an MoE layer (profile).",
            False,
        ),
        (
            "allreduce_latency_s",
            F,
            "s",
            "All-reduce latency",
            "alpha of one collective inside a server or NVLink domain (profile).",
            False,
        ),
        (
            "network_latency_s",
            F,
            "s",
            "Network latency",
            "alpha of one collective across the scale-out network (profile).",
            False,
        ),
        (
            "memory_reserve_fraction",
            F,
            "fraction",
            "Memory reserve",
            "Share of memory left unused (profile).",
            False,
        ),
        (
            "runtime_overhead_bytes",
            F,
            "bytes",
            "Runtime memory",
            "Context, workspaces, engine (profile).",
            False,
        ),
        ("tp_buffer_bytes", F, "bytes", "TP buffers", "Communication buffers when tp > 1 (profile).", False),
        ("prefill_chunk_tokens", I, "tokens", "Prefill chunk", "Tokens prefilled together (profile).", False),
        (
            "expert_imbalance",
            F,
            "",
            "Expert imbalance",
            "Load of the busiest expert-parallel GPU / the mean, when ep > 1 (profile; an assumption).",
            False,
        ),
        (
            "request_overhead_s",
            F,
            "s",
            "Request overhead",
            "Time a request spends outside the GPU before its first token: server, tokeniser, scheduler (profile).",
            False,
        ),
        (
            "burst_share",
            F,
            "fraction",
            "Share in synchronised waves",
            "Share of closed-loop requests served in synchronised waves: prompts prefilled back to back, "
            "then decoded together (profile: 1 for SGLang, whose scheduler keeps identical requests in step).",
            False,
        ),
        (
            "kv_transfer_efficiency",
            F,
            "fraction",
            "KV transfer efficiency",
            "Share of the link's bandwidth a disaggregated replica's KV transfer reaches (profile).",
            False,
        ),
        (
            "handoff_overhead_s",
            F,
            "s",
            "Hand-off overhead",
            "A disaggregated request's fixed time between the pools beyond the KV transfer (profile).",
            False,
        ),
        ("mtp_acceptance", F, "fraction", "MTP acceptance", "Default per-token MTP acceptance (profile).", False),
        ("eagle_acceptance", F, "fraction", "EAGLE acceptance", "Default per-token EAGLE acceptance (profile).", False),
        ("draft_acceptance", F, "fraction", "Draft acceptance", "Default per-token draft acceptance (profile).", False),
        (
            "draft_params_total",
            F,
            "parameters",
            "Draft parameters",
            "The draft model's parameters (speculative = draft; null = one decoder layer of the target).",
            False,
        ),
        ("draft_params_active", F, "parameters", "Draft active parameters", "Of them, active per token.", False),
        (
            "draft_unquantized_params",
            F,
            "parameters",
            "Draft 16-bit parameters",
            "Of them, the draft's embedding and LM head, kept at 16 bits in quantised formats (null: no draft model).",
            False,
        ),
        ("draft_layers", I, "layers", "Draft layers", "The draft's layers (mtp, eagle: 1).", False),
        (
            "draft_kv_elements_per_token",
            F,
            "elements",
            "",
            "KV elements the draft model caches per token, all its layers (speculative = draft; else null).",
            False,
        ),
        ("draft_kv_heads", I, "heads", "", "The draft model's KV heads (speculative = draft; else null).", False),
        (
            "given_tokens_per_step",
            F,
            "tokens",
            "",
            "tokens_per_step from per-position acceptance rates, when the sweep gives them.",
            False,
        ),
        *(
            (f"band_{group}_{end}", F, "", "", _band_description(group, end), False)
            for group in BAND_GROUPS
            for end in ("low", "high")
        ),
    )
    + _cols(
        "derived",
        (
            "servers_per_replica",
            I,
            "servers",
            "Servers per replica",
            "Servers one replica spans: ceil(gpus / gpus_per_node).",
        ),
        (
            "tp_link",
            S,
            "",
            "TP link",
            "Link of the tensor-parallel all-reduces: scale-up (NVLink / Infinity Fabric), pcie or scale-out "
            "(the NICs, when tp spans servers); empty at tp 1.",
        ),
        (
            "expert_link",
            S,
            "",
            "EP link",
            "Slowest link of the experts' dispatch/combine all-to-all (the tp x dp_attention GPUs); empty without "
            "attention DP (the tp all-reduces carry the experts).",
        ),
        (
            "pp_link",
            S,
            "",
            "PP link",
            "Slowest link a pipeline stage boundary crosses; empty at pp 1.",
        ),
        (
            "link_bandwidth_bytes_per_s",
            F,
            "bytes/s",
            "TP link bandwidth",
            "Per-direction bandwidth of the tp all-reduces' link (tp_link).",
        ),
        (
            "expert_link_bandwidth_bytes_per_s",
            F,
            "bytes/s",
            "EP link bandwidth",
            "Per-direction bandwidth of the link between expert-parallel GPUs inside one server or NVLink domain "
            "(traffic to other servers uses scale_out_bandwidth_bytes_per_s).",
        ),
        (
            "pp_link_bandwidth_bytes_per_s",
            F,
            "bytes/s",
            "PP link bandwidth",
            "Per-direction bandwidth of the stage boundaries inside one server or NVLink domain.",
            False,
        ),
        # Per-layout constants (gpu x model x precision x tp x pp): computed once per layout, then
        # reused by every row of that layout. Not exported.
        ("kv_full_bytes_per_token", F, "bytes", "", "KV bytes per token in full-attention layers.", False),
        ("kv_window_bytes_per_token", F, "bytes", "", "KV bytes per token in sliding-window layers.", False),
        ("kv_split", F, "GPUs", "", "GPUs sharing one sequence's KV cache: pp x min(tp, h_kv).", False),
        ("full_kv_split", F, "GPUs", "", "kv_split of the full-attention layers: pp x min(tp, their h_kv).", False),
        ("kv_read_replicas", F, "", "", "Copies of each KV head read per step: tp / min(tp, h_kv).", False),
        ("full_kv_read_replicas", F, "", "", "kv_read_replicas of the full-attention layers.", False),
        ("activation_bytes_per_token", F, "bytes", "", "Live activations per prefill token on one GPU.", False),
        ("logits_bytes_per_sequence", F, "bytes", "", "fp32 logits of one sequence on one GPU.", False),
        ("free_bytes", F, "bytes", "", "Usable memory left after weights and overhead.", False),
        (
            "flops_per_token",
            F,
            "FLOP",
            "",
            "2 x (P_a - untied embedding): matmul FLOPs of one decoded token, LM head included.",
            False,
        ),
        (
            "prefill_flops_per_token",
            F,
            "FLOP",
            "",
            "2 x (P_a - embedding - LM head): matmul FLOPs of one prompt token (logits only at the last).",
            False,
        ),
        (
            "unquantized_flop_cost",
            F,
            "",
            "",
            "(F f_w) / F_16: weight-matmul FLOPs one FLOP of a 16-bit-kept weight (LM head) costs.",
            False,
        ),
        ("attention_flops_per_key", F, "FLOP", "", "4 x L x h_q x d_h: attention FLOPs per (query, key).", False),
        (
            "decode_attention_flops_per_key",
            F,
            "FLOP",
            "",
            "4 x L x h_q x d_dec: decode attention FLOPs per (query, key) (MLA: absorbed).",
            False,
        ),
        ("routed_expert_bytes", F, "bytes", "", "All routed experts of all MoE layers (0 = dense).", False),
        (
            "embedding_table_bytes",
            F,
            "bytes",
            "",
            "V d b_u of an untied embedding table, which a pass does not stream (0 when tied: the LM head).",
            False,
        ),
        ("embedding_row_bytes", F, "bytes", "", "d b_u: one token's embedding row, which a pass gathers.", False),
        ("expert_miss_log", F, "", "", "ln(1 - k/E): a token skips a given expert with probability e^this.", False),
        (
            "seconds_per_flop",
            F,
            "s/FLOP",
            "",
            "1 / (tp x F x eta_c x s x f): s = the family's compute_scale, f = the dtype's GEMM efficiency.",
            False,
        ),
        (
            "attention_flop_cost",
            F,
            "",
            "",
            "(F f_w) / (F_attn f_attn): weight-matmul FLOPs one attention FLOP costs, each rate at its dtype's share.",
            False,
        ),
        ("seconds_per_byte", F, "s/byte", "", "1 / (tp x BW x eta_bw).", False),
        ("fixed_step_s", F, "s", "", "Per-step + L x per-layer overhead.", False),
        ("allreduce_fixed_s", F, "s", "", "Latency part of a forward pass's all-reduces: 2 L alpha.", False),
        ("allreduce_s_per_token", F, "s", "", "Bandwidth part of the all-reduces per token.", False),
        ("expert_share", F, "fraction", "", "Busiest attention group's share of the experts' work.", False),
        ("alltoall_fixed_s", F, "s", "", "Latency part of a forward pass's expert all-to-alls.", False),
        ("alltoall_s_per_token", F, "s", "", "Bandwidth part of the expert all-to-alls per token.", False),
        ("pp_fixed_s", F, "s", "", "Latency part of a forward pass's pipeline sends.", False),
        ("pp_s_per_token", F, "s", "", "Bandwidth part of the pipeline sends per token.", False),
        ("comm_fixed_s", F, "s", "", "Latency part of all of a forward pass's communication.", False),
        ("comm_s_per_token", F, "s", "", "Bandwidth part of all communication per token of a group.", False),
        (
            "routing_s_per_token",
            F,
            "s",
            "",
            "Memory time of the MoE layers' permutation, gating and combine per token (routed_activation_passes).",
            False,
        ),
        ("expert_placement", F, "", "", "Busiest EP rank's experts over the mean: ceil(E / ep) ep / E.", False),
        ("expert_spread", F, "", "", "sqrt(2 ln ep) / sqrt(E / ep): the busiest rank's extra touched experts.", False),
        ("network_unit_gpus", I, "GPUs", "", "GPUs reachable without the NICs: max(scale-up domain, server).", False),
        ("expert_inside_link", S, "", "", "Link among the expert group's GPUs inside one network unit.", False),
        ("pp_inside_link", S, "", "", "Link of the stage boundaries inside one network unit.", False),
        ("layout_reason", S, "", "", "Why the layout cannot run, before lengths are known.", False),
        (
            "platform_reason",
            S,
            "",
            "",
            "Why the engine cannot run on the GPU's platform (MLX off Apple silicon).",
            False,
        ),
        ("draft_fraction", F, "", "", "One draft pass's weights and FLOPs over one target pass's.", False),
        (
            "draft_kv_ratio",
            F,
            "",
            "",
            "The draft's KV bytes per token over the target's (mtp, eagle: 1 / layers; draft: its own cache).",
            False,
        ),
        ("spec_token_factor", F, "", "", "Token passes per sequence per step: k + 1 verified + k x draft.", False),
        ("spec_kv_factor", F, "", "", "KV reads per sequence per step: 1 (target) + k x draft_kv_ratio.", False),
        ("spec_fixed_s", F, "s", "", "Fixed costs of a step's k draft passes.", False),
        ("prefill_first_token_s", F, "s", "", "p of the prefill worker (disaggregated).", False),
        ("prefill_layout_reason", S, "", "", "Why the prefill worker's layout cannot run.", False),
        (
            "prefill_kv_shard_bytes",
            F,
            "bytes",
            "",
            "A prompt's KV each GPU of a prefill worker holds and sends to the decode pool (kv_gpu_bytes).",
            False,
        ),
        (
            "decode_kv_shard_bytes",
            F,
            "bytes",
            "",
            "A prompt's KV each GPU of a decode worker receives from the prefill pool (kv_gpu_bytes).",
            False,
        ),
        ("prefill_usable_memory_bytes", F, "bytes", "", "Usable memory of a prefill GPU.", False),
        ("worker_batch", I, "sequences", "", "Sequences one (decode) worker may hold: ceil(batch / workers).", False),
        # Per (layout, input, output): computed once for all batch sizes.
        ("kv_context_bytes_per_sequence", F, "bytes", "", "KV of one sequence at context_tokens, one GPU.", False),
        ("decode_flops_per_sequence", F, "FLOP", "", "One sequence's decode-step FLOPs at the mean context.", False),
        (
            "prefill_compute_s",
            F,
            "s",
            "",
            "One prompt's FLOPs at their rates: matmuls, attention (16-bit or fp8).",
            False,
        ),
        (
            "decode_compute_s_per_sequence",
            F,
            "s",
            "",
            "One sequence's share of a step's compute time (attention at its own rate, 16-bit or fp8).",
            False,
        ),
        (
            "decode_kv_bytes_per_sequence",
            F,
            "bytes",
            "",
            "Cache bytes one sequence's decode step moves, all GPUs: KV read, a recurrent state read and written.",
            False,
        ),
        # Per row.
        (
            "group_batch",
            I,
            "sequences",
            "",
            "Sequences of the busiest attention group: ceil(batch / dp_attention).",
            False,
        ),
        ("step_fixed_s", F, "s", "", "Decode step: all-reduce latency + fixed costs (F0 = M0 less weights).", False),
        ("step_compute_s_per_seq", F, "s", "", "Decode step, compute roof: time per sequence (F1).", False),
        ("step_memory_s_per_seq", F, "s", "", "Decode step, memory roof: time per sequence (M1).", False),
        ("first_token_s", F, "s", "", "p: GPU time to a lone request's first token (prefill, or one step).", False),
        ("prefill_chunks", F, "", "", "n_c = input_tokens / prefill_chunk_tokens.", False),
        ("decode_steps", F, "", "", "k = output_tokens - 1: decode steps after the first token.", False),
        ("half_inv_decode_steps", F, "", "", "1 / (2 k), 0 when k = 0.", False),
        (
            "prefill_bound_decoders",
            F,
            "sequences",
            "",
            "k / n_c: requests decoding when prefill is the bottleneck (closed-loop starting point).",
            False,
        ),
    )
    + _cols(
        "estimate",
        (
            "model_weight_bytes",
            F,
            "bytes",
            "Model weights",
            "P x b_w: all weights of one replica; quantised formats (not GGUF) keep the embedding and LM head "
            "(and a checkpoint's unconverted modules) at 16 bits.",
        ),
        ("worker_gpus", I, "GPUs", "GPUs per worker", "tp x pp x dp_attention: one (decode) worker."),
        (
            "prefill_worker_gpus",
            I,
            "GPUs",
            "GPUs per prefill worker",
            "prefill_tp x prefill_pp x prefill_dp_attention.",
        ),
        ("prefill_pool_gpus", I, "GPUs", "Prefill pool GPUs", "prefill_workers x prefill_worker_gpus (0 aggregated)."),
        ("decode_pool_gpus", I, "GPUs", "Decode pool GPUs", "decode_workers x worker_gpus (gpus aggregated)."),
        (
            "tokens_per_step",
            F,
            "tokens",
            "Tokens per step",
            "E: tokens a sequence gains per decode step; speculative: (1 - alpha^(k+1)) / (1 - alpha), else 1.",
        ),
        (
            "draft_weight_bytes",
            F,
            "bytes",
            "Draft weights",
            "Weights of the draft (MTP layer, EAGLE head or draft model), all GPUs of a worker.",
        ),
        (
            "prefill_new_tokens",
            F,
            "tokens",
            "Prompt tokens computed",
            "input_tokens x (1 - prefix_hit_rate), at least 1: what prefill computes (the rest from cache).",
        ),
        (
            "kv_transfer_bytes",
            F,
            "bytes",
            "KV transfer",
            "The prompt's KV cache a disaggregated replica moves from a prefill to a decode worker.",
        ),
        (
            "kv_link",
            S,
            "",
            "KV link",
            "Link that carries the KV cache between the pools: scale-up (one NVLink domain) or scale-out (NICs).",
        ),
        (
            "kv_transfer_s",
            F,
            "s",
            "KV transfer time",
            "kv_transfer_bytes / (sending GPUs x link bandwidth x kv_transfer_efficiency) + link latency.",
        ),
        (
            "prefill_memory_per_gpu_bytes",
            F,
            "bytes",
            "Memory per prefill GPU",
            "A prefill worker's GPU: weights + one prompt's KV and workspace + overhead (disaggregated).",
        ),
        (
            "prefill_utilization",
            F,
            "fraction",
            "Prefill pool busy",
            "Share of the prefill pool's time spent prefilling: requests/s x prefill_s / (prefill_workers x "
            "prefill_dp_attention), each attention group prefilling one prompt at a time.",
        ),
        (
            "weight_bytes",
            F,
            "bytes",
            "Weights per GPU",
            "(dense weights / tp + routed experts / (tp x dp_attention)) / pp; = P x b_w / (tp x pp) without "
            "attention data parallelism.",
        ),
        (
            "kv_bytes_per_token",
            F,
            "bytes",
            "KV per token",
            "KV-cache bytes one token adds, all layers, before any tp split and window.",
        ),
        (
            "kv_cache_bytes",
            F,
            "bytes",
            "KV cache per GPU",
            "KV cache of `batch` sequences at context_tokens, on one GPU (windows capped; split over pp and "
            "min(tp, h_kv)).",
        ),
        (
            "activation_bytes",
            F,
            "bytes",
            "Activations per GPU",
            "Peak prefill workspace on one GPU plus fp32 logits of the batch.",
        ),
        (
            "overhead_bytes",
            F,
            "bytes",
            "Overhead per GPU",
            "Runtime context and, for tp > 1, communication buffers.",
        ),
        (
            "memory_per_gpu_bytes",
            F,
            "bytes",
            "Memory per GPU",
            "weights + KV cache + activations + overhead.",
        ),
        (
            "usable_memory_bytes",
            F,
            "bytes",
            "Usable memory",
            "gpu_memory_bytes x (1 - memory_reserve_fraction).",
        ),
        (
            "fits",
            B,
            "",
            "Fits",
            "memory_per_gpu_bytes <= usable_memory_bytes, and the configuration can run.",
        ),
        (
            "max_batch",
            I,
            "sequences",
            "Max batch",
            "Largest batch that fits at this context (0 = not even one).",
        ),
        (
            "prefill_flops",
            F,
            "FLOP",
            "Prefill FLOPs",
            "One prompt: 2 (P_a - embedding - LM head) S_in + the LM head once (last position) + attention.",
        ),
        ("prefill_s", F, "s", "Prefill time", "Time to prefill one prompt alone: the single-stream TTFT."),
        ("prefill_tokens_per_s", F, "tokens/s", "Prefill tokens/s", "input_tokens / prefill_s."),
        (
            "prefill_arithmetic_intensity",
            F,
            "FLOP/byte",
            "Prefill intensity",
            "Prefill FLOPs per byte moved.",
        ),
        (
            "experts_touched",
            F,
            "experts",
            "Experts touched",
            "Routed experts a decode step reads per MoE layer: E (1 - (1 - k/E)^batch).",
        ),
        (
            "decode_flops_per_step",
            F,
            "FLOP",
            "Decode FLOPs/step",
            "One decode step of the whole batch, all GPUs (with dp_attention > 1: of the busiest attention group).",
        ),
        (
            "decode_bytes_per_step",
            F,
            "bytes",
            "Decode bytes/step",
            "Memory traffic of one decode step, all GPUs: weights read + KV read.",
        ),
        (
            "decode_weight_fraction",
            F,
            "fraction",
            "Weight share of decode traffic",
            "Share of a decode step's memory traffic that reads weights (the rest reads the KV cache).",
        ),
        ("decode_compute_s", F, "s", "Compute time", "Decode step, compute term."),
        ("decode_memory_s", F, "s", "Memory time", "Decode step, memory term."),
        ("decode_comm_s", F, "s", "Communication time", "Decode step, tensor-parallel all-reduces."),
        (
            "decode_routing_s",
            F,
            "s",
            "Routing time",
            "Decode step, memory time of the MoE layers' permutation, gating and combine.",
        ),
        ("decode_overhead_s", F, "s", "Overhead time", "Decode step, fixed per-step and per-layer costs."),
        (
            "decode_step_s",
            F,
            "s",
            "Decode step",
            "One decode step of `batch` sequences alone (no prefill interleaved): max(compute, memory) + "
            "communication + MoE routing traffic + overhead. At batch 1 it is the single-stream time per token.",
        ),
        (
            "decode_tokens_per_s",
            F,
            "tokens/s",
            "Decode-step tokens/s",
            "batch / decode_step_s: the decode step alone, with no prefill interleaved (the roofline's view; "
            "output_tokens_per_s is what the replica delivers under load).",
        ),
        # The operating point at concurrency `batch` (estimate/load.py, docs/serving.md).
        (
            "decode_batch",
            F,
            "sequences",
            "Decode batch",
            "Sequences in the decode steps a request's tokens are generated in, itself included (requests "
            "still in prefill excluded): the replica's in aggregated serving, one decode worker's in "
            "disaggregated serving. Under random arrivals (a rate) it is 1 + rate x decode time, so at a "
            "light load it can exceed the time-average requests in flight (concurrency), which counts "
            "no request when none is running.",
        ),
        (
            "tpot_s",
            F,
            "s",
            "TPOT",
            "Time per output token users see under load: the decode step at decode_batch, stretched by the "
            "prefill chunks of other requests interleaved with it.",
        ),
        (
            "ttft_s",
            F,
            "s",
            "TTFT",
            "Mean time to first token under load: own prefill + waiting behind other prompts + scheduling.",
        ),
        ("ttft_wait_s", F, "s", "TTFT wait", "ttft_s - prefill_s: the part of TTFT spent waiting or sharing."),
        (
            "ttft_p90_s",
            F,
            "s",
            "TTFT p90",
            "90th percentile of TTFT (exponential tail of the prefill wait). Below ttft_s when few requests (about a "
            "tenth or fewer) wait at all: the mean carries the few that queue, the p90 a request that does not.",
        ),
        ("ttft_p99_s", F, "s", "TTFT p99", "99th percentile of TTFT (exponential tail of the prefill wait)."),
        ("request_latency_s", F, "s", "Request latency", "ttft_s + (output_tokens - 1) x tpot_s."),
        (
            "requests_per_s_per_replica",
            F,
            "requests/s",
            "Requests/s per replica",
            "Completed requests per second at this operating point: batch / request_latency_s (Little).",
        ),
        (
            "output_tokens_per_s",
            F,
            "tokens/s",
            "Serving tokens/s",
            "requests_per_s_per_replica x output_tokens: what the replica delivers at this concurrency.",
        ),
        (
            "decode_tokens_per_s_per_seq",
            F,
            "tokens/s",
            "Tokens/s per user",
            "output_tokens / request_latency_s = output_tokens_per_s / batch: each user's share.",
        ),
        (
            "prefill_fraction",
            F,
            "fraction",
            "Prefill share",
            "Share of each attention group's time on prompts at this operating point: requests/s x what a prompt "
            "adds (p_mix riding in decode steps, p in a wave) / dp_attention; disaggregated, the prefill pool's "
            "share of the GPUs.",
        ),
        ("load_note", S, "", "Load note", "What limits the operating point (e.g. waiting for a KV-cache slot)."),
        (
            "output_tokens_per_s_per_gpu",
            F,
            "tokens/s",
            "Serving tokens/s per GPU",
            "output_tokens_per_s / gpus.",
        ),
        ("arithmetic_intensity", F, "FLOP/byte", "Decode intensity", "decode FLOPs / decode bytes per step."),
        ("ridge_point", F, "FLOP/byte", "Ridge point", "peak_flops_per_s / memory_bandwidth_bytes_per_s."),
        ("bound", S, "", "Bound", "Largest decode term: memory, compute, communication or overhead."),
        ("reason", S, "", "Why not", "Why the configuration cannot run (null when it can)."),
        ("notes", S, "", "Notes", "Assumptions made for this row (e.g. a compute-dtype fallback)."),
    )
    + _cols(
        "plan",
        # Capacity and cost (plan.py): prices from the sweep's `costs`, else the catalog's dated
        # example prices; capacity from its `workload`; targets from its `slo`.
        (
            "usd_per_gpu_hour",
            F,
            "USD/h",
            "Price per GPU-hour",
            "Rent, or purchase amortised + power + hosting, per GPU-hour.",
        ),
        (
            "offer",
            S,
            "",
            "Offer",
            "The price offer (sweep `costs`): rent, rent-<term>, buy-<years>y, example, or its `name`. estimates.csv "
            "prices each row with its GPU's first offer; plan.csv has a row per offer.",
        ),
        ("price_source", S, "", "Price source", "Where usd_per_gpu_hour comes from (the sweep, or a dated example)."),
        ("usd_per_hour", F, "USD/h", "Replica cost per hour", "usd_per_gpu_hour x gpus."),
        (
            "usd_per_million_output_tokens",
            F,
            "USD/M tokens",
            "USD per million output tokens",
            "All-in: usd_per_hour / (output_tokens_per_s x 3600) x 10^6, the replica fully loaded (prompts included).",
        ),
        (
            "usd_per_million_input_tokens",
            F,
            "USD/M tokens",
            "USD per million input tokens",
            "The prompt share of the hour over the input tokens it serves: usd_per_hour x share / (requests/s x "
            "input_tokens x 3600) x 10^6, share = prefill_pool_gpus / gpus (disaggregated: the prefill pool's "
            "GPU-hours) or, aggregated, the prompts' share of its time at the same operating point (prefill_fraction; "
            "in a plan sized for a workload, capacity_prefill_busy at capacity_requests_per_s): each prompt charged "
            "what it adds to the iterations it rides in. Without a prompt the share is 0, without output tokens 1. "
            "Already inside usd_per_million_output_tokens: never add the two.",
        ),
        (
            "usd_per_million_decode_tokens",
            F,
            "USD/M tokens",
            "USD per million output tokens (decode)",
            "The rest of the hour over the output tokens: usd_per_hour x (1 - share) / (requests/s x output_tokens "
            "x 3600) x 10^6 (disaggregated: the decode pool's GPU-hours). Input cost x input tokens + this x output "
            "tokens = the hour; usd_per_million_output_tokens is the whole hour over the output tokens.",
        ),
        (
            "tokens_per_joule",
            F,
            "tokens/J",
            "Tokens per joule",
            "output_tokens_per_s / (gpus x TDP x power_utilization).",
        ),
        (
            "meets_slo",
            B,
            "",
            "Meets targets",
            "Fits, and the loaded TTFT (slo.percentile), TPOT and request latency are within the sweep's targets "
            "(plan.csv: at the traffic the plan gives each replica). A sweep without targets passes every row "
            "that fits (options.csv and the XLSX say 'no targets').",
        ),
        ("slo_miss", S, "", "SLO miss", "Which target the option misses and by how much (plan.csv).", False),
        (
            "replicas",
            I,
            "replicas",
            "Replicas",
            "ceil(peak requests/s / requests/s per replica x (1 + headroom)) + redundancy; in plan.csv the "
            "requests/s per replica is capacity_requests_per_s (the targets hold under load).",
        ),
        ("gpus_needed", I, "GPUs", "GPUs needed", "replicas x tp x pp."),
        ("utilization", F, "fraction", "Utilisation", "Average load / capacity of the whole fleet."),
        (
            "fleet_gpus",
            I,
            "GPUs",
            "Fleet GPUs",
            "GPUs of the fleet: gpus_needed, or one replica (gpus) without a workload; empty when the workload "
            "cannot be sized.",
        ),
        (
            "gpus_bought",
            I,
            "GPUs",
            "GPUs bought",
            "Bought offers: fleet_gpus in whole purchase units, the scale-up domain where it fills a server or "
            "more (an 8-GPU HGX or OAM baseboard, a 72-GPU NVL72 rack), else single GPUs (PCIe cards); capex pays "
            "for these, power for the fleet_gpus in use. Empty when rented.",
        ),
        (
            "servers_needed",
            I,
            "servers",
            "Servers",
            "ceil(gpus_bought (rented: fleet_gpus) / gpus_per_node).",
        ),
        (
            "racks_needed",
            I,
            "racks",
            "Racks",
            "Bought offers: ceil(servers / servers per rack), a rack holding min(servers_per_rack, "
            "floor(rack_kw / server kW)); empty when the offer gives no rack limit.",
        ),
        (
            "fleet_kw",
            F,
            "kW",
            "Fleet kW",
            "IT power of the fleet at full load: fleet_gpus x TDP + the servers holding them x host_kw (a "
            "purchase's, which a rented offer of the same GPU draws too); before PUE.",
        ),
        (
            "capex_usd",
            F,
            "USD",
            "Capex",
            "Cash paid up front: fleet GPUs x purchase + servers x (server_usd + network_usd_per_server); 0 rented.",
        ),
        (
            "opex_usd_per_year",
            F,
            "USD/year",
            "Opex per year",
            "Cash per year: power (kW x PUE x utilisation x USD/kWh x 8,760 h) + hosting (per kW-month and per "
            "rack-month) for bought fleets; rent (GPUs x USD/h x 8,760 h, x utilisation when rent_paid is "
            "per-hour-used) for rented ones.",
        ),
        (
            "fleet_usd_per_month",
            F,
            "USD/month",
            "Fleet USD per month",
            "Amortised: (capex / amortisation years + opex per year) / 12.",
        ),
        (
            "fleet_usd_per_million_output_tokens",
            F,
            "USD/M tokens",
            "Fleet USD per million output tokens",
            "With a workload: tco_usd over the output tokens the fleet serves at average load in horizon_years "
            "(whole servers and racks, headroom, redundancy and idle time included); ranks as tco_usd does.",
        ),
        (
            "fleet_usd_per_million_output_tokens_low",
            F,
            "USD/M tokens",
            "Fleet USD per M (low)",
            "Low end of the 80 % band of fleet_usd_per_million_output_tokens: the fleet of gpus_needed_low GPUs.",
            False,
        ),
        (
            "fleet_usd_per_million_output_tokens_high",
            F,
            "USD/M tokens",
            "Fleet USD per M (high)",
            "High end of the 80 % band of fleet_usd_per_million_output_tokens: the fleet of gpus_needed_high GPUs.",
            False,
        ),
        (
            "tco_usd",
            F,
            "USD",
            "TCO",
            "Cash over the sweep's horizon_years (default 3): capex + horizon x opex per year.",
        ),
        (
            "tco_usd_per_month",
            F,
            "USD/month",
            "USD per month",
            "tco_usd / (12 x horizon_years): the fleet's average cash per month over the horizon (what the "
            "reports show as USD per month; orders options as tco_usd does).",
        ),
        (
            "output_tokens_per_s_per_kw",
            F,
            "tokens/s/kW",
            "Tokens/s per kW",
            "Output tokens/s the fleet delivers on average (with a workload: its average requests/s x "
            "output_tokens; without, one replica's output_tokens_per_s) per kW its GPUs draw on average "
            "(fleet_gpus x TDP x power_utilization, before PUE). The GPUs' alone, for every GPU and offer alike: "
            "the servers' host power, which a sweep states for what it buys, is in fleet_kw and the opex.",
        ),
        (
            "kwh_per_million_output_tokens",
            F,
            "kWh/M tokens",
            "kWh per million output tokens",
            "The GPUs' energy per million output tokens on average: 10^6 / (3600 x output_tokens_per_s_per_kw).",
        ),
        # Uncertainty bands: the middle 80 % of the profile's cross-validated errors (docs/fidelity.md);
        # null for a profile without bands (ideal).
        (
            "decode_tokens_per_s_per_seq_low",
            F,
            "tokens/s",
            "decode tokens/s per sequence (low)",
            "Low end of the 80 % band of decode_tokens_per_s_per_seq.",
        ),
        (
            "decode_tokens_per_s_per_seq_high",
            F,
            "tokens/s",
            "decode tokens/s per sequence (high)",
            "High end of the 80 % band of decode_tokens_per_s_per_seq.",
        ),
        (
            "decode_tokens_per_s_low",
            F,
            "tokens/s",
            "aggregate decode tokens/s (low)",
            "Low end of the 80 % band of decode_tokens_per_s.",
        ),
        (
            "decode_tokens_per_s_high",
            F,
            "tokens/s",
            "aggregate decode tokens/s (high)",
            "High end of the 80 % band of decode_tokens_per_s.",
        ),
        ("tpot_s_low", F, "s", "TPOT (low)", "Low end of the 80 % band of tpot_s."),
        ("tpot_s_high", F, "s", "TPOT (high)", "High end of the 80 % band of tpot_s."),
        ("ttft_s_low", F, "s", "TTFT (low)", "Low end of the 80 % band of ttft_s."),
        ("ttft_s_high", F, "s", "TTFT (high)", "High end of the 80 % band of ttft_s."),
        (
            "output_tokens_per_s_low",
            F,
            "tokens/s",
            "serving tokens/s (low)",
            "Low end of the 80 % band of output_tokens_per_s.",
        ),
        (
            "output_tokens_per_s_high",
            F,
            "tokens/s",
            "serving tokens/s (high)",
            "High end of the 80 % band of output_tokens_per_s.",
        ),
        ("gpus_needed_low", I, "GPUs", "GPUs needed (low)", "Low end of the 80 % band of gpus_needed."),
        ("gpus_needed_high", I, "GPUs", "GPUs needed (high)", "High end of the 80 % band of gpus_needed."),
        (
            "usd_per_million_output_tokens_low",
            F,
            "USD/M tokens",
            "USD per million output tokens (low)",
            "Low end of the 80 % band of usd_per_million_output_tokens.",
        ),
        (
            "usd_per_million_output_tokens_high",
            F,
            "USD/M tokens",
            "USD per million output tokens (high)",
            "High end of the 80 % band of usd_per_million_output_tokens.",
        ),
        # plan.csv only: one row per option at the largest batch that meets the targets
        (
            "slo_batch",
            I,
            "sequences",
            "SLO batch",
            "Largest batch that fits and meets every target (0 = none: the option is shown at batch 1).",
            False,
        ),
        (
            "concurrency",
            F,
            "requests",
            "Concurrency",
            "Requests in a replica at the operating point: offered rate x request latency (Little) with a "
            "workload, else the batch.",
            False,
        ),
        (
            "offered_requests_per_s",
            F,
            "requests/s",
            "Requests/s per replica",
            "The traffic each replica serves at the operating point: peak requests/s / replicas with a "
            "workload (Poisson arrivals), else the closed loop's requests/s at slo_batch.",
            False,
        ),
        (
            "capacity_requests_per_s",
            F,
            "requests/s",
            "Capacity per replica",
            "Largest request rate per replica at which every latency target still holds (open loop); "
            "replicas are sized from it.",
            False,
        ),
        (
            "capacity_limit",
            S,
            "",
            "What limits capacity",
            "What stops a replica serving more than capacity_requests_per_s: the first target missed just above "
            "it (ttft_s, ttft_p90_s, ttft_p99_s, tpot_s, request_latency_s), or saturated (a pool or the KV-cache "
            "slots are full).",
            False,
        ),
        (
            "capacity_decode_batch",
            F,
            "sequences",
            "Decode batch at capacity",
            "decode_batch at capacity_requests_per_s (a disaggregated replica: per decode worker).",
            False,
        ),
        ("capacity_tpot_s", F, "s", "TPOT at capacity", "Time per output token at capacity_requests_per_s.", False),
        (
            "capacity_ttft_s",
            F,
            "s",
            "TTFT at capacity",
            "Time to first token at capacity_requests_per_s, the statistic the targets name (ttft_percentile).",
            False,
        ),
        (
            "capacity_prefill_busy",
            F,
            "fraction",
            "Prefill busy at capacity",
            "At capacity_requests_per_s, the share of time prompts take: each attention group's (aggregated: "
            "requests/s x p_mix / dp_attention, the open loop's prefill_fraction, time decode steps wait for) or "
            "its prefill pool's (disaggregated: prefill_utilization).",
            False,
        ),
        ("ttft_percentile", S, "", "TTFT target statistic", "The sweep's slo.percentile: mean, p90 or p99.", False),
        ("rank", I, "", "Rank", "Rank by rank_by among the model's options that meet the SLO.", False),
        ("rent_usd_per_gpu_hour", F, "USD/h", "Rent", "Rental part of usd_per_gpu_hour.", False),
        ("amortized_usd_per_gpu_hour", F, "USD/h", "Amortisation", "purchase / (years x 8,760 h).", False),
        ("power_usd_per_gpu_hour", F, "USD/h", "Power", "TDP x utilisation x PUE x USD/kWh.", False),
        ("hosting_usd_per_gpu_hour", F, "USD/h", "Hosting", "USD per kW-month x TDP x PUE / 730 h.", False),
        ("purchase_usd_per_gpu", F, "USD", "Purchase per GPU", "Purchase price of one GPU (per server / GPUs).", False),
        (
            "peak_requests_per_s",
            F,
            "requests/s",
            "Peak traffic",
            "Workload requests/s x peak_factor (tokens_per_day: / 86,400 / output_tokens); with users, users x "
            "peak_factor / (think_time_s + this option's request_latency_s at its operating point).",
            False,
        ),
        (
            "peak_users",
            F,
            "users",
            "Peak users",
            "With a workload of users: users x peak_factor, who send peak_requests_per_s; empty otherwise.",
            False,
        ),
        ("headroom", F, "fraction", "Headroom", "Spare capacity on top of the peak.", False),
        ("redundancy", I, "replicas", "Redundancy", "Spare replicas (n+1 = 1).", False),
        ("ttft_target_s", F, "s", "TTFT target", "The sweep's slo.ttft_s.", False),
        ("tpot_target_s", F, "s", "TPOT target", "The sweep's slo.tpot_s.", False),
        ("request_latency_target_s", F, "s", "Latency target", "The sweep's slo.request_latency_s.", False),
        ("horizon_years", F, "years", "Horizon", "Years tco_usd covers (the sweep's horizon_years).", False),
    )
)

BY_NAME: dict[str, Column] = {col.name: col for col in COLUMNS}
NUMERIC: tuple[str, ...] = tuple(
    col.name
    for col in COLUMNS
    if col.dtype in (F, I) and col.kind != "derived" and (col.exported or col.name == "slo_batch")
)
# Columns capacity planning adds when the sweep has a workload and costs (plan.py).


def higher_is_better(name: str) -> bool:
    """Ranking direction: throughput and batch capacity up; time, bytes, GPUs and money down."""
    col = BY_NAME.get(name)
    up = ("tokens/s", "sequences", "FLOP/byte", "tokens/J", "requests/s", "tokens/s/kW")
    return col is not None and col.unit in up


EXPORTED: tuple[str, ...] = tuple(col.name for col in COLUMNS if col.exported)
# One hardware option at one workload: the identity columns a plan row (and a measurement's
# configuration, with its batch) is keyed by.
# A disaggregated replica's pools: its worker counts and the prefill worker's layout (null in an
# aggregated row; the decode worker's layout is the row's tp, pp, ep and dp_attention).
POOL_COLUMNS: tuple[str, ...] = (
    "prefill_workers",
    "decode_workers",
    "prefill_tp",
    "prefill_pp",
    "prefill_ep",
    "prefill_dp_attention",
)
OPTION_KEYS: tuple[str, ...] = (
    "gpu",
    "engine",
    "model",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "dp_attention",
    "input_tokens",
    "output_tokens",
)
# plan.csv: one row per option, every cost component and the assumptions used.
PLAN_EXPORTED: tuple[str, ...] = (
    "rank",
    "gpu",
    "gpu_family",
    "engine",
    "model",
    "precision",
    "kv_precision",
    "kv_cache_format",
    "max_running_requests",
    "tp",
    "pp",
    "ep",
    "dp_attention",
    "mode",
    "prefill_workers",
    "decode_workers",
    "prefill_tp",
    "prefill_pp",
    "prefill_ep",
    "prefill_dp_attention",
    "prefill_pool_gpus",
    "decode_pool_gpus",
    "gpus",
    "servers_per_replica",
    "tp_link",
    "expert_link",
    "pp_link",
    "kv_link",
    "kv_transfer_s",
    "speculative",
    "draft_tokens",
    "acceptance_rate",
    "tokens_per_step",
    "prefix_hit_rate",
    "input_tokens",
    "output_tokens",
    "slo_batch",
    "batch",
    "meets_slo",
    "slo_miss",
    "fits",
    "reason",
    "offered_requests_per_s",
    "capacity_requests_per_s",
    "capacity_limit",
    "capacity_decode_batch",
    "capacity_tpot_s",
    "capacity_ttft_s",
    "capacity_prefill_busy",
    "concurrency",
    "decode_batch",
    "ttft_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "tpot_s",
    "request_latency_s",
    "decode_tokens_per_s_per_seq",
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "prefill_fraction",
    "prefill_utilization",
    "load_note",
    "memory_per_gpu_bytes",
    "prefill_memory_per_gpu_bytes",
    "weight_bytes",
    "kv_cache_bytes",
    "activation_bytes",
    "overhead_bytes",
    "usable_memory_bytes",
    "max_batch",
    "bound",
    "decode_weight_fraction",
    "decode_step_s",
    "decode_comm_s",
    "bytes_per_weight",
    "kv_bytes_per_element",
    "compute_dtype",
    "requests_per_s_per_replica",
    "replicas",
    "gpus_needed",
    "fleet_gpus",
    "gpus_bought",
    "servers_needed",
    "racks_needed",
    "fleet_kw",
    "utilization",
    "offer",
    "usd_per_gpu_hour",
    "rent_usd_per_gpu_hour",
    "amortized_usd_per_gpu_hour",
    "power_usd_per_gpu_hour",
    "hosting_usd_per_gpu_hour",
    "purchase_usd_per_gpu",
    "decode_tokens_per_s_per_seq_low",
    "decode_tokens_per_s_per_seq_high",
    "ttft_s_low",
    "ttft_s_high",
    "tpot_s_low",
    "tpot_s_high",
    "gpus_needed_low",
    "gpus_needed_high",
    "usd_per_million_output_tokens_low",
    "usd_per_million_output_tokens_high",
    "price_source",
    "usd_per_hour",
    "usd_per_million_output_tokens",
    "usd_per_million_input_tokens",
    "usd_per_million_decode_tokens",
    "capex_usd",
    "opex_usd_per_year",
    "fleet_usd_per_month",
    "fleet_usd_per_million_output_tokens",
    "fleet_usd_per_million_output_tokens_low",
    "fleet_usd_per_million_output_tokens_high",
    "tco_usd",
    "tco_usd_per_month",
    "horizon_years",
    "output_tokens_per_s_per_kw",
    "kwh_per_million_output_tokens",
    *EFFICIENCY_COLUMNS,
    "step_overhead_s",
    "tokens_per_joule",
    "peak_requests_per_s",
    "peak_users",
    "headroom",
    "redundancy",
    "ttft_target_s",
    "ttft_percentile",
    "tpot_target_s",
    "request_latency_target_s",
)
SCHEMA: dict[str, pl.DataType] = {col.name: col.dtype for col in COLUMNS}  # type: ignore[misc]


class _ColumnRefs:
    """`c.name` is `pl.col("name")` for a declared column; an undeclared name is an error."""

    def __getattr__(self, name: str) -> pl.Expr:
        if name not in BY_NAME:
            raise AttributeError(f"column {name!r} is not declared in llmsweep/columns.py")
        return pl.col(name)


c = _ColumnRefs()


def text(value: str | None) -> pl.Expr:
    """A literal for a text column (categorical, like the declared ones)."""
    return pl.lit(value, dtype=pl.Categorical)


def markdown_dictionary() -> str:
    """The README's column dictionary (exported columns, in CSV order)."""
    lines = ["| column | unit | meaning |", "| --- | --- | --- |"]
    for col in COLUMNS:
        if col.exported:
            lines.append(f"| `{col.name}` | {col.unit or '-'} | {col.description} |")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class OptionColumn:
    """A column of options.csv: a human header with its unit, read from a plan column and scaled."""

    header: str
    source: str  # plan column (or a name options.py computes)
    unit: str  # the human unit the values are in
    scale: float = 1.0
    description: str = ""
    labels: tuple[tuple[str, str], ...] = ()  # plan values shown as these words (a code kept for the program)


# The latency columns a target bounds, as the reports name them in prose ('p90 TTFT', as MLPerf does):
# slo_miss, capacity_limit's labels and the answers' sentences all read this one table.
TARGET_NAMES = {
    "ttft_s": "TTFT",
    "ttft_p90_s": "p90 TTFT",
    "ttft_p99_s": "p99 TTFT",
    "tpot_s": "TPOT",
    "request_latency_s": "request latency",
}
# capacity_limit's values: the latency column whose target binds first (or 'saturated')
CAPACITY_LIMIT_LABELS = (
    *((name, f"{label} target") for name, label in TARGET_NAMES.items()),
    ("saturated", "saturated (replica full)"),
)

# options.csv and the report's first table: one row per model x lengths x GPU x offer, the best layout
# for it under the targets, in human units (the plan frame keeps SI units).
OPTION_COLUMNS: tuple[OptionColumn, ...] = (
    OptionColumn("Model", "model", "", description="Model id."),
    OptionColumn("Input tokens", "input_tokens", "tokens", description="Prompt length."),
    OptionColumn("Output tokens", "output_tokens", "tokens", description="Generated tokens."),
    OptionColumn("GPU", "gpu", "", description="GPU catalog id."),
    OptionColumn("Offer", "offer", "", description="Price offer (rent, rent-<term>, buy-<years>y, example, name)."),
    OptionColumn("Price source", "price_source", "", description="Where the price comes from."),
    OptionColumn("Weights", "precision", "", description="Weight format of the best layout."),
    OptionColumn("KV cache", "kv_format", "", description="KV-cache format in force (`auto` resolved)."),
    OptionColumn("TP", "tp", "GPUs", description="Tensor-parallel size."),
    OptionColumn("PP", "pp", "GPUs", description="Pipeline-parallel size."),
    OptionColumn("EP", "ep", "GPUs", description="Expert-parallel size (MoE)."),
    OptionColumn("Attention DP", "dp_attention", "GPUs", description="Attention data-parallel groups (MoE)."),
    OptionColumn("Servers per replica", "servers_per_replica", "servers", description="Servers one replica spans."),
    OptionColumn("TP link", "tp_link", "", description="Link of the tp all-reduces (scale-up, pcie, scale-out)."),
    OptionColumn(
        "EP link",
        "expert_link",
        "",
        description="Slowest link of the experts' all-to-all or gather across attention-DP groups (none: the tp "
        "all-reduces carry the experts).",
    ),
    OptionColumn("PP link", "pp_link", "", description="Slowest link a pipeline stage boundary crosses."),
    OptionColumn("Serving mode", "mode", "", description="aggregated, or disaggregated (a prefill and a decode pool)."),
    OptionColumn(
        "xPyD",
        "xpyd",
        "",
        description="Disaggregated: x prefill and y decode workers a replica (TP..Attention DP are a decode worker's).",
    ),
    OptionColumn(
        "Prefill layout", "prefill_layout", "", description="A prefill worker's layout (tp, dp-attn, ep, pp)."
    ),
    OptionColumn("KV link", "kv_link", "", description="Link carrying the KV cache between the pools."),
    OptionColumn(
        "KV transfer (µs)", "kv_transfer_s", "µs", 1e6, description="One prompt's KV cache over it (0.81 ms: 810)."
    ),
    OptionColumn(
        "Speculative", "speculation", "", description="Speculative decoding: none, or the method and k (mtp k=1)."
    ),
    OptionColumn(
        "Acceptance",
        "acceptance_rate",
        "fraction",
        description="Per-token acceptance assumed: the sweep's, else the profile's default for the method.",
    ),
    OptionColumn("Prefix hit rate", "prefix_hit_rate", "fraction", description="Prompt tokens from the cache."),
    OptionColumn(
        "Batch",
        "batch",
        "sequences",
        description="The most requests one replica runs at once within the targets, as a load test keeping that "
        "many clients busy measures it (slo_batch); with a workload the replica runs Concurrency in flight.",
    ),
    OptionColumn(
        "Concurrency",
        "concurrency",
        "requests",
        description="Requests in flight per replica at the plan's traffic (its requests/s x request latency, "
        "Little's law); usually below Batch, the fleet being sized for the peak with headroom and spares; "
        "without a workload, the batch. The engine's limit on running requests must allow it.",
    ),
    OptionColumn(
        "Rank",
        "rank",
        "",
        description="The option's rank in plan.csv and the report (#) among the configurations "
        "of this model and lengths that meet the targets; the ranks it skips are other layouts of the options "
        "above it.",
    ),
    OptionColumn(
        "Meets targets",
        "meets_targets",
        "",
        description="yes, no (a target missed, or no fleet can be sized), or no targets (a sweep without "
        "slo: every option that fits and can be sized is ranked).",
    ),
    OptionColumn("Misses by", "slo_miss", "", description="The first target missed and by how much."),
    OptionColumn("GPUs", "fleet_gpus", "GPUs", description="GPUs of the fleet (one replica without a workload)."),
    OptionColumn(
        "GPUs bought",
        "gpus_bought",
        "GPUs",
        description="Bought offers: the GPUs paid for, in whole baseboards or NVL72 racks (PCIe cards singly).",
    ),
    OptionColumn(
        "Servers", "servers_needed", "servers", description="Servers of the fleet (bought: of the GPUs bought)."
    ),
    OptionColumn("Racks", "racks_needed", "racks", description="Racks (bought offers with a rack limit)."),
    OptionColumn("Power (kW)", "fleet_kw", "kW", description="IT power at full load, before PUE."),
    OptionColumn("Capex (USD)", "capex_usd", "USD", description="Paid up front: GPUs + servers + network."),
    OptionColumn("Opex (USD per year)", "opex_usd_per_year", "USD/year", description="Power + hosting, or rent."),
    OptionColumn(
        "Cost (USD per month)",
        "usd_per_month",
        "USD/month",
        description="TCO / (12 x horizon): cash per month over it.",
    ),
    OptionColumn("TCO (USD)", "tco_usd", "USD", description="Capex + horizon x opex (see Horizon)."),
    OptionColumn("Horizon (years)", "horizon_years", "years", description="Years the TCO covers (empty unpriced)."),
    OptionColumn(
        "USD per M output tokens",
        "usd_per_million",
        "USD/M tokens",
        description="With a workload the fleet's TCO over the tokens it serves; else a replica fully loaded.",
    ),
    OptionColumn(
        "USD per M (low)",
        "usd_per_million_low",
        "USD/M tokens",
        description="80 % band: with a workload the fleet of the band's fewest GPUs, else one replica's.",
    ),
    OptionColumn(
        "USD per M (high)",
        "usd_per_million_high",
        "USD/M tokens",
        description="80 % band: with a workload the fleet of the band's most GPUs, else one replica's.",
    ),
    OptionColumn(
        "USD per M input tokens",
        "usd_per_million_input",
        "USD/M tokens",
        description="The prompts' share of the cost in USD per M output tokens (the prefill pool's GPUs; "
        "aggregated, the prompts' share of a replica's time), over the input tokens.",
    ),
    OptionColumn(
        "USD per M output tokens (decode)",
        "usd_per_million_decode",
        "USD/M tokens",
        description="The rest of that cost over the output tokens: input x input tokens + this x output tokens "
        "= USD per M output tokens x output tokens.",
    ),
    OptionColumn(
        "Capacity (requests/s)",
        "capacity_requests_per_s",
        "requests/s",
        description="Largest request rate a replica takes within the targets.",
    ),
    OptionColumn(
        "Capacity limit",
        "capacity_limit",
        "",
        description="What stops it taking more: the latency target missed first, or saturation (KV slots or "
        "pool time full).",
        labels=CAPACITY_LIMIT_LABELS,
    ),
    OptionColumn(
        "kWh per M output tokens",
        "kwh_per_million_output_tokens",
        "kWh/M tokens",
        description="The GPUs' energy per million output tokens at the average traffic (their power alone, for "
        "every GPU and offer alike; a purchase's host power is in Power (kW)).",
    ),
    OptionColumn(
        "Tokens/s per kW", "output_tokens_per_s_per_kw", "tokens/s/kW", description="Output tokens/s per kW drawn."
    ),
    OptionColumn("Tokens/s per user", "decode_tokens_per_s_per_seq", "tokens/s", description="What one user sees."),
    OptionColumn(
        "TPOT (ms)",
        "tpot_s",
        "ms",
        1e3,
        description="Mean time per output token at the plan's traffic, what a TPOT target bounds (Tokens/s "
        "per user counts the wait for the first token too: output tokens / request latency).",
    ),
    OptionColumn(
        "TTFT (ms)",
        "ttft_s",
        "ms",
        1e3,
        description="Mean time to first token (a target with no percentile bounds it).",
    ),
    OptionColumn("TTFT p90 (ms)", "ttft_p90_s", "ms", 1e3, description="90th percentile of TTFT."),
    OptionColumn("USD per GPU-hour", "usd_per_gpu_hour", "USD/h", description="Amortised price per GPU-hour."),
)


def options_dictionary() -> str:
    """The README's table of options.csv columns."""
    lines = ["| header | unit | meaning |", "| --- | --- | --- |"]
    for col in OPTION_COLUMNS:
        scale = {1e3: " x 1000", 1e6: " x 10^6"}.get(col.scale, "")
        source = f" (`{col.source}`{scale})" if col.source in BY_NAME else ""
        lines.append(f"| {col.header} | {col.unit or '-'} | {col.description}{source} |")
    return "\n".join(lines)
