"""Writers for the result files: CSV, Parquet, XLSX and manifest.json (into the folder that
`outfolder.atomic_folder` swaps in whole). Same input, same bytes out: no timestamps."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import tempfile
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import polars as pl

from llmsweep.columns import BY_NAME, OPTION_COLUMNS
from llmsweep.errors import LlmsweepError

if TYPE_CHECKING:
    from llmsweep.about import Line

XLSX_MAX_ROWS = 100_000  # beyond this a spreadsheet is the wrong tool: use the CSV or Parquet
_XLSX_FORMATS = {
    "bytes": "#,##0",
    "bytes/s": "#,##0",
    "FLOP": "0.00E+00",
    "FLOP/s": "0.00E+00",
    "FLOP/byte": "#,##0.0",
    "s": "0.000000",
    "tokens/s": "#,##0.0",
    "fraction": "0.00",
    "W": "#,##0",
    "parameters": "#,##0",
    "experts": "0.00",
    "USD": "$#,##0.00",
    "USD/year": "$#,##0.00",
    "USD/month": "$#,##0.00",
    "USD/h": "$#,##0.000",
    "USD/M tokens": "$#,##0.0000",
    "kW": "#,##0.0",
    "ms": "#,##0",
    "µs": "#,##0",
    "GPUs": "#,##0",
    "servers": "#,##0",
    "racks": "#,##0",
    "sequences": "#,##0",
    "workers": "#,##0",
    "tokens": "#,##0",
    "years": "0.0#",  # 3.0 or 3.25 (Excel shows 0.## as "3.")
    "requests/s": "#,##0.00",
    "requests": "#,##0.0",
    "tokens/J": "#,##0.00",
    "tokens/s/kW": "#,##0.0",
    "kWh/M tokens": "#,##0.000",
}


# Cells a spreadsheet reads as a formula (OWASP "CSV injection"): = + - @, and tab / carriage return,
# which some spreadsheets skip before looking for one of those.
FORMULA_START = r"^[=+\-@\t\r]"
_TEXT_DTYPES = (pl.String, pl.Categorical, pl.Enum)
Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def safe_csv_frame(frame: Frame) -> Frame:
    """`frame` with every text cell that a spreadsheet would run as a formula (it starts with
    = + - @, a tab or a carriage return) prefixed with an apostrophe, so a GPU or model named
    `=HYPERLINK(...)` opens as text. Only text columns change (they become String): numbers such
    as -1.5 in numeric columns stay numbers. Use it for every CSV a person may open."""
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    text = [name for name, dtype in schema.items() if isinstance(dtype, _TEXT_DTYPES)]
    if not text:
        return frame
    return frame.with_columns(
        pl.when(pl.col(n).cast(pl.String).str.contains(FORMULA_START))
        .then(pl.lit("'") + pl.col(n).cast(pl.String))
        .otherwise(pl.col(n).cast(pl.String))
        .alias(n)
        for n in text
    )


def safe_cell(value: object) -> object:
    """One cell for a CSV written outside polars: text a spreadsheet would run gets a leading '."""
    return f"'{value}" if isinstance(value, str) and re.match(FORMULA_START, value) else value


def write_csv(frame: pl.LazyFrame | pl.DataFrame, path: Path) -> None:
    """Plain numbers (full precision), a header of documented column names, true/false, empty = null;
    text cells that a spreadsheet would run as formulas are neutralised (`safe_csv_frame`)."""
    safe_csv_frame(frame.lazy()).sink_csv(path, include_header=True, null_value="")


def write_parquet(frame: pl.LazyFrame, path: Path) -> None:
    frame.sink_parquet(path, compression="zstd", statistics=True)


XLSX_MAX_WIDTH = 60  # characters: longer text wraps off the edge rather than making a column a page wide
HEADER_LINES = 3  # a long column name wraps onto up to this many lines, so it does not widen its column
ROW_POINTS = 15  # the height of one line of text at the default 11-point font


