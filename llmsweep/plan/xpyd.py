"""The xPyD search: which prefill pool (layout and x workers) and how many decode workers (y) a
disaggregated replica should have for the traffic, chosen by the plan as it chooses a batch
(DESIGN.md §4 "Serving modes").

What is searched. A sweep with `mode: disaggregated` that gives no `prefill: {workers: ...}` (or no
`decode: {workers: ...}`) leaves that count to the plan (PlanInputs.worker_search): it considers
every x (or y) in SEARCH_WORKERS = 1..16 that keeps the pools it searches within MAX_REPLICA_GPUS
(72, one NVL72 rack): both searched, x x prefill_worker_gpus + y x worker_gpus <= 72, one searched,
that pool alone (`within_budget`), with every prefill layout the grid allows. 72 bounds the search,
not a replica: a count the sweep lists is used as given, outside the budget (10 listed decode
workers of 8 GPUs and a searched prefill pool of up to 9 workers of 8), and where one worker of each
searched pool already takes more than 72 GPUs (a wide expert-parallel worker) the search keeps that
one worker each. So every decode option with a valid layout is planned, whatever its replica's size:
the estimator costs a replica beyond a scale-up domain as it is (the KV cache over the NICs,
servers_per_replica), as it does for worker lists given for both pools (no search: every pair its
own option, no budget).
estimates.csv keeps the grid's own rows (1P1D when the sweep gives no lists). plan.csv lists each
decode option (`DECODE_OPTION`: GPU, model, precision, the decode worker's layout, lengths,
speculative setting) at its best prefill layout and (x, y); it then competes, by cost as every
option does, with every other decode option and every aggregated replica.

Which is best. With a workload: the fewest fleet GPUs that meet the targets,
(ceil(peak x (1 + headroom) / capacity) + redundancy) x gpus (capacity = modes.max_rate with the
targets, as at_traffic sizes fleets; with `users`, at the most they can send, N' / Z: search_rate).
Every cost the plan ranks by (rent around the clock; every bought offer: GPUs, whole servers, racks,
power) rises with fleet GPUs, so that pool is the cheapest for every offer of the GPU. Rent paid per
hour used costs gpus / capacity instead, so then the pool with the fewest GPU-seconds per request is
kept as well. Ties: the smaller replica, then fewer prefill workers, then fewer decode workers.
Without a workload: the fewest GPUs per output token/s at the largest batch that meets the targets
(a replica fully loaded; every candidate evaluated). A decode option where nothing meets the targets
shows its smallest replica, with what it misses.

Pruning, only of what is provably dominated (with a workload). `capacity_bound` is an upper bound
U on a candidate's capacity from each pool alone (their coupling through TTFT left out, U = 0 when
even a lone request misses a target), so (ceil(peak' / U) + redundancy) x gpus is a lower bound on
its fleet. The candidates of lowest bound of each decode option are resolved first; then every
candidate whose bound (with the tie-breaks) cannot beat the best fleet found for its decode option
is dropped unevaluated, and the bound of one that fails at a replica count rises to the next
(`_by_fleet`). Nothing is pruned on a heuristic: tests/test_plan.py checks the search against
evaluating every pair, and the bound against every candidate's capacity.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from llmsweep.columns import OPTION_KEYS, c
from llmsweep.estimate import add_layout_estimates, add_length_estimates, disaggregated, load, modes, speculative
from llmsweep.estimate.disaggregated import DISAGGREGATED
from llmsweep.finance import PER_HOUR_USED
from llmsweep.grid import PAIR_KEYS, Axes, GridParts
from llmsweep.plan.inputs import PlanInputs
from llmsweep.plan.replicas import replicas_needed
from llmsweep.plan.sizing import CAPACITY_BISECTIONS, MAX_REPLICAS, peak_requests_per_s
from llmsweep.plan.slo import meets_slo, within_targets
from llmsweep.spec import SloSpec, WorkloadSpec

SEARCH_WORKERS = tuple(range(1, 17))
MAX_REPLICA_GPUS = 72  # the search's bound (one GB200 NVL72 rack, the largest scale-up domain a catalog GPU has)
WORKER_AXES = ("prefill_workers", "decode_workers")
POOL_LAYOUT = ("prefill_tp", "prefill_pp", "prefill_ep", "prefill_dp_attention")
# A decode option: the search chooses its prefill layout and worker counts.
DECODE_OPTION = (
    *OPTION_KEYS,
    "speculative",
    "draft_tokens",
    "draft_model",
    "acceptance_rate",
    "given_tokens_per_step",
    "prefix_hit_rate",
    "prefix_shared",
)
# One option, whatever its mode: its decode option, its prefill layout and worker counts.
OPTION_IDENTITY = (*DECODE_OPTION, "mode", *POOL_LAYOUT, *WORKER_AXES)
_PREFILL_ID, _DECODE_ID = "_prefill_option", "_decode_option"
_GROUP = "_decode_option_group"


@dataclass(frozen=True)
class SearchStats:
    """What a search did: decode options, candidates (prefill layout x worker pair), how many evaluated."""

    decode_options: int = 0
    candidates: int = 0
    evaluated: int = 0

    @property
    def pruned(self) -> int:
        return self.candidates - self.evaluated

    def note(self) -> str:
        pairs = f"{self.candidates:,} worker pair" + ("" if self.candidates == 1 else "s")
        options = f"{self.decode_options:,} decode option" + ("" if self.decode_options == 1 else "s")
        return (
            f"xPyD search: {pairs} (x prefill, y decode workers; a count the sweep does not list runs 1-16, the "
            f"pools so searched within {MAX_REPLICA_GPUS} GPUs a replica, or one worker each where one takes more; "
            f"a listed count as given, whatever the replica's size) with every prefill layout, for {options}; "
            f"{self.evaluated:,} evaluated, {self.pruned:,} dropped as provably unable to beat the best "
            "of their decode option (an upper bound on their capacity from each pool alone); plan.csv lists each "
            "decode option with its best prefill pool and decode workers"
        )


def search_axes(axes: Axes, searched: tuple[str, ...]) -> Axes:
    """`axes` with each searched worker count running over SEARCH_WORKERS."""
    return replace(axes, **dict.fromkeys(searched, SEARCH_WORKERS)) if searched else axes


def candidates(parts: GridParts, searched: tuple[str, ...] = ()) -> pl.LazyFrame:
    """The plan's options before any batch: the grid's aggregated options and its disaggregated ones.
    With a search, a decode option pairs with every prefill option and every worker pair within the
    search's budget (within_budget) when both layouts are valid; a decode option with no valid prefill
    option (or no valid layout) keeps one pairing (its first, the fewest workers) to say why it cannot
    run. As GridParts.options, built so that only pairs within the budget are ever estimated."""
    if not searched or parts.prefill_layouts is None or parts.workers is None:
        return parts.options()
    keep = parts.option_keep
    # both sides are small (layouts x lengths) and collected once, so each row's id is its own
    decode = add_length_estimates(add_layout_estimates(parts.layouts).join(parts.lengths, how="cross")).collect()
    out = [decode.lazy()] if parts.aggregated else []
    prefill = add_length_estimates(add_layout_estimates(parts.prefill_layouts).join(parts.lengths, how="cross"))
    prefill = prefill.collect().with_row_index(_PREFILL_ID).lazy()
    ids = prefill.select(
        *PAIR_KEYS,
        _PREFILL_ID,
        *(pl.col(n).alias(f"prefill_{n}") for n in ("tp", "pp", "ep", "dp_attention")),
        pl.col("worker_gpus").alias("_prefill_gpus"),
        c.layout_reason.is_null().alias("_prefill_valid"),
    )
    layouts = (
        decode.lazy()
        .drop(*WORKER_AXES, *POOL_LAYOUT)
        .with_row_index(_DECODE_ID)
        .join(ids, on=PAIR_KEYS, how="inner", maintain_order="left_right")
        .with_columns(_valid=c.layout_reason.is_null() & pl.col("_prefill_valid"))
    )
    valid = layouts.filter("_valid")
    # the worker pairs within the budget for each pair of worker sizes (joined on the sizes: the grid
    # of layouts x 256 pairs is never built)
    sizes = valid.select("_prefill_gpus", "worker_gpus").unique()
    allowed = sizes.join(parts.workers, how="cross").filter(within_budget(searched, pl.col("_prefill_gpus")))
    valid = valid.join(allowed, on=["_prefill_gpus", "worker_gpus"], how="inner", maintain_order="left_right")
    fewest = parts.workers.select(pl.col(a).min() for a in WORKER_AXES)
    unpaired = (
        layouts.join(layouts.filter("_valid").select(_DECODE_ID).unique(), on=_DECODE_ID, how="anti")
        .group_by(_DECODE_ID, maintain_order=True)
        .first()
        .join(fewest, how="cross")
    )
    rows = pl.concat([valid, unpaired], how="diagonal_relaxed").drop("_prefill_gpus", "_prefill_valid", "_valid")
    paired = disaggregated.pair(rows, prefill, [*PAIR_KEYS, _PREFILL_ID]).drop(_PREFILL_ID)
    out.append(paired)
    frame = pl.concat(out, how="diagonal_relaxed") if len(out) > 1 else out[0]
    return frame if keep is None else frame.filter(keep)


def within_budget(searched: tuple[str, ...], prefill_worker_gpus: pl.Expr = c.prefill_worker_gpus) -> pl.Expr:
    """A worker pair the search considers: the GPUs of the pools it sizes (`searched`) at most
    MAX_REPLICA_GPUS, or one worker each where one worker of each already takes more. A count the sweep
    lists is outside the budget: it is used as given, so every listed count pairs at least with one
    worker of each searched pool. Both searched, workers of 8 GPUs: x + y <= 9; decode workers listed
    [10] of 8 GPUs: x <= 9, replicas of 88 to 152 GPUs; a decode worker of 72 GPUs and a prefill worker
    of 8, both searched: 1P1D (80 GPUs) only."""
    if not searched:
        return pl.lit(True)
    gpus = {"prefill_workers": prefill_worker_gpus, "decode_workers": c.worker_gpus}
    used = pl.sum_horizontal(pl.col(a) * gpus[a] for a in searched)
    one_each = pl.sum_horizontal(gpus[a] for a in searched)
    return used <= pl.max_horizontal(pl.lit(MAX_REPLICA_GPUS), one_each)


def runnable() -> pl.Expr:
    """An option that fits at one sequence: a valid layout (and a link for the KV cache), the prefill
    worker holds a prompt, a decode worker one sequence, the context within the model's."""
    return (
        c.layout_reason.is_null()
        & disaggregated.prefill_fits()
        & (c.max_batch >= 1)
        & (c.context_tokens <= c.max_context_tokens).fill_null(True)
    )


