"""Resolving a validated spec: the sweep's own GPUs and models added to the catalog, every name of
the grid resolved to a catalog id, and the checks on `costs` and `rank_by`, each problem collected
instead of stopping at the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llmsweep.catalog import Catalog, Gpu, ModelEntry, load_catalog
from llmsweep.catalog.architecture import config_slips, load_config_file, read_config, unread_quantization
from llmsweep.catalog.gpus import Source
from llmsweep.catalog.names import normalize, parse_gpu
from llmsweep.errors import LlmsweepError, Problem, did_you_mean
from llmsweep.spec.models import EVERY_GPU, CostSpec, SweepSpec
from llmsweep.spec.problems import _pydantic_problems
from llmsweep.yamlfile import KeyPath, YamlDoc


class _Resolver:
    """Resolves the names in a validated spec, collecting problems instead of stopping."""

    def __init__(self, doc: YamlDoc, spec: SweepSpec, base: Path):
        self.doc, self.spec, self.base = doc, spec, base
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.named_precision: dict[str, str] = {}
        self.broken: set[str] = set()  # `gpus:` / `models:` keys already reported as invalid
        self.catalog = self._extend_catalog(load_catalog())

    def fail(self, path: KeyPath, message: str) -> None:
        self.problems.append(self.doc.problem(path, message))

    def _inherited(self, path: KeyPath, existing: str | None, inherit: Any, catalog: Catalog) -> str | None | bool:
        """The catalog GPU a new `gpus:` entry inherits from (`inherit: h200-sxm`), None without
        one, False after reporting a problem."""
        if inherit is None:
            return None
        if existing:
            self.fail(
                (*path, "inherit"), f"{path[-1]!r} is already the catalog's {existing}; `inherit` is for new GPUs"
            )
            return False
        try:
            return catalog.resolve_gpu(str(inherit)).id
        except LlmsweepError as e:
            self.fail((*path, "inherit"), str(e))
            return False

    def _warn_custom_gpu(self, gid: str, fields: dict) -> None:
        """Notes for a new GPU that lacks a fact deciding what can run or how fast (validate prints them)."""
        where = f"gpus.{gid}"
        if "family" not in fields:
            self.notes.append(
                f"{where}: no `family` or `inherit`: the profile's defaults apply, not a GPU family's "
                "(say e.g. `family: hopper`, or `inherit: h100-sxm` to start from a catalog GPU)"
            )
        if not fields.get("scale_up_gbps_per_direction") and not fields.get("pcie_gbps_per_direction"):
            self.notes.append(
                f"{where}: no interconnect bandwidth (scale_up_gbps_per_direction or pcie_gbps_per_direction): "
                "every row with tp > 1 or ep > 1 inside a server on it cannot run"
            )
        if "gpus_per_node" not in fields:
            self.notes.append(
                f"{where}: gpus_per_node not given: 8 per server assumed (a larger replica spans servers)"
            )
        if not fields.get("scale_out_gbps_per_direction"):
            self.notes.append(
                f"{where}: no scale_out_gbps_per_direction (network bandwidth per GPU between servers): "
                "layouts across servers cannot be costed"
            )

    def _path(self, text: str) -> Path:
        p = Path(text).expanduser()
        return p if p.is_absolute() else self.base / p

    def _extend_catalog(self, catalog: Catalog) -> Catalog:
        gpus, models = dict(catalog.gpus), dict(catalog.models)
        given: dict[str, str] = {}  # the GPU each `gpus:` key names -> the first key naming it
        for gid, fields in self.spec.gpus.items():
            path: KeyPath = ("gpus", gid)
            existing = catalog.resolve_gpu(gid).id if gid in catalog._index("gpu") else None
            same = existing or normalize(gid)
            if same in given:
                self.fail(
                    path,
                    f"{gid!r} and {given[same]!r} both name " + (existing or "the same GPU") + "; give each GPU once",
                )
                continue
            given[same] = gid
            fields = dict(fields)
            base = self._inherited(path, existing, fields.pop("inherit", None), catalog)
            if base is False:
                self.broken.add(gid)
                continue
            if existing:
                data = {**catalog.gpu(existing).model_dump(), **fields}
            elif base is not None:  # a new GPU like a catalog one: its facts, not its names or prices
                parent = catalog.gpu(base).model_dump()
                parent.update(name=gid, aliases=[], reference_id=None, cloud_prices=[])
                data = {**parent, **fields}
            else:
                data = {"name": gid, **fields}
                self._warn_custom_gpu(gid, fields)
            parent_id = existing or base
            if parent_id and isinstance(fields.get("dense_tflops", {}), dict):  # else the model says what is wrong
                data["dense_tflops"] = {
                    **catalog.gpu(parent_id).dense_tflops.model_dump(),
                    **fields.get("dense_tflops", {}),
                }
            try:
                gpu = Gpu.model_validate(data)
            except ValidationError as e:
                self.problems.extend(_pydantic_problems(self.doc, e, Gpu, prefix=path))
                self.broken.add(gid)
                continue
            what = f"{self.doc.file}: gpus.{gid}" + (f" (the rest inherited from {base})" if base else "")
            sweep_source = Source(ref="sweep", source=what, fields=sorted(fields))
            gpus[existing or gid] = gpu.model_copy(update={"sources": [*gpu.sources, sweep_source]})
        named: dict[str, str] = {}  # the model each `models:` key names -> the first key naming it
        for mid, fields in self.spec.models.items():
            path = ("models", mid)
            existing = self._catalog_model(catalog, mid)
            same = existing or normalize(mid)
            if same in named:
                what = f"both name {existing}" if existing else "name the same model"
                self.fail(path, f"{mid!r} and {named[same]!r} {what}; give each model once")
                continue
            named[same] = mid
            meta = {k: fields[k] for k in ("name", "license", "aliases") if k in fields}
            try:
                if "config" in fields:
                    extra = sorted(set(fields) - {"config", "name", "license", "aliases"})
                    if extra:
                        self.fail(
                            (*path, extra[0]), "give either `config:` (a config.json path) or inline config fields"
                        )
                        continue
                    cfg, _ = load_config_file(self._path(str(fields["config"])))
                    source = f"config.json at {fields['config']}"
                else:
                    cfg = {k: v for k, v in fields.items() if k not in meta}
                    read_config(cfg, where=f"models.{mid}")
                    source = f"{self.doc.file}: models.{mid}"
                    for given, meant in config_slips(cfg):  # typed by hand: a near miss is likely a slip
                        line = self.doc.line((*path, given))
                        self.notes.append(
                            f"{self.doc.file}:{line}: " * bool(line) + f"models.{mid}.{given}: not a field llmsweep "
                            f"reads, and {meant!r} is not given (did you mean {meant!r}?); its default applies"
                        )
            except LlmsweepError as e:
                self.fail((*path, "config") if "config" in fields else path, str(e).removeprefix(f"models.{mid}: "))
                self.broken.add(mid)
                continue
            aliases = meta.get("aliases", [])
            if existing:  # the catalog's model, by whichever spelling: its names still find it
                old = catalog.model(existing)
                if isinstance(aliases, list):  # else ModelEntry says what is wrong
                    aliases = [*old.aliases, *([mid] if mid != existing else []), *aliases]
                meta.setdefault("license", old.license)
            try:
                models[existing or mid] = ModelEntry(
                    name=meta.get("name", mid),
                    config=cfg,
                    license=meta.get("license", "unknown: check the model card"),
                    aliases=aliases,
                    sources=[{"ref": "sweep", "source": source, "fields": ["config"]}],
                )
            except ValidationError as e:
                self.problems.extend(_pydantic_problems(self.doc, e, ModelEntry, prefix=path))
                self.broken.add(mid)
                continue
            if existing and mid != existing:
                line = self.doc.line(path)
                self.notes.append(
                    f"{self.doc.file}:{line}: " * bool(line) + f"models.{mid}: names the catalog's {existing}, so "
                    f"this entry replaces its config: every grid name of {existing} uses it"
                )
        return replace(catalog, gpus=gpus, models=models)

    @staticmethod
    def _catalog_model(catalog: Catalog, mid: str) -> str | None:
        """The catalog model a `models:` key names by any spelling the grid accepts (its id, an alias,
        another org's or a variant's name: `llama-3.1-8b`, `meta-llama/Llama-3.1-8B-Instruct`), else
        None: a new model (an ambiguous name too, which the grid then finds under the key itself)."""
        try:
            return catalog._index("model").resolve(mid).id
        except LlmsweepError:
            return None

    def names(self, axis: str, values: list[str], kind: str) -> list[str]:
        resolve = getattr(self.catalog, f"resolve_{kind}")
        out: list[str] = []
        first: dict[str, int] = {}
        for i, name in enumerate(values):
            if kind == "precision" and str(name).strip().lower() == "auto":
                rid = "auto"
            else:
                try:
                    r = resolve(str(name))
                except LlmsweepError as e:
                    if name not in self.broken:  # else its definition was reported already
                        self.fail(("grid", axis, i), str(e))
                    continue
                rid = r.id
                if axis == "kv_precision" and (kv := self.catalog.kv_format(rid)).note:
                    rid = kv.id
                    self.notes.append(f"grid.kv_precision {name!r}: {kv.note}")
                if r.note:
                    self.notes.append(r.note)
                if getattr(r, "precision", None):  # a model name that states its format (…-FP8)
                    self.named_precision[rid] = r.precision
                if kind == "model":
                    try:
                        entry = self.catalog.model(rid)
                    except LlmsweepError as e:
                        self.fail(("grid", axis, i), str(e))
                        continue
                    if unread := unread_quantization(entry.config):
                        self.notes.append(f"grid.model {name!r}: {unread}")
            if rid in first:
                self.fail(("grid", axis, i), f"{name!r} repeats grid.{axis}[{first[rid]}] (both are {rid})")
                continue
            first[rid] = i
            out.append(rid)
        return out

    def numbers(self, axis: str, values: list) -> list:
        first: dict[Any, int] = {}
        out = []
        for i, v in enumerate(values):
            if v in first:
                self.fail(("grid", axis, i), f"{v!r} repeats grid.{axis}[{first[v]}]")
                continue
            first[v] = i
            out.append(v)
        return out


def fp4_note(catalog: Catalog, gpus: Sequence[str], models: Sequence[str] = ()) -> str:
    """The sweep's note for a generic `fp4` weight precision: which format it is on the grid's GPUs
    ('grid.precision fp4 is each GPU vendor's FP4 format: nvfp4 on b200, h100-sxm; mxfp4 on mi355x'),
    and the models that keep their checkpoint's own FP4 format (Catalog.weight_format)."""
    on: dict[str, list[str]] = {}
    for gid in gpus:
        on.setdefault(catalog.fp4_format(gid).id, []).append(gid)
    each = "; ".join(f"{pid} on {', '.join(ids)}" for pid, ids in on.items())
    own = [
        m
        for m in models
        if getattr(catalog.precision(catalog.model(m).default_precision or "bf16"), "compute_dtype", "") == "fp4"
    ]
    verb = "keeps its" if len(own) == 1 else "keep their"
    kept = f" ({', '.join(own)} {verb} checkpoint's own FP4 format where the GPU's FP4 units take it)" if own else ""
    return f"grid.precision fp4 is each GPU vendor's FP4 format: {each}{kept}"


def _check_costs(r: _Resolver, spec: SweepSpec, grid_gpus: Sequence[str] | None) -> None:
    """GPU names under costs resolve (an ambiguous one noted as in grid.gpu), each GPU's offers have
    distinct ids, and a GPU the grid lacks (`grid_gpus`, None when one did not resolve) is noted."""
    priced: dict[str, str] = {}
    for gpu_name, offers in spec.costs.items():
        if gpu_name == EVERY_GPU:
            continue
        try:
            resolved = r.catalog.resolve_gpu(gpu_name)
        except LlmsweepError as e:
            if gpu_name not in r.broken:
                r.fail(("costs", gpu_name), str(e))
            continue
        gid = resolved.id
        if resolved.note:
            r.notes.append(resolved.note)
        if grid_gpus is not None and gid not in grid_gpus:
            _not_in_grid(r, gpu_name, gid, grid_gpus)
        if gid in priced:
            r.fail(
                ("costs", gpu_name),
                f"{gpu_name!r} and {priced[gid]!r} both name {gid}; give one price entry per GPU "
                "(a list holds several offers)",
            )
        priced.setdefault(gid, gpu_name)
        seen: dict[str, int] = {}
        for i, offer in enumerate(offers):
            for oid in offer.ids():
                if oid in seen:
                    r.fail(
                        ("costs", gpu_name, i),
                        f"offer id {oid!r} repeats offer {seen[oid]}: give each offer its own `name:`",
                    )
                seen.setdefault(oid, i)
        raw = r.doc.data.get("costs", {}).get(gpu_name) if isinstance(r.doc.data, dict) else None
        for i, offer in enumerate(offers):
            at = ("costs", gpu_name, i) if isinstance(raw, list) else ("costs", gpu_name)
            _check_rack(r, at, gid, offer)


def _not_in_grid(r: _Resolver, gpu_name: str, gid: str, grid_gpus: Sequence[str]) -> None:
    """A price for a GPU no row uses prices nothing: a note (not an error: a price list kept whole while
    the grid is narrowed, or a GPU dropped from it, is a way of working), with the grid's GPUs of the
    same family first as the did-you-mean, for a misspelt or ambiguous name."""
    family = parse_gpu(gid).family
    hint = [g for g in grid_gpus if parse_gpu(g).family == family][:2] or did_you_mean(gid, grid_gpus, n=1)
    read = "" if normalize(gpu_name) == normalize(gid) else f" (read as {gid})"
    line = r.doc.line(("costs", gpu_name))
    r.notes.append(
        f"{r.doc.file}:{line}: " * bool(line) + f"costs.{gpu_name}: {gpu_name!r}{read} is not a GPU of the grid "
        f"({', '.join(grid_gpus)}), so its prices are not used"
        + (f"; did you mean {' or '.join(repr(h) for h in hint)}?" if hint else "")
    )


def _check_rack(r: _Resolver, at: KeyPath, gid: str, offer: CostSpec) -> None:
    """A rack holds at least one server (a power limit below one was clamped to one server a rack, priced
    as if the rack could power it), and all of a rack-scale NVLink domain (GB200 NVL72: 18 servers of 4
    GPUs in one rack; a smaller rack was still estimated and priced as one 72-GPU NVLink domain)."""
    gpu = r.catalog.gpu(gid)
    server_kw = offer.server_kw(gpu.tdp_w, gpu.gpus_per_node)
    limits = offer.rack_limits(gpu.tdp_w, gpu.gpus_per_node)
    if limits.get("rack_kw") == 0:
        host = f" + host_kw {offer.host_kw:g} kW" if offer.host_kw else ""
        r.fail(
            (*at, "rack_kw"),
            f"{offer.rack_kw:g} kW cannot power one {gid} server ({gpu.gpus_per_node} GPUs x {gpu.tdp_w or 0:g} W"
            f"{host} = {server_kw:g} kW): give the rack's real power limit, at least {server_kw:g} kW",
        )
        return
    domain = -(-gpu.nvlink_group // gpu.gpus_per_node)  # servers of one NVLink domain
    for key, held in limits.items():
        if held < domain:
            need = f"at least {domain * server_kw:g} kW ({domain} x {server_kw:g} kW)" if key == "rack_kw" else domain
            r.fail(
                (*at, key),
                f"a {gid} rack is one NVLink domain of {gpu.nvlink_group} GPUs ({domain} servers of "
                f"{gpu.gpus_per_node}), which this limit splits ({held} servers a rack): give {need}, or price a GPU "
                "whose NVLink domain fits the rack",
            )


def _check_workload_lengths(r: _Resolver, spec: SweepSpec, inputs: Sequence[int], outputs: Sequence[int]) -> None:
    """The workload's lengths must be among the grid's: the plan sizes the fleet at the grid's rows, so
    a workload of 32k-token prompts over a grid of 1k ones would be sized for the 1k ones."""
    w = spec.workload
    if w is None:
        return
    for key, value, grid in (("input_tokens", w.input_tokens, inputs), ("output_tokens", w.output_tokens, outputs)):
        if value is not None and value not in grid:
            listed = ", ".join(f"{v:,}" for v in sorted(grid))
            by_context = key == "input_tokens" and spec.grid.context
            axis = "input_tokens (context - output_tokens)" if by_context else key
            fix = f"a grid.context of {value:,} + an output length" if by_context else f"{value:,} to grid.{key}"
            r.fail(
                ("workload", key),
                f"{value:,} is not among the grid's {axis} [{listed}]: the fleet is sized at the grid's"
                f" lengths, so add {fix} (or drop it here)",
            )
    contexts = spec.grid.context
    if contexts and w.input_tokens in inputs and w.output_tokens in outputs:
        # each length is the grid's, but a context grid pairs them: (1,792, 512) over context [2,048] is no row
        context = w.input_tokens + w.output_tokens
        if context not in contexts:
            listed = ", ".join(f"{v:,}" for v in sorted(contexts))
            r.fail(
                ("workload",),
                f"input_tokens {w.input_tokens:,} with output_tokens {w.output_tokens:,} is a context of "
                f"{context:,}, not among the grid's context [{listed}]: the fleet is sized at the grid's lengths, "
                f"so add {context:,} to grid.context (or change them here)",
            )


def _check_rank_by(r: _Resolver, column: str) -> None:
    from llmsweep.columns import NUMERIC

    if column not in NUMERIC:
        hint = did_you_mean(column, NUMERIC, n=1)
        r.fail(("rank_by",), f"{column!r} is not a numeric column" + (f"; did you mean {hint[0]!r}?" if hint else ""))


def _check_slo(r: _Resolver, spec: SweepSpec) -> None:
    """`percentile` says which TTFT `ttft_s` bounds: without `ttft_s` it bounds nothing. A note, not an
    error: the sweep still runs as written (its other targets, or none), and the note says why the
    percentile changed nothing."""
    slo = spec.slo
    if slo is None or slo.ttft_s is not None or "percentile" not in slo.model_fields_set:
        return
    line = r.doc.line(("slo", "percentile"))
    r.notes.append(
        f"{r.doc.file}:{line}: " * bool(line) + f"slo.percentile: {slo.percentile} says which TTFT ttft_s bounds, "
        "and no ttft_s is given, so it bounds nothing (add ttft_s, or drop it)"
    )
