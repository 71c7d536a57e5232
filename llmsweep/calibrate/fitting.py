"""Fitting the efficiency profile: the squared-log-error loss with a weak prior towards the
starting values, minimised by a small Levenberg-Marquardt search whose candidates are evaluated
many at once, and leave-one-source-out cross-validation.

Fitting minimises the squared log error of estimated against measured values over the profile's
parameters (bandwidth and compute efficiency shared, then per GPU family where a family has
enough rows; per-step and per-layer overheads shared). The error it reports is out of sample:
leave-one-source-out cross-validation, so no row is scored by a profile that was fitted on it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from llmsweep.calibrate.bands import bands
from llmsweep.calibrate.comparison import Evaluator, comparison_frame, evaluate_many
from llmsweep.calibrate.measurement import Measurement, source_key
from llmsweep.calibrate.network import fit_network
from llmsweep.calibrate.serving import fit_serving
from llmsweep.catalog import Catalog, Profile
from llmsweep.catalog.profiles import Efficiency, EngineOverrides

BOUNDS = {
    "bandwidth_efficiency": (0.3, 0.95),
    "compute_efficiency": (0.1, 0.95),
    "fp8_gemm_efficiency": (0.3, 1.0),
    "fp4_gemm_efficiency": (0.3, 1.0),
    "step_overhead_s": (0.0, 0.01),
    "layer_overhead_s": (0.0, 0.0001),
    "moe_layer_overhead_s": (0.0, 0.0005),
    "request_overhead_s": (0.0, 0.5),
    "network_latency_s": (0.0, 0.0005),
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
    "network_latency_s": 0.000025,
    "handoff_overhead_s": 0.05,
}
MIN_FAMILY_ROWS = 8  # a GPU family gets its own efficiencies when it has this many fittable rows


# The search (Levenberg-Marquardt on the log errors): each parameter is moved in `u`, its log for an
# efficiency and its value in units of SCALE for an overhead, the units its prior is measured in, so
# the prior is a plain quadratic. Each iteration evaluates the Jacobian (one forward difference of
# LM_STEP per parameter) and LM_TRIALS damped steps, each set in one estimator pass for every
# sub-fit running at once (comparison.evaluate_many); it stops when the loss falls by less than
# LM_TOLERANCE (estimates then move by well under 0.1 %).
LM_STEP = 1e-3
LM_TOLERANCE = 1e-8
LM_DAMPING = 1e-3  # the first damping (a share of the curvature added to each parameter's)
LM_TRIALS = (0.1, 1.0, 10.0)  # damping factors tried at once, each a step
LM_ITERATIONS = 40
MISS = 25.0  # the squared log error of an estimate that cannot be made: a factor of e^5


def _to_u(name: str, value: float) -> float:
    return value / SCALE[name] if name in SCALE else math.log(value)


def _from_u(name: str, u: float) -> float:
    return u * SCALE[name] if name in SCALE else math.exp(u)


@dataclass(frozen=True)
class _Problem:
    """One least-squares sub-fit: `names` fitted on the rows of `ev`, each candidate evaluated as
    the profile `candidate(values)`; the prior pulls each parameter towards `centre` with `weight`
    (per squared change in `u`); the search starts from `x0`."""

    ev: Evaluator
    names: tuple[str, ...]
    candidate: Callable[[dict[str, float]], Profile]
    centre: Efficiency
    weight: float
    x0: list[float]


def _residuals(estimated: pl.Series, measured: pl.Series) -> pl.Series:
    """log(estimated / measured) per row; null where there is no positive estimate (a MISS)."""
    return pl.select(pl.when(estimated > 0).then((estimated / measured).log())).to_series()


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """x with a x = b, for a small symmetric positive-definite `a` (Cholesky)."""
    n = len(b)
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            s = a[i][j] - sum(low[i][k] * low[j][k] for k in range(j))
            low[i][j] = math.sqrt(max(s, 1e-300)) if i == j else s / low[j][j]
    y = [0.0] * n
    for i in range(n):
        y[i] = (b[i] - sum(low[i][k] * y[k] for k in range(i))) / low[i][i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum(low[k][i] * x[k] for k in range(i + 1, n))) / low[i][i]
    return x


Search = Generator[list[dict[str, float]], list[pl.Series], dict[str, float]]


def _levenberg_marquardt(p: _Problem) -> Search:
    """Minimise mean squared log error + prior over `p.names` within BOUNDS: yields the candidates
    it needs evaluated (lists of parameter values), is sent their estimates, returns the values.
    A parameter at a bound that the gradient pushes outwards is held there for the step."""
    names, n = p.names, len(p.names)
    lo = [_to_u(k, BOUNDS[k][0]) for k in names]
    hi = [_to_u(k, BOUNDS[k][1]) for k in names]
    centre = [_to_u(k, getattr(p.centre, k)) for k in names]
    measured = p.ev.rows["measured"]
    rows = len(measured)

    def values(u: list[float]) -> dict[str, float]:
        return {k: _clip(k, _from_u(k, v)) for k, v in zip(names, u, strict=True)}

    def loss(r: pl.Series, u: list[float]) -> float:
        data = pl.select(r.pow(2).fill_null(MISS).mean()).item() if rows else 0.0
        return data + p.weight * sum((v - c) ** 2 for v, c in zip(u, centre, strict=True))

    u = [min(max(_to_u(k, _clip(k, x)), a), b) for k, x, a, b in zip(names, p.x0, lo, hi, strict=True)]
    (estimated,) = yield [values(u)]
    r = _residuals(estimated, measured)
    f = loss(r, u)
    damping = LM_DAMPING
    for _ in range(LM_ITERATIONS):
        steps = [LM_STEP if u[j] + LM_STEP <= hi[j] else -LM_STEP for j in range(n)]
        shifted = [[v + (steps[j] if i == j else 0.0) for i, v in enumerate(u)] for j in range(n)]
        columns = yield [values(v) for v in shifted]
        # the Jacobian of the log errors (0 where either estimate is a miss), its normal equations
        frame = pl.DataFrame({"r": r, **{f"j{j}": _residuals(e, measured) for j, e in enumerate(columns)}})
        d = [((pl.col(f"j{j}") - pl.col("r")) / steps[j]).fill_null(0.0) for j in range(n)]
        sums = frame.select(
            *[(d[j] * d[k]).sum().alias(f"a{j}_{k}") for j in range(n) for k in range(j + 1)],
            *[(d[j] * pl.col("r")).sum().alias(f"g{j}") for j in range(n)],
        ).row(0, named=True)
        a = [[sums[f"a{max(j, k)}_{min(j, k)}"] / rows for k in range(n)] for j in range(n)]
        g = [sums[f"g{j}"] / rows + p.weight * (u[j] - centre[j]) for j in range(n)]
        for j in range(n):
            a[j][j] += p.weight
        free = [j for j in range(n) if not ((u[j] <= lo[j] and g[j] > 0) or (u[j] >= hi[j] and g[j] < 0))]
        accepted = False
        while free and damping < 1e8:
            trials = []
            for factor in LM_TRIALS:
                lam = damping * factor
                m = [[a[j][k] + (lam * a[j][j] if j == k else 0.0) for k in free] for j in free]
                step = _solve(m, [-g[j] for j in free])
                t = list(u)
                for j, s in zip(free, step, strict=True):
                    t[j] = min(max(u[j] + s, lo[j]), hi[j])
                trials.append((lam, t))
            outs = yield [values(t) for _, t in trials]
            scored = []
            for (lam, t), e in zip(trials, outs, strict=True):
                rt = _residuals(e, measured)
                scored.append((loss(rt, t), lam, t, rt))
            best = min(scored, key=lambda s: s[0])  # the first of equals: the least damped
            if best[0] < f:
                gain = f - best[0]
                f, damping, u, r = best
                accepted = True
                break
            damping *= 100.0  # no trial lowered the loss: shorter steps from the same Jacobian
        if not accepted or gain < LM_TOLERANCE:
            break
        damping = max(damping / 3.0, 1e-9)
    return values(u)


def _minimise(problems: Sequence[_Problem]) -> list[dict[str, float]]:
    """Run every sub-fit's search at once: each round, the candidates all of them ask for are
    evaluated in one estimator pass. Independent sub-fits (one per GPU family, per engine) cost
    about as much together as one alone."""
    searches = [_levenberg_marquardt(p) for p in problems]
    found: dict[int, dict[str, float]] = {}
    asked = {i: next(s) for i, s in enumerate(searches)}
    rounds: _Rounds | None = getattr(_side, "rounds", None)
    while asked:
        requests = [(problems[i].ev, problems[i].candidate(x)) for i, xs in asked.items() for x in xs]
        results = iter(rounds.evaluate(_side.fit, requests) if rounds else evaluate_many(requests))
        answers = {i: [next(results)["estimated"] for _ in xs] for i, xs in asked.items()}
        asked = {}
        for i, estimates in answers.items():
            try:
                asked[i] = searches[i].send(estimates)
            except StopIteration as done:
                found[i] = done.value
    return [found[i] for i in range(len(problems))]


_side = threading.local()  # in a thread of _side_by_side: its `rounds` and the index of its `fit`


class _Rounds:
    """Fits run side by side (the folds of a cross-validation), their evaluations pooled: a round
    waits until every fit still running has asked for its candidates, then evaluates all of them
    in one estimator pass, in the fits' order. So a round holds the same asks whatever the
    threads' timing, and the results are the same from run to run."""

    def __init__(self, fits: int) -> None:
        self._ready = threading.Condition()
        self._running = set(range(fits))
        self._asked: dict[int, list[tuple[Evaluator, Profile]]] = {}
        self._answers: dict[int, list[pl.DataFrame] | BaseException] = {}

    def evaluate(self, fit: int, requests: list[tuple[Evaluator, Profile]]) -> list[pl.DataFrame]:
        with self._ready:
            self._asked[fit] = requests
            self._run_when_all_asked()
            while fit not in self._answers:
                self._ready.wait()
            answer = self._answers.pop(fit)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def finished(self, fit: int) -> None:
        with self._ready:
            self._running.discard(fit)
            self._run_when_all_asked()

    def _run_when_all_asked(self) -> None:
        if not self._asked or set(self._asked) != self._running:
            return
        order = sorted(self._asked)
        try:
            results = iter(evaluate_many([r for i in order for r in self._asked[i]]))
            self._answers.update({i: [next(results) for _ in self._asked[i]] for i in order})
        except Exception as e:  # every fit of the round raises it, none waits for ever
            self._answers.update(dict.fromkeys(order, e))
        self._asked.clear()
        self._ready.notify_all()


