"""Serving engines: the ids a sweep's `engine` axis takes, how a benchmark's `framework` text
names them, and which one a GPU gets when the sweep does not say.

Engines reach different fractions of the same GPU's peak (the same H100 and model differ by up
to 3x in TTFT between engines on one layout, shared/reference/README.md), so efficiency profiles
are keyed by engine (catalog/profiles.py) and calibration never lets one engine's measurements
set another's efficiency.
"""

from __future__ import annotations

import re

from llmsweep.errors import UnknownNameError, did_you_mean

AUTO = "auto"
GENERIC = "generic"
ENGINES: dict[str, str] = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "trtllm": "TensorRT-LLM",
    "llama.cpp": "llama.cpp",
    "mlx": "MLX (Apple)",
    "exllamav2": "ExLlamaV2",
    GENERIC: "generic (no engine-specific efficiency: the profile's defaults)",
}
_ALIASES = {
    "tensorrt-llm": "trtllm",
    "tensorrt_llm": "trtllm",
    "trt-llm": "trtllm",
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "gguf": "llama.cpp",
    "exllama": "exllamav2",
    "exllama2": "exllamav2",
    "exl2": "exllamav2",
    "mlx-lm": "mlx",
}
# `framework` text of benchmark files -> engine (first match wins; case-insensitive).
_FRAMEWORK = (
    (re.compile(r"tensorrt[-_ ]?llm|trt[-_ ]?llm|gptsessionbenchmark", re.I), "trtllm"),
    (re.compile(r"\bsglang\b", re.I), "sglang"),
    (re.compile(r"\bvllm\b", re.I), "vllm"),
    (re.compile(r"llama[.\-_ ]?cpp|llama-bench|\bgguf\b", re.I), "llama.cpp"),
    (re.compile(r"exllama", re.I), "exllamav2"),
    (re.compile(r"\bmlx\b", re.I), "mlx"),
)
# The engine a GPU gets when the sweep's engine axis is `auto` (the default), by GPU family:
# data-centre parts are served with vLLM, desktop parts and Macs with llama.cpp.
_LOCAL_FAMILIES = {"geforce", "rdna", "apple", "arc", "custom"}


def resolve_engine(name: str) -> str:
    """An engine id from a user's spelling ('TensorRT-LLM' -> 'trtllm'); `auto` stays `auto`."""
    key = str(name).strip().lower()
    if key == AUTO or key in ENGINES:
        return key
    if key in _ALIASES:
        return _ALIASES[key]
    hints = list(dict.fromkeys(_ALIASES.get(h, h) for h in did_you_mean(key, [*ENGINES, *_ALIASES], n=4)))
    raise UnknownNameError("engine", name, hints[:2], f"engines: {', '.join(ENGINES)}")


def engine_from_framework(framework: str | None) -> str:
    """The engine a benchmark's `framework` field names ('trtllm 1.0.0rc3' -> 'trtllm'), else generic."""
    for pattern, engine in _FRAMEWORK:
        if framework and pattern.search(framework):
            return engine
    return GENERIC


# Benchmark harnesses that time the engine in process, with no serving front end (HTTP server,
# tokeniser, detokeniser) between the client and the GPU: TensorRT-LLM's C++ session and manager
# benchmarks and trtllm-bench, llama.cpp's llama-bench, vLLM's offline latency/throughput scripts.
_OFFLINE_HARNESS = re.compile(
    r"gpt(session|manager)benchmark|trtllm-bench|llama-bench"
    r"|benchmark_(latency|throughput)|vllm bench (latency|throughput)",
    re.I,
)


def served(framework: str | None) -> bool:
    """Whether a benchmark's `framework` text times requests through a serving front end, whose time
    before the first token (request_overhead_s) its TTFT includes; False for offline harnesses
    ('TensorRT-LLM v0.5 (gptSessionBenchmark, static batching)', 'llama.cpp (llama-bench)')."""
    return not (framework and _OFFLINE_HARNESS.search(framework))


# -- the platforms each engine runs on ----------------------------------------------------------------

