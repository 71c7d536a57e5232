"""Hugging Face config.json fields -> the architecture facts the estimator needs.

Catalog entries and users' own config.json files go through `read_config`, so a model is
described the same way wherever it comes from. Parameter counts are computed from the fields
(embeddings + attention + MLP or experts + routers + norms); tests check them against the
reference counts in shared/reference/models.yaml and against the figures the model makers publish.

Layers are sorted by what they keep per sequence (`_layer_kinds`): "full" attention layers cache
every token; "window" layers (sliding window, or Llama 4's chunked attention) at most W tokens;
"state" layers (Qwen3.5's Gated DeltaNet linear attention, Nemotron-H's Mamba2) a fixed-size
recurrent state whatever the context; "none" layers (Nemotron-H's MoE / MLP blocks) nothing.

A model's multi-token-prediction module (what `speculative: mtp` drafts with) is read from the
field its config.json names it by (`mtp_layers`): `num_nextn_predict_layers` (DeepSeek-V3/R1/V3.2,
GLM-5, Nemotron-3; Kimi K2 ships 0), `mtp_num_hidden_layers` (Qwen3.5) or `num_mtp_modules` with
`use_mtp` (MiniMax-M2.5). Its weights are not in `params_total` (the estimator adds them as the
draft's, estimate/speculative.py).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsweep.errors import ConfigFileError
from llmsweep.limits import CONFIG_FIELDS, RANGES, UnreadableFile, check, read_regular_file, yaml_number_hint

# config.json spellings of the same field, in order of preference (GPT-2/GPT-J style second).
_ALIASES = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "vocab_size": ("vocab_size",),
}
# Model types whose layers alternate sliding-window and full attention (layer 0 sliding).
_ALTERNATING_WINDOW = {"gemma2", "gemma3", "gemma3_text", "gpt_oss", "cohere2"}
# Model types with four norms per layer (pre/post attention and pre/post MLP).
_FOUR_NORMS = {"gemma2", "gemma3", "gemma3_text"}
# Model types with per-head RMSNorm on queries and keys.
_QK_NORM = {"qwen3", "qwen3_moe", "qwen3_5_text", "qwen3_5_moe_text"}
# Routers with a per-expert score-correction bias (DeepSeek-V3's "noaux_tc" routing and its kin).
_ROUTER_BIAS = {"deepseek_v3", "deepseek_v32", "kimi_k2", "glm_moe_dsa", "minimax_m2", "nemotron_h"}
# Bytes per element of recurrent state, by the dtype names config.json uses.
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
# Weight formats a checkpoint can declare -> llmsweep precision ids (catalog/precisions.yaml).
_QUANT_ALGO = {"fp8": "fp8", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "w4a16_awq": "int4", "int4_awq": "int4"}
_TORCH_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
# Model types with biases on the q, k and v projections.
_QKV_BIAS = {"qwen2", "qwen2_moe"}


@dataclass(frozen=True, slots=True)
class Architecture:
    """What the estimator needs to know about a transformer, in the notation of DESIGN.md §4."""

    model_type: str
    hidden_size: int  # d
    layers: int  # L
    attention_heads: int  # h_q
    kv_heads: int  # h_kv (for MLA: the latent is one shared "head")
    head_dim: int  # d_h used for the K/V cache (GQA)
    attention_head_dim: float  # mean of q.k and v head dims, for attention FLOPs
    intermediate_size: int
    vocab_size: int
    max_context_tokens: int | None
    experts: int  # E (0 = dense)
    experts_per_token: int  # k
    moe_layers: int
    expert_params: int  # parameters of one routed expert in one layer
    mla_kv_width: int  # kv_lora_rank + qk_rope_head_dim (0 = not MLA)
    sliding_window: int | None  # W: the sliding window, or Llama 4's attention chunk
    sliding_layers: int  # layers holding at most W tokens (sliding-window or chunked)
    params_total: int  # P
    params_active: int  # P_a: P minus the routed experts a token skips
    mlp_active_width: int  # intermediate width a token passes through (for activation memory)
    full_attention_layers: int = 0  # layers whose cache grows with the context
    state_layers: int = 0  # linear-attention / Mamba layers with a fixed-size state
    kv_full_elements_per_token: int = 0  # cache elements per token in the full layers
    kv_window_elements_per_token: int = 0  # cache elements per token in the window layers
    state_bytes_per_sequence: int = 0  # fixed recurrent state of one sequence, all state layers
    window_kind: str | None = None  # "sliding" or "chunked"
    window_attention_share: float = 0.0  # window layers' share of the attention FLOPs per key (0 = none)
    full_kv_heads: int = 0  # KV heads of the full-attention layers (Gemma 4's global heads); 0 = kv_heads
    indexer_head_dim: int = 0  # DSA lightning-indexer key cached per token per layer (0 = none)
    indexer_heads: int = 0  # DSA indexer query heads (index_n_heads)
    attention_topk: int | None = None  # DSA: cached tokens each query attends to (index_topk); None = all
    # Per head and cached key, multiply-adds of one decode step's attention / 2 (so FLOPs per key =
    # 4 x L x h_q x this): the head dim for GQA; MLA decodes absorbed, in the latent:
    # q.k over kv_lora_rank + qk_rope_head_dim and attention.v over kv_lora_rank, (2 x 512 + 64) / 2
    # = 544 for DeepSeek-V3 (FlashMLA), where prefill computes per head (192 + 128) / 2 = 160.
    decode_attention_head_dim: float = 0.0
    shared_experts: int = 0
    dense_layers: int = 0  # layers with a dense MLP in an MoE model (first_k_dense_replace, interleaving)
    mtp_layers: int = 0  # multi-token-prediction modules the checkpoint ships (0 = none; `_mtp_layers`)
    # Width of the vector a routed token travels at through the MoE layers (dispatch, combine, the
    # kernels around the expert GEMMs): d, or Nemotron-3's moe_latent_size (LatentMoE projects each
    # token to the latent before routing it); 0 = d.
    moe_width: int = 0
    # The token embedding (V x d, a lookup table) and the LM head (the d -> V projection, V x d, plus
    # GPT-J's bias), both in params_total; with tied embeddings they are one table, counted once.
    embedding_params: int = 0
    lm_head_params: int = 0
    tied_embeddings: bool = False
    # Parameters by module group, all layers, for the modules a quantised checkpoint may keep
    # unconverted (`unconverted_params`): attention (projections, biases and q/k norms; MLA with
    # its DSA indexer), routers (with their score-correction bias), shared experts (with Qwen's
    # sigmoid gate) and the dense MLPs of an MoE model.
    attention_params: int = 0
    router_params: int = 0
    shared_expert_params: int = 0
    dense_mlp_params: int = 0

    @property
    def is_mla(self) -> bool:
        return self.mla_kv_width > 0

    @property
    def tp_allreduces(self) -> int:
        """Tensor-parallel all-reduces of one forward pass: one after each row-parallel sublayer, two per
        layer (attention, then the MLP or MoE); Nemotron-H's blocks hold one mixer each (attention,
        Mamba2, MoE or MLP: hybrid_override_pattern), one per block."""
        return self.layers if self.model_type.startswith("nemotron_h") else 2 * self.layers

    @property
    def attention_layers(self) -> int:
        """Layers that attend over cached tokens (full + window); the rest keep a state or nothing."""
        return self.full_attention_layers + self.sliding_layers

    @property
    def kv_elements_per_token(self) -> int:
        """Cache elements one token adds, summed over all attention layers (before any window).

        GQA: 2 x h_kv x d_h per layer (DESIGN §4; h_kv, not h_q). MLA: kv_lora_rank + qk_rope_head_dim
        per layer, plus index_head_dim for a DSA indexer. Linear-attention, Mamba and MoE-only layers
        add nothing per token (their fixed state is `state_bytes_per_sequence`).
        """
        return self.kv_full_elements_per_token + self.kv_window_elements_per_token

    @property
    def kv_elements_per_token_window(self) -> int:
        """The part of `kv_elements_per_token` held by window layers (at most W tokens each)."""
        return self.kv_window_elements_per_token

    def kv_bytes_per_sequence(self, context_tokens: int, bytes_per_element: float) -> float:
        """Cache bytes of one sequence: full layers x context + window layers x min(context, W),
        plus the fixed recurrent state (which does not depend on the KV precision)."""
        window = min(context_tokens, self.sliding_window) if self.sliding_window else context_tokens
        elements = self.kv_full_elements_per_token * context_tokens + self.kv_window_elements_per_token * window
        return elements * bytes_per_element + self.state_bytes_per_sequence


def _get(cfg: dict, key: str, where: str, required: bool = True, default: Any = None) -> Any:
    for k in _ALIASES.get(key, (key,)):
        if cfg.get(k) is not None:
            v = cfg[k]
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0 or int(v) != v:
                hint = yaml_number_hint(v)
                raise ConfigFileError(f"{where}: field {k!r} must be a positive integer, got {v!r}{hint}")
            _check_range(k, v, where)
            return int(v)
    if required:
        raise ConfigFileError(
            f"{where}: missing field {key!r} (a Hugging Face config.json for a decoder-only transformer has it)"
        )
    return default


def _layer_kinds(cfg: dict, model_type: str, n_layers: int, window: int | None, where: str) -> list[str]:
    """Each layer's cache kind: "full", "window", "state" or "none" (see the module docstring)."""
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str):  # Nemotron-H: * attention, M Mamba2, E MoE, - MLP
        if len(pattern) != n_layers:
            raise ConfigFileError(
                f"{where}: hybrid_override_pattern has {len(pattern)} characters for {n_layers} layers"
            )
        return ["full" if ch == "*" else "state" if ch == "M" else "none" for ch in pattern]
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != n_layers:
            raise ConfigFileError(f"{where}: layer_types lists {len(types)} layers, num_hidden_layers is {n_layers}")
        kinds = []
        for t in map(str, types):
            if "linear" in t or "mamba" in t:
                kinds.append("state")
            elif ("sliding" in t or "chunked" in t) and window:
                kinds.append("window")
            else:
                kinds.append("full")
        return kinds
    if model_type.startswith("llama4") and window:
        # transformers' Llama4TextConfig: RoPE layers use chunked attention, every
        # no_rope_layer_interval-th layer (NoPE) attends globally; an explicit no_rope_layers wins.
        no_rope = cfg.get("no_rope_layers")
        if isinstance(no_rope, list) and len(no_rope) == n_layers:
            return ["window" if r else "full" for r in no_rope]
        interval = _get(cfg, "no_rope_layer_interval", where, False) or 4
        return ["full" if (i + 1) % interval == 0 else "window" for i in range(n_layers)]
    if window and model_type in _ALTERNATING_WINDOW:
        return ["window" if i % 2 == 0 else "full" for i in range(n_layers)]
    return ["window" if window else "full"] * n_layers


