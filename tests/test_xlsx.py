"""estimates.xlsx for finance: columns as wide as their content, sheets that print, the answer even
when the grid is too long for a sheet. Read back with openpyxl."""

from __future__ import annotations

import openpyxl
import pytest

from llmsweep import __version__, export, pipeline
from llmsweep.columns import OPTION_COLUMNS
from llmsweep.export import column_widths

from .conftest import ROOT


@pytest.fixture(scope="module")
def book(procurement_run):
    return openpyxl.load_workbook(procurement_run.folder / "estimates.xlsx")


def test_every_sheet_prints_landscape_legibly_with_its_headers_repeated(book):
    assert book.sheetnames == ["About", "options", "plan", "estimates"]
    for ws in book.worksheets:
        assert ws.page_setup.orientation == "landscape", ws.title
        assert ws.page_setup.paperSize == 9, ws.title  # A4, which any office printer takes (A3 was shrunk)
        assert ws.sheet_properties.pageSetUpPr.fitToPage is True and ws.page_setup.fitToHeight == 0
    assert (book["About"].page_setup.fitToWidth or 1) == 1
    for ws in book.worksheets[1:]:
        assert ws.print_title_rows == "$1:$2"  # the names and the units on every page
        assert ws.freeze_panes == "A3"
        widths = [ws.column_dimensions[c].width for c in sorted(ws.column_dimensions, key=lambda c: (len(c), c))]
        paper, wide, keys = export.print_layout([round(w) for w in widths])
        # (widths read back carry the file's padding: the count can differ by one from the one written)
        assert ws.page_setup.paperSize == paper and abs((ws.page_setup.fitToWidth or 1) - wide) <= 1, ws.title
    # options has 50-odd columns: on A3 they printed 5 pages across, too small once an A4 printer shrank
    # them; now on A4 pages of about 200 characters each (8 points), its first 5 columns (Model ... Offer,
    # 88 characters with their names wrapped) repeated on each: (610 - 88) / (200 - 88) -> 5 pages
    options = book["options"]
    assert options.page_setup.fitToWidth == 5
    assert options.print_title_cols == "$A:$E"
    assert [c.value for c in options[1][:5]] == ["Model", "Input tokens", "Output tokens", "GPU", "Offer"]


def test_every_page_is_headed_by_the_title_and_sheet_and_footed_by_file_and_page(book):
    for ws in book.worksheets:
        assert ws.oddHeader.left.text == "Procurement comparison: data-center GPUs for 8B, 70B and MoE models"
        assert ws.oddHeader.right.text == "&A"  # the sheet's name
        assert ws.oddFooter.left.text == "&F"  # the file's name
        assert ws.oddFooter.right.text == "Page &P of &N"


def test_page_header_keeps_a_title_as_text():
    # & starts a header code (&P page, &A sheet, &G a picture xlsxwriter counts): doubled, or full-width
    # before G and [; control characters are spaces; a long title is cut to 120 characters
    assert export.page_header("R&D\tcosts & R&G&[Picture]") == "&LR&&D costs && R＆G＆[Picture]&R&A"
    assert export.page_header("x" * 300) == "&L" + "x" * 119 + "…&R&A"


def test_print_layout_by_hand():
    # 150 characters fit a landscape A4 page (200); 700 with keys of 35 + 14 + 15 + 20 + 16 = 100
    # (within 0.5 x 200 = 100): the other 600 over pages of 200 - 100 = 100: 6 pages across
    assert export.print_layout([30] * 5) == (9, 1, 0)
    assert export.print_layout([40] * 5) == (9, 1, 0)
    assert export.print_layout([35, 14, 15, 20, 16] + [600 / 12] * 12) == (9, 6, 5)
    # a first column too wide to repeat within half the page: no keys, 600 / 200 -> 3 pages
    assert export.print_layout([110, 490]) == (9, 3, 0)