def capacity_bound(slo: SloSpec | None) -> pl.Expr:
    """U >= the largest Poisson rate at which a disaggregated replica meets `slo` (modes.max_rate),
    from each pool alone (disaggregated.open_loop's terms, their coupling left out):

    - prefill: the pool saturates at lambda = x / p (x = prefill servers);
    - decode: on each roofline piece t_d = A + B b the decode time is D >= (1 + k)(A + B / y) /
      (1 - (1 + k) lambda B / y), A with the weights one sequence reads (the fewest; more sequences
      read more), so the pool saturates at y / ((1 + k) B); TPOT = D / ((1 + k) E) <= T gives
      lambda <= y / ((1 + k) B) x (1 - (A + B / y) / (E T)); a request-latency target L gives the same
      with D <= L - (o + p + tau); admission: lambda D / y <= slots with D >= (1 + k) t_d(1);
    - at zero load TTFT = o + p + tau + t_d(1), TPOT = t_d(1) / E and latency = o + p + tau +
      (1 + k) t_d(1), each the least it can be: a target any of them misses makes U = 0.
    """
    o, p, tau, e = c.request_overhead_s, c.first_token_s, c.kv_transfer_s, c.tokens_per_step
    k1 = 1 + c.decode_steps
    y = c.decode_workers.cast(pl.Float64)
    pieces = [
        (c.step_fixed_s, c.step_compute_s_per_seq),
        (c.step_fixed_s + speculative.weights_read(pl.lit(1.0)) * c.seconds_per_byte, c.step_memory_s_per_seq),
    ]
    t1 = pl.max_horizontal(*(a + b for a, b in pieces))
    bounds = [disaggregated.prefill_servers() / p, y * load.admission_slots() / (k1 * t1)]
    feasible = pl.lit(True)
    tpot = slo.tpot_s if slo else None
    latency = slo.request_latency_s if slo else None
    if slo is not None and slo.ttft_s is not None:
        feasible = feasible & (o + p + tau + t1 <= slo.ttft_s)
    if tpot is not None:
        feasible = feasible & (t1 / e <= tpot)
    if latency is not None:
        feasible = feasible & (o + p + tau + k1 * t1 <= latency)
    for a, b in pieces:
        full = y / (k1 * b)
        bounds.append(full)
        if tpot is not None:
            bounds.append(full * (1 - (a + b / y) / (e * tpot)))
        if latency is not None:
            bounds.append(full * (1 - k1 * (a + b / y) / (latency - o - p - tau)))
    bound = pl.min_horizontal(*(x.fill_nan(float("inf")) for x in bounds)).clip(lower_bound=0.0)
    return pl.when(feasible & runnable()).then(bound).otherwise(0.0)


