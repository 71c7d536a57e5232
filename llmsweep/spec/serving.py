"""Serving modes in the sweep file (DESIGN.md §4 "Serving modes", docs/serving.md): the grid's
`mode`, `prefill:` and `decode:` pools, `speculative` and `prefix_hit_rate` axes, as pydantic
models; and their resolution against the catalog (`serving_axes`, `check_speculation`): a draft
model by name, MTP only for models whose checkpoint ships an MTP module, a draft smaller than the
model it drafts for.

    grid:
      mode: [aggregated, disaggregated]
      prefill: {workers: [1, 2], tp: [8], ep: [8]}   # a prefill worker's layout; default: the grid's
      decode: {workers: [1, 2, 4]}                   # a decode worker's layout: the grid's tp, pp, ep, ...
      speculative: [none, mtp, {method: eagle, draft_tokens: 3, acceptance: 0.7},
                    {method: draft, draft_model: llama-3.1-8b, acceptance_rates: [0.8, 0.6, 0.5]}]
      prefix_hit_rate: [0, 0.5]                      # or the workload's prefix_hit_rate (not both)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from llmsweep.errors import LlmsweepError, did_you_mean
from llmsweep.estimate import disaggregated, speculative
from llmsweep.grid import Speculation
from llmsweep.limits import number
from llmsweep.spec.base import _as_list, _axis, _Strict
from llmsweep.yamlfile import KeyPath

if TYPE_CHECKING:
    from llmsweep.catalog import Catalog
    from llmsweep.grid import Axes
    from llmsweep.spec.models import SweepSpec
    from llmsweep.spec.resolve import _Resolver

# The serving modes and speculative methods are declared where each is estimated.
MODES = disaggregated.MODES
METHODS = speculative.METHODS
# Tokens drafted per step when the sweep says none: MTP at its engine's default depth (None:
# catalog/engines.MTP_DRAFT_TOKENS, SGLang 3, TensorRT-LLM and vLLM 1; DeepSeek-V3 trains one MTP
# module, depth D = 1, which engines run k times, §2.2); three for EAGLE heads and draft models, an
# assumption (a few tokens, where an acceptance of 0.7 still gains: E = 2.53 at k = 3).
DEFAULT_DRAFT_TOKENS = {"mtp": None, "eagle": 3, "draft": 3}


def _name(kind: str, choices: Sequence[str]):
    """A before-validator: a name of `choices`, any case, with a did-you-mean for anything else."""

    def check(v: Any) -> Any:
        if not isinstance(v, str):
            return v  # the Literal says what is wrong
        name = v.strip().lower()
        if name not in choices:
            hint = did_you_mean(name, choices, n=1)
            raise ValueError(
                f"unknown {kind} {v!r}" + (f"; did you mean {hint[0]!r}?" if hint else "") + f" ({', '.join(choices)})"
            )
        return name

    return check


Mode = Annotated[Literal[MODES], BeforeValidator(_name("mode", MODES))]  # type: ignore[valid-type]
Method = Annotated[Literal[METHODS], BeforeValidator(_name("method", METHODS))]  # type: ignore[valid-type]


def tokens_per_step(rates: Sequence[float]) -> float:
    """E = 1 + a1 + a1 a2 + ... + a1 ... ak: the expected tokens a step yields when the drafted
    token at position i is accepted with probability a_i given the ones before it (a step stops at
    the first rejection and always yields the target's own next token). [0.8, 0.5]: 1 + 0.8 + 0.4 = 2.2."""
    e, run = 1.0, 1.0
    for a in rates:
        run *= a
        e += run
    return e


def iid_acceptance(e: float, k: int) -> float:
    """The i.i.d. per-token acceptance alpha with the same E: (1 - alpha^(k+1)) / (1 - alpha) = E, by
    bisection (E grows with alpha, from 1 at 0 to k + 1 at 1). E = 2.2, k = 2: 1 + alpha + alpha^2 = 2.2,
    alpha = 0.7042."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(mid**i for i in range(k + 1)) < e else (lo, mid)
    return hi


class SpeculationSpec(_Strict):
    """One speculative-decoding setting: a method, the tokens it drafts per step and how often they
    are accepted (default: the efficiency profile's acceptance for the method)."""

    method: Method = Field(
        description="none; mtp (the model's own multi-token-prediction module: DeepSeek-V3/R1, GLM-5, ...); "
        "eagle (an EAGLE draft head); draft (a smaller draft model, `draft_model`)."
    )
    draft_tokens: number("draft_tokens") | None = Field(
        None,
        description="k: tokens drafted per sequence and step, 1 to 16 (default: mtp the engine's own, SGLang 3, "
        "TensorRT-LLM and vLLM 1; eagle and draft 3).",
    )
    acceptance: number("acceptance") | None = Field(
        None,
        description="alpha: the chance that a drafted token is accepted, each position alike (default: the "
        "profile's mtp_acceptance, 0.45 in default (fitted on random-token benchmark prompts; text accepts 0.85-0.90), "
        "eagle_acceptance and draft_acceptance 0.7).",
    )
    acceptance_rates: list[number("acceptance")] | None = Field(
        None,
        min_length=1,
        max_length=16,
        description="Per-position acceptance instead: a_i = P(token i accepted | the ones before were), one per "
        "drafted token; tokens per step = 1 + a1 + a1 a2 + ...",
    )
    draft_model: str | None = Field(
        None, description="method draft: the draft model (a catalog id or alias, or a name under `models:`)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> SpeculationSpec:
        given = [k for k in ("draft_tokens", "acceptance", "acceptance_rates", "draft_model") if getattr(self, k)]
        if self.method == "none" and given:
            raise ValueError(f"none drafts nothing: drop {given[0]} (or name a method: mtp, eagle, draft)")
        if self.method == "draft" and not self.draft_model:
            raise ValueError(
                "method draft needs draft_model: the smaller model that drafts (e.g. llama-3.1-8b for llama-3.1-70b)"
            )
        if self.method != "draft" and self.draft_model:
            what = "the model's own MTP module" if self.method == "mtp" else "an EAGLE head"
            raise ValueError(f"draft_model is for method draft; {self.method} drafts with {what}")
        if self.acceptance is not None and self.acceptance_rates is not None:
            raise ValueError("give acceptance (every position alike) or acceptance_rates (one per position), not both")
        rates = self.acceptance_rates
        if rates is not None and self.draft_tokens is not None and len(rates) != self.draft_tokens:
            raise ValueError(
                f"acceptance_rates lists {len(rates)} rate{'s' * (len(rates) != 1)} for draft_tokens "
                f"{self.draft_tokens}: give one per drafted token"
            )
        return self

    @property
    def tokens(self) -> int | None:
        """k: as given, else one per acceptance rate, else the method's default (0 for none; None for
        mtp: the engine's own depth, resolved per engine by the grid)."""
        if self.method == "none":
            return 0
        if self.draft_tokens is not None:
            return self.draft_tokens
        return len(self.acceptance_rates) if self.acceptance_rates else DEFAULT_DRAFT_TOKENS[self.method]

    def speculation(self, draft_model: str | None = None) -> Speculation:
        """The grid's setting (`draft_model` resolved to a catalog id); per-position rates become
        tokens_per_step, with the i.i.d. acceptance of the same E shown beside it."""
        if self.method == "none":
            return Speculation()
        k = self.tokens
        if self.acceptance_rates:
            e = tokens_per_step(self.acceptance_rates)
            return Speculation(self.method, k, iid_acceptance(e, k), e, draft_model)
        return Speculation(self.method, k, self.acceptance, None, draft_model)


def _speculation_item(v: Any) -> Any:
    """`none`, `mtp` or `eagle` stand for {method: ...}; `draft` needs its model, so a mapping."""
    if not isinstance(v, str):
        return v
    name = _name("method", METHODS)(v)
    if name == "draft":
        raise ValueError("draft needs its draft model: write {method: draft, draft_model: <model id>}")
    return {"method": name}


SpeculationItem = Annotated[
    SpeculationSpec,
    BeforeValidator(_speculation_item, json_schema_input_type=Literal["none", "mtp", "eagle"] | SpeculationSpec),
]
SPECULATIVE_AXIS = Annotated[
    list[SpeculationItem],
    BeforeValidator(_as_list),
    Field(
        default=["none"],
        validate_default=True,
        min_length=1,
        description="Speculative decoding settings: none, mtp, eagle, or {method, draft_tokens, acceptance or "
        "acceptance_rates, draft_model}.",
    ),
]


class PrefillSpec(_Strict):
    """The prefill pool of a disaggregated replica (mode disaggregated): how many workers, and each
    worker's layout (each key left out: the grid's own axis)."""

    workers: _axis(number("workers"), "x: prefill workers per replica (the x of xPyD).", [1])  # type: ignore[valid-type]
    tp: _axis(number("parallel"), "A prefill worker's tensor-parallel sizes (default: grid.tp).", None) | None = None  # type: ignore[valid-type]
    pp: _axis(number("parallel"), "A prefill worker's pipeline-parallel sizes (default: grid.pp).", None) | None = None  # type: ignore[valid-type]
    ep: _axis(number("parallel"), "A prefill worker's expert-parallel sizes (default: grid.ep).", None) | None = None  # type: ignore[valid-type]
    dp_attention: (
        _axis(  # type: ignore[valid-type]
            number("parallel"), "A prefill worker's attention data-parallel groups (default: grid.dp_attention).", None
        )
        | None
    ) = None


class DecodeSpec(_Strict):
    """The decode pool of a disaggregated replica: how many workers, each with the grid's tp, pp,
    ep and dp_attention."""

    workers: _axis(number("workers"), "y: decode workers per replica (the y of xPyD).", [1])  # type: ignore[valid-type]


# -- resolution ------------------------------------------------------------------------------------


def _written(r: _Resolver, path: KeyPath, i: int) -> KeyPath:
    """The path of item i of the list at `path`, as the file wrote it (a single value: no index)."""
    node: Any = r.doc.data
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return (*path, i) if isinstance(node, list) else path


def _once(r: _Resolver, path: KeyPath, values: Sequence, shown=repr) -> list:
    """The values of one axis, each once; a repeat is a problem (it would double rows)."""
    first: dict[Any, int] = {}
    out = []
    for i, v in enumerate(values):
        if v in first:
            r.fail(_written(r, path, i), f"{shown(v)} repeats {'.'.join(path)}[{first[v]}]")
            continue
        first[v] = i
        out.append(v)
    return out


def serving_axes(r: _Resolver, spec: SweepSpec) -> tuple[dict[str, Any], dict[Speculation, KeyPath]]:
    """The grid.Axes fields of the serving modes (mode, pools, speculative, prefix cache), and the
    key path of each speculative setting in the file."""
    g, load = spec.grid, spec.workload
    modes = _once(r, ("grid", "mode"), g.mode)
    out: dict[str, Any] = {"mode": modes}
    for key, pool in (("prefill", g.prefill), ("decode", g.decode)):
        if pool is not None and "disaggregated" not in modes:
            r.fail(
                ("grid", key),
                f"a {key} pool is for mode disaggregated: add it to grid.mode "
                f"(mode: [aggregated, disaggregated] compares both) or drop `{key}:`",
            )
    if g.prefill is not None:
        out["prefill_workers"] = _once(r, ("grid", "prefill", "workers"), g.prefill.workers)
        for name in ("tp", "pp", "ep", "dp_attention"):
            values = getattr(g.prefill, name)
            if values is not None:
                out[f"prefill_{name}"] = _once(r, ("grid", "prefill", name), values)
    if g.decode is not None:
        out["decode_workers"] = _once(r, ("grid", "decode", "workers"), g.decode.workers)
    given = load.prefix_hit_rate if load is not None else None
    if g.prefix_hit_rate is not None and given is not None:
        r.fail(
            ("grid", "prefix_hit_rate"),
            "give the prefix hit rate once: grid.prefix_hit_rate (an axis, to compare rates) or "
            "workload.prefix_hit_rate (the traffic's), not both",
        )
    rates = g.prefix_hit_rate if g.prefix_hit_rate is not None else [given if given is not None else 0.0]
    out["prefix_hit_rate"] = _once(r, ("grid", "prefix_hit_rate"), [float(h) for h in rates])
    out["prefix_shared"] = bool(load is not None and load.prefix_shared)
    paths = _speculations(r, g.speculative)
    out["speculative"] = list(paths)
    return out, paths


def _speculations(r: _Resolver, items: Sequence[SpeculationSpec]) -> dict[Speculation, KeyPath]:
    """Each setting once (in file order), at the path of the item that gave it."""
    out: dict[Speculation, KeyPath] = {}
    first: dict[Speculation, int] = {}
    for i, item in enumerate(items):
        path = _written(r, ("grid", "speculative"), i)
        draft = None
        if item.method == "draft" and item.draft_model is not None:
            try:
                match = r.catalog.resolve_model(item.draft_model)
                r.catalog.model(match.id)
            except LlmsweepError as e:
                if item.draft_model not in r.broken:  # else its definition was reported already
                    r.fail((*path, "draft_model"), str(e))
                continue
            if match.note:
                r.notes.append(match.note)
            draft = match.id
        setting = item.speculation(draft)
        if setting in first:
            r.fail(path, f"{setting.label!r} repeats grid.speculative[{first[setting]}]")
            continue
        first[setting] = i
        out[setting] = path
    return out


def _excluded(exclude: Sequence[dict[str, tuple]], model: str, method: str) -> bool:
    """True when a rule drops every row of `model` with speculative `method` (it names no other axis)."""
    for rule in exclude:
        names = rule and set(rule) <= {"model", "speculative"}
        if names and model in rule.get("model", (model,)) and method in rule.get("speculative", (method,)):
            return True
    return False


def check_speculation(
    r: _Resolver, axes: Axes, exclude: Sequence[dict[str, tuple]], paths: dict[Speculation, KeyPath]
) -> None:
    """mtp only for models that ship an MTP module; a draft model smaller (fewer active parameters)
    than each model it drafts for. A combination an `exclude` rule drops is not checked."""
    for setting, path in paths.items():
        if setting.method not in ("mtp", "draft"):
            continue
        models = [m for m in axes.model if not _excluded(exclude, m, setting.method)]
        if setting.method == "mtp":
            problem = mtp_problem(r.catalog, models)
            if problem:
                rule = f"{{model: {_lacking_mtp(r.catalog, models)[0]}, speculative: mtp}}"
                r.fail(path, f"{problem}, or exclude {rule}")
        elif setting.draft_model is not None:
            problem = draft_problem(r.catalog, setting.draft_model, models)
            if problem:
                r.fail((*path, "draft_model"), problem)


def mtp_problem(catalog: Catalog, models: Sequence[str]) -> str | None:
    """What is wrong with speculative mtp for `models` (catalog ids): those without an MTP module."""
    lacking = _lacking_mtp(catalog, models)
    if not lacking:
        return None
    having = [m for m in catalog.models if catalog.model(m).architecture.mtp_layers]
    one = len(lacking) == 1
    return (
        f"mtp drafts with the model's own multi-token-prediction module, and {_names(lacking)} "
        f"{'has' if one else 'have'} none (no num_nextn_predict_layers in config.json); models with one: "
        f"{', '.join(having)}. Use eagle or a draft model for {'it' if one else 'them'}"
    )


def draft_problem(catalog: Catalog, draft: str, models: Sequence[str]) -> str | None:
    """What is wrong with `draft` (a catalog id) as the draft model of `models`: those it is not smaller than."""
    size = catalog.model(draft).architecture.params_active
    too_big = [m for m in models if catalog.model(m).architecture.params_active <= size]
    if not too_big:
        return None
    return (
        f"the draft model {draft} ({_active_b(catalog, draft)} active parameters) is not smaller than "
        f"{_names([f'{m} ({_active_b(catalog, m)})' for m in too_big])}: a draft must have fewer active "
        "parameters than the model it drafts for, or drafting costs more than it saves"
    )


def _lacking_mtp(catalog: Catalog, models: Sequence[str]) -> list[str]:
    return [m for m in models if not catalog.model(m).architecture.mtp_layers]


def _active_b(catalog: Catalog, model: str) -> str:
    return f"{catalog.model(model).architecture.params_active / 1e9:,.2f} B"


def _names(models: Sequence[str]) -> str:
    return models[0] if len(models) == 1 else ", ".join(models[:-1]) + " and " + models[-1]