def _shown(v, unit: str | None) -> str:
    """Roughly what a cell shows under its number format (_XLSX_FORMATS), to size its column."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, bool):
        return "FALSE" if not v else "TRUE"
    if not isinstance(v, int | float):
        return str(v)
    fmt = _XLSX_FORMATS.get(unit or "", "")
    if not fmt:
        return f"{v:,}" if isinstance(v, int) else f"{v:.6g}"
    if "E+" in fmt:
        return f"{v:.2E}"
    if fmt.endswith("#"):  # 0.0# : one or two decimals
        return f"{v:.2f}"[:-1] + f"{v:.2f}"[-1:].replace("0", "")
    decimals = fmt.split(".")[1].count("0") if "." in fmt else 0
    text = f"{v:,.{decimals}f}" if "#,##" in fmt else f"{v:.{decimals}f}"
    return ("$" if fmt.startswith("$") else "") + text


def wrapped(text: str, width: int) -> list[str]:
    """`text` broken at spaces into lines of at most `width` characters (a longer word on its own line),
    as a spreadsheet wraps a cell."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def header_width(name: str) -> int:
    """The narrowest width, at least 8 characters (or the name's longest word), that shows a column name
    in at most HEADER_LINES lines."""
    width = max(max((len(w) for w in name.split()), default=0), min(len(name), 8))
    while len(wrapped(name, width)) > HEADER_LINES:
        width += 1
    return width


def column_widths(frame: pl.DataFrame, units: list[str | None]) -> list[int]:
    """Per column: the widest of its name (wrapped onto up to HEADER_LINES lines), its unit and what its
    cells show, + 2, at most XLSX_MAX_WIDTH (so no cell shows ### and no model name is cut)."""
    widths = []
    for name, unit in zip(frame.columns, units, strict=True):
        values = frame[name].drop_nulls().unique().to_list() if frame.height else []
        longest = max((len(_shown(v, unit)) for v in values), default=0)
        widths.append(min(max(header_width(name), len(unit or ""), longest) + 2, XLSX_MAX_WIDTH))
    return widths


# Characters of column width a landscape A4 page shows at about 8 points (11-point text at 70 %). Every
# sheet prints on A4 landscape, which any office printer takes (A3 was shrunk to about 6 points on one):
# a sheet wider than a page on as many pages across as keep that size, the leading columns that name a
# row (model, lengths, GPU, offer) repeated on each.
A4_CHARACTERS = 200
KEY_COLUMNS = 5  # at most, and within KEY_SHARE of a page
KEY_SHARE = 0.5


def print_layout(widths: list[int]) -> tuple[int, int, int]:
    """(paper size, pages wide, leading columns repeated on each page) for a sheet of these column
    widths: A4 (9), landscape; one page wide if it fits, else the first columns (at most KEY_COLUMNS,
    within KEY_SHARE of the page) repeat and the rest spread over ceil(rest / (A4_CHARACTERS - keys))
    pages, so the print stays at about 8 points."""
    total = sum(widths)
    if total <= A4_CHARACTERS:
        return 9, 1, 0
    keys, key_width = 0, 0
    for w in widths[:KEY_COLUMNS]:
        if key_width + w > KEY_SHARE * A4_CHARACTERS:
            break
        keys, key_width = keys + 1, key_width + w
    return 9, math.ceil((total - key_width) / (A4_CHARACTERS - key_width)), keys


HEADER_TITLE_CHARACTERS = 120  # of the sweep's title in a page header (Excel allows 255 in all)


def page_header(title: str) -> str:
    """The page header: the sweep's title on the left, the sheet's name (&A) on the right. The title is
    user text: control characters become spaces, & is doubled (a lone & starts a header code), and an &
    before G or [ (which xlsxwriter would count as a picture) is a full-width ＆."""
    text = " ".join(re.sub(r"[\x00-\x1f\x7f]", " ", title).split())
    if len(text) > HEADER_TITLE_CHARACTERS:
        text = text[: HEADER_TITLE_CHARACTERS - 1].rstrip() + "…"
    text = re.sub(r"&(?=[G\[])", "＆", text).replace("&", "&&")
    return f"&L{text}&R&A"