def _side_by_side(fits: Sequence[Callable[[], Profile]]) -> list[Profile]:
    """Run `fits` (independent fits) in threads of their own, their estimator passes pooled by
    _Rounds: about as many passes as the longest fit alone needs, where one after another they
    need the sum (each pass costs tens of milliseconds however few its rows)."""
    if not fits:
        return []
    rounds = _Rounds(len(fits))

    def run(i: int) -> Profile:
        _side.rounds, _side.fit = rounds, i
        try:
            return fits[i]()
        finally:
            rounds.finished(i)

    with ThreadPoolExecutor(max_workers=len(fits)) as pool:  # all at once: a round waits for each
        futures = [pool.submit(run, i) for i in range(len(fits))]
        return [f.result() for f in futures]


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


def _clip(name: str, v: float) -> float:
    lo, hi = BOUNDS[name]
    return min(max(v, lo), hi)


# What the fit moves. Compute efficiency stays at its literature value: engines reach very different
# fractions of the tensor peak (llama.cpp runs prompt matmuls on GeForce at the FP16-accumulate rate,
# twice the FP32-accumulate peak the catalog uses; TensorRT-LLM and vLLM do not), so a value fitted on
# one engine's prefill mispredicts the others'. Cross-validation showed it: fitting it made the
# out-of-sample prefill error worse (38 %) than leaving it (26 %). The MoE routing traffic
# (routed_activation_passes) stays at its count of the kernels (7) for a like reason: fitted, it took
# up whatever made one GPU's MoE rows slow and carried it to the other. Fitted on H100 alone it came
# out at 14.9 (on every row 8.2), which put vLLM's MoE prompts on B300 at 1.27x measured; at 7, 1.07x.
# Leaving one GPU out, TTFT went from 34 % to 30 % (MoE rows 35 % to 27 %, vLLM's bias 1.23 to 1.10)
# and the loaded figures leaving one model out or in sample stayed within a point; what got worse
# were the MTP rows' TPOT leaving one GPU out (bias 0.93 to 0.83) and SGLang's (0.90 to 0.88).
SHARED_PARAMS = (
    "bandwidth_efficiency",
    "step_overhead_s",
    "layer_overhead_s",
    "moe_layer_overhead_s",
    "fp8_gemm_efficiency",
    "fp4_gemm_efficiency",
)
FAMILY_PARAMS = ("bandwidth_efficiency",)
# Per engine (issue: one engine's rows must never set another engine's efficiency): each engine with
# enough rows gets its own bandwidth and compute efficiency, the share of it its fp8 and fp4 matmul
# kernels reach where its rows tell it apart (estimate/compute.py dtype_efficiency; `identified`:
# SGLang's fp8 and fp4 GEMMs on B300 reach about half of its bf16 efficiency), and per-step and
# per-request overhead, pulled towards the shared values, then each engine x GPU family its own
# bandwidth and compute efficiency, pulled towards the engine's. The pull is a prior worth
# PRIOR_ROWS rows: strong for a few rows, weak for many.
ENGINE_PARAMS = (
    "bandwidth_efficiency",
    "compute_efficiency",
    "fp8_gemm_efficiency",
    "fp4_gemm_efficiency",
    "step_overhead_s",
    "request_overhead_s",
)
# Compute efficiency too: an engine reaches a different share of each generation's tensor peak (FP8/FP4
# GEMMs on Blackwell, bf16 on Hopper), and an engine x family without rows keeps the engine's value.
# The request overhead with them: it and the compute efficiency both set a served row's TTFT, so they
# are fitted together where the rows are (fitted at the engine level only, TensorRT-LLM's came out
# 63 ms against its H100 rows' 88 ms once its H100 compute efficiency was refitted; leaving one model
# out, its TTFT bias 0.89 -> 0.95 and TTFT 23.4 % -> 22.7 %, TPOT 13.2 % -> 13.7 %; leaving one GPU
# out nothing moves, since a family left out has no rows of its own). It is time outside the GPU, so
# what differs by family is the host and the engine build deployed with it, not the GPU.
ENGINE_FAMILY_PARAMS = ("bandwidth_efficiency", "compute_efficiency", "request_overhead_s")
PRIOR_ROWS = 8