# A GPU's platform, from the catalog's `vendor` (the first word: 'Intel (Habana)' is Gaudi, an
# accelerator with its own software stack, not an Intel GPU), else from its family for a sweep's own GPU
# without a vendor; None (no rule applies) for a GPU of unknown make.
# platform -> (one GPU of it, several), as the reasons say them
PLATFORM_NAMES = {
    "nvidia": ("an NVIDIA GPU", "NVIDIA GPUs"),
    "amd": ("an AMD GPU", "AMD GPUs"),
    "apple": ("Apple silicon", "Apple silicon"),
    "intel": ("an Intel GPU", "Intel GPUs"),
    "gaudi": ("Intel Gaudi", "Intel Gaudi"),
}
_FAMILY_PLATFORM = {
    **dict.fromkeys(("blackwell", "hopper", "ada", "ampere", "turing", "volta", "pascal", "geforce"), "nvidia"),
    **dict.fromkeys(("cdna", "rdna"), "amd"),
    "apple": "apple",
    **dict.fromkeys(("xe", "arc"), "intel"),
    "gaudi": "gaudi",
}


def gpu_platform(vendor: str | None, family: str | None) -> str | None:
    """'NVIDIA (with MediaTek)' -> nvidia; 'Advanced Micro Devices' -> amd; 'Intel (Habana)' -> gaudi;
    no vendor: by family (hopper -> nvidia). The one reading of a GPU's make: engines' platforms and
    each vendor's FP4 format (Catalog.platform) both use it."""
    if vendor:
        v = vendor.strip().lower()
        if "habana" in v or "gaudi" in v:
            return "gaudi"
        if v.startswith("advanced micro devices"):
            return "amd"
        for key in ("nvidia", "amd", "apple", "intel"):
            if v.startswith(key):
                return key
    return _FAMILY_PLATFORM.get(family or "")


# The platforms each engine's documentation lists (an engine not here runs on every platform):
# - vLLM: NVIDIA CUDA, AMD ROCm, Intel XPU (Arc, Data Center GPU Max) and Intel Gaudi (the vllm-gaudi
#   plugin); on macOS it builds for the CPU only, not Apple's GPU (docs.vllm.ai, "Installation: GPU",
#   "CPU: Apple silicon").
# - SGLang: NVIDIA, AMD ROCm and Intel XPU (docs.sglang.ai, "Hardware platforms"); no Metal backend, and no
#   Gaudi support in its documentation.
# - TensorRT-LLM: NVIDIA GPUs only (nvidia.github.io/TensorRT-LLM, "Support matrix").
# - ExLlamaV2: CUDA and ROCm (github.com/turboderp/exllamav2, README "Installation"): NVIDIA and AMD GPUs.
# - MLX: Apple silicon, Metal (github.com/ml-explore/mlx README); its CUDA backend (mlx[cuda], 2025) is new
#   and is not what the mlx efficiency profile describes, so it is not modelled.
# - llama.cpp: CUDA, HIP (AMD), Metal, SYCL and Vulkan (Intel GPUs) (github.com/ggml-org/llama.cpp README,
#   "Supported backends"): every GPU platform here but Gaudi, which has none of them.
ENGINE_PLATFORMS: dict[str, frozenset[str]] = {
    "vllm": frozenset({"nvidia", "amd", "intel", "gaudi"}),
    "sglang": frozenset({"nvidia", "amd", "intel"}),
    "trtllm": frozenset({"nvidia"}),
    "exllamav2": frozenset({"nvidia", "amd"}),
    "mlx": frozenset({"apple"}),
    "llama.cpp": frozenset({"nvidia", "amd", "apple", "intel"}),
}


def platform_reason(engine: str, platform: str | None) -> str | None:
    """Why `engine` cannot run on a GPU of `platform` ('TensorRT-LLM runs on NVIDIA GPUs only, not on
    Apple silicon'), or None when it can."""
    runs_on = ENGINE_PLATFORMS.get(engine)
    if runs_on is None or platform is None or platform in runs_on:
        return None
    listed = [plural for p, (_, plural) in PLATFORM_NAMES.items() if p in runs_on]
    where = listed[0] + " only" if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    if engine == "mlx":
        where += " (its CUDA backend is not modelled)"
    name = "MLX" if engine == "mlx" else ENGINES[engine]
    return f"{name} runs on {where}, not on {PLATFORM_NAMES[platform][0]}"


def default_engine(family: str) -> str:
    """The engine a GPU of this family is assumed to run when the sweep does not say."""
    return "llama.cpp" if family in _LOCAL_FAMILIES else "vllm"


