"""Sensitivity: which assumption, moved by 20 %, changes the top recommendation?"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import BY_NAME, higher_is_better
from llmsweep.plan.inputs import PlanInputs
from llmsweep.plan.ranking import WORKLOAD_KEYS
from llmsweep.plan.selection import options
from llmsweep.spec import WorkloadSpec

SENSITIVITY_STEP = 0.2


TRAFFIC_DEPENDENT = (
    "replicas",
    "gpus_needed",
    "servers_needed",
    "racks_needed",
    "fleet_kw",
    "utilization",
    "capex_usd",
    "opex_usd_per_year",
    "fleet_usd_per_month",
    "fleet_usd_per_million_output_tokens",
    "tco_usd",
)
TRAFFIC_SHOWN = ("gpus_needed", "fleet_usd_per_month")  # what traffic moves, shown when the ranking metric is per token
WANT_OFFER = "_want_offer"  # a pair row's offer: the re-estimated metrics are read for that offer only


def moved_traffic(workload: WorkloadSpec | None, factor: float) -> WorkloadSpec | None:
    """The workload with its traffic x `factor`: requests_per_s x factor, or users x factor (each
    thinking as long; the plan solves their rate again, closed_loop.py). None without a workload or
    with tokens_per_day (no traffic case)."""
    if workload is None:
        return None
    if workload.users is not None:
        return workload.model_copy(update={"users": workload.users * factor})
    if workload.requests_per_s is None:
        return None
    rate = workload.requests_per_s * factor
    return workload.model_copy(update={"requests_per_s": rate, "users": None, "think_time_s": None})


def rival(ranked: pl.DataFrame, top: dict, column: str) -> tuple[str, float] | None:
    """The best-ranked option of `top`'s workload on another offer (another GPU, or the same GPU
    bought or rented otherwise): what a change in the price of `top`'s offer is weighed against."""
    offer = pl.col("offer").cast(pl.String)
    others = ranked.filter(
        pl.all_horizontal(pl.col(k) == top[k] for k in WORKLOAD_KEYS),
        pl.col("rank").is_not_null(),
        (pl.col("gpu").cast(pl.String) != str(top["gpu"])) | offer.ne_missing(top["offer"]),
    ).sort("rank")
    if others.height == 0 or others[column][0] is None:
        return None
    row = others.row(0, named=True)
    return " ".join(str(v) for v in (row["gpu"], row["offer"]) if v is not None), float(row[column])


def reestimated(frame: pl.DataFrame) -> pl.DataFrame:
    """Options of either serving mode (layout x lengths rows, a disaggregated one with its worker
    counts and prefill layout) estimated again up to the length terms from their own facts, e.g.
    with a moved efficiency: a disaggregated row's decode and prefill workers each again, then paired."""
    from llmsweep.estimate import add_layout_estimates, add_length_estimates, disaggregated, modes

    def one_mode(rows: pl.LazyFrame, disagg: bool) -> pl.LazyFrame:
        if not disagg:
            return add_length_estimates(add_layout_estimates(rows))
        rows = rows.with_row_index("_pair")
        decode = add_length_estimates(add_layout_estimates(rows))
        prefill = add_length_estimates(add_layout_estimates(disaggregated.prefill_side(rows)))
        return disaggregated.pair(decode, prefill, ["_pair"]).drop("_pair")

    return modes.apply(frame, one_mode)


def _metrics(frames: list[pl.DataFrame], plan: PlanInputs, column: str) -> list[float | None]:
    """`column` for every row of the stacked `frames` (layout x lengths rows, each with the offer it
    is priced with in WANT_OFFER) after re-estimating them all at once."""
    stacked = pl.concat(frames, how="vertical_relaxed")
    out = options(reestimated(stacked).lazy(), plan)
    if WANT_OFFER in out.columns:
        same = pl.col("offer").cast(pl.String) == pl.col(WANT_OFFER)
        out = out.filter(same.fill_null(False) | (pl.col("offer").is_null() & pl.col(WANT_OFFER).is_null()))
    return out[column].to_list()


ACCEPTANCE = "acceptance_rate"
# the assumptions moved, as a reader names them
PARAM_LABELS = {
    "bandwidth_efficiency": "memory bandwidth reached (bandwidth efficiency)",
    "compute_efficiency": "compute reached (compute efficiency)",
    ACCEPTANCE: "drafted tokens accepted (speculative decoding's acceptance)",
}


