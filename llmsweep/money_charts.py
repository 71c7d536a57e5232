"""Charts a buyer would rather see than read: what each offer costs a month against the speed its
users get, renting against buying month by month, and the GPUs the traffic needs. Plan rows in,
altair charts out (no I/O); charts.py lists them after its own."""

from __future__ import annotations

import math
from collections.abc import Sequence

import altair as alt
import polars as pl

from llmsweep.charts import (
    MAX_SERIES,
    TARGET_COLOR,
    WIDTH,
    ChartSpec,
    gpu_color,
    offer_shape,
    option_label,
    per_model,
    per_user_note,
    per_user_target,
    ranked_series,
    ring,
    series_keys,
    targets,
    with_targets,
)
from llmsweep.plan.replicas import rate_carried, replicas_needed


def _plan(options: pl.DataFrame | None) -> pl.DataFrame:
    if options is None or options.height == 0:
        return pl.DataFrame()
    rows = options.with_columns(pl.col(pl.Categorical).cast(pl.String)).filter(pl.col("fits"))
    return rows.filter(
        (pl.col("input_tokens") == pl.col("input_tokens").min())
        & (pl.col("output_tokens") == pl.col("output_tokens").min())
    )


def _fleets(rows: pl.DataFrame) -> bool:
    return rows.height > 0 and rows["gpus_needed"].is_not_null().any() and rows["tco_usd"].is_not_null().any()


# -- the frontier a buyer chooses on ----------------------------------------------------------------------
def cost_speed_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every priced option that meets the targets (layout x offer): what it costs a month (with a
    workload: TCO / months; else one replica fully loaded, per million output tokens) against the
    tokens/s each user gets, whether it is on the frontier (no option both cheaper and faster) and its
    rank (the recommended one is rank 1), with the sweep's targets."""
    rows = _plan(options)
    if rows.height == 0 or rows["usd_per_gpu_hour"].is_null().all():
        return pl.DataFrame()
    fleets = _fleets(rows)
    value = "tco_usd_per_month" if fleets else "usd_per_million_output_tokens"
    rows = rows.filter(pl.col("meets_slo") & pl.col(value).is_not_null())
    rows = rows.with_columns(
        usd=pl.col(value),
        metric=pl.lit("USD per month" if fleets else "USD per million output tokens"),
        offer_label=pl.concat_str([pl.col("gpu"), pl.col("offer")], separator=" · "),
        option=option_label(rows, offer=True),
        per_user=pl.col("decode_tokens_per_s_per_seq"),
    ).sort(["model", "per_user", "usd", "option"], descending=[False, True, False, False], maintain_order=True)
    # frontier: walking from the fastest down, an option is on it when it is cheaper than every faster one
    rows = rows.with_columns(_cheapest=pl.col("usd").cum_min().shift(1).over("model"))
    rows = rows.with_columns(frontier=pl.col("_cheapest").is_null() | (pl.col("usd") < pl.col("_cheapest")))
    shown = ["model", "gpu", "offer", "offer_label", "option", "per_user", "usd", "metric", "frontier", "batch", "rank"]
    return with_targets(rows.select(shown), options)


def cost_speed_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    """Each option a dot of its GPU's colour (the report's), the shape its offer's; the frontier a line,
    the recommended one ringed, the TPOT target a rule."""
    data, found = targets(data)
    metric = data["metric"][0]
    fmt = "$,.0f" if metric == "USD per month" else "$,.3f"
    y = alt.Y("usd:Q", title=metric, scale=alt.Scale(type="log"), axis=alt.Axis(format="$~s", labelOverlap=True))
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=45, opacity=0.9)
        .encode(
            x=alt.X("per_user:Q", title="tokens/s per user"),
            y=y,
            color=gpu_color(data, gpus, title="GPU"),
            shape=offer_shape(data),
            tooltip=["option:N", "batch:Q", alt.Tooltip("per_user:Q", format=",.1f"), alt.Tooltip("usd:Q", format=fmt)],
        )
    )
    line = (
        alt.Chart()
        .transform_filter(alt.datum.frontier)
        .mark_line(color="black", strokeWidth=1.5, interpolate="step-before")
        .encode(x="per_user:Q", y="usd:Q", order="per_user:Q")
    )
    layers = [line, dots, ring("per_user:Q", y), *per_user_target(data, found, "per_user")]
    return per_model(alt.layer(*layers, data=data), height=260)


