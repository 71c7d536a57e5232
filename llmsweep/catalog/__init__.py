"""The catalogs (GPUs, models, precisions, efficiency profiles) shipped as YAML inside the package.

Nothing is loaded at import time: `load_catalog()` reads the files on first use and caches them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources

import yaml
from pydantic import ValidationError

from llmsweep.catalog.architecture import load_config_file
from llmsweep.catalog.engines import gpu_platform, resolve_engine
from llmsweep.catalog.gpus import Gpu
from llmsweep.catalog.models import ModelEntry
from llmsweep.catalog.names import (
    AmbiguousNameError,
    GpuIndex,
    ModelIndex,
    ModelMatch,
    NameIndex,
    Resolved,
)
from llmsweep.catalog.precisions import FP4_FALLBACK, GENERIC_FP4, Precision, bits_per_weight_format
from llmsweep.catalog.profiles import Profile
from llmsweep.errors import CatalogError, LlmsweepError, SpecError, UnknownNameError, did_you_mean
from llmsweep.yamlfile import load_yaml

__all__ = [
    "AmbiguousNameError",
    "Catalog",
    "Gpu",
    "ModelEntry",
    "ModelMatch",
    "Precision",
    "Profile",
    "Resolved",
    "load_catalog",
]


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 5x faster, same result


def _read(name: str) -> dict:
    return yaml.load(resources.files("llmsweep.catalog").joinpath(name).read_text("utf-8"), Loader=_Loader)


@dataclass(frozen=True)
class Catalog:
    gpus: dict[str, Gpu]
    models: dict[str, ModelEntry]
    precisions: dict[str, Precision]
    profiles: dict[str, Profile]
    gpu_ambiguous: dict[str, list[str]] = field(default_factory=dict)

    # -- name resolution -------------------------------------------------------------------
    @cached_property
    def _indexes(self) -> dict[str, NameIndex]:
        precisions = NameIndex("precision", {k: v.aliases for k, v in self.precisions.items()})
        return {
            "gpu": GpuIndex(
                {k: v.aliases for k, v in self.gpus.items()},
                {k: v.memory_gb for k, v in self.gpus.items()},
                self.gpu_ambiguous,
            ),
            "model": ModelIndex({k: v.aliases for k, v in self.models.items()}, self._suffix_precision),
            "precision": precisions,
        }

    def _index(self, kind: str) -> NameIndex:
        return self._indexes[kind]

    def _suffix_precision(self, token: str) -> str | None:
        """A GGUF type or `<N>bpw` from a model name's suffix, as a precision id (None if unknown)."""
        try:
            return self.resolve_precision(token).id
        except UnknownNameError:
            return None

    def resolve_gpu(self, name: str) -> Resolved:
        """A GPU id, alias, or a name as vendors and nvidia-smi print it ('NVIDIA H100 80GB HBM3',
        'Tesla V100-SXM2-32GB'). Raises UnknownNameError or AmbiguousNameError."""
        return self._index("gpu").resolve(name)

    def resolve_model(self, name: str) -> ModelMatch:
        """A catalog id or alias, a Hugging Face repo name of the same architecture (any org,
        -Instruct/-Chat/-Base, quantized repackagings: the suffix becomes `precision`), or the path
        of a local config.json (a file or its folder). Raises UnknownNameError or AmbiguousNameError."""
        index = self._index("model")
        # os.path: False for a name the OS cannot take as a path (too long), where Path raises
        if name in index or not (name.endswith(".json") or os.path.isdir(name)):
            return index.resolve(name)  # type: ignore[return-value]
        return ModelMatch(f"file:{name}")

    def resolve_engine(self, name: str) -> Resolved:
        return Resolved(resolve_engine(name))

    def resolve_precision(self, name: str) -> Resolved:
        """A precision id or alias, or `<N>bpw`. `fp4` (FP-4, fp_4) stays `fp4` (GENERIC_FP4): each
        GPU's vendor has its own FP4 format, so it is resolved per GPU (weight_format); a vendor's
        FP4 named ('NVIDIA FP4', 'AMD FP4') is that vendor's format (precisions.yaml `fp4_of`)."""
        if bits_per_weight_format(name):
            return Resolved(name.strip().lower().replace(" ", ""))
        written = re.sub(r"[^a-z0-9]", "", name.lower())  # the vendor kept, unlike `squash`
        if written == GENERIC_FP4:
            return Resolved(GENERIC_FP4)
        for pid, p in self.precisions.items():
            if any(written == f"{vendor.lower()}{GENERIC_FP4}" for vendor in p.fp4_of):
                return Resolved(pid)
        try:
            return self._index("precision").resolve(name)
        except UnknownNameError as e:
            raise UnknownNameError(
                "precision", name, e.suggestions, "`llmsweep precisions` lists them; any '<N>bpw' also works"
            ) from None

    def fp4_format(self, gid: str) -> Resolved:
        """What a generic `fp4` means on GPU `gid`: the FP4 format of the GPU's vendor, the precision
        whose `fp4_of` names it (NVIDIA: nvfp4, e4m3 scales per 16 values, NVIDIA's Blackwell format
        and its FP4 checkpoints'; AMD: mxfp4, OCP MX e8m0 scales per 32 values, what CDNA 4's FP4
        units take and AMD's MI355X checkpoints use, e.g. amd/DeepSeek-R1-0528-MXFP4; sources in
        precisions.yaml). A vendor without a format of its own and a GPU of unknown make get
        FP4_FALLBACK, nvfp4. The note says which, for the row."""
        platform = self.platform(gid)
        for pid, p in self.precisions.items():
            whose = next((v for v in p.fp4_of if v.lower() == platform), None)
            if whose:
                return Resolved(pid, f"fp4 on {gid} is {pid}, {whose}'s FP4 format")
        vendor = self.gpu(gid).vendor
        whose = f"{vendor} has no FP4 format of its own" if vendor else f"{gid} names no vendor"
        return Resolved(FP4_FALLBACK, f"fp4 on {gid} is {FP4_FALLBACK} ({whose}; NVIDIA's assumed)")

    def platform(self, gid: str) -> str | None:
        """The GPU's make (nvidia, amd, intel, apple, gaudi; None unknown): its vendor, else its family."""
        g = self.gpu(gid)
        return gpu_platform(g.vendor, g.family)

    def fp4_units_take(self, pid: str, gid: str) -> bool:
        """Whether GPU `gid` runs format `pid` on its FP4 units (where it has an fp4 rate). False only
        for an fp4 format whose scales that make's units do not take: NVFP4 (e4m3 scales per 16
        values) on AMD CDNA 4, whose scaled MFMA instructions take e8m0 scales per 32 values (AMD CDNA
        4 ISA reference guide; precisions.yaml `fp4_units`). A make no format's `fp4_units` names
        (Intel, Apple, a sweep's GPU of unknown make) is taken at its word: its FP4 rate runs it."""
        p, platform = self.precision(pid), self.platform(gid)
        if p is None or p.compute_dtype != "fp4" or p.fp4_units is None or platform is None:
            return True
        known = {u.lower() for q in self.precisions.values() for u in q.fp4_units or ()}
        return platform in {u.lower() for u in p.fp4_units} or platform not in known

    def kv_format(self, pid: str) -> Resolved:
        """The format a KV cache's precision id `pid` (from resolve_precision) names: `fp4` is
        FP4_FALLBACK, nvfp4, with a note (a cache's format is not resolved per GPU), any other id itself."""
        if pid != GENERIC_FP4:
            return Resolved(pid)
        return Resolved(FP4_FALLBACK, f"a KV cache's fp4 is {FP4_FALLBACK}: the KV-cache axis is not resolved per GPU")

    def weight_format(self, pid: str, gid: str, model: str | None = None) -> Resolved:
        """The format precision id `pid` (from resolve_precision) is on GPU `gid`: `fp4` per GPU
        (fp4_format), any other id itself. A model
        whose checkpoint is in an FP4 format the GPU's FP4 units take (gpt-oss's MXFP4 on Blackwell or
        CDNA 4) keeps it: `fp4` is not a re-quantisation into the vendor's other format."""
        if pid != GENERIC_FP4:
            return Resolved(pid)
        own = self.model(model).default_precision if model is not None else None
        fmt = self.precisions.get(own) if own else None
        if fmt is not None and fmt.compute_dtype == "fp4" and self.fp4_units_take(own, gid):
            return Resolved(own, f"fp4 for {model} on {gid} is {own}, its checkpoint's own FP4 format")
        return self.fp4_format(gid)

    # -- lookups by resolved id --------------------------------------------------------------
    def gpu(self, gid: str) -> Gpu:
        return self.gpus[gid]

    def model(self, mid: str) -> ModelEntry:
        if mid.startswith("file:"):
            return _model_from_file(mid.removeprefix("file:"))
        return self.models[mid]

    def precision(self, pid: str) -> Precision:
        return self.precisions.get(pid) or bits_per_weight_format(pid)  # type: ignore[return-value]

    def profile(self, name: str) -> Profile:
        if name in self.profiles:
            return self.profiles[name]
        if name.endswith((".yaml", ".yml")) or os.path.isfile(name):
            return load_profile_file(name)
        hint = did_you_mean(name, self.profiles)
        raise UnknownNameError("profile", name, hint, "built in: " + ", ".join(self.profiles) + "; or a profile file")


