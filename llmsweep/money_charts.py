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
    WIDTH,
    ChartSpec,
    gpu_color,
    option_label,
    per_model,
    ranked_series,
    recommended,
    series_keys,
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
    rank (the recommended one is rank 1)."""
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
    return rows.select("model", "offer_label", "option", "per_user", "usd", "metric", "frontier", "batch", "rank")


def cost_speed_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    metric = data["metric"][0]
    fmt = "$,.0f" if metric == "USD per month" else "$,.3f"
    y = alt.Y("usd:Q", title=metric, scale=alt.Scale(type="log"), axis=alt.Axis(format="$~s", labelOverlap=True))
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=45, opacity=0.75)
        .encode(
            x=alt.X("per_user:Q", title="tokens/s per user"),
            y=y,
            color=alt.Color("offer_label:N", title="GPU · offer", legend=alt.Legend(symbolType="circle")),
            tooltip=["option:N", "batch:Q", alt.Tooltip("per_user:Q", format=",.1f"), alt.Tooltip("usd:Q", format=fmt)],
        )
    )
    line = (
        alt.Chart()
        .transform_filter(alt.datum.frontier)
        .mark_line(color="black", strokeWidth=1.5, interpolate="step-before")
        .encode(x="per_user:Q", y="usd:Q", order="per_user:Q")
    )
    ring = alt.Chart().mark_point(filled=False, size=220, strokeWidth=2).encode(x="per_user:Q", y=y)
    return per_model(alt.layer(line, dots, recommended(ring, "circle"), data=data), height=260)


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
def rent_buy_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per model with both kinds of offer (and a workload): the cash spent by month m over the horizon,
    capex + m x opex / 12, for the cheapest bought and the cheapest rented fleet (by TCO), and the
    month the purchase pays back, capex / (rent per month - bought opex per month), when it does."""
    rows = _plan(options)
    if not _fleets(rows):
        return pl.DataFrame()
    rows = rows.filter(pl.col("meets_slo") & pl.col("tco_usd").is_not_null())
    bought = pl.col("price_source").str.starts_with("sweep: bought")
    out = []
    for (model,), group in rows.group_by(["model"], maintain_order=True):
        picks = [group.filter(kind).sort("tco_usd").head(1) for kind in (bought, ~bought)]
        if any(p.height == 0 for p in picks):
            continue
        b, r = (p.row(0, named=True) for p in picks)
        horizon = b["horizon_years"] or 3.0
        b_month, r_month = b["opex_usd_per_year"] / 12, r["opex_usd_per_year"] / 12
        pays = b["capex_usd"] / (r_month - b_month) if r_month > b_month else None
        # the horizon, or as far as the break-even month when it comes within twice the horizon
        last = max(12 * horizon, min(pays or 0, 24 * horizon))
        months = list(range(0, int(math.ceil(last)) + 1))
        for row, label, capex, month in ((b, "buy", b["capex_usd"], b_month), (r, "rent", 0.0, r_month)):
            count = row.get("gpus_bought") or row["gpus_needed"]  # what a purchase pays for: whole units
            name = f"{label}: {count} × {row['gpu']} {row['offer']}"
            out += [
                {"model": model, "fleet": name, "month": m, "usd": capex + m * month, "break_even": pays}
                for m in months
            ]
    return pl.DataFrame(out) if out else pl.DataFrame()


def rent_buy_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    lines = (
        alt.Chart()
        .mark_line(strokeWidth=2)
        .encode(
            x=alt.X("month:Q", title="months from the purchase"),
            y=alt.Y("usd:Q", title="cash spent (USD)", axis=alt.Axis(format="$~s")),
            color=alt.Color("fleet:N", title=None, legend=alt.Legend(symbolType="stroke")),
            tooltip=["fleet:N", "month:Q", alt.Tooltip("usd:Q", format="$,.0f")],
        )
    )
    rule = (
        alt.Chart()
        .transform_filter("datum.break_even != null && datum.month == 0")
        .transform_filter(f"datum.break_even <= {data['month'].max()}")
        .mark_rule(strokeDash=[4, 3], color="black")
        .encode(x="break_even:Q", tooltip=[alt.Tooltip("break_even:Q", title="pays back after (months)", format=".1f")])
    )
    return per_model(alt.layer(lines, rule, data=data), height=220)


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
    (its latency taken as it is at the sweep's peak)."""
    rows = _plan(options)
    if rows.height == 0 or rows["peak_requests_per_s"].is_null().all():
        return pl.DataFrame()
    series = ranked_series(options).filter(pl.col("_n") < min(6, MAX_SERIES))
    keys = [k for k in series_keys(series) if k in rows.columns]
    series = series.with_columns([pl.col(k).cast(rows.schema[k]) for k in keys])
    rows = rows.filter(pl.col("capacity_requests_per_s") > 0).join(
        series.select(*keys, "_n"), on=keys, nulls_equal=True, maintain_order="left"
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
        peak=pl.col("_rate") * pl.col("_per_rate"), gpus_at=pl.col("_gpus"), kind=pl.lit("step")
    )
    shown = ["model", "gpu", "option", "_n", "kind", "peak", "gpus_at", "sweep_peak", "traffic"]
    out = pl.concat([samples.select(shown), steps.select(shown)], how="vertical_relaxed")
    return out.with_columns(pl.col("gpus_at").cast(pl.Int64)).sort(["model", "_n", "kind", "peak"])


def gpus_traffic_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    """The GPUs each option needs: its exact steps as a line (step-before: a count holds up to the rate
    it carries, from the step before), the dots at 0.25 to 3 times the sweep's peak."""
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
    return per_model(alt.layer(lines, dots, rule, data=data), height=240)


CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec(
        "cost-speed",
        _cost_speed_title,
        "Which offer should we choose?",
        cost_speed_data,
        cost_speed_chart,
    ),
    ChartSpec(
        "rent-buy",
        "Cash spent renting or buying, month by month (dashed: the month buying pays back)",
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
