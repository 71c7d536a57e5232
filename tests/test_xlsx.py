"""estimates.xlsx for finance: columns as wide as their content, sheets that print, the answer even
when the grid is too long for a sheet. Read back with openpyxl."""

from __future__ import annotations

import openpyxl
import pytest

from llmsweep import export, pipeline
from llmsweep.export import column_widths

from .conftest import ROOT


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    pipeline.run(ROOT / "sweeps" / "procurement.yaml", out, formats=["xlsx"])
    return openpyxl.load_workbook(out / "procurement" / "estimates.xlsx")


def test_every_sheet_prints_landscape_legibly_with_its_headers_repeated(book):
    assert book.sheetnames == ["options", "plan", "estimates"]
    for ws in book.worksheets:
        assert ws.page_setup.orientation == "landscape", ws.title
        assert ws.sheet_properties.pageSetUpPr.fitToPage is True and ws.page_setup.fitToHeight == 0
        assert ws.print_title_rows == "$1:$2"  # the names and the units on every page
        assert ws.freeze_panes == "A3"
        widths = [ws.column_dimensions[c].width for c in sorted(ws.column_dimensions, key=lambda c: (len(c), c))]
        paper, wide, keys = export.print_layout([round(w) for w in widths])
        assert ws.page_setup.paperSize == paper and (ws.page_setup.fitToWidth or 1) == wide, ws.title
    # options has 50-odd columns: on one A3 page they printed at about 3 points; now on pages across
    # of about 255 characters each, its first 5 columns (Model ... Offer) repeated on each
    options = book["options"]
    assert options.page_setup.paperSize == 8 and options.page_setup.fitToWidth >= 3
    assert options.print_title_cols == "$A:$E"
    assert [c.value for c in options[1][:5]] == ["Model", "Input tokens", "Output tokens", "GPU", "Offer"]


def test_print_layout_by_hand():
    # 150 characters fit landscape A4 (180); 200 fit A3 (255); 700 with keys of 35 + 14 + 15 + 20 + 18 = 102
    # (within 0.4 x 255 = 102): the other 598 over pages of 255 - 102 = 153: ceil(3.9) = 4 pages across
    assert export.print_layout([30] * 5) == (9, 1, 0)
    assert export.print_layout([40] * 5) == (8, 1, 0)
    assert export.print_layout([35, 14, 15, 20, 18] + [598 / 13] * 13) == (8, 4, 5)
    # a first column too wide to repeat within 0.4 of the page: no keys, 600 / 255 -> 3 pages
    assert export.print_layout([110, 490]) == (8, 3, 0)


def test_columns_are_as_wide_as_what_they_show(book):
    ws = book["options"]
    headers = {cell.value: cell.column_letter for cell in ws[1]}
    width = {h: ws.column_dimensions[col].width for h, col in headers.items()}
    models = [c.value for c in ws[headers["Model"]][2:]]
    longest = max(len(m) for m in models)  # meta-llama/Llama-3.3-70B-Instruct: 33 characters
    assert longest == len("meta-llama/Llama-3.3-70B-Instruct")
    assert width["Model"] >= longest + 2  # no model name cut off
    # capex is shown as $#,##0.00: the largest, $3,975,000.00 or so, needs its 13+ characters, not 10 (###)
    capex = [c.value for c in ws[headers["Capex (USD)"]][2:] if c.value is not None]
    assert width["Capex (USD)"] >= len(f"${max(capex):,.2f}")
    assert width["Price source"] >= len("sweep: rented (1y-reserved)")


def test_options_sheet_keeps_every_digit_under_its_number_format(book):
    """options.csv rounds costs per token to 3 significant figures for reading; the sheet keeps the
    full value (finance sums them) and rounds only what it shows, by the unit's number format."""
    ws = book["options"]
    headers = {cell.value: cell.column_letter for cell in ws[1]}
    cells = [c for c in ws[headers["USD per M output tokens"]][2:] if c.value is not None]
    assert cells and all(c.number_format == "$#,##0.0000" for c in cells)
    # 3 significant figures would leave e.g. 0.389; the cells hold e.g. 0.38876...
    assert any(float(f"{c.value:.3g}") != c.value for c in cells)
    capex = [c.value for c in ws[headers["Capex (USD)"]][2:] if c.value]
    assert capex and all(isinstance(v, int | float) for v in capex)


def test_every_number_of_the_options_sheet_has_a_format(book):
    """No column shows a float's every digit (Concurrency did: 105.628114444 requests in flight)."""
    ws = book["options"]
    for column in ws.iter_cols(min_row=3):
        floats = [c for c in column if isinstance(c.value, float) and c.value != int(c.value)]
        assert all(c.number_format != "General" for c in floats), (ws.cell(1, column[0].column).value, floats[0].value)


def test_units_name_the_period_and_a_horizon_shows_its_years(book):
    """The units row says what a cost is per (Opex per year, Cost per month: both were 'USD'), and the
    horizon shows as 3.0, not '3.' (Excel's rendering of the 0.## format it had)."""
    ws = book["options"]
    units = {name.value: unit.value for name, unit in zip(ws[1], ws[2], strict=True)}
    assert units["Opex (USD per year)"] == "USD/year" and units["Cost (USD per month)"] == "USD/month"
    assert units["Capex (USD)"] == "USD"
    headers = {cell.value: cell.column_letter for cell in ws[1]}
    horizon = [c for c in ws[headers["Horizon (years)"]][2:] if c.value is not None]
    assert horizon and {c.number_format for c in horizon} == {"0.0#"} and {c.value for c in horizon} == {3}
    assert [export._shown(v, "years") for v in (3.0, 3.25, 3.5)] == ["3.0", "3.25", "3.5"]


def test_widths_by_hand():
    import polars as pl

    frame = pl.DataFrame({"gpu": ["h100-sxm", "a100-80gb-sxm"], "capex_usd": [215_000.0, 1_270_000.0]})
    # "a100-80gb-sxm" is 13 characters + 2; "$1,270,000.00" is 13 + 2 (the header capex_usd is 9)
    assert column_widths(frame, ["", "USD"]) == [15, 15]
    assert column_widths(pl.DataFrame({"x": ["y" * 500]}), [""]) == [export.XLSX_MAX_WIDTH]


def test_a_grid_too_long_for_a_sheet_still_gets_its_options_and_plan(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "XLSX_MAX_ROWS", 60)
    monkeypatch.setattr(pipeline, "XLSX_MAX_ROWS", 60)
    result = pipeline.run(ROOT / "sweeps" / "example.yaml", tmp_path)  # 72 configurations
    assert any(n.startswith("estimates.xlsx has no estimates sheet: 72 rows") for n in result.notes)
    book = openpyxl.load_workbook(tmp_path / "example" / "estimates.xlsx")
    assert book.sheetnames == ["options", "plan"]
    assert book["options"]["A1"].value == "Model" and book["options"].max_row > 2
