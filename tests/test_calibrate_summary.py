"""calibrate's summary: comparison.csv in the metric's own unit, and rows with no stated batch shown
apart from the headline errors (they are estimated at the largest batch that fits)."""

from __future__ import annotations

import re

import polars as pl

from llmsweep.calibrate.run import UNSTATED_BATCH, run_calibration

from .conftest import DATA


def test_units_and_rows_without_a_batch_apart(tmp_path):
    report = run_calibration(DATA / "measured-dev.csv", tmp_path / "cal", "default", False, {})
    table = pl.read_csv(tmp_path / "cal" / "comparison.csv", infer_schema_length=None)
    # m127: TensorRT-LLM, H100 SXM, Llama-2-7B fp8, batch 1, 128 in: TTFT 7.0 ms, written in ms (not 0.007 s)
    row = table.filter(pl.col("id") == "m127").row(0, named=True)
    assert (row["metric"], row["measured"], row["unit"]) == ("ttft_ms", 7.0, "ms")
    assert row["ratio"] == row["estimated"] / row["measured"]
    unstated = table.filter(pl.col("assumptions").fill_null("").str.contains(UNSTATED_BATCH, literal=True))
    stated = table.height - unstated.height
    lines = "\n".join(report.lines)
    assert unstated.height == 11 and stated == 95
    assert f"per metric ({stated} rows with a stated batch; {unstated.height} without are below):" in lines
    assert (
        f"{unstated.height} rows state no batch (client concurrency): each is estimated at the largest batch that "
        "fits in memory"
    ) in lines
    head, apart = lines.split("rows state no batch")
    # the headline counts only rows with a stated batch: output throughput has 22 rows, 7 of them unstated
    through = table.filter(pl.col("metric") == "output_throughput_tok_s")
    n_unstated = through.join(unstated.select("id"), on="id").height
    assert n_unstated == 7
    assert re.search(rf"output_throughput_tok_s +{through.height - n_unstated} ", head)
    assert re.search(rf"output_throughput_tok_s +{n_unstated} ", apart)
