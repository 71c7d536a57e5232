"""`llmsweep diff OLD_RUN NEW_RUN`: what changed between two run folders, and what it did to the answer.

Inputs come from each run's manifest.json: the sweep file as it was run (grid, prices, targets,
traffic and every other key, compared key by key), the prices in force (the sweep's offers, or the
catalog's dated examples), the catalog facts used, the efficiency profile's values and the
versions. The answer comes from each run's plan.parquet, as options.csv shows it: per model x
lengths x GPU x offer, the best layout under the targets, with its rank, GPUs needed, USD per
month, TCO, TTFT and tokens/s per user; old, new and the change. Options present in one run only
are listed as added or removed; options where nothing changed are left out.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from llmsweep.errors import LlmsweepError
from llmsweep.publish.runs import Run, load_run

FORMATS = ("md", "html", "csv")
OPTION_KEY = ("model", "input_tokens", "output_tokens", "gpu", "offer")
# With serving modes the answer has a row per mode and speculative method too (finance.SERVING_GROUP);
# a run saved before them has neither column: it served aggregated, without speculation.
SERVING_KEY = {"mode": "aggregated", "speculative": "none"}
# (plan column, header, unit, scale to the unit shown)
ANSWER_FIELDS = (
    ("rank", "Rank", "", 1.0),
    ("fleet_gpus", "GPUs needed", "GPUs", 1.0),
    ("tco_usd_per_month", "USD per month", "USD", 1.0),
    ("tco_usd", "TCO", "USD", 1.0),
    ("ttft_s", "TTFT (ms)", "ms", 1e3),
    ("decode_tokens_per_s_per_seq", "Tokens/s per user", "tokens/s", 1.0),
)
LAYOUT = ("precision", "tp", "pp", "ep", "dp_attention", "batch")  # shown when the best layout changed
REL_TOL = 1e-9  # equal within rounding of the float arithmetic
# input sections: (title, manifest part)
SECTIONS = (
    ("llmsweep", "versions"),
    ("sweep", "the sweep file (grid, prices, targets, traffic)"),
    ("prices", "prices in force"),
    ("catalog", "catalog facts"),
    ("profile", "efficiency profile"),
)


@dataclass(frozen=True)
class Change:
    section: str  # one of SECTIONS
    key: str  # dotted path
    old: object
    new: object


@dataclass(frozen=True)
class OptionChange:
    key: tuple  # OPTION_KEY values, then SERVING_KEY's
    status: str  # changed, added, removed
    old: dict  # field -> value (empty when added)
    new: dict

    def changed(self, name: str) -> bool:
        return not _same(self.old.get(name), self.new.get(name))


@dataclass
class DiffResult:
    old: Run
    new: Run
    inputs: list[Change] = field(default_factory=list)
    options: list[OptionChange] = field(default_factory=list)
    unchanged_options: int = 0

    def render(self, fmt: str) -> str:
        if fmt == "csv":
            return to_csv(self)
        if fmt == "html":
            return to_html(self)
        return to_markdown(self)


def diff(old: str | Path, new: str | Path) -> DiffResult:
    """Compare two run folders (both checked as `llmsweep report` checks a run)."""
    if os.path.exists(old) and os.path.exists(new) and os.path.realpath(old) == os.path.realpath(new):
        raise LlmsweepError(f"{new}: is the same run as {old}; give two different run folders")
    a, b = load_run(old), load_run(new)
    result = DiffResult(a, b)
    result.inputs = input_changes(a, b)
    result.options, result.unchanged_options = option_changes(a, b)
    return result


# -- inputs --------------------------------------------------------------------------------------------------
def flatten(value, prefix: str = "") -> dict[str, object]:
    """{dotted path: value} of nested mappings; lists and scalars are values as a whole."""
    if isinstance(value, dict) and value:
        out: dict[str, object] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value} if prefix else {}


def _parts(run: Run) -> dict[str, dict]:
    m = run.manifest
    versions = {k: m.get(k) for k in ("llmsweep_version", "polars_version", "python_version")}
    versions["sweep.sha256"] = m["sweep"]["sha256"]
    versions["sweep.file"] = m["sweep"]["file"]
    return {
        "llmsweep": versions,
        "sweep": flatten(run.spec),
        "prices": flatten({**m.get("prices", {}), "finance": m.get("finance", {}), "rank_by": m.get("rank_by")}),
        "catalog": flatten(m["catalog"]),
        "profile": flatten(m["profile"]),
    }


def _groups(run: Run) -> dict[str, dict[str, str]]:
    """Per section, the entries that appear or go as a whole (a price offer, a GPU, model or
    precision of the catalog) with a one-line summary: listed once, not field by field."""
    m = run.manifest
    prices = {
        k: f"{fmt_value(v.get('usd_per_gpu_hour'))} USD per GPU-hour ({v.get('source', '')})".replace(" ()", "")
        for k, v in m.get("prices", {}).items()
        if isinstance(v, dict)
    }
    catalog = {
        f"{kind}.{k}": str(v.get("name") or k) if isinstance(v, dict) else k
        for kind, entries in m["catalog"].items()
        if isinstance(entries, dict)
        for k, v in entries.items()
    }
    return {"prices": prices, "catalog": catalog}


def input_changes(a: Run, b: Run) -> list[Change]:
    old, new = _parts(a), _parts(b)
    groups_a, groups_b = _groups(a), _groups(b)
    out = []
    for section, _ in SECTIONS:
        x, y = old[section], new[section]
        ga, gb = groups_a.get(section, {}), groups_b.get(section, {})
        whole = {g for g in ga.keys() ^ gb.keys()}  # present in one run only
        for g in [*ga, *(k for k in gb if k not in ga)]:
            if g in whole:
                out.append(Change(section, g, ga.get(g, _ABSENT), gb.get(g, _ABSENT)))
        for key in [*x, *(k for k in y if k not in x)]:
            if any(key == g or key.startswith(g + ".") for g in whole):
                continue
            if not _same(x.get(key, _ABSENT), y.get(key, _ABSENT)):
                out.append(Change(section, key, x.get(key, _ABSENT), y.get(key, _ABSENT)))
    return out


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0) or a == b
    return a == b


# -- the answer ----------------------------------------------------------------------------------------------
def _rows(run: Run) -> dict[tuple, dict]:
    frame = run.options()
    if frame.height == 0:
        return {}
    names = [f for f, *_ in ANSWER_FIELDS] + list(LAYOUT)
    out = {}
    for r in frame.iter_rows(named=True):
        key = tuple(r[k] for k in OPTION_KEY) + tuple(r.get(k) or v for k, v in SERVING_KEY.items())
        row = {n: r.get(n) for n in names}
        out[key] = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
    return out


def option_changes(a: Run, b: Run) -> tuple[list[OptionChange], int]:
    old, new = _rows(a), _rows(b)
    changes, same = [], 0
    for key in [*old, *(k for k in new if k not in old)]:
        if key not in new:
            changes.append(OptionChange(key, "removed", old[key], {}))
        elif key not in old:
            changes.append(OptionChange(key, "added", {}, new[key]))
        elif any(not _same(old[key].get(n), new[key].get(n)) for n in old[key]):
            changes.append(OptionChange(key, "changed", old[key], new[key]))
        else:
            same += 1
    return changes, same


# -- presentation ------------------------------------------------------------------------------------------
def fmt_value(v) -> str:
    if v is _ABSENT:
        return "(absent)"
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v == int(v) and abs(v) < 1e15:
            return f"{int(v):,}"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 1:
            return f"{v:,.2f}"
        return f"{v:.4g}"
    if isinstance(v, list | dict):
        return json.dumps(v, ensure_ascii=False, default=str)
    return str(v)


def _scaled(v, scale: float):
    return v * scale if isinstance(v, int | float) and not isinstance(v, bool) and scale != 1.0 else v


def change_text(old, new) -> str:
    """'+1,234, +5.2 %' for numbers; '' otherwise."""
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new)):
        return ""
    d = new - old
    sign = "+" if d > 0 else ""
    text = sign + fmt_value(float(d) if isinstance(d, float) else d)
    if old:
        text += f", {sign}{d / abs(old) * 100:.1f} %"
    return text


def cell(o: OptionChange, name: str, scale: float) -> str:
    old, new = _scaled(o.old.get(name), scale), _scaled(o.new.get(name), scale)
    if o.status == "added":
        return fmt_value(new)
    if o.status == "removed":
        return fmt_value(old)
    if _same(old, new):
        return fmt_value(new)
    delta = change_text(old, new)
    return f"{fmt_value(old)} → {fmt_value(new)}" + (f" ({delta})" if delta else "")


def layout_note(o: OptionChange) -> str:
    if o.status != "changed" or all(_same(o.old.get(k), o.new.get(k)) for k in LAYOUT):
        return ""
    show = lambda r: " ".join(f"{k} {fmt_value(r.get(k))}" for k in LAYOUT)  # noqa: E731
    return f"best layout {show(o.old)} → {show(o.new)}"


def summary(d: DiffResult) -> list[str]:
    counts = {s: sum(o.status == s for o in d.options) for s in ("changed", "added", "removed")}
    n = sum(counts.values())
    lines = [
        f"{len(d.inputs)} input{'s' if len(d.inputs) != 1 else ''} changed; "
        f"{n} option{'s' if n != 1 else ''} of the answer changed "
        f"({counts['changed']} changed, {counts['added']} added, {counts['removed']} removed), "
        f"{d.unchanged_options} unchanged."
    ]
    for which, run in (("old", d.old), ("new", d.new)):
        if run.missing:
            shown = ", ".join(run.missing[:8]) + (f" and {len(run.missing) - 8} more" if len(run.missing) > 8 else "")
            lines.append(
                f"The {which} run (llmsweep {run.manifest['llmsweep_version']}) has no {shown} in its plan.parquet "
                "(written by a different version): those values are empty there."
            )
    return lines


def _md(text: object) -> str:
    """Text from a sweep or catalog, shown as text in Markdown (never a link, an image or HTML)."""
    s = str(text).replace("\\", "\\\\").replace("\n", " ").replace("\r", " ")
    for ch in "|<>[]*_`#!~&":
        s = s.replace(ch, "\\" + ch)
    return s


def context(d: DiffResult) -> dict:
    sections = []
    for sid, title in SECTIONS:
        items = [c for c in d.inputs if c.section == sid]
        sections.append(
            {
                "id": sid,
                "title": title,
                "changes": [{"key": c.key, "old": fmt_value(c.old), "new": fmt_value(c.new)} for c in items],
            }
        )
    options = []
    for o in d.options:
        model, s_in, s_out, gpu, offer, mode, spec = o.key
        serving = [x for x in (mode, spec) if x not in SERVING_KEY.values()]
        options.append(
            {
                "model": model,
                "lengths": f"{s_in:,} in / {s_out:,} out",
                "gpu": gpu,
                "offer": offer if not serving else f"{offer} · {' · '.join(serving)}",
                "status": o.status,
                "cells": [
                    {"text": cell(o, f, scale), "changed": o.status == "changed" and o.changed(f)}
                    for f, _, _, scale in ANSWER_FIELDS
                ],
                "note": layout_note(o),
            }
        )
    return {
        "old": {"folder": str(d.old.folder), "title": d.old.title, "version": d.old.manifest["llmsweep_version"]},
        "new": {"folder": str(d.new.folder), "title": d.new.title, "version": d.new.manifest["llmsweep_version"]},
        "summary": summary(d),
        "sections": sections,
        "headers": [h for _, h, _, _ in ANSWER_FIELDS],
        "options": options,
    }


def to_markdown(d: DiffResult) -> str:
    c = context(d)
    out = [f"{MD_TITLE}{_md(c['old']['folder'])} → {_md(c['new']['folder'])}", "", *c["summary"], ""]
    for s in c["sections"]:
        out += [f"## Inputs: {s['title']}", ""]
        if not s["changes"]:
            out += ["No change.", ""]
            continue
        out += ["| key | old | new |", "| --- | --- | --- |"]
        out += [f"| {_md(x['key'])} | {_md(x['old'])} | {_md(x['new'])} |" for x in s["changes"]]
        out.append("")
    out += ["## The answer: options that changed", ""]
    if not c["options"]:
        out += ["No option changed.", ""]
    else:
        out += ["| Model | Lengths | GPU | Offer | Status | " + " | ".join(c["headers"]) + " |"]
        out += ["| --- " * (5 + len(c["headers"])) + "|"]
        for o in c["options"]:
            cells = [_md(x["text"]) for x in o["cells"]]
            status = o["status"] + (f": {o['note']}" if o["note"] else "")
            row = [_md(o["model"]), _md(o["lengths"]), _md(o["gpu"]), _md(o["offer"]), _md(status), *cells]
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    return "\n".join(out)


def to_html(d: DiffResult) -> str:
    from llmsweep.report import environment

    return environment(None, html=True).get_template("diff.html.j2").render(**context(d))


CSV_HEADER = ("section", "key", "model", "input_tokens", "output_tokens", "gpu", "offer", "mode", "speculative")
CSV_HEADER += ("status", "field")
CSV_HEADER += ("old", "new", "change")

GENERATOR = '<meta name="generator" content="llmsweep diff">'  # in diff.html.j2's head
MD_TITLE = "# What changed: "


def written_by_diff(head: str) -> bool:
    """Whether a file's first 4 KiB are a diff llmsweep wrote (any format): what `diff -o` may replace."""
    first = head.split("\n", 1)[0]
    return first.startswith(MD_TITLE) or first == ",".join(CSV_HEADER) or GENERATOR in head


def _raw(v) -> object:
    if v is _ABSENT or v is None:
        return ""
    if isinstance(v, list | dict):
        return json.dumps(v, ensure_ascii=False, default=str)
    return v


def to_csv(d: DiffResult) -> str:
    """One row per changed input (section, key, old, new) and per changed field of an option
    (model .. offer, field, old, new, change = new - old), raw values in the plan's SI units."""
    from llmsweep.export import safe_cell

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_HEADER)
    for c in d.inputs:
        row = (c.section, c.key, "", "", "", "", "", "", "", "changed", "", _raw(c.old), _raw(c.new), "")
        w.writerow([safe_cell(x) for x in row])
    for o in d.options:
        for name in [f for f, *_ in ANSWER_FIELDS] + list(LAYOUT):  # and the best layout, when it moved
            if o.status == "changed" and not o.changed(name):
                continue
            old, new = o.old.get(name), o.new.get(name)
            nums = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new))
            delta = new - old if nums else ""
            row = ("answer", "", *o.key, o.status, name, _raw(old), _raw(new), delta)
            w.writerow([safe_cell(x) for x in row])
    return buf.getvalue()