def _state_layer(cfg: dict, model_type: str, d: int, where: str) -> tuple[int, int]:
    """(parameters, fixed state bytes per sequence) of one linear-attention or Mamba2 layer.

    Gated DeltaNet (Qwen3.5; transformers Qwen3-Next/Qwen3.5 layout): in_proj q,k (key dim each),
    v,z (value dim each), b,a (one per value head); depthwise conv over q,k,v; dt_bias, A_log per
    value head; a gated RMSNorm of the value head dim; out_proj. State = value heads x key_dim x
    value_dim in `mamba_ssm_dtype` + the conv window (kernel - 1) x conv channels in bf16, the
    formula of aiconfigurator's qwen35.py.
    Mamba2 (Nemotron-H): in_proj to z, x, B, C, dt (d_inner + conv channels + heads); conv with
    bias over x, B, C; dt_bias, A_log, D per head; RMSNorm of d_inner; out_proj. State = heads x
    head_dim x ssm_state_size in `mamba_ssm_cache_dtype` + conv window in bf16.
    """
    if model_type.startswith("nemotron_h"):
        heads = _get(cfg, "mamba_num_heads", where)
        inner = heads * _get(cfg, "mamba_head_dim", where)
        n_state = _get(cfg, "ssm_state_size", where)
        conv_ch = inner + 2 * _get(cfg, "n_groups", where) * n_state
        kernel = _get(cfg, "conv_kernel", where)
        params = d * (inner + conv_ch + heads) + conv_ch * kernel + conv_ch + 3 * heads + inner + inner * d
        ssm = heads * (inner // heads) * n_state
        dtype = str(cfg.get("mamba_ssm_cache_dtype") or "float32")
    else:
        kh, kd = _get(cfg, "linear_num_key_heads", where), _get(cfg, "linear_key_head_dim", where)
        vh, vd = _get(cfg, "linear_num_value_heads", where), _get(cfg, "linear_value_head_dim", where)
        kernel = _get(cfg, "linear_conv_kernel_dim", where)
        key, value = kh * kd, vh * vd
        conv_ch = 2 * key + value
        params = d * (2 * key + 2 * value + 2 * vh) + conv_ch * kernel + 2 * vh + vd + value * d
        ssm = vh * kd * vd
        dtype = str(cfg.get("mamba_ssm_dtype") or "float32")
    state = ssm * _DTYPE_BYTES.get(dtype, 4) + conv_ch * (kernel - 1) * 2
    return params, state


# config.json fields that count a model's multi-token-prediction modules, by model family.
_MTP_FIELDS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")


def _mtp_layers(cfg: dict, where: str) -> int:
    """MTP modules of the checkpoint: num_nextn_predict_layers (DeepSeek-V3, GLM-5, Nemotron-3),
    mtp_num_hidden_layers (Qwen3.5's text_config), num_mtp_modules when use_mtp (MiniMax-M2.5); 0
    when the config names none (or says 0, as Kimi K2 does)."""
    for key in _MTP_FIELDS:
        if cfg.get(key):
            return _count(cfg, key, where)
    if cfg.get("use_mtp") is True:
        return _count(cfg, "num_mtp_modules", where)
    return 0


def _count(cfg: dict, key: str, where: str) -> int:
    """An optional non-negative integer field (0 and absent both mean none)."""
    v = cfg.get(key)
    if v is None or v == 0:
        return 0
    return _get(cfg, key, where)


class _Looked(dict):
    """A config mapping that remembers the keys read_config looked up."""

    def __init__(self, data: dict) -> None:
        super().__init__(data)
        self.looked: set[str] = set()

    def get(self, key, default=None):
        self.looked.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.looked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        self.looked.add(key)
        return super().__contains__(key)


def config_slips(cfg: dict) -> list[tuple[str, str]]:
    """(given, meant) for each field of `cfg` llmsweep does not read that is close to one it looked
    for and did not find ('num_kv_heads' for 'num_key_value_heads', which then defaults to the
    attention heads): a config.json carries many other fields, so these are said, not refused.
    Read from the top level (a multimodal config's text_config fields are read as one)."""
    import difflib

    looked = _Looked(cfg)
    try:
        read_config(looked)
    except ConfigFileError:
        return []
    missing = sorted(k for k in looked.looked if not dict.__contains__(cfg, k))
    # closer than did_you_mean's 0.6: real fields such as mlp_only_layers are 0.6 from others
    near = {k: difflib.get_close_matches(k, missing, n=1, cutoff=0.75) for k in cfg if k not in looked.looked}
    return [(k, hint[0]) for k, hint in near.items() if hint]


def read_config(cfg: dict, where: str = "config") -> Architecture:
    """Normalise a config.json mapping into an `Architecture` (parameters counted from the fields)."""
    if not isinstance(cfg, dict):
        raise ConfigFileError(f"{where}: expected a JSON object of config.json fields, got {type(cfg).__name__}")
    if isinstance(cfg.get("text_config"), dict):  # multimodal wrappers keep the LLM here
        cfg = {
            **cfg["text_config"],
            "model_type": cfg["text_config"].get("model_type", cfg.get("model_type")),
        }
    model_type = str(cfg.get("model_type") or "unknown")
    d = _get(cfg, "hidden_size", where)
    n_layers = _get(cfg, "num_hidden_layers", where)
    h_q = _get(cfg, "num_attention_heads", where)
    h_kv = _get(cfg, "num_key_value_heads", where, required=False, default=h_q)
    vocab = _get(cfg, "vocab_size", where)
    if h_q % h_kv:
        raise ConfigFileError(f"{where}: num_attention_heads ({h_q}) is not a multiple of num_key_value_heads ({h_kv})")
    d_h = _get(cfg, "head_dim", where, required=False, default=None) or d // h_q
    if d_h == 0:
        raise ConfigFileError(
            f"{where}: hidden_size ({d}) is smaller than num_attention_heads ({h_q}), which leaves "
            "attention heads of size 0; check both fields (or give head_dim)"
        )
    n_inner = _get(cfg, "n_inner", where, required=False)
    inter = _get(cfg, "intermediate_size", where, required=False, default=n_inner or 4 * d)
    max_ctx = _get(cfg, "max_position_embeddings", where, required=False) or _get(
        cfg, "n_positions", where, required=False
    )
    tied = bool(cfg.get("tie_word_embeddings", model_type in _FOUR_NORMS))
    gated = model_type not in {"gptj", "gpt2", "gpt_neox", "opt", "falcon", "nemotron_h"} and cfg.get("mlp") != "gelu"

    # Mixture of experts (Mixtral / gpt-oss / Llama 4: num_local_experts; Qwen-MoE / Gemma 4:
    # num_experts; DeepSeek / Kimi / GLM / Nemotron-H: n_routed_experts)
    experts = (
        _get(cfg, "num_local_experts", where, False)
        or _get(cfg, "num_experts", where, False)
        or _get(cfg, "n_routed_experts", where, False)
        or 0
    )
    k = (
        _get(cfg, "num_experts_per_tok", where, False)
        or _get(cfg, "experts_per_token", where, False)
        or _get(cfg, "top_k_experts", where, False)
        or 0
    )
    if experts and not k:
        raise ConfigFileError(f"{where}: a mixture-of-experts config needs 'num_experts_per_tok'")
    if experts and k > experts:
        raise ConfigFileError(f"{where}: num_experts_per_tok ({k}) exceeds the number of experts ({experts})")
    moe_inter = _get(cfg, "moe_intermediate_size", where, False) or inter
    # Shared experts: DeepSeek counts them (n_shared_experts x moe width); Qwen-MoE / Qwen3.5 give a
    # width (shared_expert_intermediate_size, with a sigmoid gate); Nemotron-H both; Llama 4 has
    # one shared expert of intermediate_size in every MoE layer (transformers Llama4TextMoe).
    shared = _count(cfg, "n_shared_experts", where)
    qwen_shared = _count(cfg, "shared_expert_intermediate_size", where)
    shared_width = _count(cfg, "moe_shared_expert_intermediate_size", where) or qwen_shared
    shared_gate = bool(qwen_shared)  # Qwen-MoE's shared expert has a sigmoid gate, Linear(d, 1)
    if model_type.startswith("llama4") and experts:
        shared, shared_width = 1, inter
    elif shared and not shared_width:
        shared_width = shared * moe_inter
    elif shared_width and not shared:
        shared = 1
    if not experts:
        shared = shared_width = 0
    dense_first = _count(cfg, "first_k_dense_replace", where)
    step = _get(cfg, "interleave_moe_layer_step", where, False) or 1

    # Multi-head latent attention (DeepSeek-V2/V3, Kimi K2, GLM-5), with an optional DSA indexer
    # (DeepSeek-V3.2, GLM-5): per layer it caches one index_head_dim key per token beside the latent.
    kv_lora = _get(cfg, "kv_lora_rank", where, False)
    index_dim = _get(cfg, "index_head_dim", where, False) or 0
    g_dim, g_kv = 0, h_kv  # Gemma 4's full layers: their head dim and KV heads (0: as the others)
    if kv_lora:
        rope = _get(cfg, "qk_rope_head_dim", where)
        nope = _get(cfg, "qk_nope_head_dim", where)
        v_dim = _get(cfg, "v_head_dim", where)
        q_lora = _get(cfg, "q_lora_rank", where, False)
        mla_width = kv_lora + rope
        attn_dim = (nope + rope + v_dim) / 2
        decode_dim = (2 * kv_lora + rope) / 2
        q_params = (d * q_lora + q_lora + q_lora * h_q * (nope + rope)) if q_lora else d * h_q * (nope + rope)
        attn_params = q_params + d * (kv_lora + rope) + kv_lora + kv_lora * h_q * (nope + v_dim) + h_q * v_dim * d
        if index_dim:  # wq_b, wk, k_norm (LayerNorm: weight + bias), weights_proj
            index_heads = _get(cfg, "index_n_heads", where)
            attn_params += (q_lora or d) * index_heads * index_dim + d * index_dim + 2 * index_dim + d * index_heads
        full_attn_params = window_attn_params = attn_params
        per_layer_kv = per_layer_kv_window = mla_width + index_dim
    else:
        mla_width = 0
        attn_dim = decode_dim = float(d_h)
        attn_params = d * (h_q + 2 * h_kv) * d_h + h_q * d_h * d
        if cfg.get("attn_output_gate"):  # Qwen3.5: q_proj also emits a per-head output gate
            attn_params += d * h_q * d_h
        if cfg.get("attention_bias") or model_type in _QKV_BIAS:
            attn_params += (h_q + 2 * h_kv) * d_h
        if cfg.get("attention_bias") and model_type not in _QKV_BIAS:
            attn_params += d  # output projection bias
        if model_type in _QK_NORM:
            attn_params += 2 * d_h
        if model_type == "minimax_m2" and cfg.get("use_qk_norm"):  # per-layer norm over all heads
            attn_params += (h_q + h_kv) * d_h
        per_layer_kv = per_layer_kv_window = 2 * h_kv * d_h
        full_attn_params = window_attn_params = attn_params
        g_dim = _get(cfg, "global_head_dim", where, False) or 0
        if g_dim:  # Gemma 4: full layers use their own head dim and KV heads; K may double as V
            g_kv = _get(cfg, "num_global_key_value_heads", where, False) or h_kv
            k_eq_v = bool(cfg.get("attention_k_eq_v"))
            full_attn_params = d * (h_q + g_kv * (1 if k_eq_v else 2)) * g_dim + h_q * g_dim * d + 2 * g_dim
            window_attn_params += 2 * d_h
            # the cache keeps K and V tensors even when V is the K projection (transformers'
            # Gemma 4 passes both to the cache), so both count
            per_layer_kv = 2 * g_kv * g_dim

    # Windows: Mistral-7B-v0.1 / Phi-3 slide on every layer; Gemma-2 / gpt-oss / Gemma 4 on the
    # layers `layer_types` marks; Llama 4 chunks attention (a token sees at most its own 8192-token
    # chunk, so such a layer holds at most that many tokens, like a window).
    window = _get(cfg, "sliding_window", where, False)
    window_kind = "sliding"
    if cfg.get("use_sliding_window") is False or (window and max_ctx and window >= max_ctx):
        window = None
    if not window and model_type.startswith("llama4"):
        window = _get(cfg, "attention_chunk_size", where, False)
        window_kind = "chunked"
    kinds = _layer_kinds(cfg, model_type, n_layers, window, where)
    n_full, n_window, n_state = kinds.count("full"), kinds.count("window"), kinds.count("state")
    # Gemma 4's full layers attend at their own head dim: the attention dims are the FLOP-weighted
    # mean over the attention layers, and the window layers' share of the FLOPs per key is theirs.
    full_dim = float(g_dim or attn_dim)
    window_share = n_window * attn_dim / (n_window * attn_dim + n_full * full_dim) if n_window else 0.0
    if n_full + n_window and full_dim != attn_dim:
        attn_dim = decode_dim = (n_full * full_dim + n_window * attn_dim) / (n_full + n_window)
    state_params = state_bytes = 0
    if n_state:
        state_params, state_bytes = _state_layer(cfg, model_type, d, where)

    # Which layers hold experts: all but the first_k_dense_replace; Llama 4 every
    # interleave_moe_layer_step-th (layers step-1, 2 step-1, ...); Nemotron-H the "E" blocks.
    if not experts:
        moe_layers = 0
    elif isinstance(cfg.get("hybrid_override_pattern"), str):
        moe_layers = cfg["hybrid_override_pattern"].count("E")
    else:
        moe_layers = len(range(dense_first + step - 1, n_layers, step))
    dense_layers = n_layers - moe_layers if experts else 0

    # Parameters: embeddings, attention, MLP or experts + router, norms.
    mlp_bias = (inter + d) if not gated and model_type != "nemotron_h" else 0
    dense_inter = _get(cfg, "intermediate_size_mlp", where, False) or inter
    dense_mlp = (3 if gated else 2) * d * dense_inter + mlp_bias
    norm_width = 2 * d if not gated and model_type != "nemotron_h" else d  # LayerNorm has a bias
    router = d * experts + (
        experts if (model_type in _ROUTER_BIAS or cfg.get("attention_bias") or cfg.get("use_routing_bias")) else 0
    )
    latent = _get(cfg, "moe_latent_size", where, False)
    if latent:  # Nemotron-3 latent MoE: experts work in a narrower latent space (ReLU^2, no gate)
        expert = 2 * latent * moe_inter
        shared_params = 2 * d * shared_width
        moe_extra = 2 * d * latent + shared_params
    else:
        expert = 3 * d * moe_inter
        shared_params = 3 * d * shared_width + (d if shared_gate else 0)
        moe_extra = shared_params
    if cfg.get("attention_bias") and experts:  # gpt-oss experts carry biases too
        expert += 2 * moe_inter + d
    moe_layer = experts * expert + moe_extra + router
    norms_per_layer = 4 if model_type in _FOUR_NORMS else (1 if model_type in {"gptj", "nemotron_h"} else 2)
    if model_type.startswith("nemotron_h"):
        # one pre-norm per block; the block is attention, Mamba2, MoE or MLP
        body = (
            n_full * full_attn_params
            + n_state * state_params
            + moe_layers * moe_layer
            + (n_layers - n_full - n_state - moe_layers) * dense_mlp
        )
        dense_layers = 0
    else:
        body = (
            n_full * full_attn_params
            + n_window * window_attn_params
            + n_state * state_params
            + (n_layers - moe_layers) * dense_mlp
            + moe_layers * moe_layer
        )
        if cfg.get("enable_moe_block"):  # Gemma 4: a dense MLP beside the experts in every layer
            body += moe_layers * dense_mlp + moe_layers * 3 * d  # plus the MoE block's extra norms
            dense_layers = 0
    total = (
        vocab * d * (1 if tied else 2)
        + (vocab if model_type == "gptj" else 0)  # GPT-J's lm_head has a bias
        + body
        + n_layers * norms_per_layer * norm_width
        + norm_width
    )
    skipped = moe_layers * (experts - k) * expert
    dense_mlp_layers = n_layers - moe_layers - (n_full + n_state if model_type.startswith("nemotron_h") else 0)
    if cfg.get("enable_moe_block"):
        dense_mlp_layers = n_layers
    _check_range("params_total", total, where, what="the parameter count computed from the fields")
    active_width = (k * moe_inter + shared_width) if experts else inter
    if cfg.get("enable_moe_block"):
        active_width += inter
    return Architecture(
        model_type=model_type,
        hidden_size=d,
        layers=n_layers,
        attention_heads=h_q,
        kv_heads=1 if kv_lora else h_kv,
        full_kv_heads=1 if kv_lora else g_kv,
        head_dim=d_h,
        attention_head_dim=attn_dim,
        intermediate_size=inter,
        vocab_size=vocab,
        max_context_tokens=max_ctx,
        experts=experts,
        experts_per_token=k,
        moe_layers=moe_layers,
        expert_params=expert if experts else 0,
        mla_kv_width=mla_width,
        sliding_window=window if n_window else None,
        sliding_layers=n_window,
        params_total=int(total),
        params_active=int(total - skipped),
        mlp_active_width=active_width,
        full_attention_layers=n_full,
        state_layers=n_state,
        kv_full_elements_per_token=n_full * per_layer_kv,
        kv_window_elements_per_token=n_window * per_layer_kv_window,
        state_bytes_per_sequence=n_state * state_bytes,
        window_kind=window_kind if n_window else None,
        window_attention_share=window_share,
        indexer_head_dim=index_dim,
        indexer_heads=_get(cfg, "index_n_heads", where) if index_dim else 0,
        attention_topk=_get(cfg, "index_topk", where) if index_dim else None,
        decode_attention_head_dim=decode_dim,
        shared_experts=shared,
        dense_layers=dense_layers,
        mtp_layers=_mtp_layers(cfg, where),
        moe_width=(latent or d) if experts else 0,
        embedding_params=vocab * d,
        lm_head_params=vocab * d + (vocab if model_type == "gptj" else 0),
        tied_embeddings=tied,
        attention_params=n_full * full_attn_params + n_window * window_attn_params,
        router_params=moe_layers * router if experts else 0,
        shared_expert_params=moe_layers * shared_params if experts else 0,
        dense_mlp_params=dense_mlp_layers * dense_mlp if experts else 0,
    )


def checkpoint_precision(cfg: dict, hf_quant_config: dict | None = None) -> tuple[str | None, str | None]:
    """The weight format a checkpoint ships in, as a precision id, and where that was read.

    ModelOpt's hf_quant_config.json (`quantization.quant_algo`: FP8, NVFP4) wins over config.json's
    `quantization_config` (`quant_method`: fp8, mxfp4; compressed-tensors with its weight bits and
    group size: int4, float8, float4 in groups of 16 (NVFP4) or 32 (MXFP4); AMD Quark's
    global_quant_config.weight dtype: fp4 in groups of 32 (MXFP4, as amd/*-MXFP4 checkpoints ship),
    fp8_e4m3; amd-quark 0.13, quark/torch/quantization/config/type.py), which wins over the
    unquantised `torch_dtype` / `dtype`. (None, None) when the
    config states none of them. Mixed checkpoints name the format of their quantised (largest)
    part; the explanation says which modules stay unconverted.
    """
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg, **cfg["text_config"]}
    algo = ((hf_quant_config or {}).get("quantization") or {}).get("quant_algo")
    if isinstance(algo, str) and algo.lower() in _QUANT_ALGO:
        return _QUANT_ALGO[algo.lower()], f"hf_quant_config.json quantization.quant_algo {algo}"
    q = cfg.get("quantization_config")
    if isinstance(q, dict):
        method = str(q.get("quant_method") or "").lower()
        skipped = _unconverted(q)
        kept = (
            f"; not converted: {', '.join(map(str, skipped[:6]))}{' ...' if len(skipped) > 6 else ''}"
            if skipped
            else ""
        )
        if method in _QUANT_ALGO:
            return _QUANT_ALGO[method], f"config.json quantization_config.quant_method {method}{kept}"
        if method == "compressed-tensors":
            groups = q.get("config_groups")
            for group in groups.values() if isinstance(groups, dict) else ():
                w = _mapping(_mapping(group).get("weights"))
                bits, size, kind = w.get("num_bits"), w.get("group_size"), w.get("type")
                if kind == "int" and bits == 4 and size in (32, 128):
                    pid = "int4" if size == 128 else "int4-g32"
                    return pid, f"config.json quantization_config: compressed-tensors int4, group {size}{kept}"
                if kind == "float" and bits == 8:
                    return "fp8", f"config.json quantization_config: compressed-tensors float8{kept}"
                if kind == "float" and bits == 4 and size in (16, 32):  # nvfp4-pack-quantized; MX: group 32
                    pid = "nvfp4" if size == 16 else "mxfp4"
                    return pid, f"config.json quantization_config: compressed-tensors float4, group {size}{kept}"
        if method == "quark":  # AMD Quark: global_quant_config.weight (a list when layered: the first)
            w = _mapping(q.get("global_quant_config")).get("weight")
            w = _mapping(w[0] if isinstance(w, list) and w else w)
            dtype = str(w.get("dtype") or "").lower()
            if dtype == "fp4" and w.get("group_size") == 32:  # e2m1 with an e8m0 scale per 32: MXFP4
                return "mxfp4", f"config.json quantization_config: quark fp4, group 32 (MXFP4){kept}"
            if dtype.startswith("fp8"):
                return "fp8", f"config.json quantization_config: quark {dtype}{kept}"
        if method in {"awq", "gptq"} and q.get("bits") == 4 and q.get("group_size") == 128:
            return "int4", f"config.json quantization_config.quant_method {method}, 4 bits, group 128"
    dtype = cfg.get("torch_dtype") or cfg.get("dtype")
    if isinstance(dtype, str) and dtype in _TORCH_DTYPE:
        return _TORCH_DTYPE[dtype], f"config.json {'torch_dtype' if cfg.get('torch_dtype') else 'dtype'} {dtype}"
    return None, None


