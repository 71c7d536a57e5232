"""README's accuracy tables ('How close is it?') are hand-written from docs/fidelity-residuals.csv,
which scripts/calibrate_default.py regenerates with every refit: each figure they quote must be what
the residuals give, so that a refit cannot leave the README behind."""

from __future__ import annotations

import re

import polars as pl
import pytest

from .conftest import ROOT

RESIDUALS = ROOT / "docs" / "fidelity-residuals.csv"
COLUMNS = {
    "ideal (pure roofline)": "ideal",
    "default, leave one model out": "default_out_of_sample",
    "leave one GPU out": "default_leave_gpu_out",
    "leave one engine out": "default_leave_engine_out",
    "in sample": "default_in_sample",
}
stated = pl.col("batch") != "max"
aggregated = (pl.col("serving") == "aggregated") & stated
# each README row's label, and the residual rows it summarises
ROWS = {
    "batch-1 decode tokens/s": pl.col("metric") == "decode_tok_s_per_seq",
    "prefill tokens/s": pl.col("metric") == "prefill_tok_s",
    "serving throughput at a stated concurrency": aggregated & (pl.col("metric") == "output_throughput_tok_s"),
    "TPOT under load": aggregated & (pl.col("metric") == "tpot_ms"),
    "TTFT under load": aggregated & (pl.col("metric") == "ttft_ms"),
    "disaggregated TPOT": (pl.col("serving") == "disaggregated") & (pl.col("metric") == "tpot_ms"),
    "disaggregated TTFT": (pl.col("serving") == "disaggregated") & (pl.col("metric") == "ttft_ms"),
    "MTP TPOT": pl.col("serving").str.contains("MTP") & (pl.col("metric") == "tpot_ms"),
}


def readme_tables() -> list[tuple[str, dict[str, str]]]:
    """(row label, {column header: cell}) for every row of README's two accuracy tables."""
    lines = (ROOT / "README.md").read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith(("| metric (aggregated serving)", "| serving mode")):
            header = [h.strip() for h in line.strip("|").split("|")]
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                cells = [c.strip() for c in row.strip("|").split("|")]
                out.append((cells[0], dict(zip(header[1:], cells[1:], strict=True))))
    return out


TABLE = readme_tables()


def test_the_readme_has_both_tables():
    assert {re.sub(r" \(.*", "", label) for label, _ in TABLE} == set(ROWS)


@pytest.mark.parametrize(("label", "cells"), TABLE, ids=[label for label, _ in TABLE])
def test_each_figure_is_what_the_residuals_give(label, cells):
    name, count = re.fullmatch(r"(.*) \(([\d,]+) rows\)", label).groups()
    rows = pl.read_csv(RESIDUALS, infer_schema_length=None).filter(ROWS[name])
    assert rows.height == int(count.replace(",", ""))
    for header, cell in cells.items():
        ratio = rows[COLUMNS[header]] / rows["measured"]
        error, bias = f"{(ratio - 1).abs().median():.0%}".replace("%", " %"), ratio.median()
        assert cell.startswith(error), (header, cell, error)
        quoted = re.search(r"(\d+\.\d+)×?\)", cell)
        if quoted:  # a bias in brackets, "(0.70)" or "(over-predicts 1.35×)"
            assert quoted.group(1) == f"{bias:.2f}", (header, cell, bias)