def _model_from_file(path: str) -> ModelEntry:
    cfg, _arch = load_config_file(path)
    entry = ModelEntry(
        name=str(cfg.get("_name_or_path") or path),
        config=cfg,
        sources=[{"ref": "config.json", "source": f"local file {path}", "fields": ["config"]}],
    )
    entry.architecture  # noqa: B018 - validated above; cache it
    return entry


def load_profile_file(path: str) -> Profile:
    try:
        doc = load_yaml(path)
        if doc.problems:  # duplicate keys
            raise SpecError(doc.problems)
        data = doc.data
    except SpecError as e:
        problem = e.problems[0]
        if problem.message == "file not found":
            raise LlmsweepError(f"{path}: profile file not found") from None
        where = f"line {problem.line}: " if problem.line else ""
        if not problem.path.startswith("("):
            where += f"{problem.path}: "
        raise LlmsweepError(f"{path}: cannot read the profile file: {where}{problem.message}") from None
    try:
        profile = Profile.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(_profile_problem(doc, err) for err in e.errors())
        raise LlmsweepError(f"{path}: not a valid efficiency profile: {problems}") from None
    _check_families(path, doc, profile)
    return profile


def _check_families(path: str, doc, profile: Profile) -> None:
    """A family no catalog GPU has but one a letter or two from one of theirs is a slip ('hoper'):
    its values would apply to no GPU. Other names stay (a custom GPU's `family` is matched as written),
    among them those that contain a catalog family ('hopper2')."""
    from llmsweep.errors import did_you_mean

    known = {g.family for g in load_catalog().gpus.values()}
    named = [(("families", f), f) for f in profile.families]
    for engine, o in profile.engines.items():
        named += [(("engines", engine, "families", f), f) for f in o.families]
    for loc, family in named:
        # a name that extends a family (hopper2, blackwell-ultra) is a custom GPU's on purpose
        deliberate = any(k in family for k in known)
        hint = [] if deliberate else did_you_mean(family, known)
        if hint:
            line = doc.line(loc)
            raise LlmsweepError(
                f"{path}: not a valid efficiency profile: {'.'.join(loc)}: no GPU in the catalog has the family "
                f"{family!r} (did you mean {' or '.join(hint)}?)" + (f" (line {line})" if line else "")
            )