def unread_quantization(cfg: dict) -> str | None:
    """What to say of a config.json whose `quantization_config` names no format checkpoint_precision
    reads (bitsandbytes, hqq, AWQ in groups of 64, compressed-tensors int8, a malformed block): the
    precision `auto` then takes its unquantised dtype, which for quantised weights is several times
    their size. None when there is no quantization_config, or when it is read."""
    merged = {**cfg, **cfg["text_config"]} if isinstance(cfg.get("text_config"), dict) else cfg
    q = merged.get("quantization_config")
    pid, why = checkpoint_precision(cfg)
    if q is None or (why or "").startswith(("config.json quantization_config", "hf_quant_config")):
        return None
    method = q.get("quant_method") if isinstance(q, dict) else None
    what = f"quant_method {method!r}" if isinstance(method, str) and method else "no quant_method"
    if not isinstance(q, dict):
        what = "not a mapping"
    return (
        f"its config.json's quantization_config ({what}) names no weight format llmsweep reads, so precision auto "
        f"takes its weights as {pid or 'bf16'}; if they are quantised, give the precision (e.g. int4, fp8)"
    )


# The last name of a module a quantised checkpoint lists as unconverted (a regex's `.*` dropped)
# -> the Architecture group of parameters it keeps at 16 bits (dense MLP projections: _module_group).
_UNCONVERTED_GROUPS = {
    "self_attn": "attention_params",
    "attn": "attention_params",
    "router": "router_params",
    "gate": "router_params",
    "shared_experts": "shared_expert_params",
    "shared_expert": "shared_expert_params",
}