# Engines that choose their own KV-cache format when the sweep says `auto` (else the 16-bit
# activation dtype), each with its source; the rule itself is AUTO_KV_RULE, applied by
# auto_kv_precision. Rows are told apart by whether the checkpoint is NVIDIA ModelOpt's (its
# hf_quant_config.json sets kv_cache_quant_algo; every NVFP4 checkpoint is), the weight format's
# compute dtype (fp8 / fp4: W8A8 and W4A4) and MLA attention.
_MODELOPT_KV = (
    "takes the checkpoint's kv_cache_quant_algo, which NVIDIA's ModelOpt FP8 and NVFP4 checkpoints set to FP8 "
    "(hf_quant_config.json of nvidia/Llama-3.1-70B-Instruct-FP8, nvidia/Qwen3-235B-A22B-NVFP4 and Nemotron-3-Super "
    "FP8, shared/reference/model-configs); block-FP8 releases (Qwen3-*-FP8, DeepSeek), gpt-oss's MXFP4 and AMD "
    "Quark checkpoints set none and cache 16-bit"
)
AUTO_KV_SOURCES: dict[str, str] = {
    "trtllm": f"TensorRT-LLM's KvCacheConfig dtype 'auto' {_MODELOPT_KV}",
    "vllm": (
        "vLLM 0.14 and later: --kv-cache-dtype auto (vllm/utils/torch_utils.py resolve_kv_cache_dtype_string, "
        f"read in vLLM 0.14.0, 0.17.0, 0.19.0 and 0.34.0; not in 0.12.0) {_MODELOPT_KV}; AMD Quark's kv_cache_group "
        "only loads scales (quark.py), the cache staying 16-bit"
    ),
    "sglang": (
        f"SGLang's --kv-cache-dtype auto (model_runner.configure_kv_cache_dtype, SGLang 0.5.9) {_MODELOPT_KV}; its "
        "DeepSeek recipes on FP8 and NVFP4 checkpoints run --kv-cache-dtype fp8_e4m3 (InferenceX launch scripts at "
        "commit 843c6254, per shared/reference/measured-serving-dev.csv)"
    ),
}
# The rule in a phrase, for the column dictionary, the reports and --help.
AUTO_KV_RULE = (
    "fp8 for NVFP4 and ModelOpt FP8 checkpoints (TensorRT-LLM, vLLM, SGLang: their kv_cache_quant_algo) and for "
    "fp8/fp4 MLA models (SGLang's DeepSeek recipes); otherwise the 16-bit activation dtype"
)


def auto_kv_precision(engine: str, compute_dtype: str, mla: bool, modelopt: bool = False) -> str | None:
    """`fp8` where `engine` caches KV in FP8 for this weight format (AUTO_KV_RULE), else None (the
    16-bit activation dtype). `compute_dtype` is the weight format's own (fp8 for W8A8); `modelopt`:
    the checkpoint is NVIDIA ModelOpt's (every NVFP4 checkpoint is)."""
    if engine not in AUTO_KV_SOURCES:
        return None
    if modelopt and compute_dtype in ("fp8", "fp4"):
        return "fp8"
    if engine == "sglang" and mla and compute_dtype in ("fp8", "fp4"):
        return "fp8"
    return None


# Tokens an engine drafts per step with a model's MTP module when it is not told (each step runs the
# one module k times), with the source.
MTP_DRAFT_TOKENS: dict[str, tuple[int, str]] = {
    "sglang": (
        3,
        "SGLang 0.5.8 server_args.auto_choose_speculative_params: (num_steps 3, eagle_topk 1, num_draft_tokens 4) "
        "for DeepseekV3ForCausalLM, GLM-4 MoE and gpt-oss",
    ),
    "trtllm": (
        1,
        "TensorRT-LLM's MTPDecodingConfig: num_nextn_predict_layers defaults to 1 (its LLM API reference; not "
        "checked in its source here). Its DeepSeek-R1 recipes draft up to 3, but the sources of "
        "measured-serving-dev.csv state none, so its rows take the default",
    ),
    "vllm": (1, "vLLM's DeepSeek MTP example sets num_speculative_tokens 1 (not checked in its source)"),
}


def mtp_draft_tokens(engine: str) -> int:
    """k an engine drafts with MTP unless told (MTP_DRAFT_TOKENS; 1 for an engine not listed)."""
    return MTP_DRAFT_TOKENS.get(engine, (1, ""))[0]