def fit(ev: Evaluator, start: Profile, rows: list[int], init: Profile | None = None) -> Profile:
    """Fit on the measurements at `rows`: the shared parameters first, then each GPU family's
    bandwidth efficiency where the family has enough rows (overheads stay shared), then each
    engine's. Priors pull towards `start`; the search starts from `init` when given (a warm start:
    the cross-validation folds start from the fit on every row, which changes where the search
    begins, not what it minimises). The families' fits are independent of one another (a row
    depends on its own family's values only), so they run at once; so do the engines'. Then what
    only the scale-out network's latency tells (calibrate/network.py) and what only the serving
    modes use (calibrate/serving.py), on their own rows, everything else held."""
    serving = [i for i in rows if ev.measurements[i].serving_mode]
    rows = [i for i in rows if ev.measurements[i].fittable]
    if not rows:
        return fit_serving(ev, fit_network(ev, start, serving, init), serving, init)
    train = ev.subset(rows)
    origin = init or start
    (shared,) = _minimise(
        [
            _Problem(
                train,
                SHARED_PARAMS,
                lambda params: _with(start, params, {}),
                start.defaults,
                PRIOR_WEIGHT,
                [getattr(origin.defaults, n) for n in SHARED_PARAMS],
            )
        ]
    )
    profile = _with(start, shared, {})
    families = train.families
    fitted = [f for f in sorted(set(families)) if families.count(f) >= MIN_FAMILY_ROWS]
    problems = [
        _Problem(
            train.subset([i for i, f in enumerate(families) if f == fam]),
            FAMILY_PARAMS,
            lambda params, fam=fam: _with(profile, {}, {fam: params}),
            profile.for_family(fam),
            PRIOR_WEIGHT,
            [getattr((init or profile).for_family(fam), n) for n in FAMILY_PARAMS],
        )
        for fam in fitted
    ]
    profile = _with(profile, {}, dict(zip(fitted, _minimise(problems), strict=True)))
    profile = fit_network(ev, fit_engines(train, profile, init), sorted({*rows, *serving}), init)
    return fit_serving(ev, profile, serving, init)