def _module_group(pattern: str) -> str | None:
    """The Architecture group a `modules_to_not_convert` / `ignore` entry names, or None.

    `model.layers.*.self_attn` (gpt-oss), `re:.*self_attn.*` (Kimi-K2.5) -> attention;
    `model.layers.*.mlp.router`, `gate` (MiniMax-M2.5), `model.layers.3.mlp.gate` -> router;
    `re:.*shared_experts.*` -> shared experts; `re:.*mlp\\.(gate|up|gate_up|down)_proj.*` (a dense
    MLP's projections, not an expert's) -> dense MLP. Sub-modules (`self_attn.indexers_proj`),
    norms, biases, `lm_head` and `embed_tokens` name no group (the embedding and LM head are costed
    at 16 bits for every quantised format anyway; norms and biases are negligible)."""
    parts = [x for x in pattern.removeprefix("re:").replace("\\", "").replace("*", "").split(".") if x]
    if not parts:
        return None
    if parts[-1].endswith("_proj"):  # a projection: only a dense MLP's (mlp.down_proj) is a group
        dense = len(parts) > 1 and parts[-2] == "mlp" and not any("expert" in x for x in parts)
        return "dense_mlp_params" if dense else None
    return _UNCONVERTED_GROUPS.get(parts[-1])


