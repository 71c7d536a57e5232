"""Charts for the reports: estimates -> altair charts, each answering one buyer's question.

No I/O here. Each function takes the estimates (a polars LazyFrame of the exported columns),
reduces them to the few rows the question needs (so a million-row sweep plots tens or hundreds of
points, never a million), and returns an altair chart. `chart_data` exposes that reduction so
tests can check the numbers a chart shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import altair as alt
import polars as pl

GIB = 2**30  # memory is shown in GiB everywhere (charts and tables)
WIDTH = 520
NUMBER_AXIS = alt.Axis(format=",~r", labelOverlap=True)  # linear axes: 1,600 and 0.5
SI_AXIS = alt.Axis(format="~s", labelOverlap=True)  # log axes: 1P, 200T, 20G, 2k (never 1e+15 beside 200,000,000,000)
COUNT_AXIS = alt.Axis(format="~d", labelOverlap=True)
MAX_SERIES = 12  # lines or bar groups per model, so a chart stays readable
TEXT = ("gpu", "model", "precision", "kv_precision", "bound", "reason")


@dataclass(frozen=True)
class ChartSpec:
    id: str
    title: str
    question: str
    data: Callable[[pl.LazyFrame], pl.DataFrame]
    build: Callable[[pl.DataFrame], alt.TopLevelMixin]


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


def _cap_series(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Keep at most MAX_SERIES series (by `keys`) per model, in sorted order."""
    series = frame.select(["model", *keys]).unique().sort(["model", *keys])
    series = series.with_columns(_n=pl.int_range(pl.len()).over("model")).filter(pl.col("_n") < MAX_SERIES)
    return frame.join(series.drop("_n"), on=["model", *keys]).sort(["model", *keys])


def per_model(chart: alt.Chart | alt.LayerChart, height: int | None = None) -> alt.TopLevelMixin:
    """One panel per model, stacked, each with its own y axis."""
    size = {"width": WIDTH} if height is None else {"width": WIDTH, "height": height}
    return chart.properties(**size).facet(row=alt.Row("model:N", title=None)).resolve_scale(y="independent")


LAYOUT = ("tp", "pp", "ep", "dp_attention")


def layout_text() -> pl.Expr:
    """A layout as the reports write it (report.f_layout): tp8, tp8 pp2, tp1 dp-attn16 ep16."""
    parts = [pl.format("tp{}", "tp")]
    for col, name in (("dp_attention", "dp-attn"), ("ep", "ep"), ("pp", "pp")):
        parts.append(pl.when(pl.col(col) > 1).then(pl.format(" " + name + "{}", col)).otherwise(pl.lit("")))
    return pl.concat_str(parts)


def _layout_label(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        option=pl.concat_str([pl.col("gpu"), pl.col("precision"), layout_text()], separator=" · ")
    )


# -- will it fit? ----------------------------------------------------------------------------------
def memory_data(frame: pl.LazyFrame) -> pl.DataFrame:
    rows = _smallest_layout(_first_lengths(_strings(frame)), ["model", "gpu", "precision"])
    rows = rows.filter(pl.col("batch") == pl.col("batch").min().over(["model", "gpu", "precision"]))
    rows = rows.unique(["model", "gpu", "precision"], keep="first", maintain_order=True).collect()
    rows = _layout_label(_cap_series(rows, ["gpu", "precision"]))
    parts = {
        "weights": "weight_bytes",
        "KV cache": "kv_cache_bytes",
        "activations": "activation_bytes",
        "overhead": "overhead_bytes",
    }
    long = pl.concat(
        [
            rows.select("model", "option", "batch", pl.lit(k).alias("component"), (pl.col(v) / GIB).alias("gib"))
            for k, v in parts.items()
        ]
    )
    usable = rows.select("model", "option", (pl.col("usable_memory_bytes") / GIB).alias("usable_gib"), "fits")
    return long.join(usable, on=["model", "option"]).sort(["model", "option", "component"])


def memory_chart(data: pl.DataFrame) -> alt.TopLevelMixin:
    bars = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=alt.X("sum(gib):Q", title="GiB per GPU"),
            y=alt.Y("option:N", title=None),
            color=alt.Color("component:N", sort=["weights", "KV cache", "activations", "overhead"]),
            tooltip=["option:N", "component:N", alt.Tooltip("gib:Q", format=".2f"), "batch:Q"],
        )
    )
    capacity = (
        alt.Chart()
        .mark_tick(color="black", thickness=2, size=18)
        .encode(x="usable_gib:Q", y="option:N", tooltip=[alt.Tooltip("usable_gib:Q", title="usable GiB", format=".1f")])
    )
    return per_model(alt.layer(bars, capacity, data=data))