def _profile_problem(doc, err) -> str:
    """One validation error of a profile file: line, key path, message, and for an unknown parameter
    the closest known ones."""
    from llmsweep.catalog.profiles import Efficiency, EngineOverrides
    from llmsweep.errors import did_you_mean

    loc = tuple(err["loc"])
    # a check of the whole profile (profiles.AtKey) knows its key path: the line is found from it
    at = getattr((err.get("ctx") or {}).get("error"), "loc", None)
    line = doc.line(loc or tuple(at or ()))
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden" and loc:
        known = [*Profile.model_fields, *EngineOverrides.model_fields, *Efficiency.model_fields]
        close = did_you_mean(str(loc[-1]), known)
        if close:
            message += f" (did you mean {' or '.join(close)}?)"
    if line and err["type"] != "missing":  # a missing key has no line of its own
        message += f" (line {line})"
    return ".".join(map(str, loc)) + ": " * bool(loc) + message


@cache
def load_catalog() -> Catalog:
    try:
        g = _read("gpus.yaml")
        return Catalog(
            gpus={k: Gpu.model_validate(v) for k, v in g["gpus"].items()},
            models={k: ModelEntry.model_validate(v) for k, v in _read("models.yaml")["models"].items()},
            precisions={k: Precision.model_validate(v) for k, v in _read("precisions.yaml")["precisions"].items()},
            profiles={
                k: Profile.model_validate(v)
                for k, v in {**_read("profiles.yaml")["profiles"], **_read("default-profile.yaml")["profiles"]}.items()
            },
            gpu_ambiguous=g.get("ambiguous_aliases") or {},
        )
    except ValidationError as e:  # a packaging bug, not a user error, but say it plainly
        raise CatalogError(f"the packaged catalog is invalid: {e}") from None