def _cost_speed_title(data: pl.DataFrame) -> str:
    """What the line is and what the ring is; and, where the recommended option is off the line, why."""
    title = (
        "What each option costs against the speed its users get (the line: the options no other beats on both "
        "cost and speed; ringed: the recommended one"
    )
    first = data.filter(pl.col("rank") == 1)
    off = first.filter(~pl.col("frontier")).join(data, on="model", suffix="_other")
    if off.height == 0:
        return title + ")"
    tie = off.filter((pl.col("usd_other") == pl.col("usd")) & (pl.col("per_user_other") > pl.col("per_user")))
    if tie.height:
        return title + (
            ", off the line where an option of the same cost is faster: the ranking gives a tie on cost to the "
            "option with the most capacity per GPU, not to the fastest)"
        )
    return title + ", off the line where it is ranked by another measure than this cost)"


# -- rent or buy, month by month ---------------------------------------------------------------------------
HEIGHT = 220  # a rent-or-buy panel's, in px (its payback is written along its foot)
PAYBACK_CAP = 4  # horizons: a payback later than this many is said, not drawn (the chart would be all flat lines)


def rent_buy_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per model with both kinds of offer (and a workload): the cash spent by month m, capex + m x opex
    / 12, for the cheapest bought and the cheapest rented fleet (by TCO), and the month the purchase
    pays back, capex / (rent per month - bought opex per month), when it does. Every panel over the same
    months: past the horizon and every payback within PAYBACK_CAP horizons, to the next whole year.
    `gpu` and `kind` (buy, rent) draw a line in its GPU's colour, dashed when rented; `label` names the
    fleet at its line's end ("recommended" for rank 1); `payback` says when buying pays back."""
    rows = _plan(options)
    if not _fleets(rows):
        return pl.DataFrame()
    rows = rows.filter(pl.col("meets_slo") & pl.col("tco_usd").is_not_null())
    bought = pl.col("price_source").str.starts_with("sweep: bought")
    fleets = []
    for (model,), group in rows.group_by(["model"], maintain_order=True):
        picks = [group.filter(kind).sort("tco_usd").head(1) for kind in (bought, ~bought)]
        if any(p.height == 0 for p in picks):
            continue
        b, r = (p.row(0, named=True) for p in picks)
        b_month, r_month = b["opex_usd_per_year"] / 12, r["opex_usd_per_year"] / 12
        pays = b["capex_usd"] / (r_month - b_month) if r_month > b_month else None
        fleets.append((model, b, r, b_month, r_month, pays, 12 * (b["horizon_years"] or 3.0)))
    if not fleets:
        return pl.DataFrame()
    horizon = max(f[-1] for f in fleets)
    shown = [f[5] for f in fleets if f[5] is not None and f[5] <= PAYBACK_CAP * horizon]
    last = 12 * math.ceil((max([horizon, *shown]) + 1) / 12)  # one range for every panel, past them all
    out = []
    for model, b, r, b_month, r_month, pays, _ in fleets:
        if pays is None:
            payback = "buying never pays back: renting costs less a month than running the purchase"
        elif pays > last:
            payback = f"buying pays back after {pays:,.0f} months, beyond this chart"
        else:
            payback = f"buying pays back after {pays:,.1f} months"
        end = {
            kind: capex + last * month
            for kind, capex, month in (("buy", b["capex_usd"], b_month), ("rent", 0.0, r_month))
        }
        for row, kind, capex, month in ((b, "buy", b["capex_usd"], b_month), (r, "rent", 0.0, r_month)):
            count = row.get("gpus_bought") or row["gpus_needed"]  # what a purchase pays for: whole units
            label = f"{kind}: {count} × {row['gpu']} {row['offer']}" + (" (recommended)" if row["rank"] == 1 else "")
            other = end["rent" if kind == "buy" else "buy"]
            out += [
                {
                    "model": model,
                    "fleet": label,
                    "gpu": row["gpu"],
                    "kind": kind,
                    "rank": row["rank"],
                    "month": m,
                    "usd": capex + m * month,
                    "break_even": pays if pays is not None and pays <= last else None,
                    "payback": payback,
                    "horizon_months": 12 * (b["horizon_years"] or 3.0),
                    "label_above": end[kind] >= other,  # its end label above its line when it ends higher
                }
                for m in range(last + 1)
            ]
    return pl.DataFrame(out)


