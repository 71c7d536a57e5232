"""What every benchmark format shares: a run's fields become rows in the measured-dev.csv schema
(readers._measurement checks and maps them). A row is (id, fields) or (id, the problem's text)."""

from __future__ import annotations

import math

Row = tuple[str, "dict | str"]


class FormatError(ValueError):
    """The whole file is not what its format says (one message, exit status 1)."""


def base(defaults: dict, source: str, framework: str, **fields) -> dict:
    """The configuration part of a row: what the file says, else what --gpu/--model/... give."""
    row = {
        "source": source,
        "gpu": defaults.get("gpu") or fields.pop("gpu", "") or "",
        "tp": defaults.get("tp", 1) if fields.get("tp") in (None, "") else fields.pop("tp"),
        "pp": defaults.get("pp", 1),
        "model": defaults.get("model") or fields.pop("model", "") or "",
        "weight_precision": defaults.get("precision") or fields.pop("weight_precision", "") or "bf16",
        "kv_precision": "",
        "batch": "",
        "input_len": "",
        "output_len": "",
        "framework": framework,
    }
    fields.pop("tp", None)
    fields.pop("gpu", None)
    fields.pop("model", None)
    fields.pop("weight_precision", None)
    row.update({k: v for k, v in fields.items() if v is not None})
    return row


def number(value) -> float | None:
    """A finite number, or None (absent, text, NaN, infinite, or an integer beyond a float's range)."""
    v = measured(value)
    return v if isinstance(v, float) else None


def measured(value) -> float | str | None:
    """A value as the file gives it: a finite number as a float, anything else present as its text
    ('nan', 'inf' for an integer beyond a float's range, 'abc'), which the row's checks then list in
    unmapped.csv with the reason; None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    try:
        v = float(value)
    except OverflowError:
        return "inf" if value > 0 else "-inf"
    return v if math.isfinite(v) else str(v)


def mean_length(value) -> int | str:
    """A dataset's mean length rounded to a whole token ('' when absent; a value that is no finite
    number as its text, for the row's checks to refuse)."""
    v = measured(value)
    return "" if v is None else v if isinstance(v, str) else math.floor(v + 0.5)


def metric_rows(rid: str, row: dict, values: list[tuple[str, object, str]]) -> list[Row]:
    """One row per (metric, value, unit) whose value is present (a value that is no finite number
    kept as its text: the row's checks list it in unmapped.csv)."""
    return [
        (f"{rid}:{metric}", {**row, "metric": metric, "value": measured(value), "unit": unit})
        for metric, value, unit in values
        if value is not None
    ]