# -- how fast, how many users? -----------------------------------------------------------------------
def decode_data(frame: pl.LazyFrame) -> pl.DataFrame:
    rows = _smallest_layout(_first_lengths(_strings(frame)), ["model", "gpu", "precision"]).filter(pl.col("fits"))
    rows = (
        rows.select("model", "gpu", "precision", *LAYOUT, "batch", "output_tokens_per_s", "decode_tokens_per_s_per_seq")
        .unique(maintain_order=True)
        .collect()
    )
    rows = _layout_label(_cap_series(rows, ["gpu", "precision"])).sort(["model", "option", "batch"])
    return rows.unpivot(
        index=["model", "option", "batch"],
        on=["output_tokens_per_s", "decode_tokens_per_s_per_seq"],
        variable_name="measure",
        value_name="tokens_per_s",
    ).with_columns(
        measure=pl.col("measure").replace(
            {"output_tokens_per_s": "replica (under load)", "decode_tokens_per_s_per_seq": "per user"}
        )
    )


def decode_chart(data: pl.DataFrame) -> alt.TopLevelMixin:
    tooltip = ["option:N", "measure:N", "batch:Q", alt.Tooltip("tokens_per_s:Q", format=",.1f")]
    if data["batch"].n_unique() == 1:  # one batch: a line would be a column of dots
        return per_model(
            alt.Chart(data)
            .mark_bar()
            .encode(
                x=alt.X("tokens_per_s:Q", title=f"output tokens/s at concurrency {data['batch'][0]}", axis=NUMBER_AXIS),
                y=alt.Y("option:N", title=None),
                yOffset="measure:N",
                color=alt.Color("measure:N", title=None),
                tooltip=tooltip,
            )
        )
    return per_model(
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "batch:Q",
                scale=alt.Scale(type="log", base=2),
                title="concurrency (requests in flight)",
                axis=COUNT_AXIS,
            ),
            y=alt.Y("tokens_per_s:Q", scale=alt.Scale(type="log"), title="output tokens/s", axis=SI_AXIS),
            color=alt.Color("option:N", title="GPU · weights · layout"),
            # dash and point shape both tell the two measures apart; the legend shows the shapes (circle, square)
            strokeDash=alt.StrokeDash("measure:N", legend=None),
            shape=alt.Shape("measure:N", title="tokens/s"),
            tooltip=tooltip,
        ),
        height=260,
    )


# -- how long until the first word? ---------------------------------------------------------------------
def ttft_data(frame: pl.LazyFrame) -> pl.DataFrame:
    rows = _strings(frame).filter(pl.col("output_tokens") == pl.col("output_tokens").min())
    rows = _smallest_layout(rows, ["model", "gpu", "precision"]).filter(pl.col("fits"))
    rows = (
        rows.group_by(["model", "gpu", "precision", *LAYOUT, "input_tokens"])
        .agg((pl.col("ttft_s").first() * 1000).alias("ttft_ms"))
        .collect()
    )
    return _layout_label(_cap_series(rows, ["gpu", "precision"])).sort(["model", "option", "input_tokens"])


def time_unit(ms: pl.Series) -> tuple[float, str]:
    """Seconds when the longest time reaches 10 s, else milliseconds: (divisor from ms, unit)."""
    top = ms.max()
    return (1000.0, "s") if top is not None and top >= 10_000 else (1.0, "ms")


def ttft_chart(data: pl.DataFrame) -> alt.TopLevelMixin:
    div, unit = time_unit(data["ttft_ms"])
    data = data.with_columns(ttft=pl.col("ttft_ms") / div)
    tooltip = ["option:N", "input_tokens:Q", alt.Tooltip("ttft:Q", title=f"TTFT ({unit})", format=",.2f")]
    if data["input_tokens"].n_unique() == 1:  # one prompt length: bars, not a column of dots
        return per_model(
            alt.Chart(data)
            .mark_bar()
            .encode(
                x=alt.X(
                    "ttft:Q",
                    title=f"time to first token ({unit}), {data['input_tokens'][0]:,}-token prompt",
                    axis=NUMBER_AXIS,
                ),
                y=alt.Y("option:N", title=None, sort="x"),
                tooltip=tooltip,
            )
        )
    return per_model(
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("input_tokens:Q", title="prompt length (tokens)", axis=COUNT_AXIS),
            y=alt.Y("ttft:Q", title=f"time to first token ({unit})", axis=NUMBER_AXIS),
            color=alt.Color("option:N", title="GPU · weights · layout"),
            tooltip=tooltip,
        ),
        height=240,
    )


# -- what limits it? ----------------------------------------------------------------------------------------
def roofline_data(frame: pl.LazyFrame) -> pl.DataFrame:
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
        .head(2000)
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