def with_moved(frame: pl.DataFrame, param: str, factor: float) -> pl.DataFrame:
    """`frame` with one assumption x `factor`: an efficiency (at most 1), or the acceptance of drafted
    tokens (the sweep's, else the profile's default for the method; at most 0.99, where the speedup
    nears k + 1; rows without speculation unchanged)."""
    if param == ACCEPTANCE:
        from llmsweep.estimate import speculative

        return frame.with_columns(acceptance_rate=(speculative.acceptance_rate() * factor).clip(0.0, 0.99))
    return frame.with_columns((pl.col(param) * factor).clip(upper_bound=1.0))


def sensitivity(
    pairs: dict[str, pl.DataFrame],
    plan: PlanInputs,
    column: str,
    rivals: dict[str, tuple[str, float]] | None = None,
) -> dict[str, list[dict]]:
    """Each value of `pairs` holds two options (the top one, then the runner-up) as layout x lengths
    rows with their offer (WANT_OFFER). For each assumption moved by -20 % and +20 %: the metric of
    both and whether their order flips. Efficiencies (and, where either drafts tokens, the acceptance
    of speculative decoding) are re-estimated (all pairs and cases in one
    frame); a price change scales the cost of the top option's offer exactly, and where the runner-up
    is priced with that same offer (its cost moves with the top's, so their order cannot flip) the top
    is set against `rivals[key]` instead: the best option on another offer (its label, its metric),
    which the price leaves where it is; traffic moves the fleet: a fleet-sized metric is re-planned,
    and for a per-token metric the rows show what traffic does move (GPUs needed, fleet USD per
    month): requests/s or users x (1 -/+ 20 %)."""
    from dataclasses import replace

    keys = list(pairs)
    factors = (1 - SENSITIVITY_STEP, 1 + SENSITIVITY_STEP)
    params = ("bandwidth_efficiency", "compute_efficiency", ACCEPTANCE)
    frames = [pairs[k] for k in keys]  # unmoved first
    for factor in factors:
        for param in params:
            frames += [with_moved(pairs[k], param, factor) for k in keys]
    values = _metrics(frames, plan, column)
    n = len(keys)

    def pair_at(block: int, i: int) -> tuple[float | None, float | None]:
        return values[2 * (block * n + i)], values[2 * (block * n + i) + 1]

    higher = higher_is_better(column)
    cost = column.startswith(("usd", "fleet_usd", "tco", "capex", "opex"))
    out: dict[str, list[dict]] = {}
    for i, key in enumerate(keys):
        rows = []
        pair = pairs[key]
        wanted = pair[WANT_OFFER].to_list() if WANT_OFFER in pair.columns else [None, None]
        top_gpu, runner_gpu = (str(g) for g in pair["gpu"])
        top_offer = f"{top_gpu} {wanted[0]}" if wanted[0] else top_gpu
        block = 1
        for factor in factors:
            cases: list[tuple[str, str, tuple]] = []
            drafts = "speculative" in pair.columns and (pair["speculative"].cast(pl.String) != "none").any()
            for param in params:
                if param != ACCEPTANCE or drafts:  # the acceptance where #1 or #2 drafts tokens
                    cases.append((PARAM_LABELS[param], column, pair_at(block, i)))
                block += 1
            top, runner = pair_at(0, i)
            if cost and top_gpu in plan.prices and top is not None and runner is not None:
                same = runner_gpu == top_gpu and wanted[1] == wanted[0]
                # every cost of the offer moves together: a purchase's GPUs, servers, power and hosting alike
                bought = any(o.kind == "buy" and o.offer == wanted[0] for o in plan.prices[top_gpu])
                what = (
                    f"every cost of {top_offer} (purchase, servers, power, hosting)"
                    if bought
                    else f"price of {top_offer}"
                )
                if same and key in (rivals or {}):
                    label, rival = rivals[key]
                    cases.append(
                        (f"{what}, against {label} (the best option on another offer)", column, (top * factor, rival))
                    )
                else:
                    cases.append((what, column, (top * factor, runner * factor if same else runner)))
            load = moved_traffic(plan.workload, factor)
            if load is not None:
                moved_plan = replace(plan, workload=load)
                for shown in (column,) if column in TRAFFIC_DEPENDENT else TRAFFIC_SHOWN:
                    moved = _metrics([pair], moved_plan, shown)
                    name = "traffic" if shown == column else f"traffic: {BY_NAME[shown].label}"
                    cases.append((name, shown, (moved[0], moved[1])))
            for name, shown, (t, r) in cases:
                t = None if t is None else float(t)
                r = None if r is None else float(r)
                flips = None if t is None or r is None or shown != column else (r > t if higher else r < t)
                rows.append(
                    {
                        "assumption": name,
                        "column": shown,
                        "change": f"{factor - 1:+.0%}",
                        "top": t,
                        "runner_up": r,
                        "flips": flips,
                    }
                )
        out[key] = rows
    return out
