"""Fitting the efficiency profile: a small Nelder-Mead minimiser, the squared-log-error loss with a
weak prior towards the starting values, and leave-one-source-out cross-validation.

Fitting minimises the squared log error of estimated against measured values over the profile's
parameters (bandwidth and compute efficiency shared, then per GPU family where a family has
enough rows; per-step and per-layer overheads shared). The error it reports is out of sample:
leave-one-source-out cross-validation, so no row is scored by a profile that was fitted on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from llmsweep.calibrate.bands import bands
from llmsweep.calibrate.comparison import Evaluator, comparison_frame
from llmsweep.calibrate.measurement import Measurement, source_key
from llmsweep.calibrate.serving import fit_serving
from llmsweep.catalog import Catalog, Profile
from llmsweep.catalog.profiles import Efficiency, EngineOverrides

BOUNDS = {
    "bandwidth_efficiency": (0.3, 0.95),
    "compute_efficiency": (0.1, 0.95),
    "step_overhead_s": (0.0, 0.01),
    "layer_overhead_s": (0.0, 0.0001),
    "moe_layer_overhead_s": (0.0, 0.0005),
    "request_overhead_s": (0.0, 0.5),
    # the serving modes' (calibrate/serving.py)
    "mtp_acceptance": (0.05, 0.95),
    "handoff_overhead_s": (0.0, 2.0),
}
# A weak prior keeps the fit near the literature values unless the data clearly disagree: the penalty
# is PRIOR_WEIGHT x (squared log change of each efficiency + squared overhead change in units of SCALE).
PRIOR_WEIGHT = 0.1
SCALE = {
    "step_overhead_s": 0.001,
    "layer_overhead_s": 0.00002,
    "moe_layer_overhead_s": 0.00005,
    "request_overhead_s": 0.01,
    "handoff_overhead_s": 0.05,
}
MIN_FAMILY_ROWS = 8  # a GPU family gets its own efficiencies when it has this many fittable rows


TOLERANCE = 1e-6  # stop when the simplex's losses differ by less (moves estimates by < 0.3 %)
WARM_STEP = 0.3  # a warm start (cross-validation folds from the full fit) explores this share of STEPS


def _nelder_mead(
    f: Callable[[list[float]], float], x0: list[float], step: list[float], iterations: int = 300
) -> list[float]:
    """A small, dependency-free Nelder-Mead minimiser (bounds are handled by the caller's clipping),
    stopped when the simplex's losses agree to TOLERANCE."""
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (step[j] if j == i else 0.0) for j in range(n)] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if abs(values[-1] - values[0]) < TOLERANCE:
            break
        centroid = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflect = [centroid[j] + (centroid[j] - worst[j]) for j in range(n)]
        fr = f(reflect)
        if fr < values[0]:
            expand_ = [centroid[j] + 2 * (centroid[j] - worst[j]) for j in range(n)]
            fe = f(expand_)
            simplex[-1], values[-1] = (expand_, fe) if fe < fr else (reflect, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflect, fr
        else:
            contract = [centroid[j] + 0.5 * (worst[j] - centroid[j]) for j in range(n)]
            fc = f(contract)
            if fc < values[-1]:
                simplex[-1], values[-1] = contract, fc
            else:
                best = simplex[0]
                simplex = [best] + [[best[j] + 0.5 * (x[j] - best[j]) for j in range(n)] for x in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def _loss(ev: Evaluator, estimated: pl.Series) -> float:
    """Mean squared log error over every row of `ev`; an estimate that cannot be made (does not
    fit, or is not a positive number) counts as a large miss (25, a factor of e^5)."""
    if not len(estimated):
        return 0.0
    e, m = estimated, ev.rows["measured"]
    return pl.select(pl.when(e > 0).then((e / m).log().pow(2)).otherwise(25.0).mean()).item()


def _with(
    profile: Profile,
    shared: dict[str, float],
    families: dict[str, dict[str, float]],
    engine: str | None = None,
) -> Profile:
    """`profile` with `shared` defaults and per-family overrides, the generic ones or (with
    `engine`) that engine's: `families[""]` then holds the engine's own defaults."""
    if engine is not None:
        current = profile.engines.get(engine) or EngineOverrides()
        defaults_ = {**current.defaults, **families.get("", {})}
        fams = {f: {**o} for f, o in current.families.items()}
        for fam, override in families.items():
            if fam:
                fams[fam] = {**fams.get(fam, {}), **override}
        engines = {**profile.engines, engine: EngineOverrides(defaults=defaults_, families=fams)}
        return profile.model_copy(update={"engines": dict(sorted(engines.items()))})
    defaults = Efficiency.model_validate({**profile.defaults.model_dump(), **shared})
    merged = {f: {**o} for f, o in profile.families.items()}
    for fam, override in families.items():
        merged[fam] = {**merged.get(fam, {}), **override}
    return profile.model_copy(update={"defaults": defaults, "families": merged})


def _prior(start: Efficiency, params: dict[str, float]) -> float:
    total = 0.0
    for name, value in params.items():
        if name in SCALE:
            total += ((value - getattr(start, name)) / SCALE[name]) ** 2
        else:
            total += math.log(value / getattr(start, name)) ** 2
    return PRIOR_WEIGHT * total


def _clip(name: str, v: float) -> float:
    lo, hi = BOUNDS[name]
    return min(max(v, lo), hi)


# What the fit moves. Compute efficiency stays at its literature value: engines reach very different
# fractions of the tensor peak (llama.cpp runs prompt matmuls on GeForce at the FP16-accumulate rate,
# twice the FP32-accumulate peak the catalog uses; TensorRT-LLM and vLLM do not), so a value fitted on
# one engine's prefill mispredicts the others'. Cross-validation showed it: fitting it made the
# out-of-sample prefill error worse (38 %) than leaving it (26 %).
SHARED_PARAMS = ("bandwidth_efficiency", "step_overhead_s", "layer_overhead_s", "moe_layer_overhead_s")
FAMILY_PARAMS = ("bandwidth_efficiency",)
# Per engine (issue: one engine's rows must never set another engine's efficiency): each engine with
# enough rows gets its own bandwidth and compute efficiency and per-step overhead, pulled towards the
# shared values, then each engine x GPU family its own bandwidth efficiency, pulled towards the
# engine's. The pull is a prior worth PRIOR_ROWS rows: strong for a few rows, weak for many.
ENGINE_PARAMS = ("bandwidth_efficiency", "compute_efficiency", "step_overhead_s", "request_overhead_s")
# Compute efficiency too: an engine reaches a different share of each generation's tensor peak (FP8/FP4
# GEMMs on Blackwell, bf16 on Hopper), and an engine x family without rows keeps the engine's value.
ENGINE_FAMILY_PARAMS = ("bandwidth_efficiency", "compute_efficiency")
PRIOR_ROWS = 8
STEPS = {
    "bandwidth_efficiency": 0.1,
    "compute_efficiency": 0.1,
    "step_overhead_s": 0.0005,
    "layer_overhead_s": 0.00001,
    "moe_layer_overhead_s": 0.00002,
    "request_overhead_s": 0.02,
    "mtp_acceptance": 0.1,
    "handoff_overhead_s": 0.1,
}


def _steps(names: tuple[str, ...], warm: bool) -> list[float]:
    return [STEPS[n] * (WARM_STEP if warm else 1.0) for n in names]


def fit(ev: Evaluator, start: Profile, rows: list[int], init: Profile | None = None) -> Profile:
    """Fit on the measurements at `rows`: the shared parameters first, then each GPU family's
    bandwidth efficiency where the family has enough rows (overheads stay shared), then each
    engine's. Priors pull towards `start`; the search starts from `init` when given (a warm start:
    the cross-validation folds start from the fit on every row, which changes where the search
    begins, not what it minimises)."""
    serving = [i for i in rows if ev.measurements[i].serving_mode]
    rows = [i for i in rows if ev.measurements[i].fittable]
    if not rows:
        return fit_serving(ev, start, serving, init)
    train = ev.subset(rows)  # each candidate is evaluated on the fitted rows only, all in one pass
    origin = init or start

    def shared_loss(x: list[float]) -> float:
        params = {n: _clip(n, v) for n, v in zip(SHARED_PARAMS, x, strict=True)}
        return _loss(train, train.estimate_series(_with(start, params, {}))) + _prior(start.defaults, params)

    x0 = [getattr(origin.defaults, n) for n in SHARED_PARAMS]
    best = _nelder_mead(shared_loss, x0, _steps(SHARED_PARAMS, init is not None))
    profile = _with(start, {n: _clip(n, v) for n, v in zip(SHARED_PARAMS, best, strict=True)}, {})
    families = train.families
    for fam in sorted(set(families)):
        fam_rows = [i for i, f in enumerate(families) if f == fam]
        if len(fam_rows) < MIN_FAMILY_ROWS:
            continue
        fam_ev = train.subset(fam_rows)

        def fam_loss(x: list[float], fam: str = fam, fam_ev: Evaluator = fam_ev, base: Profile = profile) -> float:
            override = {n: _clip(n, v) for n, v in zip(FAMILY_PARAMS, x, strict=True)}
            prior = _prior(base.for_family(fam), override)
            return _loss(fam_ev, fam_ev.estimate_series(_with(base, {}, {fam: override}))) + prior

        x0 = [getattr((init or profile).for_family(fam), n) for n in FAMILY_PARAMS]
        x = _nelder_mead(fam_loss, x0, _steps(FAMILY_PARAMS, init is not None), iterations=150)
        profile = _with(profile, {}, {fam: {n: _clip(n, v) for n, v in zip(FAMILY_PARAMS, x, strict=True)}})
    # then what only the serving modes use, on their own rows, everything else held
    return fit_serving(ev, fit_engines(train, profile, init), serving, init)


def _shrunk_fit(
    ev: Evaluator,
    profile: Profile,
    engine: str,
    family: str,
    names: tuple[str, ...],
    init: Profile | None = None,
    shared: bool = False,
) -> Profile:
    """Fit `names` for `engine` (its defaults when family is "", else engine x family; with `shared`
    the profile's defaults, for every engine) on the rows of `ev`, with a prior towards the values
    in force before, worth PRIOR_ROWS rows (the search starts from `init`'s values when given)."""
    start = profile.defaults if shared else profile.for_family(family, engine)
    weight = PRIOR_ROWS / max(len(ev.measurements), 1)

    def place(params: dict[str, float]) -> Profile:
        return _with(profile, params, {}) if shared else _with(profile, {}, {family: params}, engine=engine)

    def loss(x: list[float]) -> float:
        params = {n: _clip(n, v) for n, v in zip(names, x, strict=True)}
        return _loss(ev, ev.estimate_series(place(params))) + weight * _prior(start, params)

    origin = init or profile
    x0 = [getattr(origin.defaults if shared else origin.for_family(family, engine), n) for n in names]
    x = _nelder_mead(loss, x0, _steps(names, init is not None), iterations=150)
    return place({n: _clip(n, v) for n, v in zip(names, x, strict=True)})


def fit_engines(train: Evaluator, profile: Profile, init: Profile | None = None) -> Profile:
    """Each engine with at least MIN_FAMILY_ROWS rows: its own values (ENGINE_PARAMS), then each
    of its GPU families with that many rows (ENGINE_FAMILY_PARAMS), each pulled towards its parent."""
    engines, families = train.engines, train.families
    for engine in sorted(set(engines) - {"generic"}):
        rows = [i for i, e in enumerate(engines) if e == engine]
        if len(rows) < MIN_FAMILY_ROWS:
            continue
        profile = _shrunk_fit(train.subset(rows), profile, engine, "", ENGINE_PARAMS, init)
        for fam in sorted({families[i] for i in rows}):
            fam_rows = [i for i in rows if families[i] == fam]
            if len(fam_rows) >= MIN_FAMILY_ROWS:
                profile = _shrunk_fit(train.subset(fam_rows), profile, engine, fam, ENGINE_FAMILY_PARAMS, init)
    return profile


@dataclass(frozen=True)
class FitResult:
    profile: Profile  # fitted on every row
    in_sample: pl.DataFrame  # comparison with the fitted profile (for reference only)
    out_of_sample: pl.DataFrame  # each source's rows scored by a profile fitted without that source
    before: pl.DataFrame  # comparison with the starting profile
    bands: dict[str, list[float]]  # metric group -> [low, high] factors covering the middle 80 %


def by_source(m: Measurement) -> str:
    return source_key(m.source)


def cross_validate(
    ev: Evaluator,
    start: Profile,
    group: Callable[[Measurement], str] = by_source,
    init: Profile | None = None,
) -> pl.DataFrame:
    """Leave one group out (by default one source): fit on the other groups, score the held-out
    one. Every row is scored by a profile that never saw it (`init`: where each fold's search
    starts, e.g. the fit on every row)."""
    ms = ev.measurements
    sources = [group(m) for m in ms]
    estimated: list[float | None] = [None] * len(ms)
    for held in sorted(set(sources)):
        train = [i for i, s in enumerate(sources) if s != held]
        test = [i for i, s in enumerate(sources) if s == held]
        profile = fit(ev, start, train, init)
        values = ev.subset(test).estimate(profile)
        for i, value in zip(test, values, strict=True):
            estimated[i] = value
    return comparison_frame(ms, estimated)


def calibrate(
    measurements: list[Measurement],
    start: Profile,
    catalog: Catalog | None = None,
    group: Callable[[Measurement], str] = by_source,
) -> FitResult:
    ev = Evaluator.build(measurements, start, catalog)
    ms = ev.measurements  # as compared: rows without a tp at the layout llmsweep chose
    before = comparison_frame(ms, ev.estimate(start))
    profile = fit(ev, start, list(range(len(ms))))
    oos = cross_validate(ev, start, group, init=profile)
    band = bands(oos)
    profile = profile.model_copy(update={"bands": band})
    return FitResult(profile, comparison_frame(ms, ev.estimate(profile)), oos, before, band)
