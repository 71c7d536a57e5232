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


def default_engine(family: str) -> str:
    """The engine a GPU of this family is assumed to run when the sweep does not say."""
    return "llama.cpp" if family in _LOCAL_FAMILIES else "vllm"