def roofline_chart(points: pl.DataFrame) -> alt.TopLevelMixin:
    roofs = (
        alt.Chart(roofline_roofs(points))
        .mark_line(strokeWidth=1.5)
        .encode(
            x=alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP/byte)", axis=SI_AXIS),
            y=alt.Y("flops_per_s:Q", scale=alt.Scale(type="log"), title="FLOP/s per GPU (SI prefixes)", axis=SI_AXIS),
            color=alt.Color("gpu:N"),
        )
    )
    dots = (
        alt.Chart(points.drop("peak_flops_per_s", "memory_bandwidth_bytes_per_s"))
        .mark_point(filled=True, size=40)
        .encode(
            x="intensity:Q",
            y="flops_per_s:Q",
            color="gpu:N",
            shape=alt.Shape("bound:N"),
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
    """Per model and GPU (and offer, from the plan when given: the options that meet the targets),
    the cheapest layout's USD per million output tokens."""
    if options is not None and options.height and "offer" in options.columns:
        rows = options.with_columns(pl.col(pl.Categorical).cast(pl.String)).filter(
            pl.col("meets_slo") & pl.col("usd_per_million_output_tokens").is_not_null()
        )
        best = (
            rows.sort("usd_per_million_output_tokens").group_by(["model", "gpu", "offer"], maintain_order=True).first()
        )
        best = best.select("model", "gpu", "offer", "precision", *LAYOUT, "batch", "usd_per_million_output_tokens")
        return best.with_columns(
            option=pl.concat_str([pl.col("gpu"), pl.col("offer"), pl.col("precision"), layout_text()], separator=" · ")
        ).sort(["model", "usd_per_million_output_tokens"])
    if "usd_per_million_output_tokens" not in frame.collect_schema().names():
        return pl.DataFrame()
    rows = _strings(frame).filter(pl.col("fits") & pl.col("usd_per_million_output_tokens").is_not_null())
    best = rows.sort("usd_per_million_output_tokens").group_by(["model", "gpu"], maintain_order=True).first()
    return _layout_label(
        best.select("model", "gpu", "precision", *LAYOUT, "batch", "usd_per_million_output_tokens").collect()
    ).sort(["model", "usd_per_million_output_tokens"])


def cost_chart(data: pl.DataFrame) -> alt.TopLevelMixin:
    return per_model(
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X(
                "usd_per_million_output_tokens:Q",
                title="USD per million output tokens (cheapest layout per GPU and offer)",
                axis=alt.Axis(format="$,.2f", labelOverlap=True),
            ),
            y=alt.Y("option:N", sort="x", title=None, axis=alt.Axis(labelLimit=320)),
            tooltip=["option:N", "batch:Q", alt.Tooltip("usd_per_million_output_tokens:Q", format="$,.3f")],
        )
    )


# -- what is the trade-off? -------------------------------------------------------------------------------------
def frontier_data(frame: pl.LazyFrame) -> pl.DataFrame:
    """Per model and GPU, the Pareto frontier of (tokens/s per user, tokens/s per GPU) over every
    fitting configuration at the sweep's first lengths: no other option is better on both."""
    rows = (
        _first_lengths(_strings(frame))
        .filter(pl.col("fits"))
        .select(
            "model",
            "gpu",
            "precision",
            *LAYOUT,
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
    return _layout_label(rows).sort(["model", "gpu", "per_user"])


def frontier_chart(data: pl.DataFrame) -> alt.TopLevelMixin:
    return per_model(
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("per_user:Q", title="tokens/s per user"),
            y=alt.Y("per_gpu:Q", title="output tokens/s per GPU"),
            color=alt.Color("gpu:N"),
            order="per_user:Q",
            tooltip=[
                "option:N",
                "batch:Q",
                alt.Tooltip("per_user:Q", format=",.1f"),
                alt.Tooltip("per_gpu:Q", format=",.1f"),
            ],
        ),
        height=280,
    )


CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("memory", "Memory per GPU against usable capacity", "Will it fit?", memory_data, memory_chart),
    ChartSpec(
        "decode", "Decode speed against batch size", "How fast, and for how many users?", decode_data, decode_chart
    ),
    ChartSpec(
        "ttft", "Time to first token against prompt length", "How long until the first word?", ttft_data, ttft_chart
    ),
    ChartSpec("roofline", "Roofline: where each configuration sits", "What limits it?", roofline_data, roofline_chart),
    ChartSpec("cost", "Cost per million output tokens", "What is cheapest?", cost_data, cost_chart),
    ChartSpec("frontier", "Latency–throughput frontier", "What is the trade-off?", frontier_data, frontier_chart),
)


def build_charts(frame: pl.LazyFrame, options: pl.DataFrame | None = None) -> list[tuple[ChartSpec, alt.TopLevelMixin]]:
    """Every chart the estimates can support (cost needs prices), in report order; the cost chart
    reads the plan (`options`, one bar per GPU x offer) when given."""
    out = []
    for spec in CHARTS:
        data = spec.data(frame, options) if spec.id == "cost" else spec.data(frame)
        if data.height:
            out.append((spec, spec.build(data)))
    return out
