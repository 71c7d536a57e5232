"""The `exclude` rules: each rule's axis values resolved (every wrong value reported once, at its
own key path), a note for a value or a rule that matches no configuration of the grid, and a check
that the rules, alone or together, leave a configuration to estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import Any

from llmsweep.catalog.precisions import GENERIC_FP4
from llmsweep.columns import POOL_COLUMNS
from llmsweep.errors import LlmsweepError, did_you_mean
from llmsweep.grid import MAX, Axes, resolved_engines, weight_formats
from llmsweep.spec.models import AXES
from llmsweep.spec.resolve import _Resolver
from llmsweep.spec.serving import METHODS, MODES
from llmsweep.yamlfile import KeyPath

Rule = dict[str, tuple]
NAMES = {  # axes whose values are catalog names: what a value must be
    "gpu": ("gpu", "a GPU id or name"),
    "engine": ("engine", "an engine name"),
    "model": ("model", "a model id or name"),
    "precision": ("precision", "a precision name"),
    "kv_precision": ("precision", "a precision name or auto"),
}
SHOWN = 12  # grid values listed in a note


def resolve_exclusions(
    r: _Resolver, rules: Sequence[dict[str, Any]], axes: Axes, contexts: Sequence[int] | None, grid_ok: bool
) -> tuple[Rule, ...]:
    """Every rule resolved. With a grid that resolved whole (`grid_ok`; else its axes miss values and
    a check against them would be false), rules without a problem are also checked against it."""
    resolved: list[Rule] = []
    clean: list[int] = []
    for i, rule in enumerate(rules):
        before = len(r.problems)
        resolved.append(_exclusion(r, i, rule))
        if len(r.problems) == before:
            clean.append(i)
    if grid_ok and rules:
        grid = _GridValues(r, axes, contexts)
        for i in clean:
            _note_what_matches_nothing(r, i, rules[i], resolved[i], grid)
        _check_exclusions_leave_rows(r, [(i, resolved[i]) for i in clean], grid, len(clean) == len(rules))
        if len(clean) == len(rules):
            _check_workload_survives(r, [resolved[i] for i in clean], grid)
    return tuple(resolved)


def _check_workload_survives(r: _Resolver, rules: list[Rule], grid: _GridValues) -> None:
    """The workload's lengths are among the grid's (resolve._check_workload_lengths), but rules may drop
    every row of a model there: the plan would then size that model's fleet at other lengths, with
    nothing said. So, per model, a row at the workload's lengths must survive the rules."""
    import polars as pl

    w = r.spec.workload
    named = [rule for rule in rules if rule]
    if w is None or not named or w.input_tokens is None or w.output_tokens is None:
        return
    keys = {"model", "input_tokens", "output_tokens"} | {k for rule in named for k in rule}
    at = (pl.col("input_tokens") == str(w.input_tokens)) & (pl.col("output_tokens") == str(w.output_tokens))
    kept = grid.rows(keys).filter(at & ~pl.any_horizontal(_matches(rule) for rule in named))
    left = set(kept.select("model").unique().collect()["model"].to_list())
    lost = [m for m in grid.values("model") if str(m) not in left]
    if lost:
        r.fail(
            ("exclude",),
            f"the exclusion rules drop every configuration of {', '.join(map(str, lost))} at the workload's "
            f"lengths ({w.input_tokens:,} tokens in, {w.output_tokens:,} out), so its fleet would be sized at other "
            "lengths: narrow the rules, or change workload.input_tokens / output_tokens",
        )


def _exclusion(r: _Resolver, i: int, rule: dict[str, Any]) -> Rule:
    out: Rule = {}
    if not rule:
        r.fail(("exclude", i), "an empty rule would drop every configuration; name at least one axis")
    for key, value in rule.items():
        path: KeyPath = ("exclude", i, key)
        if key not in AXES:
            hint = did_you_mean(str(key), AXES, n=1)
            r.fail(
                path,
                f"unknown axis {key!r}" + (f"; did you mean {hint[0]!r}?" if hint else f" (axes: {', '.join(AXES)})"),
            )
            continue
        if value == []:
            r.fail(
                path,
                "an empty list matches no configuration, so this rule would never drop one: "
                f"list the {key} values to drop",
            )
            continue
        values = value if isinstance(value, list) else [value]
        resolved: list = []
        first: dict[Any, int] = {}
        for j, v in enumerate(values):
            at: KeyPath = (*path, j) if isinstance(value, list) else path
            got = _value(r, at, key, v)
            if got is None:
                continue
            if got in first:
                same = f" (both are {got})" if key in NAMES else ""
                r.fail(at, f"{v!r} repeats exclude[{i}].{key}[{first[got]}]{same}")
                continue
            first[got] = j
            resolved.append(got)
        out[key] = tuple(resolved)
    return out


