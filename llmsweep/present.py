"""Plain-text presentation for the terminal: human units for raw SI values, and small tables.

Only the CLI uses this; frames and files keep raw numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def fmt_bytes(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v / 1e9:,.2f} GB ({v / 2**30:,.2f} GiB)"


def fmt_seconds(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if v == 0:
        return "0 s"
    return f"{v * 1e3:,.2f} ms" if v < 1 else f"{v:,.2f} s"


def fmt_num(v: float | int | None, unit: str = "", digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, str):
        return v
    if isinstance(v, float) and abs(v) >= 1e6:
        s = f"{v:.3g}"
    elif isinstance(v, float):
        s = f"{v:,.{digits}f}"
    else:
        s = f"{v:,}"
    return f"{s} {unit}".rstrip()


def format_value(unit: str, v) -> str:
    """Format a raw value by its declared unit (columns.py)."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if unit == "bytes":
        return fmt_bytes(v)
    if unit == "s":
        return fmt_seconds(v)
    if unit == "FLOP":
        return fmt_num(v, "FLOP")
    if unit in ("FLOP/s", "bytes/s"):
        return "-" if v is None else f"{v / 1e12:,.1f} T{unit}" if unit == "FLOP/s" else f"{v / 1e9:,.0f} GB/s"
    if unit == "parameters":
        return "-" if v is None else f"{v / 1e9:,.2f} B"
    if unit in ("USD", "USD/h", "USD/year", "USD/month"):
        return "-" if v is None else f"${v:,.4f}" + unit[3:]
    if unit == "fraction":
        return fmt_num(v, "", 2)
    if v is None:
        return "-"
    if unit.endswith("/M tokens") and isinstance(v, float):  # cents and fractions of a kWh matter: 4 digits
        return f"{v:,.4g} {unit}"
    return fmt_num(v, unit if unit not in ("", "count") else "")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A left-aligned text table."""
    cells = [[str(h) for h in headers]] + [["-" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