def rent_buy_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    """Each fleet a line of its GPU's colour, dashed when rented, named at its end; the horizon and the
    month buying pays back as labelled rules (or in words, when it pays back beyond the chart or never)."""
    last = data["month"].max()
    x = alt.X("month:Q", title="months from the purchase", scale=alt.Scale(domain=[0, last], nice=False))
    y = alt.Y("usd:Q", title="cash spent (USD)", axis=alt.Axis(format="$~s"))
    lines = (
        alt.Chart()
        .mark_line(strokeWidth=2)
        .encode(
            x=x,
            y=y,
            color=gpu_color(data, gpus, title="GPU"),
            strokeDash=alt.StrokeDash(
                "kind:N",
                title=None,
                scale=alt.Scale(domain=["buy", "rent"], range=[[1, 0], [7, 3]]),
                legend=alt.Legend(
                    symbolType="stroke", symbolSize=400, labelExpr="datum.label == 'buy' ? 'bought' : 'rented'"
                ),
            ),
            detail="fleet:N",
            tooltip=["fleet:N", "month:Q", alt.Tooltip("usd:Q", format="$,.0f")],
        )
    )
    ends = [
        alt.Chart()
        .transform_filter(f"datum.month == {last} && {'' if above else '!'}datum.label_above")
        .mark_text(align="right", baseline="bottom" if above else "top", dy=-4 if above else 4, fontSize=10)
        .encode(x=x, y=y, text="fleet:N")
        for above in (True, False)
    ]
    panel = alt.Chart().transform_filter("datum.month == 0 && datum.kind == 'buy'")  # one row per model
    horizon = panel.mark_rule(color="#888888", strokeWidth=1).encode(x="horizon_months:Q")
    horizon_text = (
        panel.transform_calculate(text="'horizon ' + datum.horizon_months / 12 + ' years'")
        .mark_text(align="left", baseline="bottom", dx=3, dy=-2, color="#555555")
        .encode(x="horizon_months:Q", y=alt.value(0), text="text:N")
    )
    paid = panel.transform_filter("datum.break_even != null")
    rule = paid.mark_rule(strokeDash=[4, 3], color="black").encode(
        x="break_even:Q", tooltip=[alt.Tooltip("break_even:Q", title="pays back after (months)", format=".1f")]
    )
    said = [
        paid.transform_filter(f"{'' if left else '!'}(datum.break_even > {0.6 * last})")
        .mark_text(
            align="right" if left else "left", baseline="bottom", dx=-3 if left else 3, dy=-4, color=TARGET_COLOR
        )
        .encode(x="break_even:Q", y=alt.value(HEIGHT), text="payback:N")
        for left in (True, False)
    ]
    unpaid = (
        panel.transform_filter("datum.break_even == null")
        .mark_text(align="right", baseline="bottom", dx=-4, dy=-4, color=TARGET_COLOR)
        .encode(x=alt.value(WIDTH), y=alt.value(HEIGHT), text="payback:N")
    )
    layers = [lines, *ends, horizon, horizon_text, rule, *said, unpaid]
    return per_model(alt.layer(*layers, data=data), height=HEIGHT)


# -- GPUs against traffic -------------------------------------------------------------------------------------
TRAFFIC_STEPS = [0.25 * k for k in range(1, 13)]  # x 0.25 to x 3 the sweep's peak
MAX_STEPS = 100  # steps drawn per line (a 520 px line draws no finer): beyond, every k-th count, rounded up


