"""The `exclude` rules: each rule's axis values resolved, and a check that the rules, alone or
together, leave a configuration to estimate.
"""

from __future__ import annotations

from typing import Any

from llmsweep.columns import POOL_COLUMNS
from llmsweep.errors import LlmsweepError, did_you_mean
from llmsweep.grid import MAX, Axes
from llmsweep.spec.models import AXES
from llmsweep.spec.resolve import _Resolver
from llmsweep.spec.serving import METHODS, MODES
from llmsweep.yamlfile import KeyPath


def _exclusion(r: _Resolver, i: int, rule: dict[str, Any]) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
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
        values = value if isinstance(value, list) else [value]
        resolved = []
        for v in values:
            if key == "engine" and str(v).strip().lower() == "auto":
                r.fail(path, "exclude rules name engines (vllm, trtllm, ...), not auto")
            elif key in ("gpu", "engine", "model", "precision") or (key == "kv_precision" and str(v).lower() != "auto"):
                kind = "precision" if key == "kv_precision" else key
                try:
                    resolved.append(getattr(r.catalog, f"resolve_{kind}")(str(v)).id)
                except LlmsweepError as e:
                    r.fail(path, str(e))
            elif key == "kv_precision":
                resolved.append("auto")
            elif key == "batch" and v == MAX:
                resolved.append(MAX)
            elif key in ("mode", "speculative"):
                choices = MODES if key == "mode" else METHODS
                name = str(v).strip().lower()
                if name in choices:
                    resolved.append(name)
                else:
                    hint = did_you_mean(name, choices, n=1)
                    kind = "mode" if key == "mode" else "method"
                    r.fail(
                        path,
                        f"unknown {kind} {v!r}"
                        + (f"; did you mean {hint[0]!r}?" if hint else "")
                        + f" ({', '.join(choices)})",
                    )
            elif key == "prefix_hit_rate":
                from llmsweep.limits import check

                problem = check("hit_rate", v)
                if problem:
                    r.fail(path, f"a prefix hit rate {problem}")
                else:
                    resolved.append(float(v))
            elif isinstance(v, int) and not isinstance(v, bool) and v > 0:
                resolved.append(v)
            else:
                r.fail(path, f"expected a positive integer{' or max' if key == 'batch' else ''}, got {v!r}")
        out[key] = tuple(resolved)
    return out


def _check_exclusions_leave_rows(r: _Resolver, exclude: tuple[dict[str, tuple], ...], axes: Axes, contexts) -> None:
    """A rule that names every value of each axis it mentions drops the whole grid: `run` would
    refuse the sweep, so `validate` must too."""

    def values(key: str) -> tuple:
        if key == "speculative":
            return tuple(s.method for s in axes.speculative)
        if key in POOL_COLUMNS:  # aggregated rows have none of them (None): no rule on them drops those
            layout = key not in ("prefill_workers", "decode_workers")
            pools = axes.prefill_layout(key.removeprefix("prefill_")) if layout else getattr(axes, key)
            return (tuple(pools) if axes.disaggregated else ()) + ((None,) if "aggregated" in axes.mode else ())
        return tuple(contexts if key == "context" and contexts is not None else getattr(axes, key, ()))

    alone = False
    for i, rule in enumerate(exclude):
        if rule and all(set(values(key)) <= set(vals) for key, vals in rule.items()):
            r.fail(("exclude", i), "the exclusion rules leave no configuration to estimate (this rule drops every one)")
            alone = True
    rules = [rule for rule in exclude if rule]
    if alone or len(rules) < 2 or r.problems:
        return
    # together: is any combination of the axes the rules name matched by none of them?
    import polars as pl

    keys = sorted({k for rule in rules for k in rule})
    grid = None
    for key in keys:
        axis = pl.LazyFrame({key: [str(v) for v in values(key)]})
        grid = axis if grid is None else grid.join(axis, how="cross")
    dropped = pl.any_horizontal(
        pl.all_horizontal(pl.col(k).is_in([str(v) for v in vals]) for k, vals in rule.items()) for rule in rules
    )
    if grid is not None and grid.filter(~dropped).head(1).collect().height == 0:
        r.fail(
            ("exclude",),
            f"the exclusion rules leave no configuration to estimate (together, the {len(rules)} rules drop every one)",
        )