def search_rate(workload: WorkloadSpec) -> pl.Expr:
    """The peak requests/s the search sizes candidates for: the workload's; with `users`, N' / Z, the
    most they can send (their wait for answers left out: it is each candidate's own, and the chosen
    option's fleet is then sized at the users' rate at its latency, at_traffic)."""
    return peak_requests_per_s(workload, latency=pl.lit(0.0))


def _ordered(frame: pl.DataFrame, key: str) -> pl.DataFrame:
    """Best first: `key` (nulls last), then the smaller replica, then fewer prefill, then decode workers."""
    return frame.sort([key, "gpus", "prefill_workers", "decode_workers"], nulls_last=True)


def _best(frame: pl.DataFrame, key: str) -> pl.DataFrame:
    """Per decode option, its best row by `key` (rows with no `key` are never best)."""
    return _ordered(frame.filter(pl.col(key).is_not_null()), key).group_by(_GROUP, maintain_order=True).first()


def search(frame: pl.DataFrame, plan: PlanInputs) -> tuple[pl.DataFrame, SearchStats]:
    """`frame` (candidates) with each disaggregated decode option at its best prefill layout and
    worker pair (module docstring), aggregated rows as they are, in the frame's order; and what
    the search did. The search runs on a narrow frame of keys and bounds; only the candidates it
    evaluates are read whole."""
    if not plan.worker_search or frame.height == 0 or "mode" not in frame.columns:
        return frame.drop(_DECODE_ID, strict=False), SearchStats()
    wide = frame.with_row_index("_order")
    is_pair = c.mode == DISAGGREGATED
    group = pl.col(_DECODE_ID) if _DECODE_ID in frame.columns else pl.struct(list(DECODE_OPTION)).rank("dense")
    w = plan.workload
    bound = {"_U": capacity_bound(plan.slo), "_peak": search_rate(w) * (1 + w.headroom)} if w else {}
    keys = (
        wide.lazy()
        .filter(is_pair)
        .select("_order", group.alias(_GROUP), "gpus", *WORKER_AXES, _run=runnable(), **bound)
        .collect()
    )
    if keys.height == 0:
        return frame.drop(_DECODE_ID, strict=False), SearchStats()
    if plan.workload is None:
        chosen, evaluated = _by_throughput(keys, wide, plan)
    else:
        chosen, evaluated = _by_fleet(keys, wide, plan)
        if plan.rent_paid == PER_HOUR_USED:  # rented GPUs then cost gpus / capacity: keep that best too
            cheap, more = _by_gpu_seconds(keys, wide, plan)
            chosen, evaluated = pl.concat([chosen, cheap], how="diagonal_relaxed"), evaluated + more
    # a decode option where nothing meets the targets: its smallest replica (one that can run, if any)
    missing = keys.join(pl.DataFrame({_GROUP: chosen[_GROUP]}).unique(), on=_GROUP, how="anti")
    fallback = missing.sort(["_run", "gpus", *WORKER_AXES], descending=[True, False, False, False])
    fallback = fallback.group_by(_GROUP, maintain_order=True).first()
    keep = pl.concat([chosen["_order"], fallback["_order"]]).unique()
    out = wide.filter(~is_pair | pl.col("_order").is_in(keep.implode()))
    stats = SearchStats(keys[_GROUP].n_unique(), keys.height, evaluated)
    return out.drop("_order", _DECODE_ID, strict=False), stats