def gpus_traffic_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per model, each GPU's best option (rank order, the first 6): GPUs needed at 0.25 to 3 times the
    sweep's peak requests/s, replicas_needed(rate) x GPUs per replica, (ceil(rate x (1 + headroom) /
    capacity per replica) + redundancy) x GPUs, the plan's own sizing (plan/replicas.py). `kind`
    "sample": at the TRAFFIC_STEPS (the dots); "step": the exact steps the line is drawn through
    (step-before: each point's count holds from the point before it up to its rate): n replicas up to
    rate_carried(n), the most they carry, for every n the range needs, so the line never shows fewer
    GPUs than the plan would size at any rate between the samples (step-after from the samples drew
    8 GPUs for rack-scale's b200 up to 15 requests/s, where 16 are needed from 13.6). Where a line
    would have more than MAX_STEPS steps, it steps every k-th count, each step's count the most its
    rates need (above the plan's by less than k replicas, never below). With a workload of users the
    traffic is their number: the same users send each option its own rate (a slower one, fewer
    requests), so `peak` is the peak users x the factor and each option's rate its own x the factor
    (its latency taken as it is at the sweep's peak). `rank` 1: the recommended option's sample at the
    sweep's peak."""
    rows = _plan(options)
    if rows.height == 0 or rows["peak_requests_per_s"].is_null().all():
        return pl.DataFrame()
    series = ranked_series(options).filter(pl.col("_n") < min(6, MAX_SERIES))
    keys = [k for k in series_keys(series) if k in rows.columns]
    series = series.with_columns([pl.col(k).cast(rows.schema[k]) for k in keys])
    rows = rows.filter(pl.col("capacity_requests_per_s") > 0).join(
        series.select(*keys, "_n", "_rank"), on=keys, nulls_equal=True, maintain_order="left"
    )
    rows = rows.unique(["model", "gpu"], keep="first", maintain_order=True)
    users = "peak_users" in rows.columns and rows["peak_users"].is_not_null().any()
    traffic = pl.col("peak_users" if users else "peak_requests_per_s")
    sizing = (pl.col("capacity_requests_per_s"), pl.col("headroom"), pl.col("redundancy"))
    rows = rows.with_columns(
        option=option_label(rows),
        sweep_peak=traffic,
        traffic=pl.lit("peak users" if users else "peak requests/s"),
        _per_rate=traffic / pl.col("peak_requests_per_s"),  # x per request/s: 1, or the users per request/s
    )
    samples = rows.join(pl.DataFrame({"factor": TRAFFIC_STEPS}), how="cross").with_columns(
        peak=traffic * pl.col("factor"),
        gpus_at=replicas_needed(pl.col("peak_requests_per_s") * pl.col("factor"), *sizing) * pl.col("gpus"),
        kind=pl.lit("sample"),
        rank=pl.when((pl.col("factor") == 1.0) & (pl.col("_rank") == 1)).then(pl.lit(1)),  # its fleet at the peak
    )
    low, high = (pl.col("peak_requests_per_s") * f for f in (TRAFFIC_STEPS[0], TRAFFIC_STEPS[-1]))
    ends = rows.with_columns(
        _low=low, _high=high, _n0=replicas_needed(low, *sizing), _n1=replicas_needed(high, *sizing)
    ).with_columns(_stride=((pl.col("_n1") - pl.col("_n0")) / MAX_STEPS).ceil().clip(lower_bound=1))
    # the counts the line steps to: n0, n0 + k, n0 + 2k ... below n1, each holding up to the rate it carries
    counts = ends.with_columns(
        _count=pl.int_ranges(pl.col("_n0").cast(pl.Int64), pl.col("_n1").cast(pl.Int64), pl.col("_stride"))
    ).explode("_count")
    counts = counts.filter(pl.col("_count").is_not_null()).with_columns(
        _rate=rate_carried(pl.col("_count"), *sizing), _gpus=pl.col("_count") * pl.col("gpus")
    )
    first = ends.with_columns(_rate=pl.col("_low"), _gpus=pl.col("_n0") * pl.col("gpus"))
    last = ends.with_columns(_rate=pl.col("_high"), _gpus=pl.col("_n1") * pl.col("gpus"))
    steps = pl.concat([first, counts.drop("_count"), last], how="vertical_relaxed").with_columns(
        peak=pl.col("_rate") * pl.col("_per_rate"), gpus_at=pl.col("_gpus"), kind=pl.lit("step"), rank=pl.lit(None)
    )
    shown = ["model", "gpu", "option", "_n", "kind", "peak", "gpus_at", "sweep_peak", "traffic", "rank"]
    out = pl.concat([samples.select(shown), steps.select(shown)], how="vertical_relaxed")
    return out.with_columns(pl.col("gpus_at").cast(pl.Int64)).sort(["model", "_n", "kind", "peak"])


def gpus_traffic_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    """The GPUs each option needs: its exact steps as a line (step-before: a count holds up to the rate
    it carries, from the step before), the dots at 0.25 to 3 times the sweep's peak, the recommended
    option's fleet at the sweep's peak ringed."""
    x = alt.X("peak:Q", title=data["traffic"][0] if data.height else "peak requests/s")
    y = alt.Y("gpus_at:Q", title="GPUs needed")
    color = gpu_color(data, gpus)
    lines = (
        alt.Chart()
        .transform_filter(alt.datum.kind == "step")
        .mark_line(interpolate="step-before")
        .encode(x=x, y=y, color=color, detail="option:N", order="peak:Q")
    )
    dots = (
        alt.Chart()
        .transform_filter(alt.datum.kind == "sample")
        .mark_point(filled=True, size=30, opacity=1)
        .encode(
            x=x,
            y=y,
            color=color,
            tooltip=["option:N", alt.Tooltip("peak:Q", format=",.1f"), "gpus_at:Q"],
        )
    )
    rule = alt.Chart().mark_rule(strokeDash=[4, 3], color="black").encode(x="mean(sweep_peak):Q")
    return per_model(alt.layer(lines, dots, rule, ring(x, y), data=data), height=240)


CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec(
        "cost-speed",
        _cost_speed_title,
        "Which offer should we choose?",
        cost_speed_data,
        cost_speed_chart,
        per_user_note,
    ),
    ChartSpec(
        "rent-buy",
        "Cash spent renting or buying, month by month, past the horizon and the month buying pays back",
        "Rent or buy?",
        rent_buy_data,
        rent_buy_chart,
    ),
    ChartSpec(
        "gpus-traffic",
        "GPUs needed against peak traffic (dashed: the sweep's)",
        "What if traffic grows?",
        gpus_traffic_data,
        gpus_traffic_chart,
    ),
)
__all__ = ["CHARTS", "WIDTH"]