def _value(r: _Resolver, at: KeyPath, key: str, v: Any) -> Any:
    """One value of a rule as the grid's rows hold it, or None after reporting what is wrong with it."""
    if key in NAMES:
        kind, what = NAMES[key]
        if not isinstance(v, str):
            r.fail(at, f"expected {what}, got {v!r}")
        elif key == "engine" and v.strip().lower() == "auto":
            r.fail(at, "exclude rules name engines (vllm, trtllm, ...), not auto")
        elif key == "kv_precision" and v.strip().lower() == "auto":
            return "auto"
        else:
            try:
                rid = getattr(r.catalog, f"resolve_{kind}")(v).id
            except LlmsweepError as e:
                r.fail(at, str(e))
                return None
            if rid != GENERIC_FP4:
                return rid
            if key == "kv_precision":  # as the grid reads it
                return r.catalog.kv_format(rid).id
            r.fail(
                at,
                "exclude rules name a weight format (nvfp4, mxfp4), not fp4, which is each GPU vendor's own "
                "(nvfp4 on NVIDIA, mxfp4 on AMD): name the format, with the gpu if it is one GPU's",
            )
        return None
    if key in ("mode", "speculative"):
        choices = MODES if key == "mode" else METHODS
        kind = "mode" if key == "mode" else "method"
        name = v.strip().lower() if isinstance(v, str) else None
        if name in choices:
            return name
        hint = did_you_mean(name, choices, n=1) if name else []
        meant = f"; did you mean {hint[0]!r}?" if hint else ""
        r.fail(at, f"unknown {kind} {v!r}{meant} ({', '.join(choices)})")
        return None
    if key == "prefix_hit_rate":
        from llmsweep.limits import check

        problem = check("hit_rate", v)
        if problem:
            r.fail(at, f"a prefix hit rate {problem}")
            return None
        return float(v)
    if key == "batch" and isinstance(v, str) and v.strip().lower() == MAX:  # as the grid reads it
        return MAX
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v
    r.fail(at, f"expected a positive integer{' or max' if key == 'batch' else ''}, got {v!r}")
    return None


class _GridValues:
    """The values the grid's rows hold, per axis a rule may name. Some axes vary together: a GPU's
    engine (`auto` is the GPU's own) and a model's precision on it (`auto` is the model's own, `fp4`
    the GPU vendor's), the lengths (a `context` axis pairs inputs with outputs) and the serving mode
    with its pools (an aggregated row has none); `rows` takes each such block whole."""

    def __init__(self, r: _Resolver, axes: Axes, contexts: Sequence[int] | None):
        self.axes = axes
        lengths = [
            (i, o, i + o)
            for i, o in product(axes.input_tokens, axes.output_tokens)
            if contexts is None or i + o in contexts
        ]
        engines = [(g, resolved_engines(r.catalog, [g], [e])[0]) for g, e in product(axes.gpu, axes.engine)]
        formats = weight_formats(r.catalog, axes)
        self.blocks: dict[tuple[str, ...], list[tuple]] = {
            ("gpu", "engine", "model", "precision"): [
                (g, e, m, p) for g, e in engines for on, m, p, _ in formats if on == g
            ],
            ("input_tokens", "output_tokens", "context"): lengths,
        }
        # worker counts the sweep leaves to the plan (plan/inputs.searched_axes): the plan tries others
        self.searched = {
            f"{key}_workers"
            for key in ("prefill", "decode")
            if axes.disaggregated
            and (getattr(r.spec.grid, key) is None or "workers" not in getattr(r.spec.grid, key).model_fields_set)
        }

    def values(self, key: str) -> tuple:
        """Every value of `key` in the grid's rows (None: a pool axis of an aggregated row)."""
        for block, rows in self.blocks.items():
            if key in block:
                return tuple(dict.fromkeys(row[block.index(key)] for row in rows))
        if key == "speculative":
            return tuple(dict.fromkeys(s.method for s in self.axes.speculative))
        if key in POOL_COLUMNS:
            pools = self._pool(key) if self.axes.disaggregated else ()
            return pools + ((None,) if "aggregated" in self.axes.mode else ())
        return tuple(getattr(self.axes, key))

    def _pool(self, key: str) -> tuple:
        """A pool axis of the disaggregated rows: the worker counts, or a prefill worker's layout."""
        if key in ("prefill_workers", "decode_workers"):
            return tuple(getattr(self.axes, key))
        return tuple(self.axes.prefill_layout(key.removeprefix("prefill_")))

    def rows(self, keys: set[str]):
        """The distinct combinations of `keys` that the grid's rows hold, as a polars LazyFrame of text."""
        import polars as pl

        def frame(columns: Sequence[str], rows: Sequence[tuple]) -> pl.LazyFrame:
            rows = list(dict.fromkeys(rows))
            return pl.LazyFrame(
                {c: pl.Series(c, [_text(row[n]) for row in rows], dtype=pl.String) for n, c in enumerate(columns)}
            )

        parts: list[pl.LazyFrame] = []
        left = set(keys)
        for block, rows in self.blocks.items():
            named = [k for k in block if k in left]
            if named:
                parts.append(frame(named, [tuple(row[block.index(k)] for k in named) for row in rows]))
                left -= set(named)
        serving = sorted(left & {"mode", *POOL_COLUMNS})
        if serving:
            parts.append(frame(serving, self._serving(serving)))
            left -= set(serving)
        parts += [frame([k], [(v,) for v in self.values(k)]) for k in sorted(left)]
        out = parts[0]
        for part in parts[1:]:
            out = out.join(part, how="cross")
        return out

    def _serving(self, keys: Sequence[str]) -> list[tuple]:
        """Rows of (mode and) pool axes: an aggregated row has no pools, a disaggregated one each pairing."""
        a = self.axes
        out: list[tuple] = []
        if "aggregated" in a.mode:
            out.append(tuple("aggregated" if k == "mode" else None for k in keys))
        if a.disaggregated:
            out += list(product(*(("disaggregated",) if k == "mode" else self._pool(k) for k in keys)))
        return out


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