def unconverted_params(cfg: dict, arch: Architecture) -> int:
    """Parameters a quantised checkpoint keeps unconverted (16-bit) beyond its embedding and LM
    head: the module groups its config.json's quantization_config lists in `modules_to_not_convert`
    (transformers; gpt-oss, MiniMax-M2.5), `ignore` (compressed-tensors; Kimi-K2.5) or `exclude`
    (AMD Quark), each group
    counted whole, in all layers (`_module_group`). 0 for a checkpoint that lists none.

    gpt-oss-120b (`model.layers.*.self_attn`, `model.layers.*.mlp.router`): attention 36 x
    (2,880 x (64 + 2 x 8) x 64 + 64 x 64 x 2,880 + (64 + 2 x 8) x 64 + 2,880) = 36 x 26,550,080
    = 955,802,880 (projections and their biases) + routers 36 x (2,880 x 128 + 128) = 13,275,648:
    969,078,528 parameters at 16 bits, not 4.25."""
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg, **cfg["text_config"]}
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return 0
    groups = {_module_group(m) for m in _unconverted(q)} - {None}
    return sum(getattr(arch, g) for g in groups)


def _unconverted(q: dict) -> list[str]:
    """The modules a quantization_config keeps unconverted: `modules_to_not_convert` (transformers),
    `ignore` (compressed-tensors) or `exclude` (AMD Quark); [] when it lists none or not as a list."""
    listed = q.get("modules_to_not_convert") or q.get("ignore") or q.get("exclude") or []
    return [str(m) for m in listed] if isinstance(listed, list) else []


