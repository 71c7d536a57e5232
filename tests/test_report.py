"""Reports: offline HTML that really renders, escaped names, deterministic Markdown, chart content."""

from __future__ import annotations

import math
import os
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from llmsweep import charts, pipeline
from llmsweep.cli import main
from llmsweep.report import build_context

from .browser import chromium, dump_dom
from .conftest import ROOT

GOLDEN = Path(__file__).parent / "golden" / "example-report.md"
EVIL = "<img src=x onerror=alert(1)>"
GIB = 2**30


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out")
    pipeline.run(ROOT / "sweeps" / "example.yaml", out)
    return out / "example"


@pytest.fixture(scope="module")
def frame(example) -> pl.LazyFrame:
    return pl.scan_parquet(example / "estimates.parquet")


def render_in_browser(path: Path, tmp_path: Path) -> str:
    """The DOM after load, in headless Chromium with every host unresolvable (no network)."""
    return dump_dom(path.resolve().as_uri(), tmp_path)


@pytest.mark.skipif(chromium() is None, reason="Chromium is not installed (.ci/run installs Debian's chromium)")
def test_html_renders_every_chart_offline(example, tmp_path):
    dom = render_in_browser(example / "report.html", tmp_path)
    body = re.search(r"<body[^>]*>", dom).group(0)
    charts_n = int(re.search(r'data-charts="(\d+)"', body).group(1))
    # memory, decode, TTFT, roofline, cost (example prices), frontier, cost against speed (no workload:
    # no rent-or-buy or GPUs-against-traffic charts)
    assert charts_n == 7
    assert f'data-rendered="{charts_n}"' in body
    assert 'data-errors="0"' in body
    assert dom.count('class="marks"') == charts_n  # one rendered vega SVG per chart


def test_html_is_self_contained(example):
    html = (example / "report.html").read_text()
    assert not re.search(r"<script[^>]*\ssrc=", html)
    assert not re.search(r"<link[^>]*stylesheet", html)
    assert "@import" not in html
    assert html.count("window.vegaEmbed=") == 1  # the bundle is inlined once, not per chart
    assert len(html.encode()) < 5_000_000


def test_names_with_html_are_shown_as_text(tmp_path, catalog):
    sweep = {
        "name": "xss",
        "title": f"Title {EVIL}",
        "grid": {"gpu": [EVIL], "model": [EVIL], "batch": [1, 4]},
        "gpus": {EVIL: {"memory_gb": 80, "memory_bandwidth_gbps": 3000, "dense_tflops": {"bf16": 900}}},
        "models": {EVIL: {**catalog.model("meta-llama/Llama-3.1-8B").config, "license": EVIL}},
    }
    path = tmp_path / "xss.yaml"
    path.write_text(yaml.safe_dump(sweep))
    pipeline.run(path, tmp_path / "out", formats=["parquet", "html", "md"])
    html = (tmp_path / "out" / "xss" / "report.html").read_text()
    md = (tmp_path / "out" / "xss" / "report.md").read_text()
    assert EVIL not in html and EVIL not in md
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in md
    if chromium():
        dom = render_in_browser(tmp_path / "out" / "xss" / "report.html", tmp_path)
        assert 'data-errors="0"' in dom and '<img src="x"' not in dom


def test_the_sensitivity_table_stays_closed_where_no_move_reverses_the_pick(example):
    """The example's answers (two models) say no 20 % move reverses their ranking, so their sensitivity
    tables are closed (test_finance: procurement's, where every answer says one does, are open)."""
    html, md = (example / "report.html").read_text(), (example / "report.md").read_text()
    summary = "><summary>Does the top choice hold if an assumption moves by 20 %?</summary>"
    assert "A 20 % move reverses the ranking" not in md
    assert (html.count("<details open" + summary), html.count("<details" + summary)) == (0, 2)


def test_markdown_golden(example):
    text = (example / "report.md").read_text()
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "report.md changed; if on purpose, rerun with UPDATE_GOLDEN=1"


