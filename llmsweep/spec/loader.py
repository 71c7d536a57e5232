"""Loading a sweep file: read, validate and resolve it into a `Sweep` (every problem reported together
in one SpecError), within the limits on the size of the grid and of the plan (--max-rows).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from llmsweep.catalog import Catalog, Profile, load_catalog
from llmsweep.catalog.precisions import GENERIC_FP4
from llmsweep.errors import LlmsweepError, Problem, SpecError, suggestion_budget
from llmsweep.grid import Axes
from llmsweep.spec.exclude import resolve_exclusions
from llmsweep.spec.models import SweepSpec
from llmsweep.spec.problems import _dedupe, _precheck_names, _pydantic_problems
from llmsweep.spec.resolve import (
    _check_costs,
    _check_rank_by,
    _check_slo,
    _check_workload_lengths,
    _Resolver,
    fp4_note,
)
from llmsweep.spec.serving import check_speculation, serving_axes
from llmsweep.yamlfile import load_yaml

DEFAULT_MAX_ROWS = 5_000_000
MAX_SUGGESTIONS = 100  # unknown names of one file given a did-you-mean (the rest are still reported)


@dataclass(frozen=True)
class Sweep:
    """A validated sweep with every name resolved: what the pipeline runs."""

    spec: SweepSpec
    file: str
    text: str
    sha256: str
    catalog: Catalog  # the packaged catalog plus the sweep's own GPUs and models
    axes: Axes
    exclude: tuple[dict[str, tuple], ...]
    contexts: tuple[int, ...] | None  # the `context` axis, when given instead of input_tokens
    profile: Profile
    profile_name: str
    notes: tuple[str, ...]

    @property
    def size(self) -> int:
        """Rows before exclusions: the product of the axes (with `context` in place of input_tokens)."""
        if self.contexts is None:
            return self.axes.size
        return self.axes.size // len(self.axes.input_tokens) * len(self.contexts)


def load(
    path: str | Path,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    profile: str | None = None,
) -> Sweep:
    """Read, validate and resolve a sweep file. Raises SpecError listing every problem (a bad
    `profile` option is an error of its own, not the file's)."""
    if profile is not None:
        try:
            load_catalog().profile(profile)
        except LlmsweepError as e:
            raise LlmsweepError(f"--profile: {e}") from None
    with suggestion_budget(MAX_SUGGESTIONS):
        return _load(path, max_rows, profile)


def _load(path: str | Path, max_rows: int, profile: str | None) -> Sweep:
    doc = load_yaml(path)
    problems = list(doc.problems)
    data = doc.data
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        problems.append(Problem(doc.file, 1, "(top level)", f"expected a mapping of sweep keys, got {got}"))
        raise SpecError(problems)
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as e:
        problems.extend(_pydantic_problems(doc, e, SweepSpec))
        problems.extend(_precheck_names(doc, data))
        raise SpecError(_dedupe(problems)) from None
    r = _Resolver(doc, spec, Path(path).resolve().parent)
    g = spec.grid
    gpus = r.names("gpu", g.gpu, "gpu")
    engines = r.names("engine", g.engine, "engine")
    models = r.names("model", g.model, "model")
    precisions = r.names("precision", g.precision, "precision")
    kv = r.names("kv_precision", g.kv_precision, "precision")
    if GENERIC_FP4 in precisions:  # said once here, and on each row (grid.weight_formats)
        r.notes.append(fp4_note(r.catalog, gpus, models))
    outputs = r.numbers("output_tokens", g.output_tokens)
    if g.context is not None:
        contexts = r.numbers("context", g.context)
        inputs = sorted({ctx - out for ctx in contexts for out in outputs})
        bad = [(i, ctx) for i, ctx in enumerate(g.context) if ctx <= max(outputs, default=0)]
        for i, ctx in bad:
            r.fail(("grid", "context", i), f"context {ctx} must exceed every output_tokens value (max {max(outputs)})")
    else:
        contexts = None
        inputs = r.numbers("input_tokens", g.input_tokens or [1024])
    serving, speculation_paths = serving_axes(r, spec)
    axes = Axes(
        gpu=gpus,
        engine=engines,
        model=models,
        precision=precisions,
        kv_precision=kv,
        input_tokens=inputs,
        output_tokens=outputs,
        batch=r.numbers("batch", g.batch),
        tp=r.numbers("tp", g.tp),
        pp=r.numbers("pp", g.pp),
        ep=r.numbers("ep", g.ep),
        dp_attention=r.numbers("dp_attention", g.dp_attention),
        **serving,
        named_precision=dict(r.named_precision),
    )
    grid_ok = not r.problems  # every axis value resolved: the exclusion rules can be checked against them
    _check_workload_lengths(r, spec, inputs, outputs)
    exclude = resolve_exclusions(r, spec.exclude, axes, contexts, grid_ok)
    check_speculation(r, axes, exclude, speculation_paths)
    _check_costs(r, spec, gpus if len(gpus) == len(g.gpu) else None)  # else a grid GPU was reported
    profile_name = profile or spec.profile
    prof = None
    try:  # a profile file named in the sweep is relative to the sweep; on the command line, to the cwd
        is_file = profile_name.endswith((".yaml", ".yml")) and not profile
        prof = r.catalog.profile(str(r._path(profile_name)) if is_file else profile_name)
    except LlmsweepError as e:
        r.fail(("profile",), str(e))
    _check_rank_by(r, spec.rank_by)
    _check_slo(r, spec)
    problems.extend(r.problems)
    size = axes.size if contexts is None else axes.size // max(len(inputs), 1) * len(contexts)
    if not problems and size > max_rows:
        dims = " x ".join(f"{len(v)} {k}" for k, v in _axis_sizes(axes, contexts).items())
        problems.append(
            Problem(
                doc.file,
                doc.line(("grid",)),
                "grid",
                f"the grid has {size:,} configurations ({dims}), more than --max-rows {max_rows:,}; "
                "shrink an axis, add `exclude` rules, or raise --max-rows",
            )
        )
    if problems:
        raise SpecError(_dedupe(problems))
    sweep = Sweep(
        spec=spec,
        file=doc.file,
        text=doc.text,
        sha256=hashlib.sha256(doc.text.encode()).hexdigest(),
        catalog=r.catalog,
        axes=axes,
        exclude=exclude,
        contexts=tuple(contexts) if contexts is not None else None,
        profile=prof,  # type: ignore[arg-type]
        profile_name=profile_name,
        notes=tuple(dict.fromkeys(r.notes)),
    )
    problem = _plan_size_problem(sweep, max_rows)
    if problem:
        raise SpecError([doc.problem(("costs",) if spec.costs else ("grid",), problem)])
    return sweep


OPTION_BYTES = 4_000  # memory one priced option takes while it is planned (measured: 3.9-4.8 KB)
OPTIONS_PER_ROW = 5  # so --max-rows N allows N / 5 options, about the memory of N streamed rows


def plan_size(sweep: Sweep) -> tuple[int, int]:
    """(layouts, priced options) the plan builds and holds in memory: every layout of the grid (the
    batch axis collapses to the batch chosen) once per price offer of its GPU, before exclusions."""
    from llmsweep.plan import plan_inputs  # plan imports this module

    offers = plan_inputs(sweep).offers
    per_gpu = sweep.size // max(len(sweep.axes.gpu), 1) // max(len(sweep.axes.batch), 1)
    layouts = per_gpu * len(sweep.axes.gpu)
    options = sum(per_gpu * max(len(offers.get(g, ())), 1) for g in sweep.axes.gpu)
    return layouts, options


def _plan_size_problem(sweep: Sweep, max_rows: int) -> str | None:
    layouts, options = plan_size(sweep)
    limit = max(max_rows // OPTIONS_PER_ROW, 1)
    if options <= limit:
        return None
    return (
        f"the plan would hold {options:,} priced options ({layouts:,} layouts, each once per price offer of its "
        f"GPU), about {options * OPTION_BYTES / 1e9:,.1f} GB of memory, more than the {limit:,} options that "
        f"--max-rows {max_rows:,} allows (an option takes {OPTIONS_PER_ROW} rows' worth); give fewer offers or "
        "layouts, or raise --max-rows"
    )


def _axis_sizes(axes: Axes, contexts: list | None) -> dict[str, list]:
    sizes = {
        "gpu": axes.gpu,
        "engine": axes.engine,
        "model": axes.model,
        "precision": axes.precision,
        "kv_precision": axes.kv_precision,
        "context" if contexts is not None else "input_tokens": contexts if contexts is not None else axes.input_tokens,
        "output_tokens": axes.output_tokens,
        "batch": axes.batch,
        "tp": axes.tp,
        "pp": axes.pp,
        "ep": axes.ep,
        "dp_attention": axes.dp_attention,
        "mode": axes.mode,
        "speculative": axes.speculative,
        "prefix_hit_rate": axes.prefix_hit_rate,
    }
    if axes.disaggregated:  # the pools multiply the disaggregated rows only
        sizes.update({"prefill_workers": axes.prefill_workers, "decode_workers": axes.decode_workers})
        sizes.update({f"prefill_{n}": axes.prefill_layout(n) for n in ("tp", "pp", "ep", "dp_attention")})
    return {k: v for k, v in sizes.items() if len(v) > 1} or {"gpu": axes.gpu}