PAGE_FOOTER = "&L&F&RPage &P of &N"  # the file's name; page X of Y


def spreadsheet_round(v: float, digits: int) -> Decimal:
    """`v` as a spreadsheet's number format of `digits` decimals shows it: read to 15 significant digits,
    then rounded half away from zero (5.25 kW shows as 5.3, where Python's format, rounding half to even,
    gives 5.2). The reports round with it wherever the workbook shows the same number."""
    return Decimal(f"{v:.15g}").quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)


def _text_format(text: str, plain, as_text):
    """A text cell's format: `as_text` (quote prefix) for text a spreadsheet would run as a formula."""
    return as_text if re.match(FORMULA_START, text) else plain


def write_xlsx(sheets: dict[str, pl.DataFrame], path: Path, about: Sequence[Line] = (), title: str = "") -> None:
    """For finance: an About sheet first when `about` is given (about.about_lines: the run, its targets,
    prices, notes and a column dictionary), then one sheet per table; column names (wrapped onto up to
    three lines), then a row of units, a frozen header, number formats by unit, columns as wide as their
    content, text indented from a number to its left; printed landscape at a legible size (print_layout),
    with the two header rows, and on a sheet wider than a page the columns naming each row, repeated on
    every page; every page headed by the sweep's title and the sheet's name and footed by the file's
    name and its page number of the sheet's pages."""
    import xlsxwriter

    for name, frame in sorted(sheets.items(), key=lambda item: -item[1].height):  # the largest first
        if frame.height > XLSX_MAX_ROWS:
            raise LlmsweepError(
                f"{frame.height:,} rows is more than an XLSX sheet should hold (limit {XLSX_MAX_ROWS:,}) in "
                f"sheet {name!r}; use the CSV or Parquet, or leave xlsx out of --format"
            )
    wb = xlsxwriter.Workbook(str(path), {"constant_memory": True, "nan_inf_to_errors": True})
    wb.set_properties({"created": dt.datetime(2000, 1, 1)})  # fixed: same input, same bytes
    # names and units indented as text is: a wrapped name never runs into the next
    bold = wb.add_format(
        {"bold": True, "bottom": 1, "text_wrap": True, "valign": "bottom", "indent": 1, "align": "left"}
    )
    unit_fmt = wb.add_format({"italic": True, "font_color": "#555555", "indent": 1, "align": "left"})
    # text a spreadsheet would run as a formula once someone edits its cell (= + - @, tab, CR): the
    # cell is text already; the quote prefix keeps it text when re-entered, as the CSV's apostrophe does.
    # Text is indented by a character, so a number right-aligned in the column before never touches it.
    text_fmt = wb.add_format({"indent": 1, "align": "left"})
    as_text = wb.add_format({"quote_prefix": True, "indent": 1, "align": "left"})
    formats = {unit: wb.add_format({"num_format": f}) for unit, f in _XLSX_FORMATS.items()}
    header = page_header(title)
    if about:
        _write_about(wb, about, header)
    option_units = {col.header: col.unit for col in OPTION_COLUMNS}  # options.csv's human headers
    for name, frame in sheets.items():
        ws = wb.add_worksheet(name)
        units = [BY_NAME[n].unit if n in BY_NAME else option_units.get(n) for n in frame.columns]
        widths = column_widths(frame, units)
        text_columns = [isinstance(t, _TEXT_DTYPES) for t in frame.dtypes]
        for j, (width, unit) in enumerate(zip(widths, units, strict=True)):
            ws.set_column(j, j, width, formats.get(unit) if unit else text_fmt if text_columns[j] else None)
        ws.freeze_panes(2, 0)
        ws.set_landscape()
        paper, wide, keys = print_layout(widths)
        ws.set_paper(paper)
        ws.fit_to_pages(wide, 0)  # legible pages wide, as many tall as it takes
        ws.repeat_rows(0, 1)  # the names and units on every printed page
        if keys:
            ws.repeat_columns(0, keys - 1)  # and what names the row, on every page across
        ws.set_header(header)
        ws.set_footer(PAGE_FOOTER)
        # constant_memory writes row by row: the names, then the units, then the data
        lines = max((len(wrapped(n, w - 2)) for n, w in zip(frame.columns, widths, strict=True)), default=1)
        ws.set_row(0, ROW_POINTS * lines)
        for j, n in enumerate(frame.columns):  # text cells, never formulas
            ws.write_string(0, j, n, bold)
        for j, unit in enumerate(units):
            ws.write_string(1, j, unit or "", unit_fmt)
        for i, row in enumerate(frame.iter_rows(), start=2):
            for j, v in enumerate(row):
                if v is None or (isinstance(v, float) and not math.isfinite(v)):
                    continue
                if isinstance(v, bool):
                    ws.write_boolean(i, j, v)
                elif isinstance(v, int | float):
                    ws.write_number(i, j, v)
                else:
                    text = str(v)
                    ws.write_string(i, j, text, as_text if re.match(FORMULA_START, text) else None)
    wb.close()


