"""Charts for the reports: estimates -> altair charts, each answering one buyer's question.

No I/O here. Each function takes the estimates (a polars LazyFrame of the exported columns),
reduces them to the few rows the question needs (so a million-row sweep plots tens or hundreds of
points, never a million), and returns an altair chart. `chart_data` exposes that reduction so
tests can check the numbers a chart shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import altair as alt
import polars as pl

from llmsweep.answer import LAYOUT_PARTS, target_seconds
from llmsweep.columns import POOL_COLUMNS

GIB = 2**30  # memory is shown in GiB everywhere (charts and tables)
WIDTH = 520
NUMBER_AXIS = alt.Axis(format=",~r", labelOverlap=True)  # linear axes: 1,600 and 0.5
SI_AXIS = alt.Axis(format="~s", labelOverlap=True)  # log axes: 1P, 200T, 20G, 2k (never 1e+15 beside 200,000,000,000)
COUNT_AXIS = alt.Axis(format="~d", labelOverlap=True)
MAX_SERIES = 12  # GPUs per model, so a chart stays readable; more are named in the chart's note
ROOFLINE_POINTS = 300  # configurations per GPU on the roofline
# ...and at most this many in all: altair refuses a dataset of more than 5,000 rows (MaxRowsError), so
# a sweep of 20 GPUs with 300 fitting configurations each could not be drawn, nor its report written
ROOFLINE_TOTAL = 4_000
TEXT = ("gpu", "model", "precision", "kv_precision", "bound", "reason")


@dataclass(frozen=True)
class ChartSpec:
    id: str
    title: str | Callable[[pl.DataFrame], str]  # a function of the chart's data when it depends on it
    question: str
    data: Callable[[pl.LazyFrame, pl.DataFrame | None], pl.DataFrame]
    # the chart from its data and the report's GPUs (gpu_color's domain; charts not coloured by GPU ignore it)
    build: Callable[[pl.DataFrame, Sequence[str] | None], alt.TopLevelMixin]
    note: Callable[[pl.DataFrame], str] | None = None  # what the chart's data needs said, beside series_note's


def _strings(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.with_columns([pl.col(c).cast(pl.String) for c in TEXT if c in frame.collect_schema().names()])


def _first_lengths(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The sweep's shortest input and output lengths: one workload per chart unless the chart is about length."""
    return frame.filter(
        (pl.col("input_tokens") == pl.col("input_tokens").min())
        & (pl.col("output_tokens") == pl.col("output_tokens").min())
    )