def test_markdown_links_are_relative_and_exist(example):
    text = (example / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    ids = ("memory", "decode", "ttft", "roofline", "cost", "frontier", "cost-speed")
    assert links == [f"charts/{c}.svg" for c in ids]
    for link in links:
        assert (example / link).read_text().startswith("<svg")


def test_reports_are_deterministic(example, tmp_path):
    pipeline.run(ROOT / "sweeps" / "example.yaml", tmp_path)
    for f in ("report.html", "report.md", "charts/memory.svg"):
        assert (tmp_path / "example" / f).read_bytes() == (example / f).read_bytes(), f


def test_report_command_rerenders_without_recomputing(example, tmp_path):
    copy = tmp_path / "example"
    shutil.copytree(example, copy)
    (copy / "report.md").unlink()
    shutil.rmtree(copy / "charts")
    r = CliRunner().invoke(main, ["report", str(copy / "estimates.parquet"), "--format", "md"])
    assert r.exit_code == 0, r.output
    assert (copy / "report.md").read_bytes() == (example / "report.md").read_bytes()
    r = CliRunner().invoke(main, ["report", str(tmp_path / "nowhere" / "estimates.parquet")])
    assert r.exit_code == 1 and "not found" in r.output


def test_template_dir_overrides_one_template(example, tmp_path):
    custom = tmp_path / "templates"
    custom.mkdir()
    (custom / "report.md.j2").write_text("# {{ title }}\n{{ rows | num }} rows, {{ fit | num }} fit\n")
    copy = tmp_path / "example"
    shutil.copytree(example, copy)
    r = CliRunner().invoke(
        main, ["report", str(copy / "estimates.parquet"), "--format", "md", "--template-dir", str(custom)]
    )
    assert r.exit_code == 0, r.output
    assert (copy / "report.md").read_text() == "# Example: Llama 3.1 8B and 70B on H100 and L40S\n72 rows, 58 fit\n"


def test_recommendations_rank_options_that_meet_the_targets(frame, example):
    import json

    options = pl.read_parquet(example / "plan.parquet")
    ctx = build_context(frame, options, json.loads((example / "manifest.json").read_text()))
    assert ctx["rank"]["column"] == "usd_per_million_output_tokens"  # example prices for h100-sxm and l40s
    assert [g["model"] for g in ctx["recommendations"]] == ["meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-8B"]
    for group in ctx["recommendations"]:
        scores = [o["score"] for o in group["options"]]
        assert scores == sorted(scores) and len(scores) == 5  # cheapest first; top_n: 5 in the sweep
        assert all(o["meets_slo"] and o["fits"] for o in group["options"])
        options_seen = [(o["gpu"], o["precision"], o["tp"], o["pp"]) for o in group["options"]]
        assert len(set(options_seen)) == len(options_seen)  # an option appears once, at its slo_batch
    best8b = ctx["recommendations"][1]["options"][0]
    plan8b = options.filter(pl.col("meets_slo") & (pl.col("model") == "meta-llama/Llama-3.1-8B"))
    assert best8b["score"] == plan8b["usd_per_million_output_tokens"].min()
    int4 = [o for g in ctx["recommendations"] for o in g["options"] if o["precision"] == "int4"]
    assert int4 and all("4-bit and lower" in o["caveats"][0] for o in int4)
    assert ctx["recommendations"][0]["license"] == "Llama 3.1 Community License"


@pytest.fixture(scope="module")
def plan_rows(example) -> pl.DataFrame:
    return pl.read_parquet(example / "plan.parquet")


def test_memory_chart_draws_each_option_at_its_operating_point(frame, plan_rows):
    data = charts.memory_data(frame, plan_rows)
    # Llama-3.1-70B's first option on H100 is fp8 tp2: 1 byte per weight, but the embedding and the LM head
    # (128,256 x 8,192 = 1,050,673,152 each) stay 16-bit, 2,101,346,304 bytes more: (70,553,706,496 +
    # 2,101,346,304) / 2 GPUs = 33.83 GiB of weights; without a workload the operating point is the batch
    # itself, so the KV cache is the batch's
    best = plan_rows.filter((pl.col("model") == "meta-llama/Llama-3.1-70B") & (pl.col("gpu") == "h100-sxm"))
    best = best.filter(pl.col("rank") == best["rank"].min()).row(0, named=True)
    assert (best["precision"], best["tp"], best["bytes_per_weight"]) == ("fp8", 2, 1.0)
    rows = data.filter((pl.col("model") == "meta-llama/Llama-3.1-70B") & (pl.col("option") == "h100-sxm · fp8 · tp2"))
    gib = dict(zip(rows["component"], rows["gib"], strict=True))
    assert gib["weights"] == pytest.approx((70_553_706_496 + 2_101_346_304) / 2 / GIB)
    assert gib["KV cache"] == pytest.approx(best["kv_cache_bytes"] / GIB) and gib["KV cache"] > 1  # visible
    assert rows["usable_gib"][0] == pytest.approx(72.0)  # 80 GiB x 0.9
    assert set(data["component"]) == {"weights", "KV cache", "activations", "overhead"}
    # ranked order: the recommended option first
    first = data.filter(pl.col("model") == "meta-llama/Llama-3.1-70B").sort("_n")["option"][0]
    assert first.startswith(
        plan_rows.filter((pl.col("model") == "meta-llama/Llama-3.1-70B") & (pl.col("rank") == 1))["gpu"][0]
    )


def test_memory_chart_holds_the_kv_cache_of_every_request_in_flight(frame, plan_rows):
    """Under a workload's random arrivals a replica can hold more requests than the closed-loop batch
    its targets were checked at (frontier-moe's GB200: 489 in flight, batch 144): the chart draws the KV
    cache of all of them, ceil(concurrency) x the batch's KV per request, not of the batch's (it drew
    144, 3.4x too little)."""
    rows = plan_rows.with_columns(concurrency=pl.col("batch") * 3.4)
    data = charts.memory_data(frame, rows)
    best = rows.filter((pl.col("model") == "meta-llama/Llama-3.1-70B") & (pl.col("gpu") == "h100-sxm"))
    best = best.filter(pl.col("rank") == best["rank"].min()).row(0, named=True)
    kv = data.filter(
        (pl.col("model") == "meta-llama/Llama-3.1-70B")
        & (pl.col("option") == "h100-sxm · fp8 · tp2")
        & (pl.col("component") == "KV cache")
    ).row(0, named=True)
    in_flight = math.ceil(best["batch"] * 3.4)
    assert kv["in_flight"] == in_flight
    assert kv["gib"] == pytest.approx(best["kv_cache_bytes"] * in_flight / best["batch"] / GIB)


def test_decode_chart_data(frame, plan_rows):
    data = charts.decode_data(frame, plan_rows)
    row = data.filter(
        (pl.col("model") == "meta-llama/Llama-3.1-8B")
        & (pl.col("gpu") == "h100-sxm")
        & (pl.col("batch") == 16)
        & (pl.col("measure") == "per replica (under load)")
    )
    option = row["option"].item()  # the ranked layout for h100-sxm
    precision = option.split(" · ")[1]
    expected = frame.filter(
        (pl.col("model") == "meta-llama/Llama-3.1-8B")
        & (pl.col("gpu") == "h100-sxm")
        & (pl.col("precision") == precision)
        & (pl.col("batch") == 16)
    ).collect()
    assert row["tokens_per_s"].item() == expected["output_tokens_per_s"].item()


def test_ttft_and_roofline_chart_data(frame, plan_rows):
    ttft = charts.ttft_data(frame, plan_rows)
    assert set(ttft["input_tokens"]) == {1024}  # one prompt length: TTFT at each option's operating point
    one = ttft.filter((pl.col("model") == "meta-llama/Llama-3.1-8B") & (pl.col("gpu") == "l40s")).row(0, named=True)
    plan_l40s = plan_rows.filter((pl.col("model") == "meta-llama/Llama-3.1-8B") & (pl.col("gpu") == "l40s"))
    plan_l40s = plan_l40s.filter(pl.col("rank") == plan_l40s["rank"].min())
    assert one["ttft_ms"] == pytest.approx(plan_l40s["ttft_s"].item() * 1000)
    assert one["ttft_p90_ms"] == pytest.approx(plan_l40s["ttft_p90_s"].item() * 1000)
    points = charts.roofline_data(frame)
    roofs = charts.roofline_roofs(points)
    h100 = roofs.filter(pl.col("gpu") == "h100-sxm")
    # the roof is min(peak, intensity x bandwidth): bf16 peak 989 TFLOP/s, ridge at 989e12 / 3.35e12 = 295 FLOP/byte
    assert h100["flops_per_s"].max() == pytest.approx(989e12)
    assert h100.filter(pl.col("intensity") == 1.0)["flops_per_s"].item() == pytest.approx(3.35e12)
    assert (points["flops_per_s"] <= points["peak_flops_per_s"] * (1 + 1e-9)).all()


def test_the_roofline_of_a_large_sweep_stays_drawable():
    """20 GPUs with 300 fitting configurations each are 6,000 points, over the 5,000 rows altair draws
    (MaxRowsError: the report of the 1M-configuration benchmark could not be written): each GPU keeps
    4,000 / 20 = 200, and the chart renders to a spec."""
    n = 300
    frame = pl.DataFrame(
        {
            "gpu": [f"gpu{g:02d}" for g in range(20) for _ in range(n)],
            "model": "m",
            "precision": "fp8",
            "batch": [b for _ in range(20) for b in range(1, n + 1)],
            "bound": "memory",
            "arithmetic_intensity": 10.0,
            "decode_flops_per_step": 1e12,
            "decode_step_s": 0.01,
            "gpus": 1,
            "peak_flops_per_s": 1e15,
            "memory_bandwidth_bytes_per_s": 3e12,
            "fits": True,
            "input_tokens": 1024,
            "output_tokens": 256,
        }
    ).lazy()
    points = charts.roofline_data(frame)
    assert points.height == charts.ROOFLINE_TOTAL == 4_000
    assert set(points.group_by("gpu").len()["len"]) == {200}
    assert charts.roofline_chart(points).to_dict()["layer"][1]["mark"]["type"] == "point"


def test_frontier_is_pareto(frame, plan_rows):
    data = charts.frontier_data(frame, plan_rows)
    assert data.filter(pl.col("operating_point"))["rank"].min() == 1  # the plan's points beside it, not on it
    for _, group in data.filter(~pl.col("operating_point")).group_by(["model", "gpu"]):
        g = group.sort("per_user")
        assert g["per_gpu"].is_sorted(descending=True)  # faster per user only at a cost per GPU


def test_cost_chart_only_with_prices(frame, plan_rows):
    data = charts.cost_data(frame, plan_rows)
    assert set(data["gpu"]) == {"h100-sxm", "l40s"} and data["metric"][0] == "USD per million output tokens"
    best = data.filter((pl.col("model") == "meta-llama/Llama-3.1-8B") & (pl.col("gpu") == "l40s"))
    fits = plan_rows.filter(
        pl.col("meets_slo") & (pl.col("model") == "meta-llama/Llama-3.1-8B") & (pl.col("gpu") == "l40s")
    )
    assert best["usd"].item() == fits["usd_per_million_output_tokens"].min()
    unpriced = plan_rows.with_columns(pl.lit(None, dtype=pl.Float64).alias("usd_per_gpu_hour"))
    assert charts.cost_data(frame, unpriced).height == 0
    assert "cost" not in [s.id for s, *_ in charts.build_charts(frame, unpriced)]


def test_every_gpu_of_the_ranked_options_is_in_every_per_gpu_chart(tmp_path):
    """procurement.yaml: seven GPUs per model, all shown (the old charts kept the first 12 GPU x
    precision series alphabetically and dropped h200-sxm, the recommended one). With more GPUs than
    MAX_SERIES, the chart says how many it shows."""
    out = pipeline.run(ROOT / "sweeps" / "procurement.yaml", tmp_path, formats=["parquet"])
    frame = pl.scan_parquet(out.folder / "estimates.parquet")
    options = pl.read_parquet(out.folder / "plan.parquet")
    ranked = options.filter(pl.col("rank").is_not_null()).group_by("model").agg(pl.col("gpu").cast(pl.String).unique())
    per_gpu = {
        "memory": charts.memory_data,
        "decode": charts.decode_data,
        "ttft": charts.ttft_data,
        "frontier": charts.frontier_data,
    }
    for name, data_of in per_gpu.items():
        data = data_of(frame, options)
        for model, gpus in ranked.rows():
            shown = set(data.filter(pl.col("model") == model)["gpu"])
            assert set(gpus) <= shown, (name, model, set(gpus) - shown)
        assert charts.series_note(data) == ""
    roof = charts.roofline_data(frame)
    assert set(roof["gpu"]) == set(options["gpu"].cast(pl.String))
    few = options.filter(pl.col("gpu").is_in(["h200-sxm", "mi300x", "b200"]))
    from unittest import mock

    with mock.patch.object(charts, "MAX_SERIES", 2):
        data = charts.memory_data(frame, few)
        note = charts.series_note(data)
    assert "meta-llama/Llama-3.1-8B: 2 of 3 GPUs shown (the first 2 by rank; plan.csv has them all)" in note
    firsts = few.filter(pl.col("rank").is_not_null()).sort("rank").group_by("model", maintain_order=True).first()
    for model, gpu in firsts.select("model", pl.col("gpu").cast(pl.String)).rows():
        assert gpu in set(data.filter(pl.col("model") == model)["gpu"])  # the recommended one is kept


def test_configurations_table_lists_the_best_rows_first(frame, example):
    import json

    options = pl.read_parquet(example / "plan.parquet")
    ctx = build_context(frame, options, json.loads((example / "manifest.json").read_text()))
    table = ctx["table"]
    column = ctx["rank"]["column"]
    values = [row[table["columns"].index(column)] for row in table["rows"]]
    assert values == sorted(values)  # cheapest first
    best = frame.filter(pl.col("fits")).select(pl.col(column).min()).collect().item()
    assert values[0] == best
    assert table["total_fit"] == frame.select(pl.col("fits").sum()).collect().item() == 58


def test_vega_bundle_is_cached_per_version(tmp_path, monkeypatch):
    import vl_convert as vlc

    from llmsweep import report

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = report.vega_bundle()
    calls = []
    monkeypatch.setattr(vlc, "javascript_bundle", lambda *a, **k: calls.append(1) or "")
    assert report.vega_bundle() == first and calls == []  # the second call reads the cache
    assert [p.name for p in (tmp_path / "llmsweep").iterdir()][0].startswith("vega-bundle-")


def test_a_sweep_without_targets_says_so_and_gives_no_verdict(example):
    """sweeps/example.yaml has no `slo:`: the report says so first, has no "Meets targets" column and
    recommends nothing, and flags what is too slow for interactive use with the thresholds and their source."""
    md = (example / "report.md").read_text()
    html = (example / "report.html").read_text()
    top = md.split("## Summary")[0]
    assert "**No latency targets.** This sweep sets no `slo:`" in top
    assert "MLPerf Inference v5.0's interactive scenario" in top and "p99 TTFT ≤ 450 ms" in top
    # Llama-3.1-70B's first option (h100-sxm fp8 tp2 at its largest batch) runs about 13 tokens/s per user:
    # below the 25 interactive use needs
    speed = re.search(r"\*\*Warning:\*\* ([\d.]+) tokens/s per user \(interactive use needs ≥ 25\)", top)
    assert speed and float(speed.group(1)) < 25
    for text in (md, html):
        assert "Meets targets" not in text and "recommended**" not in text and "<b>recommended</b>" not in text
    assert html.index('id="answer"') < html.index('id="summary"') < html.index('class="options"')
    assert "No latency targets." in html.split('id="summary"')[0]


def test_method_shows_the_values_in_force_per_engine_and_gpu(example, plan_rows):
    """Every row ran with its engine x GPU family's efficiencies, not the profile file's top-level
    defaults: the method section lists those, as plan.csv has them."""
    import json

    from llmsweep.report import f_num, f_seconds

    md = (example / "report.md").read_text().split("## Method")[1]
    manifest = json.loads((example / "manifest.json").read_text())
    for gpu, family, bandwidth in (("h100-sxm", "hopper", "3,350"), ("l40s", "ada", "864")):
        row = plan_rows.filter(pl.col("gpu") == gpu).row(0, named=True)
        line = (
            f"| vllm | {gpu} ({family}) | {bandwidth} GB/s | {f_num(row['bandwidth_efficiency'])} | "
            f"{f_num(row['compute_efficiency'])} | {f_num(row['fp8_gemm_efficiency'])} · "
            f"{f_num(row['fp4_gemm_efficiency'])} | {f_seconds(row['step_overhead_s'])} |"
        )
        assert line in md
    top = manifest["profile"]["defaults"]["bandwidth_efficiency"]
    h100 = plan_rows.filter(pl.col("gpu") == "h100-sxm")["bandwidth_efficiency"][0]
    assert h100 != top  # vLLM's own value, which the rows use, is what the table shows
    assert md.index("| engine | GPU (family) |") < md.index("The profile file's top-level defaults")


# -- serving modes: the mode, the pools, the KV link, the acceptance assumed, the cheapest mode per GPU ------------
def modes_sweep(tmp_path: Path, **grid) -> Path:
    """DeepSeek-R1 fp8 on B200 at 8k in / 1k out, aggregated tp8 ep8 against 1P1D and 2P1D of tp8 ep8
    workers, MTP off and on (the profile's acceptance), a 50 % prefix hit rate, 10 requests/s."""
    sweep = {
        "name": "modes",
        "grid": {
            "gpu": ["b200"],
            "model": ["deepseek-ai/DeepSeek-R1"],
            "precision": ["fp8"],
            "input_tokens": [8192],
            "output_tokens": [1024],
            "batch": [16, 64, "max"],
            "tp": [8],
            "ep": [8],
            "mode": ["aggregated", "disaggregated"],
            "prefill": {"workers": [1, 2]},
            "decode": {"workers": [1]},
            "speculative": ["none", "mtp"],
            **grid,
        },
        "workload": {"requests_per_s": 10, "peak_factor": 1.5, "headroom": 0.2, "prefix_hit_rate": 0.5},
        "slo": {"ttft_s": 2.0, "tpot_s": 0.05, "percentile": "p90"},
        "costs": {"b200": {"rent": 6.0}},
        "profile": "default",
        "report": {"formats": ["csv", "parquet", "html", "md"]},
    }
    sweep["grid"] = {k: v for k, v in sweep["grid"].items() if v is not None}
    path = tmp_path / "modes.yaml"
    path.write_text(yaml.safe_dump(sweep))
    out = tmp_path / "out"
    pipeline.run(path, out)
    return out / "modes"


def profile_acceptance() -> float:
    """The default profile's MTP acceptance for B200 under vLLM (what a sweep that states none assumes)."""
    from llmsweep.catalog import load_catalog

    cat = load_catalog()
    return cat.profile("default").for_family(cat.gpu("b200").family, "vllm").mtp_acceptance


@pytest.fixture(scope="module")
def modes(tmp_path_factory) -> Path:
    return modes_sweep(tmp_path_factory.mktemp("modes"))


def test_a_report_states_each_options_serving_mode(modes):
    md = (modes / "report.md").read_text()
    plan = pl.read_csv(modes / "plan.csv")
    dis = plan.filter((pl.col("mode") == "disaggregated") & (pl.col("speculative") == "none")).row(0, named=True)
    x = dis["prefill_workers"]
    # the pools in words, the link that carries the KV cache and its time
    assert f"{x}P1D: {x} prefill worker{'s' if x > 1 else ''} of tp8 ep8 + 1 decode worker of tp8 ep8" in md
    assert dis["kv_link"] == "scale-out"  # 8 x (x + 1) GPUs: more than one HGX B200 server
    assert f"KV cache over the network (NICs), {dis['kv_transfer_s'] * 1e3:.1f} ms a prompt" in md
    # the acceptance is an assumption, and it says whose: the default profile's for MTP on B200 under vLLM
    a = profile_acceptance()
    mtp = plan.filter(pl.col("speculative") == "mtp").row(0, named=True)
    assert mtp["tokens_per_step"] == pytest.approx(1 + a)  # E = 1 + alpha at one drafted token
    e = mtp["tokens_per_step"]
    assert f"MTP, 1 drafted token, acceptance {a:.3g} assumed (the default profile's), {e:.2f} tokens a step" in md
    assert (
        f"Speculative decoding: MTP with 1 drafted token at acceptance {a:.3g}, the default profile's mtp_acceptance "
        "(the sweep gives no acceptance). The acceptance is an assumption"
    ) in md
    assert "prefix cache: 50% of prompt tokens" in md
    # every row says its mode; the method says how each mode is estimated and what each token type costs
    assert "**disaggregated** · fp8 · " in md and "**aggregated** · fp8 · tp8 ep8" in md
    assert "**Disaggregated serving** (x prefill workers, y decode workers" in md
    assert "**Costs per token type**" in md and "**Speculative decoding**" in md and "**Prefix caching**" in md
    # the split shows its weighting: input x 8,192 / 1,024 + decode = all-in, not input + decode
    split = re.search(
        r"\$([\d.]+) per M input tokens × 8,192 / 1,024 input tokens per output token \+ \$([\d.]+) per M output "
        r"tokens \(decode\) = \$([\d.]+) per M output tokens all-in",
        md,
    )
    assert split is not None
    inp, dec, total = (float(v) for v in split.groups())
    assert inp * 8 + dec == pytest.approx(total, rel=0.01)  # figures as printed: 3 to 4 significant digits


def test_with_targets_the_configurations_table_lists_those_that_meet_them_first(modes):
    """Sorted by cost alone, the cheapest configurations are those whose batch misses the TPOT target:
    with targets the table lists the rows that meet them first, each group in the ranking's order."""
    import json

    frame = pl.scan_parquet(modes / "estimates.parquet")
    ctx = build_context(
        frame, pl.read_parquet(modes / "plan.parquet"), json.loads((modes / "manifest.json").read_text())
    )
    table, column = ctx["table"], ctx["rank"]["column"]
    meets = [row[table["columns"].index("meets_slo")] for row in table["rows"]]
    values = [row[table["columns"].index(column)] for row in table["rows"]]
    assert True in meets and False in meets
    first_miss = meets.index(False)
    assert all(meets[:first_miss]) and not any(meets[first_miss:])
    higher = ctx["rank"]["higher_is_better"]
    for group in (values[:first_miss], values[first_miss:]):
        assert group == sorted(group, reverse=higher)
    md = (modes / "report.md").read_text()
    assert f"by {ctx['rank']['label']}, those that meet the targets first; estimates.csv has every row." in md
    # a layout with expert parallelism shows it (rows differing only in ep looked like duplicates), and
    # under a workload the table says its fleets are sized at each row's own batch, not as planned above
    assert table["columns"][table["columns"].index("pp") + 1] == "ep"
    assert "dp_attention" not in table["columns"]  # no layout of this sweep uses it
    assert "the recommendations above run each option at the traffic planned for it" in md


def test_the_frontier_names_each_point_with_its_serving_mode(modes):
    """A Pareto point of a 2P1D or MTP configuration is drawn as that option, not as its aggregated
    layout: every label states the pools of a disaggregated point and '+ mtp' of a speculative one."""
    frame = pl.scan_parquet(modes / "estimates.parquet")
    data = charts.frontier_data(frame, pl.read_parquet(modes / "plan.parquet"))
    assert data.height
    for r in data.iter_rows(named=True):
        assert (f"{r['prefill_workers']}P{r['decode_workers']}D " in r["option"]) == (r["mode"] == "disaggregated")
        assert r["option"].endswith(" + mtp") == (r["speculative"] == "mtp"), r
    assert {"disaggregated", "aggregated"} <= set(data["mode"]) or "mtp" in set(data["speculative"])


def test_a_report_that_compares_modes_says_which_is_cheapest_per_gpu_and_why(modes):
    md = (modes / "report.md").read_text()
    options = pl.read_csv(modes / "options.csv")
    # options.csv: one row per GPU x offer x mode x speculative method, each with its pools and costs per token
    assert options.select("Serving mode", "Speculative").unique().height == 4
    assert set(options["Speculative"]) == {"none", "mtp k=1"}
    dis = options.filter(pl.col("Serving mode") == "disaggregated").row(0, named=True)
    assert dis["xPyD"] in ("1P1D", "2P1D") and dis["Prefill layout"] == "tp8 ep8" and dis["KV link"] == "scale-out"
    assert dis["Acceptance"] is None or dis["Acceptance"] == round(profile_acceptance(), 3)
    agg = options.filter(pl.col("Serving mode") == "aggregated").row(0, named=True)
    assert agg["xPyD"] is None and agg["KV link"] is None
    # the comparison in the answer names both modes and says why, with the figures at capacity
    line = next(s for s in md.splitlines() if s.strip().startswith("- On b200, "))
    assert ("cheaper per million output tokens than " in line or "costs the same" in line) and ", the best " in line
    assert "At capacity a replica takes" in line and "requests/s" in line


def test_the_serving_comparison_by_hand():
    """A 4P1D replica at $4.00 per million output tokens (the fleet's) against an aggregated one at $5.00:
    1 - 4 / 5 = 20 % cheaper; what each does at its capacity; MTP on the same pools costs the same."""
    from llmsweep import answer

    common = {"gpu": "b200", "offer": "rent", "pp": 1, "prefill_pp": 1, "prefill_dp_attention": 1}
    dis = {
        **common,
        "rank": 1,
        "mode": "disaggregated",
        "speculative": "none",
        "tp": 1,
        "dp_attention": 8,
        "ep": 8,
        "prefill_workers": 4,
        "decode_workers": 1,
        "prefill_tp": 8,
        "prefill_ep": 8,
        "fleet_usd_per_million_output_tokens": 4.0,
        "fleet_gpus": 40,
        "capacity_requests_per_s": 27.1,
        "capacity_limit": "ttft_p90_s",
        "capacity_decode_batch": 817.0,
        "capacity_tpot_s": 0.029,
        "capacity_prefill_busy": 0.98,
        "max_batch": 896,
    }
    agg = {
        **common,
        "rank": 3,
        "mode": "aggregated",
        "speculative": "none",
        "tp": 8,
        "dp_attention": 1,
        "ep": 8,
        "fleet_usd_per_million_output_tokens": 5.0,
        "fleet_gpus": 48,
        "capacity_requests_per_s": 3.5,
        "capacity_limit": "saturated",
        "capacity_decode_batch": 131.0,
        "capacity_tpot_s": 0.036,
        "capacity_prefill_busy": 0.51,
        "max_batch": 131,
    }
    mtp = {**dis, "rank": 2, "speculative": "mtp", "draft_tokens": 1, "capacity_tpot_s": 0.016}
    assert answer.serving_comparison([dis, mtp, agg], fleets=True) == [
        "On b200, disaggregated 4P1D (prefill tp8 ep8, decode tp1 dp-attn8 ep8) is 20% cheaper per million output "
        "tokens than aggregated tp8 ep8, the best aggregated option: 40 GPUs for the traffic against 48. At "
        "capacity a replica takes 27.1 requests/s (up to the p90 TTFT target), 4 prefill workers 98% busy and 1 "
        "decode worker running 817 sequences at TPOT 29 ms with no prefill interference; an aggregated one takes "
        "3.5 requests/s (saturated: its KV cache holds no more than 131 sequences a replica), prompts taking 51% of "
        "its time between decode steps of 131 sequences (TPOT 36 ms).",
        "On b200, MTP does not change the cost per million output tokens: the p90 TTFT target bounds its capacity, "
        "not the decode step (TPOT at capacity 29 ms without it, 16 ms with it).",
    ]
    # with the bands a disaggregated winner carries (its own: the measured disaggregated deployments'
    # errors), the sentence says how far they reach
    banded = {**dis, "ttft_s": 0.365, "ttft_s_high": 4.6, "gpus_needed": 40, "gpus_needed_high": 120}
    (sentence,) = answer.serving_comparison([banded, agg], fleets=True)
    assert sentence.endswith(
        "(TPOT 36 ms). Disaggregated figures are the least certain: its mean TTFT's 80 % band runs to 4.6 s "
        "(estimated 365 ms) and its GPUs for the traffic to 120 (40 estimated), as the measured disaggregated "
        "deployments ran slower than estimated; try it on your own traffic before buying for it."
    )
    assert answer.pools_text(dis) == "4P1D: 4 prefill workers of tp8 ep8 + 1 decode worker of tp1 dp-attn8 ep8"
    assert answer.pools_text(agg) == ""
    # one GPU with a single mode and no speculative setting to compare: nothing to say
    assert answer.serving_comparison([agg], fleets=True) == []


def test_the_recommended_option_is_in_every_chart_even_when_the_plan_searched_its_pools(tmp_path):
    """Without worker lists the plan searches x and y: its best pair is no grid row, so the charts that draw
    estimates take it from the plan row (its operating point), and say so, rather than leave it out."""
    folder = modes_sweep(tmp_path, prefill=None, decode=None, mode=["disaggregated"])
    plan = pl.read_parquet(folder / "plan.parquet")
    frame = pl.scan_parquet(folder / "estimates.parquet")
    best = plan.filter(pl.col("rank") == 1).row(0, named=True)
    row = pl.DataFrame([best])
    label, offered = (row.select(charts.option_label(row, offer)).item() for offer in (False, True))
    drawn = {spec.id: spec.data(frame, plan) for spec in charts.CHARTS}
    for chart_id, name in (("memory", label), ("decode", label), ("ttft", label), ("cost", offered)):
        assert name in drawn[chart_id]["option"].to_list(), chart_id
    assert offered in drawn["cost-speed"]["option"].to_list()
    assert best["mode"] == "disaggregated" and (best["prefill_workers"], best["decode_workers"]) != (1, 1)
    assert f"{label}: at the plan's operating point only" in charts.series_note(drawn["decode"])
    notes = [n for n in (folder / "report.md").read_text().splitlines() if "xPyD search:" in n]
    assert notes and "provably unable to beat" in notes[0]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
@pytest.mark.parametrize("width", [1280, 400])
def test_a_modes_report_fits_a_laptop_and_a_phone(modes, tmp_path, width):
    """The pools, KV link and speculative settings in the tables do not push them off the screen."""
    from .test_finance import layout_in_browser

    got = layout_in_browser(modes / "report.html", tmp_path, width)
    assert got["view"] == width and got["rendered"] > 0
    assert got["tables"] == [] and got["hidden"] == [] and got["charts"] == [] and got["page"] <= width


def test_method_shows_a_familys_matmul_ceiling_next_to_the_engines_efficiency(tmp_path):
    """On MI355X (CDNA, no development rows) vLLM's compute efficiency runs scaled by CDNA's measured
    matmul ceiling, 0.8 (catalog/profiles.yaml): the table shows both factors, as η_c × s, where
    H100's row (s = 1) shows η_c alone."""
    from llmsweep.catalog import load_catalog
    from llmsweep.report import f_num

    sweep = tmp_path / "amd.yaml"
    sweep.write_text(
        "name: amd\ngrid:\n  gpu: [mi355x, h100-sxm]\n  model: [meta-llama/Llama-3.1-8B-Instruct]\n"
        "  precision: [bf16]\n  engine: [vllm]\n  input_tokens: [1024]\n  output_tokens: [256]\n  batch: [1]\n"
        "profile: default\nreport: {formats: [md]}\n"
    )
    pipeline.run(sweep, tmp_path / "out")
    md = (tmp_path / "out" / "amd" / "report.md").read_text().split("## Method")[1]
    profile = load_catalog().profile("default")
    amd, nvidia = profile.for_family("cdna", "vllm"), profile.for_family("hopper", "vllm")
    assert amd.compute_scale == 0.8 and nvidia.compute_scale == 1.0
    assert f"| {f_num(amd.compute_efficiency)} × 0.8 |" in md.split("| vllm | mi355x (cdna) |")[1].splitlines()[0]
    assert "×" not in md.split("| vllm | h100-sxm (hopper) |")[1].splitlines()[0]


def test_method_states_the_grids_admission_cap_beside_the_engines_limit(tmp_path):
    """A grid without `max` under a workload admits at most its largest batch per replica: on an
    8-rank attention-DP replica that is 1/8 request a rank, which the method table must not show as
    the engine's limit (an integer 0, "KV cache only"). The table keeps vLLM's 1,024 a rank and the
    sentence above it states the grid's 1 request a replica."""
    sweep = tmp_path / "cap.yaml"
    sweep.write_text(
        "name: cap\ngrid:\n  gpu: [b300]\n  model: [deepseek-ai/DeepSeek-R1]\n  precision: [fp8]\n"
        "  engine: [vllm]\n  tp: [1]\n  ep: [8]\n  dp_attention: [8]\n  batch: [1]\n"
        "workload: {requests_per_s: 1}\nprofile: default\nreport: {formats: [md]}\n"
    )
    pipeline.run(sweep, tmp_path / "out")
    md = (tmp_path / "out" / "cap" / "report.md").read_text().split("## Method")[1]
    cap = "The grid lists its batches without max, so under the workload each replica also admits at most 1 request"
    assert cap + " at a time, whatever the engine's limit." in md
    row = md.split("| vllm | b300 (blackwell) |")[1].splitlines()[0]
    assert row.rstrip().endswith("| 1,024 | bf16 (auto) |"), row


def test_method_states_the_kv_cache_format_each_engine_runs(tmp_path):
    """`auto` is each engine's own choice for the checkpoint (catalog/engines.auto_kv_precision): on
    DeepSeek-R1's fp8 checkpoint SGLang caches fp8 (its DeepSeek recipes), vLLM the 16-bit activation
    dtype; an explicit kv_precision is shown without (auto). The configurations table shows the format
    in force, not the word auto."""
    sweep = tmp_path / "kv.yaml"
    sweep.write_text(
        "name: kv\ngrid:\n  gpu: [b300]\n  model: [deepseek-ai/DeepSeek-R1]\n  precision: [fp8]\n"
        "  kv_precision: [auto, fp8]\n  engine: [vllm, sglang]\n  tp: [8]\n  batch: [16]\n"
        "profile: default\nreport: {formats: [md, html]}\n"
    )
    pipeline.run(sweep, tmp_path / "out")
    md = (tmp_path / "out" / "kv" / "report.md").read_text()
    method = md.split("## Method")[1]
    assert method.split("| sglang | b300 (blackwell) |")[1].splitlines()[0].endswith("| fp8, fp8 (auto) |")
    assert method.split("| vllm | b300 (blackwell) |")[1].splitlines()[0].endswith("| bf16 (auto), fp8 |")
    assert "(auto) marks the engine's own choice for the checkpoint" in method
    table = md.split("| GPU | Engine | Model | Weights | KV format |")[1].split("\n\n")[0]
    assert "| auto |" not in table and "| vllm | deepseek-ai/DeepSeek-R1 | fp8 | bf16 |" in table
    html = (tmp_path / "out" / "kv" / "report.html").read_text()
    assert "<th>KV cache</th>" in html and "<td>fp8, fp8 (auto)</td>" in html


def test_a_p90_ttft_carries_its_band():
    """The band of TTFT is a factor on it (the profile's prefill band): the mean 824.2 ms with band
    493.4 ms-1.44 s is x 0.5986 to x 1.7472; the p90 1.41 s then spans 0.844-2.464 s, above a 2 s target
    at its high end (shown beside the mean's band, the p90 looked safe)."""
    from llmsweep.report import _p90_band

    band = _p90_band({"ttft_s": 0.8242, "ttft_p90_s": 1.41, "ttft_s_low": 0.4934, "ttft_s_high": 1.44})
    assert band["ttft_p90_s_low"] == pytest.approx(1.41 * 0.4934 / 0.8242)  # 0.8441
    assert band["ttft_p90_s_high"] == pytest.approx(1.41 * 1.44 / 0.8242)  # 2.4635
    assert _p90_band({"ttft_s": 0.8, "ttft_p90_s": 1.4, "ttft_s_low": None, "ttft_s_high": None}) == {
        "ttft_p90_s_low": None,
        "ttft_p90_s_high": None,
    }


def test_a_narrow_screen_tells_the_configurations_apart(modes):
    """On a phone the layout columns of the configurations table give way, so the GPU cell says the
    weights, layout and serving mode: without it, rows of one GPU at one batch read the same."""
    from llmsweep.report import _narrow_layout

    assert _narrow_layout({"precision": "fp8", "tp": 1, "dp_attention": 8, "ep": 8, "mode": "aggregated"}) == [
        "fp8 · tp1 dp-attn8 ep8"
    ]
    disagg = {"precision": "fp8", "tp": 8, "ep": 8, "mode": "disaggregated", "prefill_workers": 2}
    assert _narrow_layout({**disagg, "decode_workers": 1, "speculative": "mtp"}) == ["fp8 · tp8 ep8", "2P1D + MTP"]
    html = (modes / "report.html").read_text()
    table = html[html.index('<table id="all-configs"') :]
    table = table[: table.index("</table>")]
    cells = re.findall(r'<span class="narrow-only">((?:<br><span class="muted nowrap">[^<]*</span>)+)</span>', table)
    lines = {tuple(re.findall(r'nowrap">([^<]*)<', c)) for c in cells}
    assert ("fp8 · tp8 ep8", "1P1D + MTP") in lines and ("fp8 · tp8 ep8",) in lines
    assert len(cells) == table.count("<tr>") - 1  # every row but the header's


def test_why_names_what_holds_a_replica_at_the_traffic():
    """Sized for a workload, a replica runs at its share of the traffic (489 in flight), not at the
    closed-loop batch the targets allow (144): the sentence says what caps its rate."""
    from llmsweep.report import _why

    r = {
        "bound": "memory",
        "decode_weight_fraction": 0.3,
        "kv_bytes_per_element": 2.0,
        "bytes_per_weight": 1.0,
        "batch": 144,
        "slo_batch": 144,
        "max_batch": 928,
        "offered_requests_per_s": 15.0,
        "capacity_requests_per_s": 19.118,
        "capacity_limit": "tpot_s",
    }
    assert _why(r) == (
        "memory-bound: the KV cache is 70% of each step's traffic; an fp8 KV cache halves it; a replica takes up "
        "to 19.1 requests/s before the TPOT target is missed."
    )
    # prompts filling half its time at capacity: compute moves its capacity as much as the step's bound
    assert _why({**r, "capacity_prefill_busy": 0.5}).endswith(
        "before the TPOT target is missed, prompts (compute-bound) taking 50% of its time there."
    )
    assert _why({**r, "capacity_prefill_busy": 0.2}) == _why(r)  # a small share is not worth a clause
    assert _why({**r, "capacity_prefill_busy": 0.5, "mode": "disaggregated"}).endswith("is missed.")
    # without a workload the batch is the operating point: the targets hold it
    closed = {**r, "offered_requests_per_s": None, "capacity_requests_per_s": None, "capacity_limit": None}
    assert _why(closed).endswith("; the latency targets hold the batch at 144 (memory allows 928).")


def test_the_sensitivity_table_names_the_two_options_it_compares():
    """#1 and #2 are often one GPU at two layouts: the headers say which (layout, pools, speculation)."""
    from llmsweep.report import f_short_option  # the templates' short_option filter

    agg = {
        "gpu": "gb200",
        "offer": "example",
        "precision": "fp8",
        "mode": "aggregated",
        "tp": 1,
        "pp": 1,
        "dp_attention": 16,
        "ep": 16,
        "speculative": "none",
    }
    assert f_short_option(agg) == "gb200 example · fp8 · tp1 dp-attn16 ep16"
    assert f_short_option({**agg, "dp_attention": 8, "ep": 8, "speculative": "mtp"}) == (
        "gb200 example · fp8 · tp1 dp-attn8 ep8 · MTP"
    )
    disagg = {**agg, "mode": "disaggregated", "prefill_workers": 2, "decode_workers": 1, "offer": None}
    assert f_short_option(disagg) == "gb200 · fp8 · 2P1D"


def test_links_have_their_vendors_names():
    """A replica across two servers names its scale-up link as the GPU's vendor does: NVLink on NVIDIA,
    Infinity Fabric on AMD (the plan rows carry gpu_family)."""
    from llmsweep.answer import link_name
    from llmsweep.report import f_links

    mi = {"tp_link": "scale-up", "pp_link": None, "expert_link": None, "servers_per_replica": 2, "gpu_family": "cdna"}
    assert f_links(mi) == "2 servers per replica in one Infinity Fabric domain · tp Infinity Fabric"
    assert f_links({**mi, "gpu_family": "blackwell"}) == "2 servers per replica in one NVLink domain · tp NVLink"
    # servers joined by the network need no shared domain; a disaggregated replica's servers may each
    # hold a worker, joined by the KV transfer alone
    assert f_links({**mi, "tp_link": "scale-out"}) == "2 servers per replica · tp network"
    assert f_links({**mi, "mode": "disaggregated"}) == "2 servers per replica · tp Infinity Fabric"
    assert link_name("scale-up", {"gpu_family": "cdna"}) == "Infinity Fabric (one scale-up domain)"
    assert link_name("scale-out", {}) == "the network (NICs)" and link_name("scale-out", {}, short=True) == "network"


def test_a_band_whose_ends_agree_says_so(frame, example):
    """A fleet that is the same at both ends of its band (GB200 in whole trays) costs the same: the
    report says so rather than print '$2.82 ($2.82–$2.82)', which reads as false precision."""
    import json

    from llmsweep.report import render_html, render_markdown

    options = pl.read_parquet(example / "plan.parquet")
    ctx = build_context(frame, options, json.loads((example / "manifest.json").read_text()))
    offer = ctx["recommendations"][0]["offers"][0]
    offer["usd_per_m_low"] = offer["usd_per_m_high"] = offer["usd_per_m"]
    md, _ = render_markdown(ctx, [])
    row = next(line for line in md.splitlines() if line.startswith(f"| **{offer['gpu']}**"))
    assert "(the same across its band)" in row and "–$" not in row
    assert "the same across its band" in render_html(ctx, [])


def test_the_sensitivity_moves_the_acceptance_where_an_option_drafts_tokens(modes):
    """MTP's acceptance is an assumption (the profile's 0.447 on random-token benchmarks): where #1 or
    #2 drafts tokens, the sensitivity moves it by 20 % as it moves the efficiencies."""
    import json

    from llmsweep.plan.robustness import ACCEPTANCE, PARAM_LABELS, with_moved

    # the sweep's acceptance, else the method's default (0.5 here): x 0.8 = 0.4, x 1.2 = 0.6, and 0.9 x 1.2
    # = 1.08 held at 0.99; a row without speculation keeps none
    rows = pl.DataFrame(
        {
            "speculative": ["mtp", "mtp", "none"],
            "draft_tokens": [1, 1, 0],
            "acceptance_rate": [None, 0.9, None],
            "mtp_acceptance": [0.5, 0.5, 0.5],
            "eagle_acceptance": [0.7] * 3,
            "draft_acceptance": [0.6] * 3,
        }
    )
    assert with_moved(rows, ACCEPTANCE, 0.8)["acceptance_rate"].to_list() == pytest.approx([0.4, 0.72, None])
    assert with_moved(rows, ACCEPTANCE, 1.2)["acceptance_rate"].to_list() == pytest.approx([0.6, 0.99, None])
    manifest = json.loads((modes / "manifest.json").read_text())
    ranked = pl.read_parquet(modes / "plan.parquet").filter(pl.col("rank") <= 2)
    drafts = (ranked["speculative"].cast(pl.String) != "none").any()
    for rows_ in manifest["sensitivity"].values():
        assert any(r["assumption"] == PARAM_LABELS[ACCEPTANCE] for r in rows_) == drafts