ABOUT_WIDTHS = (26, 84, 14, 30)  # label or column name; text (wrapped); unit or price; plan column
TEXT_PER_WIDTH = 1.1  # characters of prose a column's width holds (widths count digits, wider than most letters)


def _write_about(wb, about: Sequence[Line], header: str) -> None:
    """The About sheet: a title, then sections of labelled text and small tables (prices, the column
    dictionary), long text wrapped in its column, each row as tall as its longest cell's lines."""
    ws = wb.add_worksheet("About")
    top = {"valign": "top", "text_wrap": True}
    style = {
        "title": wb.add_format({"bold": True, "font_size": 14}),
        "section": wb.add_format({"bold": True, "font_size": 12, "bottom": 1, "valign": "bottom"}),
        "item": wb.add_format({**top, "bold": True}),
        "head": wb.add_format({"bold": True, "bottom": 1, "text_wrap": True}),
        "row": wb.add_format(top),
    }
    plain = wb.add_format(top)
    as_text = wb.add_format({**top, "quote_prefix": True})
    numbers = {unit: wb.add_format({**top, "num_format": f}) for unit, f in _XLSX_FORMATS.items()}
    for j, width in enumerate(ABOUT_WIDTHS):
        ws.set_column(j, j, width)
    ws.set_landscape()
    ws.set_paper(9)  # A4, one page wide: 154 characters print at about 9 points
    ws.fit_to_pages(1, 0)
    ws.set_header(header)
    ws.set_footer(PAGE_FOOTER)
    for i, line in enumerate(about):
        cells = line.cells[: len(ABOUT_WIDTHS)]
        height = max(
            (
                len(wrapped(str(v), round(w * TEXT_PER_WIDTH)))
                for v, w in zip(cells, ABOUT_WIDTHS, strict=False)
                if isinstance(v, str)
            ),
            default=1,
        )
        spacing = 1.6 if line.kind == "section" else 1.4 if line.kind == "title" else 1
        ws.set_row(i, ROW_POINTS * height * spacing)
        for j, v in enumerate(cells):
            if v is None or (isinstance(v, float) and not math.isfinite(v)):
                continue
            if isinstance(v, int | float) and not isinstance(v, bool):
                ws.write_number(i, j, v, numbers.get(line.unit or "", plain))
            else:
                text = str(v)
                first = style[line.kind] if j == 0 or line.kind == "head" else plain
                ws.write_string(i, j, text, _text_format(text, first, as_text))


def write_manifest(manifest: dict, path: Path) -> None:
    try:  # allow_nan=False: bare NaN / Infinity is not JSON (inputs are range-checked; a last guard)
        text = json.dumps(manifest, indent=2, sort_keys=False, default=str, allow_nan=False)
    except ValueError as e:
        raise LlmsweepError(f"{path.name}: a value is not a finite number ({e}); nothing was written") from None
    path.write_text(text + "\n", encoding="utf-8")


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` whole: write a temporary file beside it, then rename it into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