def _smallest_layout(frame: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Per `keys`, the rows of the smallest GPU count that fits anywhere (else the smallest at all)."""
    best = (
        frame.group_by(keys)
        .agg(
            pl.col("gpus").filter(pl.col("fits")).min().alias("_fit"),
            pl.col("gpus").min().alias("_any"),
        )
        .with_columns(_g=pl.coalesce("_fit", "_any"))
        .select([*keys, "_g"])
    )
    return frame.join(best, on=keys).filter(pl.col("gpus") == pl.col("_g")).drop("_g")


SERIES_KEYS = ["model", "gpu", "precision", "tp", "pp", "ep", "dp_attention"]
# A series' serving mode (when the results have one): the same decode layout aggregated and
# disaggregated, with and without speculative decoding, are different options.
SERVING_KEYS = ["mode", "speculative", *POOL_COLUMNS]
POINT_ONLY = "_point_only"  # a series drawn from its plan row alone (no estimates row has its worker counts)


def series_keys(frame: pl.DataFrame | pl.LazyFrame) -> list[str]:
    """SERIES_KEYS and the serving keys the frame has."""
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    return [*SERIES_KEYS, *(k for k in SERVING_KEYS if k in names)]


def ranked_series(options: pl.DataFrame | None) -> pl.DataFrame:
    """Per model (at the sweep's first lengths), one series per GPU: its best option in the plan (layout,
    and serving mode when the results have one), the GPUs in rank order (the recommended one first, then
    the other ranked ones, then those that miss the targets or have no price, fastest per GPU first).
    `_n` is the position, `_total` the GPUs there are, `_rank` the rank of the series' best option (1: the
    recommended one). The first is never left out of a chart."""
    if options is None or options.height == 0:
        schema = {**{k: pl.String for k in SERIES_KEYS}, "_n": pl.Int64, "_total": pl.Int64, "_rank": pl.Int64}
        return pl.DataFrame(schema=schema)
    rows = options.with_columns(pl.col(pl.Categorical).cast(pl.String)).filter(pl.col("fits"))
    rows = rows.filter(
        (pl.col("input_tokens") == pl.col("input_tokens").min())
        & (pl.col("output_tokens") == pl.col("output_tokens").min())
    )
    order = [pl.col("rank").is_null(), pl.col("rank"), pl.col("output_tokens_per_s_per_gpu")]
    best = rows.sort(order, descending=[False, False, True], nulls_last=True, maintain_order=True).unique(
        ["model", "gpu"], keep="first", maintain_order=True
    )
    best = best.select(*series_keys(best), pl.col("rank").cast(pl.Int64).alias("_rank")).with_columns(
        _n=pl.int_range(pl.len()).over("model"), _total=pl.len().over("model")
    )
    return best.with_columns([pl.col(k).cast(pl.Int64) for k in LAYOUT])


def _pick(frame: pl.DataFrame, series: pl.DataFrame, keys: list[str] | None = None) -> pl.DataFrame:
    """The rows of the first MAX_SERIES series per model, in rank order (`_n`), with how many there are
    (matched on every key both have; an aggregated row's pool keys are null and match null)."""
    keys = [k for k in (keys or series_keys(series)) if k in frame.columns and k in series.columns]
    chosen = series.filter(pl.col("_n") < MAX_SERIES)
    cast = {k: frame.schema[k] for k in keys}
    chosen = chosen.select(*keys, *(k for k in chosen.columns if k.startswith("_")))
    chosen = chosen.with_columns([pl.col(k).cast(t) for k, t in cast.items()])
    return frame.join(chosen, on=keys, how="inner", nulls_equal=True).sort(["model", "_n"])


def _plan_points(rows: pl.DataFrame, series: pl.DataFrame, options: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The plan rows (first lengths, best offer) of the shown series: each option at its operating point,
    POINT_ONLY where `rows` (estimates) do not have the series (a disaggregated option whose worker counts
    the plan searched is not a grid row, so a chart draws it from its operating point alone rather than
    leave it out)."""
    shown = series.filter(pl.col("_n") < MAX_SERIES)
    plan_rows = options.with_columns(pl.col(pl.Categorical).cast(pl.String)).filter(pl.col("fits"))
    plan_rows = plan_rows.filter(
        (pl.col("input_tokens") == pl.col("input_tokens").min())
        & (pl.col("output_tokens") == pl.col("output_tokens").min())
    )
    plan_rows = _first(_pick(plan_rows, shown))
    on = [k for k in keys if k in rows.columns and k in plan_rows.columns]
    if rows.height == 0 or not on:
        return plan_rows.with_columns(pl.lit(True).alias(POINT_ONLY))
    have = rows.select(on).unique().with_columns([pl.col(k).cast(plan_rows.schema[k]) for k in on])
    plan_rows = plan_rows.join(have.with_columns(_have=pl.lit(True)), on=on, how="left", nulls_equal=True)
    return plan_rows.with_columns(pl.col("_have").is_null().alias(POINT_ONLY)).drop("_have")


def _missing_series(rows: pl.DataFrame, series: pl.DataFrame, options: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The plan rows of the shown series that `rows` (estimates) do not have (_plan_points' POINT_ONLY)."""
    return _plan_points(rows, series, options, keys).filter(pl.col(POINT_ONLY))


def rank_order(data: pl.DataFrame) -> list[str]:
    """The chart's options in rank order (position, then model and name: the same every run)."""
    return data.sort(["_n", "model", "option"])["option"].unique(maintain_order=True).to_list()


def by_value(data: pl.DataFrame, value: str) -> tuple[pl.DataFrame, alt.EncodingSortField]:
    """`data` with `_order`, each option's place in its own model's panel by `value` (smallest first,
    ties in rank order), and the y sort that reads it: with per_model's independent y scales every
    panel is sorted by its own bars (one list shared by the panels put an option where another
    model ranks it)."""
    data = data.sort(["model", value, "_n", "option"]).with_columns(_order=pl.int_range(pl.len()).over("model"))
    return data, alt.EncodingSortField("_order", op="min")


RECOMMENDED = "recommended (rank 1)"


def recommended(chart: alt.Chart, symbol: str, field: str = "rank") -> alt.Chart:
    """`chart` (an unfilled mark and its position) drawn on the plan's first option alone (`field` 1:
    rank, or a series' `_rank`), in black, with a legend entry of its own (its `symbol`): how every
    chart marks the recommended option wherever it stands."""
    stroke = alt.Stroke(
        "mark:N",
        scale=alt.Scale(domain=[RECOMMENDED], range=["black"]),
        legend=alt.Legend(title=None, symbolType=symbol),
    )
    return (
        chart.transform_filter(getattr(alt.datum, field) == 1)
        .transform_calculate(mark=repr(RECOMMENDED))
        .encode(stroke=stroke)
    )


def ring(x: str | alt.X, y: str | alt.Y, field: str = "rank") -> alt.Chart:
    """The recommended option's point, ringed (recommended)."""
    return recommended(alt.Chart().mark_point(filled=False, size=220, strokeWidth=2).encode(x=x, y=y), "circle", field)


# -- the latency targets the verdicts are judged against ---------------------------------------------------------
TARGET_COLOR = "#222222"
TARGET_COLUMNS = ("ttft_target_s", "ttft_percentile", "tpot_target_s")


@dataclass(frozen=True)
class Targets:
    """The sweep's latency targets a chart can draw (plan.csv's target columns): TTFT (at `percentile`)
    and TPOT, each None when the sweep sets none."""

    ttft_s: float | None = None
    percentile: str = "mean"
    tpot_s: float | None = None

    def ttft_label(self) -> str:
        """'p90 TTFT target 2 s', 'mean TTFT target 2 s': in the target's own unit whatever the axis'."""
        return f"{self.percentile} TTFT target {target_seconds(self.ttft_s)}"

    def tpot_label(self) -> str:
        """'TPOT target 50 ms = 20 tokens/s': the target on a tokens/s axis."""
        return f"TPOT target {target_seconds(self.tpot_s)} = {1 / self.tpot_s:.3g} tokens/s"


def with_targets(data: pl.DataFrame, options: pl.DataFrame | None) -> pl.DataFrame:
    """`data` with the sweep's target columns (one value a sweep), for its chart to draw: read back
    and dropped by `targets`."""
    if options is None or data.height == 0:
        return data
    have = [c for c in TARGET_COLUMNS if c in options.columns]
    if not have:
        return data
    first = options.select(have).with_columns(pl.col(pl.Categorical).cast(pl.String)).row(0, named=True)
    return data.with_columns([pl.lit(v).alias(k) for k, v in first.items()])


def targets(data: pl.DataFrame) -> tuple[pl.DataFrame, Targets]:
    """(`data` without the target columns, the targets they held)."""
    have = [c for c in TARGET_COLUMNS if c in data.columns]
    if not have or data.height == 0:
        return data.drop(have), Targets()
    row = data.select(have).row(0, named=True)
    found = Targets(row.get("ttft_target_s"), row.get("ttft_percentile") or "mean", row.get("tpot_target_s"))
    return data.drop(have), found


def target_rule(value: float, label: str, channel: str, right: bool = False, per_user: bool = False) -> list[alt.Chart]:
    """A target as a dashed rule across each panel at `value` on the `channel` ("x" or "y") axis, its
    `label` written beside it (above the panel for an x rule: left of it when `right`, the rule near the
    axis' end). One rule per panel (the facet's rows aggregated to one), at a field `target` so the axis
    reaches it in the panels that draw it (a datum would stretch the others too). `per_user`: in the
    decode chart's per-user panels alone."""
    one = alt.Chart()
    if per_user:
        one = one.transform_filter(alt.datum.measure == "per user")
    one = one.transform_aggregate(_rows="count()").transform_calculate(target=str(value), label=repr(label))
    where = alt.X("target:Q") if channel == "x" else alt.Y("target:Q")
    rule = one.mark_rule(color=TARGET_COLOR, strokeDash=[6, 3], strokeWidth=1.5).encode(
        where, tooltip=alt.Tooltip("label:N", title="target")
    )
    if channel == "x":
        text = one.mark_text(
            align="right" if right else "left", baseline="bottom", dx=-3 if right else 3, dy=-2, color=TARGET_COLOR
        ).encode(where, y=alt.value(0), text="label:N")
    else:
        text = one.mark_text(align="left", baseline="bottom", dx=3, dy=-2, color=TARGET_COLOR).encode(
            where, x=alt.value(0), text="label:N"
        )
    return [rule, text]


def per_user_target(data: pl.DataFrame, found: Targets, column: str) -> list[alt.Chart]:
    """The TPOT target on a tokens/s per user x axis (`column`), when the sweep sets one."""
    if found.tpot_s is None:
        return []
    value = 1 / found.tpot_s
    return target_rule(value, found.tpot_label(), "x", right=value > 0.6 * max(value, data[column].max() or 0))


def per_user_note(data: pl.DataFrame) -> str:
    """What the TPOT target's line on a tokens/s per user axis means: per user counts the wait for the
    first token too (output tokens / request latency), so it is a little under 1 / TPOT."""
    if "tpot_target_s" not in data.columns or data.height == 0 or data["tpot_target_s"][0] is None:
        return ""
    return (
        "tokens/s per user counts the wait for the first token (output tokens ÷ request latency), so it runs a "
        "little under 1 ÷ TPOT: an option past the TPOT target's line meets that target, and one just short of it "
        "may too"
    )


# -- one encoding of a thing in every chart -------------------------------------------------------------------
# one shape per limit (bound) in every chart, whichever limits a sweep has; circles are plain points
LIMIT_SHAPES = {"memory": "triangle-up", "compute": "square", "communication": "diamond", "overhead": "cross"}
# offers of one GPU (its colour) told apart by shape: none of a limit's
OFFER_SHAPES = ("circle", "triangle-down", "triangle-right", "triangle-left", "wedge", "stroke")
# memory components: greys, no GPU's colour
MEMORY_PARTS = {"weights": "#4a4a4a", "KV cache": "#8a8a8a", "activations": "#bdbdbd", "overhead": "#dedede"}


def limit_shape(field: str = "bound") -> alt.Shape:
    return alt.Shape(
        f"{field}:N",
        title="limit",
        scale=alt.Scale(domain=list(LIMIT_SHAPES), range=list(LIMIT_SHAPES.values())),
    )


def offer_shape(data: pl.DataFrame, field: str = "offer") -> alt.Shape:
    """One shape per offer (rent, rent-1y-reserved, buy-4y ...), the same offer the same shape for every GPU."""
    offers = sorted(data[field].drop_nulls().unique().to_list())
    shapes = [OFFER_SHAPES[i % len(OFFER_SHAPES)] for i in range(len(offers))]
    legend = alt.Legend(title="offer") if len(offers) > 1 else None
    return alt.Shape(f"{field}:N", scale=alt.Scale(domain=offers, range=shapes), legend=legend)


def series_note(data: pl.DataFrame) -> str:
    """'h200-sxm, mi300x and 3 more not shown: 12 of 17 GPUs shown per model, the first by rank' when a
    chart leaves GPUs out, and the options drawn at their operating point alone (POINT_ONLY), else ''."""
    if "_total" not in data.columns or data.height == 0:
        return ""
    notes = []
    if POINT_ONLY in data.columns and "option" in data.columns:
        alone = data.filter(pl.col(POINT_ONLY).fill_null(False))["option"].unique(maintain_order=True).to_list()
        if alone:
            notes.append(
                f"{', '.join(alone)}: at the plan's operating point only (the plan searched its worker counts; "
                "estimates.csv has the grid's own)"
            )
    counts = data.group_by("model").agg(pl.col("_n").n_unique().alias("shown"), pl.col("_total").first())
    cut = counts.filter(pl.col("shown") < pl.col("_total"))
    notes += [
        f"{m}: {s} of {n} GPUs shown (the first {s} by rank; plan.csv has them all)"
        for m, s, n in cut.sort("model").rows()
    ]
    return "; ".join(notes)


def per_model(chart: alt.Chart | alt.LayerChart, height: int | None = None) -> alt.TopLevelMixin:
    """One panel per model, stacked, each with its own y axis."""
    size = {"width": WIDTH} if height is None else {"width": WIDTH, "height": height}
    return chart.properties(**size).facet(row=alt.Row("model:N", title=None)).resolve_scale(y="independent")


LAYOUT = ("tp", "pp", "ep", "dp_attention")
SERVING_NAME_COLUMNS = ("mode", "prefill_workers", "decode_workers", "speculative")  # what option_text reads


def report_gpus(frame: pl.LazyFrame) -> list[str]:
    """Every GPU of the results, in alphabetical order: the colour domain of a report's charts."""
    return sorted(frame.select(pl.col("gpu").cast(pl.String).unique()).collect()["gpu"].to_list())


def gpu_color(
    data: pl.DataFrame, gpus: Sequence[str] | None = None, title: str = "GPU (best layout: see tooltip)"
) -> alt.Color:
    """One colour per GPU, the same in every chart of a report: the domain is the report's GPUs
    (`gpus`, build_charts passes them; by default the chart's own) in alphabetical order, so a GPU
    keeps its colour in a chart that lacks another; the legend's filled circles are the points the
    lines are drawn with (it lists the chart's own GPUs only)."""
    domain = sorted(gpus if gpus is not None else data["gpu"].unique().to_list())
    shown = set(data["gpu"].unique().to_list())
    return alt.Color(
        "gpu:N",
        title=title,
        scale=alt.Scale(domain=domain, scheme="tableau10" if len(domain) <= 10 else "tableau20"),
        legend=alt.Legend(symbolType="circle", values=[g for g in domain if g in shown]),
    )


def layout_text(prefix: str = "") -> pl.Expr:
    """A layout as the reports write it (answer.f_layout): tp8, tp8 pp2, tp1 dp-attn16 ep16; with
    `prefix` "prefill_", a disaggregated replica's prefill worker's."""
    parts = [pl.format("tp{}", f"{prefix}tp")]
    for col, name in LAYOUT_PARTS:
        col = f"{prefix}{col}"
        parts.append(pl.when(pl.col(col) > 1).then(pl.format(" " + name + "{}", col)).otherwise(pl.lit("")))
    return pl.concat_str(parts)


def option_text(offer: bool = False, serving: bool = True) -> pl.Expr:
    """An option as the charts name it: gpu · (offer ·) precision · the decode layout, after '3P1D' for
    a disaggregated replica (x prefill, y decode workers) and with '+ mtp' for speculative decoding
    (`serving`: the frame has serving modes): 'b200 · fp8 · 3P1D tp1 dp-attn8 ep8 + mtp'."""
    layout = layout_text()
    if serving:
        pools = pl.when(pl.col("mode") == "disaggregated").then(
            pl.format("{}P{}D ", "prefill_workers", "decode_workers")
        )
        spec = pl.when(pl.col("speculative").is_not_null() & (pl.col("speculative") != "none")).then(
            pl.format(" + {}", "speculative")
        )
        layout = pl.concat_str([pools.fill_null(""), layout, spec.fill_null("")])
    parts = [pl.col("gpu"), *([pl.col("offer")] if offer else []), pl.col("precision"), layout]
    return pl.concat_str(parts, separator=" · ")


def _layout_label(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(option=option_label(frame))


def option_label(frame: pl.DataFrame, offer: bool = False) -> pl.Expr:
    """option_text, with the pools and speculative decoding when the frame has serving modes."""
    return option_text(offer, "mode" in frame.columns and "speculative" in frame.columns)


# -- will it fit? ----------------------------------------------------------------------------------
def memory_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per model, each GPU's best option (rank order) at its operating point: weights, the KV cache of
    the requests in flight there (ceil(concurrency) requests at the batch's KV per request: under a
    workload's random arrivals more than the closed-loop batch the targets were checked at, as many as
    the replica's KV slots admit), activations and overhead, against the usable memory of one GPU."""
    series = ranked_series(options)
    if series.height == 0:
        return pl.DataFrame()
    rows = _pick(options.with_columns(pl.col(pl.Categorical).cast(pl.String)), series)
    rows = _first(rows).with_columns(in_flight=pl.col("concurrency").ceil().clip(lower_bound=1))
    rows = _layout_label(rows.with_columns(kv=pl.col("kv_cache_bytes") * pl.col("in_flight") / pl.col("batch")))
    parts = {
        "weights": "weight_bytes",
        "KV cache": "kv",
        "activations": "activation_bytes",
        "overhead": "overhead_bytes",
    }
    keep = ["model", "option", "gpu", "_n", "_total", "_rank", "in_flight"]
    long = pl.concat(
        [
            rows.select(*keep, pl.lit(k).alias("component"), pl.lit(i).alias("stack"), (pl.col(v) / GIB).alias("gib"))
            for i, (k, v) in enumerate(parts.items())
        ]
    )
    usable = rows.select("model", "option", (pl.col("usable_memory_bytes") / GIB).alias("usable_gib"))
    return long.join(usable, on=["model", "option"]).sort(["model", "_n", "component"])


def _first(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per model x GPU: the first (best-ranked) offer's."""
    return rows.unique(["model", "gpu"], keep="first", maintain_order=True)


def memory_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    order = rank_order(data)
    bars = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=alt.X("sum(gib):Q", title="GiB per GPU at the operating point"),
            y=alt.Y("option:N", title=None, sort=order),
            color=alt.Color(
                "component:N",
                title=None,
                scale=alt.Scale(domain=list(MEMORY_PARTS), range=list(MEMORY_PARTS.values())),
            ),
            order=alt.Order("stack:Q"),  # weights first, from zero, as the legend lists them
            tooltip=[
                "option:N",
                "component:N",
                alt.Tooltip("gib:Q", format=".2f"),
                alt.Tooltip("in_flight:Q", title="requests in flight"),
            ],
        )
    )
    capacity = (
        alt.Chart()
        .mark_tick(color="black", thickness=2, size=18)
        .encode(
            x="usable_gib:Q",
            y=alt.Y("option:N", sort=order),
            tooltip=[alt.Tooltip("usable_gib:Q", title="usable GiB", format=".1f")],
        )
    )
    outline = (
        alt.Chart().mark_bar(fillOpacity=0, strokeWidth=2.5).encode(x="sum(gib):Q", y=alt.Y("option:N", sort=order))
    )
    return per_model(alt.layer(bars, capacity, recommended(outline, "square", "_rank"), data=data))


# -- how fast, how many users? -----------------------------------------------------------------------
OPERATING_POINT = "operating_point"  # a row at the plan's operating point (its requests in flight), not a grid row


def decode_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per model, each GPU's best layout (rank order) at every concurrency of the grid that fits:
    tokens/s per user and per replica (under load); and each one's option at the plan's operating point
    (OPERATING_POINT, its `rank`: 1 the recommended one), with the sweep's targets."""
    series = ranked_series(options)
    if series.height == 0:
        return pl.DataFrame()
    keys = [k for k in series_keys(frame) if k in series.columns]
    rows = (
        _first_lengths(_strings(frame))
        .filter(pl.col("fits"))
        .select(*keys, "batch", "output_tokens_per_s", "decode_tokens_per_s_per_seq")
        .unique(maintain_order=True)
        .collect()
    )
    shown = [*keys, "batch", "output_tokens_per_s", "decode_tokens_per_s_per_seq", "_n", "_total", "_rank"]
    rows = _pick(rows, series, keys).select(shown).with_columns(pl.lit(False).alias(POINT_ONLY))
    rows = rows.with_columns(pl.lit(False).alias(OPERATING_POINT), pl.lit(None, pl.Int64).alias("rank"))
    # every option at the plan's operating point (its requests in flight), the only point of a series
    # whose worker counts the plan searched
    points = _plan_points(rows, series, options, keys).with_columns(
        batch=pl.col("concurrency"), rank=pl.col("_rank"), **{OPERATING_POINT: pl.lit(True)}
    )
    rows = pl.concat([rows, points.select(*shown, POINT_ONLY, OPERATING_POINT, "rank")], how="vertical_relaxed")
    rows = with_targets(_layout_label(rows).sort(["model", "_n", OPERATING_POINT, "batch"]), options)
    index = ["model", "option", "gpu", "batch", "_n", "_total", "_rank", "rank", POINT_ONLY, OPERATING_POINT]
    return rows.unpivot(
        index=[*index, *(c for c in TARGET_COLUMNS if c in rows.columns)],
        on=["output_tokens_per_s", "decode_tokens_per_s_per_seq"],
        variable_name="measure",
        value_name="tokens_per_s",
    ).with_columns(
        measure=pl.col("measure").replace(
            {"output_tokens_per_s": "per replica (under load)", "decode_tokens_per_s_per_seq": "per user"}
        )
    )


OPERATING_LABEL = "the plan's operating point"


def operating_points(x: alt.X | str, y: alt.Y | str, color: alt.Color, tooltip: list) -> alt.Chart:
    """The options at the plan's operating points (OPERATING_POINT rows): larger dots of their GPU's
    colour, white-edged, with a legend entry of their own."""
    size = alt.Size(
        "point:N", scale=alt.Scale(type="ordinal", domain=[OPERATING_LABEL], range=[150]), legend=alt.Legend(title=None)
    )
    return (
        alt.Chart()
        .transform_filter(alt.datum[OPERATING_POINT])
        .transform_calculate(point=repr(OPERATING_LABEL))
        .mark_point(filled=True, opacity=1, stroke="white", strokeWidth=1)
        .encode(x=x, y=y, color=color, size=size, tooltip=tooltip)
    )


def decode_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    data, found = targets(data)
    if OPERATING_POINT not in data.columns:
        data = data.with_columns(pl.lit(False).alias(OPERATING_POINT))
    tooltip = ["option:N", "measure:N", "batch:Q", alt.Tooltip("tokens_per_s:Q", format=",.1f")]
    order = rank_order(data)
    grid = data.filter(~pl.col(OPERATING_POINT))
    rule = [] if found.tpot_s is None else target_rule(1 / found.tpot_s, found.tpot_label(), "x", per_user=True)
    if grid["batch"].n_unique() == 1:  # one concurrency: a line would be a column of dots
        x = alt.X("tokens_per_s:Q", title=f"output tokens/s at concurrency {grid['batch'][0]}", axis=NUMBER_AXIS)
        y = alt.Y("option:N", title=None, sort=order)
        bars = (
            alt.Chart()
            .mark_bar()
            .encode(
                x=x,
                y=y,
                yOffset="measure:N",
                color=gpu_color(grid, gpus),
                opacity=alt.Opacity(
                    "measure:N",
                    title=None,
                    scale=alt.Scale(domain=["per user", "per replica (under load)"], range=[1.0, 0.45]),
                ),
                tooltip=tooltip,
            )
        )
        layers = [bars]
        if "_rank" in grid.columns:
            outline = alt.Chart().mark_bar(fillOpacity=0, strokeWidth=2).encode(x=x, y=y, yOffset="measure:N")
            layers.append(recommended(outline, "square", "_rank"))
        return per_model(alt.layer(*layers, *rule, data=grid))
    # one panel per measure, so a line is one option and the legend's circles are the points drawn
    x = alt.X("batch:Q", scale=alt.Scale(type="log", base=2), title="concurrency (requests in flight)", axis=COUNT_AXIS)
    y = alt.Y("tokens_per_s:Q", scale=alt.Scale(type="log"), title="output tokens/s", axis=SI_AXIS)
    color = gpu_color(data, gpus)
    line = (
        alt.Chart()
        .transform_filter(~alt.datum[OPERATING_POINT])
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=40))
        .encode(x=x, y=y, color=color, tooltip=tooltip)
    )
    layers = [line, operating_points(x, y, color, tooltip), ring(x, y)]
    if found.tpot_s is not None:  # on the per-user panel, tokens/s on its y axis
        layers += target_rule(1 / found.tpot_s, found.tpot_label(), "y", per_user=True)
    return (
        alt.layer(*layers, data=data)
        .properties(width=WIDTH // 2 - 20, height=220)
        .facet(row=alt.Row("model:N", title=None), column=alt.Column("measure:N", title=None, sort=["per user"]))
        .resolve_scale(y="independent")
    )


# -- how long until the first word? ---------------------------------------------------------------------
PERCENTILE_COLUMNS = {"p90": "ttft_p90_s", "p99": "ttft_p99_s"}


def ttft_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """With one prompt length: each GPU's best option (rank order) at its operating point, mean, p90 and
    p99 TTFT. With several: the same layouts alone (concurrency 1, the smallest batch) against prompt
    length, TTFT at the percentile the sweep's TTFT target bounds (the mean without one). `_rank` 1: the
    recommended option's; with the sweep's targets."""
    series = ranked_series(options)
    if series.height == 0:
        return pl.DataFrame()
    lengths = frame.select(pl.col("input_tokens").n_unique()).collect().item()
    if lengths == 1:
        rows = _first(_pick(options.with_columns(pl.col(pl.Categorical).cast(pl.String)), series))
        rows = _layout_label(rows).select(
            "model",
            "option",
            "gpu",
            "_n",
            "_total",
            "_rank",
            "input_tokens",
            (pl.col("ttft_s") * 1000).alias("ttft_ms"),
            (pl.col("ttft_p90_s") * 1000).alias("ttft_p90_ms"),
            (pl.col("ttft_p99_s") * 1000).alias("ttft_p99_ms"),
        )
        return with_targets(rows.sort(["model", "_n"]), options)
    percentile = options["ttft_percentile"].cast(pl.String)[0] if "ttft_percentile" in options.columns else None
    column = PERCENTILE_COLUMNS.get(percentile, "ttft_s")
    keys = [k for k in series_keys(frame) if k in series.columns]
    rows = _strings(frame).filter((pl.col("output_tokens") == pl.col("output_tokens").min()) & pl.col("fits"))
    rows = rows.filter(pl.col("batch") == pl.col("batch").min().over(keys))
    rows = rows.group_by([*keys, "input_tokens"]).agg((pl.col(column).first() * 1000).alias("ttft_ms")).collect()
    shown = [*keys, "input_tokens", "ttft_ms", "_n", "_total", "_rank"]
    rows = _pick(rows, series, keys).select(shown).with_columns(pl.lit(False).alias(POINT_ONLY))
    alone = _missing_series(rows, series, options, keys)
    if alone.height:  # searched worker counts: the plan's own TTFT at its operating point
        point = alone.with_columns(ttft_ms=pl.col(column) * 1000).select(*shown, POINT_ONLY)
        rows = pl.concat([rows, point], how="vertical_relaxed")
    return with_targets(_layout_label(rows).sort(["model", "_n", "input_tokens"]), options)


def time_unit(ms: pl.Series) -> tuple[float, str]:
    """Seconds when the longest time reaches 10 s, else milliseconds: (divisor from ms, unit)."""
    top = ms.max()
    return (1000.0, "s") if top is not None and top >= 10_000 else (1.0, "ms")


def ttft_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    """TTFT, the sweep's TTFT target drawn at the percentile it bounds: with one prompt length the mean
    (bars) and that percentile (ticks; p90 without a percentile target); with several, that percentile
    against prompt length."""
    data, found = targets(data)
    target_ms = None if found.ttft_s is None else found.ttft_s * 1000
    div, unit = time_unit(pl.concat([data["ttft_ms"], pl.Series([target_ms], dtype=pl.Float64)]))
    data = data.with_columns(ttft=pl.col("ttft_ms") / div)
    tooltip = ["option:N", "input_tokens:Q", alt.Tooltip("ttft:Q", title=f"TTFT ({unit})", format=",.2f")]
    rule = []
    if target_ms is not None:
        near_end = target_ms > 0.6 * max(target_ms, data["ttft_ms"].max() or 0)
        rule = target_rule(
            target_ms / div, found.ttft_label(), "x" if data["input_tokens"].n_unique() == 1 else "y", near_end
        )
    if data["input_tokens"].n_unique() == 1:  # one prompt length: bars (mean) and ticks (a percentile), not dots
        order = rank_order(data) if "_n" in data.columns else "x"
        tick = "p99" if found.percentile == "p99" else "p90"
        x = alt.X(
            "ttft:Q",
            title=f"time to first token ({unit}), {data['input_tokens'][0]:,}-token prompt: mean, | {tick}",
            axis=NUMBER_AXIS,
        )
        y = alt.Y("option:N", title=None, sort=order)
        colour = {"color": gpu_color(data, gpus, title="GPU")} if "gpu" in data.columns else {}
        bars = alt.Chart().mark_bar().encode(x=x, y=y, tooltip=tooltip, **colour)
        layers = [bars]
        if f"ttft_{tick}_ms" in data.columns:
            data = data.with_columns(ttft_tick=pl.col(f"ttft_{tick}_ms") / div)
            layers.append(
                alt.Chart()
                .mark_tick(color="black", thickness=2, size=16)
                .encode(
                    x="ttft_tick:Q",
                    y=alt.Y("option:N", sort=order),
                    tooltip=[alt.Tooltip("ttft_tick:Q", format=",.2f", title=f"{tick} ({unit})")],
                )
            )
        if "_rank" in data.columns:
            outline = alt.Chart().mark_bar(fillOpacity=0, strokeWidth=2.5).encode(x=x, y=y)
            layers.append(recommended(outline, "square", "_rank"))
        return per_model(alt.layer(*layers, *rule, data=data))
    stat = "" if found.percentile == "mean" else f"{found.percentile} "
    x = alt.X("input_tokens:Q", title="prompt length (tokens)", axis=COUNT_AXIS)
    y = alt.Y("ttft:Q", title=f"{stat}time to first token ({unit})", axis=NUMBER_AXIS)
    line = alt.Chart().mark_line(point=True).encode(x=x, y=y, color=gpu_color(data, gpus), tooltip=tooltip)
    layers = [line, ring("input_tokens:Q", "ttft:Q", "_rank")] if "_rank" in data.columns else [line]
    return per_model(alt.layer(*layers, *rule, data=data), height=240)


# -- what limits it? ----------------------------------------------------------------------------------------
def roofline_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every fitting configuration at the first lengths (at most ROOFLINE_POINTS per GPU, and
    ROOFLINE_TOTAL / GPUs when that is fewer, so every GPU is drawn however large the sweep)."""
    gpus = max(frame.select(pl.col("gpu").n_unique()).collect().item(), 1)
    per_gpu = max(1, min(ROOFLINE_POINTS, ROOFLINE_TOTAL // gpus))
    points = (
        _first_lengths(_strings(frame))
        .filter(pl.col("fits"))
        .select(
            "gpu",
            "model",
            "precision",
            "batch",
            "bound",
            pl.col("arithmetic_intensity").alias("intensity"),
            (pl.col("decode_flops_per_step") / pl.col("decode_step_s") / pl.col("gpus")).alias("flops_per_s"),
            pl.col("peak_flops_per_s"),
            pl.col("memory_bandwidth_bytes_per_s"),
        )
        .unique(["gpu", "model", "precision", "batch"], keep="first", maintain_order=True)
        .sort(["gpu", "model", "precision", "batch"])
        .filter(pl.int_range(pl.len()).over("gpu") < per_gpu)
        .collect()
    )
    return points.with_columns(kind=pl.lit("configuration"))


def roofline_roofs(points: pl.DataFrame) -> pl.DataFrame:
    """Each GPU's roof: min(peak FLOP/s, intensity x bandwidth), sampled on a log grid, with its ridge."""
    gpus = points.unique("gpu", maintain_order=True).select("gpu", "peak_flops_per_s", "memory_bandwidth_bytes_per_s")
    grid = pl.DataFrame({"intensity": [10 ** (k / 4) for k in range(-4, 17)]})
    roofs = gpus.join(grid, how="cross").with_columns(
        flops_per_s=pl.min_horizontal("peak_flops_per_s", pl.col("intensity") * pl.col("memory_bandwidth_bytes_per_s"))
    )
    ridges = gpus.with_columns(
        intensity=pl.col("peak_flops_per_s") / pl.col("memory_bandwidth_bytes_per_s"),
        flops_per_s=pl.col("peak_flops_per_s"),
    )
    return pl.concat([roofs, ridges]).sort(["gpu", "intensity"]).select("gpu", "intensity", "flops_per_s")


def roofline_chart(points: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    roofs = (
        alt.Chart(roofline_roofs(points))
        .mark_line(strokeWidth=1.5)
        .encode(
            x=alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP/byte)", axis=SI_AXIS),
            y=alt.Y("flops_per_s:Q", scale=alt.Scale(type="log"), title="FLOP/s per GPU (SI prefixes)", axis=SI_AXIS),
            color=gpu_color(points, gpus, title="GPU"),
        )
    )
    dots = (
        alt.Chart(points.drop("peak_flops_per_s", "memory_bandwidth_bytes_per_s"))
        .mark_point(filled=True, size=40)
        .encode(
            x="intensity:Q",
            y="flops_per_s:Q",
            color=gpu_color(points, gpus, title="GPU"),
            shape=limit_shape(),
            tooltip=[
                "gpu:N",
                "model:N",
                "precision:N",
                "batch:Q",
                "bound:N",
                alt.Tooltip("intensity:Q", format=",.1f"),
                alt.Tooltip("flops_per_s:Q", format=".3s"),
            ],
        )
    )
    return alt.layer(roofs, dots).properties(width=WIDTH, height=320)


# -- what is cheapest? (when the sweep has prices) ------------------------------------------------------------
def cost_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per model, one bar per GPU x offer (its best layout, as in the first table, rank order): with a
    workload what the fleet costs a month over the horizon (the ranking's TCO / months), else USD per
    million output tokens of one replica fully loaded."""
    from llmsweep.finance import option_rows

    if options is None or options.height == 0 or options["usd_per_gpu_hour"].is_null().all():
        return pl.DataFrame()
    fleets = options["gpus_needed"].is_not_null().any()
    column = "tco_usd" if fleets else "usd_per_million_output_tokens"
    rows = option_rows(options, column, False).filter(pl.col(column).is_not_null())
    rows = rows.filter(
        (pl.col("input_tokens") == pl.col("input_tokens").min())
        & (pl.col("output_tokens") == pl.col("output_tokens").min())
    )
    value = "tco_usd_per_month" if fleets else "usd_per_million_output_tokens"
    rows = rows.with_columns(
        option=option_label(rows, offer=True),
        usd=pl.col(value),
        metric=pl.lit("USD per month" if fleets else "USD per million output tokens"),
        meets=pl.when(pl.col("meets_slo")).then(pl.lit("meets the targets")).otherwise(pl.lit("misses a target")),
        _n=pl.int_range(pl.len()).over("model"),
        _total=pl.len().over("model"),
    )
    return rows.filter(pl.col("_n") < 2 * MAX_SERIES).select(
        "model", "gpu", "offer", "option", "batch", "usd", "metric", "meets", "rank", "_n", "_total"
    )


def cost_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    """Each model's options cheapest first (its own order), the recommended one outlined."""
    metric = data["metric"][0]
    money = "$,.0f" if metric == "USD per month" else "$,.3f"
    data, order = by_value(data, "usd")
    x = alt.X(
        "usd:Q",
        title=f"{metric} (best layout per GPU and offer)",
        axis=alt.Axis(format=money.replace(".3f", ".2f"), labelOverlap=True),
    )
    y = alt.Y("option:N", sort=order, title=None, axis=alt.Axis(labelLimit=260))
    bars = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=x,
            y=y,
            color=gpu_color(data, gpus, title="GPU"),
            opacity=alt.Opacity(
                "meets:N",
                title=None,
                scale=alt.Scale(domain=["meets the targets", "misses a target"], range=[1.0, 0.3]),
            ),
            tooltip=["option:N", "rank:Q", "batch:Q", alt.Tooltip("usd:Q", title=metric, format=money)],
        )
    )
    outline = recommended(alt.Chart().mark_bar(fillOpacity=0, strokeWidth=2.5).encode(x=x, y=y), "square")
    return per_model(alt.layer(bars, outline, data=data))


# -- what is the trade-off? -------------------------------------------------------------------------------------
def frontier_data(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per model and GPU (the GPUs of the ranked options, rank order), the Pareto frontier of (tokens/s
    per user, tokens/s per GPU) over every fitting configuration at the first lengths: no other
    configuration of that GPU is better on both, each named with its serving mode where the frame has
    them (a 1P1D or MTP point is not its aggregated layout's); and each GPU's option at the plan's
    operating point (OPERATING_POINT, its `rank`: 1 the recommended one), with the sweep's targets."""
    names = frame.collect_schema().names()
    serving = [n for n in SERVING_NAME_COLUMNS if n in names] if "mode" in names and "speculative" in names else []
    rows = (
        _first_lengths(_strings(frame))
        .filter(pl.col("fits"))
        .select(
            "model",
            "gpu",
            "precision",
            *LAYOUT,
            *serving,
            "batch",
            pl.col("decode_tokens_per_s_per_seq").alias("per_user"),
            pl.col("output_tokens_per_s_per_gpu").alias("per_gpu"),
        )
        .sort(["model", "gpu", "per_user", "per_gpu"], descending=[False, False, True, True])
        .with_columns(_best=pl.col("per_gpu").cum_max().shift(1).over(["model", "gpu"]))
        .filter(pl.col("_best").is_null() | (pl.col("per_gpu") > pl.col("_best")))
        .drop("_best")
        .collect()
    )
    rows = rows.with_columns(pl.lit(False).alias(OPERATING_POINT), pl.lit(None, pl.Int64).alias("rank"))
    series = ranked_series(options)
    if series.height:
        rows = _pick(rows, series.select("model", "gpu", "_n", "_total"), ["model", "gpu"])
        points = _plan_points(pl.DataFrame(), series, options, ["model", "gpu"]).with_columns(
            per_user=pl.col("decode_tokens_per_s_per_seq"),
            per_gpu=pl.col("output_tokens_per_s_per_gpu"),
            batch=pl.col("concurrency"),
            rank=pl.col("_rank"),
            **{OPERATING_POINT: pl.lit(True)},
        )
        cast = {k: v for k, v in rows.schema.items() if k in points.columns}
        points = points.select(rows.columns).with_columns([pl.col(k).cast(t) for k, t in cast.items()])
        rows = pl.concat([rows, points], how="vertical_relaxed")
    return with_targets(_layout_label(rows).sort(["model", "gpu", OPERATING_POINT, "per_user"]), options)


def frontier_chart(data: pl.DataFrame, gpus: Sequence[str] | None = None) -> alt.TopLevelMixin:
    data, found = targets(data)
    if OPERATING_POINT not in data.columns:
        data = data.with_columns(pl.lit(False).alias(OPERATING_POINT))
    x = alt.X("per_user:Q", title="tokens/s per user")
    y = alt.Y("per_gpu:Q", title="output tokens/s per GPU")
    color = gpu_color(data, gpus)
    tooltip = ["option:N", "batch:Q", alt.Tooltip("per_user:Q", format=",.1f"), alt.Tooltip("per_gpu:Q", format=",.1f")]
    line = (
        alt.Chart()
        .transform_filter(~alt.datum[OPERATING_POINT])
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=40))
        .encode(x=x, y=y, color=color, order="per_user:Q", tooltip=tooltip)
    )
    layers = [line, operating_points(x, y, color, tooltip), ring(x, y), *per_user_target(data, found, "per_user")]
    return per_model(alt.layer(*layers, data=data), height=280)


def _decode_title(data: pl.DataFrame) -> str:
    grid = data.filter(~pl.col(OPERATING_POINT)) if OPERATING_POINT in data.columns else data
    return "Decode speed against concurrency" if grid["batch"].n_unique() > 1 else "Decode speed at one concurrency"


def _ttft_title(data: pl.DataFrame) -> str:
    if data["input_tokens"].n_unique() > 1:
        return "Time to first token against prompt length (one request alone)"
    return "Time to first token at each option's operating point"


def _cost_title(data: pl.DataFrame) -> str:
    if data["metric"][0] == "USD per month":
        return "What each fleet costs a month (TCO over the horizon ÷ months)"
    return "Cost per million output tokens (one replica fully loaded)"


from llmsweep import money_charts  # noqa: E402  (it builds on the helpers above)

CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec(
        "memory",
        "Memory per GPU at each option's operating point, against usable capacity",
        "Will it fit?",
        memory_data,
        memory_chart,
    ),
    ChartSpec("decode", _decode_title, "How fast, and for how many users?", decode_data, decode_chart, per_user_note),
    ChartSpec("ttft", _ttft_title, "How long until the first word?", ttft_data, ttft_chart),
    ChartSpec("roofline", "Roofline: where each configuration sits", "What limits it?", roofline_data, roofline_chart),
    ChartSpec("cost", _cost_title, "What is cheapest?", cost_data, cost_chart),
    ChartSpec(
        "frontier",
        "Latency–throughput frontier",
        "What is the trade-off?",
        frontier_data,
        frontier_chart,
        per_user_note,
    ),
    *money_charts.CHARTS,
)


def build_charts(
    frame: pl.LazyFrame, options: pl.DataFrame | None = None, gpus: Sequence[str] | None = None
) -> list[tuple[ChartSpec, alt.TopLevelMixin, str, str]]:
    """Every chart the results can support (cost needs prices, the fleet charts a workload), in report
    order: (spec, chart, title, note), the note saying which GPUs were left out. `gpus`, the report's
    GPUs (by default every GPU of `frame`), give each GPU one colour in every chart."""
    gpus = report_gpus(frame) if gpus is None else gpus
    out = []
    for spec in CHARTS:
        data = spec.data(frame, options)
        if data.height:
            title = spec.title(data) if callable(spec.title) else spec.title
            notes = [series_note(data), spec.note(data) if spec.note else ""]
            out.append((spec, spec.build(data, gpus), title, "; ".join(n for n in notes if n)))
    return out