LEVELS = 8  # replica counts tried from each candidate's bound up before its capacity is bisected
PROBE = 4  # candidates of lowest bound per decode option resolved first, to give it a best fleet
# GPU-seconds per request compared to 4 significant figures: pools that tie in exact arithmetic (2P1D,
# 4P2D, 6P3D) tie whatever the last bits of their bisected capacities, and the smaller replica wins
GS_FIGURES = 4


def _rows(wide: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """The whole candidate rows of `keys` (by _order, the row's index in `wide`)."""
    return wide[keys["_order"]]


def _fleet(rate: pl.Expr, plan: PlanInputs) -> pl.Expr:
    """Fleet GPUs at a capacity of `rate` requests/s per replica (null when it cannot be sized)."""
    w = plan.workload
    count = replicas_needed(search_rate(w), rate, w.headroom, plan.redundancy)
    return pl.when((rate > 0) & (count <= MAX_REPLICAS)).then(count * c.gpus)


def _by_fleet(keys: pl.DataFrame, wide: pl.DataFrame, plan: PlanInputs) -> tuple[pl.DataFrame, int]:
    """Per decode option, the fewest fleet GPUs that meet the targets, by branch and bound; (the
    chosen keys, candidates evaluated).

    A candidate of g GPUs a replica needs n + redundancy replicas, n = ceil(peak' / capacity), so n is
    the least n >= ceil(peak' / U) at which it meets the targets at peak' / n requests/s a replica
    (capacity_bound; the accepted rates form an interval from 0). The PROBE candidates of lowest bound
    of each decode option are resolved first, giving each a best fleet; then all the others at once.
    Resolving runs level by level: every open candidate is tried at its next n (one open-loop
    evaluation, no bisection); the first n that passes gives its fleet exactly, one that fails has a
    lower bound one replica higher. Before each level, and before the candidates still open after
    LEVELS are bisected as at_traffic does, a candidate whose lower bound (with the replica size, then
    fewer prefill workers, as tie-breaks) cannot beat its decode option's best so far is dropped: it
    is dominated."""
    peak = pl.col("_peak")  # peak x (1 + headroom): the rate the fleet's replicas share
    rows = keys.with_columns(_n=pl.when(pl.col("_U") > 0).then((peak / pl.col("_U")).ceil().clip(lower_bound=1.0)))
    rows = rows.filter(pl.col("_n").is_not_null() & (pl.col("_n") + plan.redundancy <= MAX_REPLICAS))
    rows = rows.with_columns(_lb=(pl.col("_n") + plan.redundancy) * c.gpus)
    probe = _ordered(rows, "_lb").group_by(_GROUP, maintain_order=True).head(PROBE)
    found: list[pl.DataFrame] = []
    evaluated = _resolve(probe, wide, found, plan, peak)
    rest = rows.filter(~pl.col("_order").is_in(probe["_order"].implode()))
    evaluated += _resolve(rest, wide, found, plan, peak)
    met = pl.concat(found, how="diagonal_relaxed") if found else rows.clear().with_columns(_fleet=pl.lit(0.0))
    return _best(met, "_fleet"), evaluated


def _resolve(rows: pl.DataFrame, wide: pl.DataFrame, found: list[pl.DataFrame], plan: PlanInputs, peak: pl.Expr) -> int:
    """Resolve `rows` level by level (_by_fleet), appending the keys that meet the targets, with their
    fleet, to `found`; the candidates evaluated."""
    evaluated = 0
    for level in range(LEVELS + 1):
        rows = _undominated(rows.with_columns(_lb=(pl.col("_n") + plan.redundancy) * c.gpus), found)
        if rows.height == 0:
            break
        evaluated += rows.height if level == 0 else 0
        whole = _rows(wide, rows)
        if level == LEVELS:  # still open: bisect the capacity, as at_traffic does
            cap = disaggregated_capacity(whole, plan.slo)
            fleet = pl.when(pl.col("_run")).then(_fleet(pl.col("_cap"), plan))
            done = rows.with_columns(_cap=cap).with_columns(_fleet=fleet)
            found.append(done.filter(pl.col("_fleet").is_not_null()).drop("_cap"))
            break
        trial = modes.open_loop(whole.lazy(), pl.lit(rows.select(peak / pl.col("_n")).to_series()), True)
        ok = trial.select(~pl.col("saturated") & within_targets(plan.slo).fill_null(False)).collect().to_series()
        ok = ok & rows["_run"]
        found.append(rows.filter(ok).with_columns(_fleet=pl.col("_lb")))
        rows = rows.filter(~ok).with_columns(_n=pl.col("_n") + 1)
    return evaluated


def _undominated(rows: pl.DataFrame, found: list[pl.DataFrame]) -> pl.DataFrame:
    """Rows whose (lower bound, gpus, prefill workers, decode workers) is below the best (fleet, ...)
    found so far for their decode option: the others cannot win."""
    met = [f for f in found if f.height]
    if not met or rows.height == 0:
        return rows
    tie = ["gpus", *WORKER_AXES]
    best = _best(pl.concat(met, how="diagonal_relaxed"), "_fleet")
    best = best.select(_GROUP, "_fleet", *(pl.col(k).alias(f"_b{k}") for k in tie))
    joined = rows.join(best, on=_GROUP, how="left", maintain_order="left")
    lb, f = pl.col("_lb"), pl.col("_fleet")
    below, equal = lb < f, lb == f
    for k in tie:  # lexicographic: the first key that differs decides
        below = below | (equal & (pl.col(k) < pl.col(f"_b{k}")))
        equal = equal & (pl.col(k) == pl.col(f"_b{k}"))
    return joined.filter(f.is_null() | below).drop("_fleet", *(f"_b{k}" for k in tie))


def _by_gpu_seconds(keys: pl.DataFrame, wide: pl.DataFrame, plan: PlanInputs) -> tuple[pl.DataFrame, int]:
    """Per decode option, the fewest GPU-seconds per request, gpus / capacity (what rent paid per hour
    used costs), by branch and bound: the lowest bound gpus / U of each decode option is bisected
    first, then every candidate whose bound does not exceed the best found; (the chosen keys,
    candidates evaluated)."""
    rows = keys.filter(pl.col("_U") > 0).with_columns(_lb=(c.gpus / pl.col("_U")).round_sig_figs(GS_FIGURES))

    def evaluate(part: pl.DataFrame) -> pl.DataFrame:
        cap = disaggregated_capacity(_rows(wide, part), plan.slo) if part.height else pl.Series([], dtype=pl.Float64)
        fleet = _fleet(pl.col("_cap"), plan)
        return part.with_columns(_cap=cap).with_columns(
            _gs=pl.when(pl.col("_run") & fleet.is_not_null()).then((c.gpus / pl.col("_cap")).round_sig_figs(GS_FIGURES))
        )

    first = _ordered(rows, "_lb").group_by(_GROUP, maintain_order=True).first()
    done = evaluate(first)
    best = done.group_by(_GROUP).agg(pl.col("_gs").min().alias("_best"))
    rest = rows.filter(~pl.col("_order").is_in(first["_order"].implode())).join(best, on=_GROUP, how="left")
    # both sides to GS_FIGURES: a bound within a rounding of the best may still tie it
    may_tie = pl.col("_lb") <= pl.col("_best") * (1 + 10 ** (1 - GS_FIGURES))
    rest = rest.filter(pl.col("_best").is_null() | may_tie).drop("_best")
    done = pl.concat([done, evaluate(rest)], how="diagonal_relaxed")
    return _best(done, "_gs"), done.height


def disaggregated_capacity(rows: pl.DataFrame, slo: SloSpec | None) -> pl.Series:
    """modes.max_rate with the targets: what at_traffic calls a replica's capacity."""
    return modes.max_rate(rows, lambda _: within_targets(slo), iterations=CAPACITY_BISECTIONS)


def _by_throughput(keys: pl.DataFrame, wide: pl.DataFrame, plan: PlanInputs) -> tuple[pl.DataFrame, int]:
    """Per decode option, the fewest GPUs per output token/s at the largest batch that meets the
    targets (every candidate evaluated); (the chosen keys, candidates evaluated)."""
    from llmsweep.plan.selection import estimate_at_batch, listed_batch, slo_batch

    rows = _rows(wide, keys)
    batch = listed_batch(rows, plan.slo, plan.batches) if plan.batches else slo_batch(rows, plan.slo)
    at = rows.with_columns(_found=batch > 0, batch=pl.max_horizontal(batch, 1), batch_is_max=pl.lit(False))
    est = estimate_at_batch(at).select(meets_slo(plan.slo) & pl.col("_found"), c.gpus / c.output_tokens_per_s)
    per = keys.with_columns(_per=pl.when(est[:, 0]).then(est[:, 1]))
    return _best(per, "_per"), keys.height