def _shown(values: Sequence) -> str:
    shown = ", ".join(str(v) for v in values[:SHOWN])
    return shown + (f", ... ({len(values) - SHOWN} more)" if len(values) > SHOWN else "")


def _note_what_matches_nothing(r: _Resolver, i: int, rule: dict[str, Any], resolved: Rule, grid: _GridValues) -> None:
    """A value no row of the grid holds, or a rule whose values no row holds together, drops nothing:
    valid (a rule kept for a value taken off the grid), but likely a slip, so `validate` and `run` say so."""
    noted = False
    for key, vals in resolved.items():
        if key in grid.searched:
            continue
        have = [v for v in grid.values(key) if v is not None]
        for j, v in enumerate(vals):
            if v in have:
                continue
            at: KeyPath = ("exclude", i, key, j) if isinstance(rule[key], list) else ("exclude", i, key)
            hint = did_you_mean(str(v), [str(h) for h in have], n=1) if key in NAMES else []
            if have:
                message = f"{v} is not among the grid's {key} values ({_shown(have)}), so it matches no configuration"
            elif key in POOL_COLUMNS:
                message = f"{v} matches no configuration: {key} is a disaggregated pool's, and the grid has none"
            else:
                message = f"{v} matches no configuration: the grid has no {key}"
            r.notes.append(str(r.doc.problem(at, message + (f"; did you mean {hint[0]!r}?" if hint else ""))))
            noted = True
    if noted or set(resolved) & grid.searched:
        return
    if grid.rows(set(resolved)).filter(_matches(resolved)).head(1).collect().height == 0:
        r.notes.append(
            str(
                r.doc.problem(
                    ("exclude", i),
                    "no configuration of the grid has all of this rule's values together, so it drops nothing "
                    "(" + ", ".join(f"{k}: {_shown(v)}" for k, v in resolved.items()) + ")",
                )
            )
        )


def _matches(rule: Rule):
    import polars as pl

    return pl.all_horizontal(pl.col(k).is_in([_text(v) for v in vals]).fill_null(False) for k, vals in rule.items())


def _check_exclusions_leave_rows(r: _Resolver, rules: list[tuple[int, Rule]], grid: _GridValues, whole: bool) -> None:
    """A rule that matches every row drops the whole grid: `run` would refuse the sweep, so `validate`
    must too. Rules together only when every rule is known (`whole`): without one, the rest may
    well leave rows that it would drop."""
    alone = False
    for i, rule in rules:
        if rule and grid.rows(set(rule)).filter(~_matches(rule)).head(1).collect().height == 0:
            r.fail(("exclude", i), "the exclusion rules leave no configuration to estimate (this rule drops every one)")
            alone = True
    named = [rule for _, rule in rules if rule]
    if alone or not whole or len(named) < 2:
        return
    import polars as pl

    dropped = pl.any_horizontal(_matches(rule) for rule in named)
    if grid.rows({k for rule in named for k in rule}).filter(~dropped).head(1).collect().height == 0:
        r.fail(
            ("exclude",),
            f"the exclusion rules leave no configuration to estimate (together, the {len(named)} rules drop every one)",
        )