def test_about_sheet_states_the_run_its_targets_prices_and_notes(book):
    """The workbook read on its own: what the report states (traffic, targets, costs, notes) in its words."""
    import hashlib

    rows = [tuple(c for c in row if c is not None) for row in book["About"].iter_rows(values_only=True)]
    by_label = {}
    for row in rows:
        if len(row) == 2:
            by_label.setdefault(row[0], []).append(row[1])
    assert rows[0] == ("Procurement comparison: data-center GPUs for 8B, 70B and MoE models",)
    sha = hashlib.sha256((ROOT / "sweeps" / "procurement.yaml").read_bytes()).hexdigest()
    assert by_label["Sweep"] == [f"procurement (file procurement.yaml, sha256 {sha})"]
    assert by_label["llmsweep"] == [f"version {__version__}; efficiency profile default"]
    assert by_label["Traffic"] == [
        "20 requests/s on average; peak × 2 = 40 requests/s; 20% headroom on top; 1 spare replica (redundancy n+1)."
    ]
    assert by_label["Lengths"] == ["2,048 tokens in, 512 out per request"]
    assert by_label["Latency targets"] == [
        "mean TTFT ≤ 2 s and TPOT ≤ 50 ms"
    ]  # the mean TTFT: the sweep names no percentile
    assert by_label["Horizon"] == ["3 years (horizon_years)"] and by_label["Rent paid"] == ["24/7 (rent_paid)"]
    assert by_label["Assumptions"][0].startswith("Rented GPUs are paid around the clock (730 h a month)")
    assert by_label["Ranking"][0].startswith("Options are ranked by what the fleet costs over 3 years")
    # every price with its source, the bought one with its terms; the GPU without one says so
    assert ("GPU and offer", "Source and terms", "USD per GPU-hour") in rows
    assert ("mi300x rent", "sweep: rented (on-demand)", 2.49) in rows
    bought = next(r for r in rows if r[0] == "h200-sxm buy-4y")
    assert bought[1].startswith("sweep: bought; 35,000 USD per GPU; 60,000 USD per server without its GPUs; ")
    assert "written off over 4 years" in bought[1] and bought[2] == pytest.approx(1.5122244748858447)
    assert (
        "host power 3 kW per server (in Power (kW) and the opex; energy per token counts the GPUs alone)" in bought[1]
    )
    assert ("gaudi3", "no price: its cost columns are empty and it is not ranked by cost") in rows
    # the notes the run printed, each once
    assert "no price for gaudi3: give one under costs to see its cost columns" in by_label["Note"]
    assert any(n.startswith("h200-sxm buy-4y is written off over 4 years but TCO covers 3") for n in by_label["Note"])
    assert by_label["Rank"][0].startswith("Ranks count every layout that meets the targets (the plan sheet)")
    assert by_label["Batch and Concurrency"][0].startswith("Batch is the most requests one replica can run at once")


def test_about_sheet_has_a_dictionary_of_the_options_columns(book):
    rows = [tuple(row) for row in book["About"].iter_rows(values_only=True)]
    start = rows.index(("Column", "Meaning", "Unit", "Plan column"))
    dictionary = {r[0]: r[1:] for r in rows[start + 1 : start + 1 + len(OPTION_COLUMNS)]}
    assert list(dictionary) == [c.header for c in OPTION_COLUMNS]  # every column, in the sheet's order
    assert dictionary["Power (kW)"] == ("IT power at full load, before PUE.", "kW", "fleet_kw")
    assert dictionary["TTFT (ms)"] == (
        "Mean time to first token (a target with no percentile bounds it).",
        "ms",
        "ttft_s x 1000",
    )
    assert dictionary["Rank"][0] == next(c.description for c in OPTION_COLUMNS if c.header == "Rank")
    # and the plan and estimates sheets' columns after it
    assert ("Column", "Meaning", "Unit", None) in rows
    assert any(r[0] == "tpot_s" and r[2] == "s" for r in rows)


def test_numbers_never_touch_the_text_beside_them(book):
    """'512' (Output tokens, right-aligned) ran into 'h200-sxm' (GPU): text cells are indented, names wrap."""
    ws = book["options"]
    headers = {cell.value: cell.column_letter for cell in ws[1]}
    gpu = [c for c in ws[headers["GPU"]][2:]]
    assert gpu and all(c.alignment.indent == 1 and c.alignment.horizontal == "left" for c in gpu)
    assert all(c.alignment.indent == 1 and c.alignment.horizontal == "left" and c.alignment.wrap_text for c in ws[1])
    assert ws.row_dimensions[1].height == 45  # three lines: 'USD per M output tokens (decode)'
    assert export.header_width("USD per M output tokens (decode)") == 13  # "USD per M", "output tokens", "(decode)"
    assert export.header_width("Output tokens") == 8 and export.header_width("GPU") == 3


def test_power_shows_the_digits_the_report_shows(book):
    """Mixtral on mi300x draws 7 x 0.75 = 5.25 kW: the sheet showed 5.3 (a spreadsheet rounds half away
    from zero), the report 5.2 (Python rounds half to even). The report now rounds as the sheet shows it."""
    from llmsweep.report import f_kw

    ws = book["options"]
    headers = [cell.value for cell in ws[1]]
    rows = [dict(zip(headers, (c.value for c in row), strict=True)) for row in ws.iter_rows(min_row=3)]
    mixtral = next(r for r in rows if r["Model"] == "mistralai/Mixtral-8x7B-v0.1" and r["GPU"] == "mi300x")
    assert mixtral["Power (kW)"] == 5.25  # every digit kept in the cell
    column = headers.index("Power (kW)") + 1
    assert {ws.cell(i, column).number_format for i in range(3, ws.max_row + 1)} == {"#,##0.0"}
    assert f_kw(5.25) == "5.3" and f_kw(1.05) == "1.1" and f_kw(0.35 * 3) == "1.1" and f_kw(6.5) == "6.5"
    assert str(export.spreadsheet_round(2.0999999999999996, 1)) == "2.1"


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
    assert book.sheetnames == ["About", "options", "plan"]
    assert book["options"]["A1"].value == "Model" and book["options"].max_row > 2