def _shrunk(
    ev: Evaluator,
    profile: Profile,
    engine: str,
    family: str,
    names: tuple[str, ...],
    init: Profile | None = None,
    shared: bool = False,
) -> _Problem:
    """The sub-fit of `names` for `engine` (its defaults when family is "", else engine x family;
    with `shared` the profile's defaults, for every engine) on the rows of `ev`, with a prior
    towards the values in force before, worth PRIOR_ROWS rows (the search starts from `init`'s
    values when given)."""
    origin = init or profile

    def place(params: dict[str, float]) -> Profile:
        return _with(profile, params, {}) if shared else _with(profile, {}, {family: params}, engine=engine)

    return _Problem(
        ev,
        names,
        place,
        profile.defaults if shared else profile.for_family(family, engine),
        PRIOR_WEIGHT * PRIOR_ROWS / max(len(ev.measurements), 1),
        [getattr(origin.defaults if shared else origin.for_family(family, engine), n) for n in names],
    )


def fit_shared(ev: Evaluator, profile: Profile, names: tuple[str, ...], init: Profile | None = None) -> Profile:
    """`profile` with the shared values `names` fitted on every row of `ev`, everything else held,
    each pulled towards its value in `profile` (_shrunk's prior)."""
    (values,) = _minimise([_shrunk(ev, profile, "", "", names, init, True)])
    return _with(profile, values, {})


