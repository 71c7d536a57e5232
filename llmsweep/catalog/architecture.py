"""Hugging Face config.json fields -> the architecture facts the estimator needs.

Catalog entries and users' own config.json files go through `read_config`, so a model is
described the same way wherever it comes from. Parameter counts are computed from the fields
(embeddings + attention + MLP or experts + routers + norms); tests check them against the
reference counts in shared/reference/models.yaml.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsweep.errors import ConfigFileError
from llmsweep.limits import CONFIG_FIELDS, RANGES, UnreadableFile, check, read_regular_file

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
_QK_NORM = {"qwen3", "qwen3_moe"}
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
    sliding_window: int | None
    sliding_layers: int
    params_total: int  # P
    params_active: int  # P_a: P minus the routed experts a token skips
    mlp_active_width: int  # intermediate width a token passes through (for activation memory)

    @property
    def is_mla(self) -> bool:
        return self.mla_kv_width > 0

    @property
    def kv_elements_per_token(self) -> int:
        """K and V elements one token adds to the cache, summed over all layers (before any window).

        GQA: 2 x L x h_kv x d_h (DESIGN §4; h_kv, not h_q). MLA: L x (kv_lora_rank + qk_rope_head_dim).
        """
        if self.is_mla:
            return self.layers * self.mla_kv_width
        return 2 * self.layers * self.kv_heads * self.head_dim

    @property
    def kv_elements_per_token_window(self) -> int:
        """The part of `kv_elements_per_token` held by sliding-window layers (at most W tokens each)."""
        if not self.sliding_window:
            return 0
        return self.kv_elements_per_token * self.sliding_layers // self.layers


def _get(cfg: dict, key: str, where: str, required: bool = True, default: Any = None) -> Any:
    for k in _ALIASES.get(key, (key,)):
        if cfg.get(k) is not None:
            v = cfg[k]
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0 or int(v) != v:
                raise ConfigFileError(f"{where}: field {k!r} must be a positive integer, got {v!r}")
            _check_range(k, v, where)
            return int(v)
    if required:
        raise ConfigFileError(
            f"{where}: missing field {key!r} (a Hugging Face config.json for a decoder-only transformer has it)"
        )
    return default


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
    gated = model_type not in {"gptj", "gpt2", "gpt_neox", "opt", "falcon"} and cfg.get("mlp") != "gelu"

    # Mixture of experts (Mixtral / gpt-oss: num_local_experts; Qwen-MoE: num_experts; DeepSeek: n_routed_experts)
    experts = (
        _get(cfg, "num_local_experts", where, False)
        or _get(cfg, "num_experts", where, False)
        or _get(cfg, "n_routed_experts", where, False)
        or 0
    )
    k = _get(cfg, "num_experts_per_tok", where, False) or _get(cfg, "experts_per_token", where, False) or 0
    if experts and not k:
        raise ConfigFileError(f"{where}: a mixture-of-experts config needs 'num_experts_per_tok'")
    if experts and k > experts:
        raise ConfigFileError(f"{where}: num_experts_per_tok ({k}) exceeds the number of experts ({experts})")
    moe_inter = _get(cfg, "moe_intermediate_size", where, False) or inter
    shared = _get(cfg, "n_shared_experts", where, False) or 0
    dense_first = _get(cfg, "first_k_dense_replace", where, False) or 0
    moe_layers = max(n_layers - dense_first, 0) if experts else 0

    # Multi-head latent attention (DeepSeek-V2/V3)
    kv_lora = _get(cfg, "kv_lora_rank", where, False)
    if kv_lora:
        rope = _get(cfg, "qk_rope_head_dim", where)
        nope = _get(cfg, "qk_nope_head_dim", where)
        v_dim = _get(cfg, "v_head_dim", where)
        q_lora = _get(cfg, "q_lora_rank", where, False)
        mla_width = kv_lora + rope
        attn_dim = (nope + rope + v_dim) / 2
        q_params = (d * q_lora + q_lora + q_lora * h_q * (nope + rope)) if q_lora else d * h_q * (nope + rope)
        attn_params = q_params + d * (kv_lora + rope) + kv_lora + kv_lora * h_q * (nope + v_dim) + h_q * v_dim * d
    else:
        mla_width = 0
        attn_dim = float(d_h)
        attn_params = d * (h_q + 2 * h_kv) * d_h + h_q * d_h * d
        if cfg.get("attention_bias") or model_type in _QKV_BIAS:
            attn_params += (h_q + 2 * h_kv) * d_h
        if cfg.get("attention_bias") and model_type not in _QKV_BIAS:
            attn_params += d  # output projection bias
        if model_type in _QK_NORM:
            attn_params += 2 * d_h

    # Sliding windows: Mistral-7B-v0.1 / Phi-3 on every layer; Gemma-2 / gpt-oss on alternate layers.
    window = _get(cfg, "sliding_window", where, False)
    if cfg.get("use_sliding_window") is False or (window and max_ctx and window >= max_ctx):
        window = None
    if window and isinstance(cfg.get("layer_types"), list):
        sliding_layers = sum(1 for t in cfg["layer_types"] if "sliding" in str(t))
    elif window and model_type in _ALTERNATING_WINDOW:
        sliding_layers = (n_layers + 1) // 2
    else:
        sliding_layers = n_layers if window else 0

    # Parameters: embeddings, attention, MLP or experts + router, norms.
    mlp_bias = (inter + d) if not gated else 0
    dense_mlp = (3 if gated else 2) * d * inter + mlp_bias
    expert = 3 * d * moe_inter
    if cfg.get("attention_bias") and experts:  # gpt-oss experts carry biases too
        expert += 2 * moe_inter + d
    norm_width = 2 * d if not gated else d  # LayerNorm has a bias, RMSNorm does not
    norms_per_layer = 4 if model_type in _FOUR_NORMS else (1 if model_type == "gptj" else 2)
    router = d * experts + (experts if (model_type == "deepseek_v3" or cfg.get("attention_bias")) else 0)
    moe_layer = experts * expert + shared * 3 * d * moe_inter + router
    per_layer_fixed = attn_params + norms_per_layer * norm_width
    total = (
        vocab * d * (1 if tied else 2)
        + (vocab if model_type == "gptj" else 0)  # GPT-J's lm_head has a bias
        + n_layers * per_layer_fixed
        + (n_layers - moe_layers) * dense_mlp
        + moe_layers * moe_layer
        + norm_width
    )
    skipped = moe_layers * (experts - k) * expert
    _check_range("params_total", total, where, what="the parameter count computed from the fields")
    active_width = (k + shared) * moe_inter if experts else inter
    return Architecture(
        model_type=model_type,
        hidden_size=d,
        layers=n_layers,
        attention_heads=h_q,
        kv_heads=1 if kv_lora else h_kv,
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
        sliding_window=window,
        sliding_layers=sliding_layers,
        params_total=int(total),
        params_active=int(total - skipped),
        mlp_active_width=active_width,
    )


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
    if p.is_dir():
        p = p / "config.json"
    try:
        raw = read_regular_file(p)
    except FileNotFoundError:
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
