"""The catalogs (GPUs, models, precisions, efficiency profiles) shipped as YAML inside the package.

Nothing is loaded at import time: `load_catalog()` reads the files on first use and caches them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from llmsweep.catalog.architecture import load_config_file
from llmsweep.catalog.gpus import Gpu
from llmsweep.catalog.models import ModelEntry
from llmsweep.catalog.names import NameIndex, Resolved
from llmsweep.catalog.precisions import Precision, bits_per_weight_format
from llmsweep.catalog.profiles import Profile
from llmsweep.errors import CatalogError, LlmsweepError, SpecError, UnknownNameError, did_you_mean
from llmsweep.yamlfile import load_yaml

__all__ = ["Catalog", "Gpu", "ModelEntry", "Precision", "Profile", "Resolved", "load_catalog"]


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
        return {
            "gpu": NameIndex("gpu", {k: v.aliases for k, v in self.gpus.items()}, self.gpu_ambiguous),
            "model": NameIndex("model", {k: v.aliases for k, v in self.models.items()}),
            "precision": NameIndex("precision", {k: v.aliases for k, v in self.precisions.items()}),
        }

    def _index(self, kind: str) -> NameIndex:
        return self._indexes[kind]

    def resolve_gpu(self, name: str) -> Resolved:
        return self._index("gpu").resolve(name)

    def resolve_model(self, name: str) -> Resolved:
        """A catalog id or alias; or the path of a local config.json (a file or its folder)."""
        index = self._index("model")
        if name in index:
            return index.resolve(name)
        if name.endswith(".json") or Path(name).is_dir():
            return Resolved(f"file:{name}")
        return index.resolve(name)

    def resolve_precision(self, name: str) -> Resolved:
        if bits_per_weight_format(name):
            return Resolved(name.strip().lower().replace(" ", ""))
        try:
            return self._index("precision").resolve(name)
        except UnknownNameError as e:
            raise UnknownNameError(
                "precision", name, e.suggestions, "`llmsweep precisions` lists them; any '<N>bpw' also works"
            ) from None

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
        if name.endswith((".yaml", ".yml")) or Path(name).is_file():
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
        return Profile.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(
            ".".join(map(str, err["loc"])) + ": " * bool(err["loc"]) + err["msg"].removeprefix("Value error, ")
            for err in e.errors()
        )
        raise LlmsweepError(f"{path}: not a valid efficiency profile: {problems}") from None


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