DTYPE_SHARES = {"fp8": "fp8_gemm_efficiency", "fp4": "fp4_gemm_efficiency"}


def identified(ev: Evaluator) -> tuple[str, ...]:
    """The ENGINE_PARAMS these rows can fit: all but the dtype shares no like-for-like contrast tells
    apart. A share is fitted only where one model on one GPU family at the same lengths is measured
    at its dtype and at a wider one: fp8 against 16-bit, fp4 against 16-bit or fp8 (SGLang's
    Qwen3.5-397B in bf16, fp8 and nvfp4 on B300; vLLM's MiniMax-M2.5 in fp8 and nvfp4 on B300 fits
    its fp4 share, its fp8 one staying shared). Otherwise a share absorbs whatever else makes a model
    slow: leaving Qwen3-32B out, TensorRT-LLM's fp8 share fell from 0.92 to 0.53 to slow its fp8 MoE
    prompts (Qwen3-235B-A22B) and its Qwen3-32B TTFT came out 1.5-2.2x measured; leaving
    Llama-3.1-70B out, vLLM's fell from 1.0 to 0.42, set by Qwen3-32B's fp8 rows at 4,000 tokens
    against its bf16 rows at other lengths, and Llama-3.1-70B's fp8 TTFT came out 2.2x measured."""
    groups = ev.base.group_by("model", "gpu_family", "input_tokens", "output_tokens").agg(
        pl.col("compute_dtype").cast(pl.String).unique()
    )
    contrasted = set()
    for dtypes in map(set, groups["compute_dtype"].to_list()):
        if "fp8" in dtypes and dtypes - set(DTYPE_SHARES):  # against a 16-bit run
            contrasted.add("fp8")
        if "fp4" in dtypes and dtypes - {"fp4"}:  # against a 16-bit or an fp8 run
            contrasted.add("fp4")
    unknown = {share for dtype, share in DTYPE_SHARES.items() if dtype not in contrasted}
    return tuple(n for n in ENGINE_PARAMS if n not in unknown)


def fit_engines(train: Evaluator, profile: Profile, init: Profile | None = None) -> Profile:
    """Each engine with at least MIN_FAMILY_ROWS rows: its own values (ENGINE_PARAMS, the dtype
    shares only where `identified`), then each of its GPU families with that many rows
    (ENGINE_FAMILY_PARAMS), each pulled towards its parent. An engine's rows depend on its own
    values only: the engines are fitted at once, then every engine x family."""
    engines, families = train.engines, train.families
    rows = {e: [i for i, x in enumerate(engines) if x == e] for e in sorted(set(engines) - {"generic"})}
    fitted = [e for e, r in rows.items() if len(r) >= MIN_FAMILY_ROWS]
    subsets = {e: train.subset(rows[e]) for e in fitted}
    problems = [_shrunk(subsets[e], profile, e, "", identified(subsets[e]), init) for e in fitted]
    for engine, values in zip(fitted, _minimise(problems), strict=True):
        profile = _with(profile, {}, {"": values}, engine=engine)
    pairs = {
        (e, fam): [i for i in rows[e] if families[i] == fam]
        for e in fitted
        for fam in sorted({families[i] for i in rows[e]})
    }
    pairs = {k: r for k, r in pairs.items() if len(r) >= MIN_FAMILY_ROWS}
    problems = [_shrunk(train.subset(r), profile, e, fam, ENGINE_FAMILY_PARAMS, init) for (e, fam), r in pairs.items()]
    for (engine, fam), values in zip(pairs, _minimise(problems), strict=True):
        profile = _with(profile, {}, {fam: values}, engine=engine)
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
    held = sorted(set(sources))
    tests = [[i for i, s in enumerate(sources) if s == h] for h in held]
    trains = [[i for i, s in enumerate(sources) if s != h] for h in held]
    # the folds are fitted side by side (their estimator passes pooled), then scored in one pass
    profiles = _side_by_side([lambda rows=rows: fit(ev, start, rows, init) for rows in trains])
    scored = evaluate_many([(ev.subset(test), profile) for test, profile in zip(tests, profiles, strict=True)])
    estimated: list[float | None] = [None] * len(ms)
    for test, out in zip(tests, scored, strict=True):
        for i, value in zip(test, out["estimated"].to_list(), strict=True):
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