def _mapping(value: Any) -> dict:
    """A config.json field read as a mapping: itself, or {} when it is anything else."""
    return value if isinstance(value, dict) else {}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a config.json field can hold (standard JSON has no NaN or Infinity)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} is given twice; keep one")
        out[key] = value
    return out


def _check_range(key: str, value: int | float, where: str, what: str | None = None) -> None:
    """Bounds from llmsweep.limits, so the arithmetic on these fields stays finite and exact."""
    problem = check(CONFIG_FIELDS.get(key, key if key in RANGES else "config_width"), value)
    if problem:
        raise ConfigFileError(f"{where}: {what or f'field {key!r}'} {problem}")


def load_config_file(path: str | Path) -> tuple[dict, Architecture]:
    """Read a local config.json (no network) and return its fields and architecture."""
    p = Path(path)
    folder = os.path.isdir(p)  # False for a path the OS cannot take (too long), where Path raises
    if folder:
        p = p / "config.json"
    try:
        raw = read_regular_file(p)
    except FileNotFoundError:
        if folder:
            raise ConfigFileError(
                f"{path}: the folder has no config.json (give a Hugging Face model's folder or its config.json)"
            ) from None
        raise ConfigFileError(f"{path}: file not found (give the path of a Hugging Face config.json)") from None
    except UnreadableFile as e:
        raise ConfigFileError(f"{path}: {e}") from None
    except OSError as e:
        raise ConfigFileError(f"{path}: cannot read the file ({e.strerror})") from None
    try:
        cfg = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError:
        raise ConfigFileError(f"{p}: not UTF-8 text; is this a config.json?") from None
    except json.JSONDecodeError as e:
        raise ConfigFileError(f"{p}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    except ValueError as e:  # NaN / Infinity, or an integer of more than 4,300 digits
        raise ConfigFileError(f"{p}: invalid JSON: {e}") from None
    except RecursionError:
        raise ConfigFileError(f"{p}: invalid JSON: nested too deeply to be a config.json") from None
    return cfg, read_config(cfg, where=str(p))
