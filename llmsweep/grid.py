"""Axes + catalog -> the grid frame: one row per configuration, joined with the facts the
estimator needs (GPU, model, precision, efficiency profile).

The cross product is built lazily from small per-entity tables; no Python runs per row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product

import polars as pl

from llmsweep.catalog import Catalog, Profile
from llmsweep.catalog.engines import AUTO, auto_kv_precision, default_engine
from llmsweep.columns import SCHEMA
from llmsweep.estimate import add_batch_estimates, add_layout_estimates, add_length_estimates

MAX = "max"


@dataclass(frozen=True)
class Axes:
    """Resolved axis values (catalog ids, not user spellings). `batch` items are ints or "max"."""

    gpu: Sequence[str]
    model: Sequence[str]
    engine: Sequence[str] = (AUTO,)
    precision: Sequence[str] = (AUTO,)  # auto: each model's own format (see auto_precision)
    kv_precision: Sequence[str] = ("auto",)
    input_tokens: Sequence[int] = (1024,)
    output_tokens: Sequence[int] = (256,)
    batch: Sequence[int | str] = (1,)
    tp: Sequence[int] = (1,)
    pp: Sequence[int] = (1,)
    ep: Sequence[int] = (1,)
    dp_attention: Sequence[int] = (1,)
    # precision a model's name asked for (nvidia/...-FP8 -> fp8): what `auto` means for it
    named_precision: Mapping[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        n = 1
        for v in (
            self.gpu,
            self.engine,
            self.model,
            self.precision,
            self.kv_precision,
            self.input_tokens,
            self.output_tokens,
            self.batch,
            self.tp,
            self.pp,
            self.ep,
            self.dp_attention,
        ):
            n *= len(v)
        return n


def _frame(rows: list[dict]) -> pl.LazyFrame:
    cols = rows[0].keys()
    return pl.LazyFrame({k: pl.Series(k, [r[k] for r in rows], dtype=SCHEMA.get(k)) for k in cols})


def resolved_engines(catalog: Catalog, gpus: Sequence[str], engines: Sequence[str]) -> list[str]:
    """The engines the grid's rows run (`auto` resolved per GPU family)."""
    return list(
        dict.fromkeys(
            default_engine(catalog.gpu(g).family) if e == AUTO else e
            for g, e in product(dict.fromkeys(gpus), dict.fromkeys(engines))
        )
    )


def gpu_table(
    catalog: Catalog, gpus: Sequence[str], profile: Profile, engines: Sequence[str] = (AUTO,)
) -> pl.LazyFrame:
    """GPU facts x engines, with the efficiency profile in force for each pair (`auto` resolved
    to the GPU's default engine)."""
    rows = []
    for gid, axis_engine in product(dict.fromkeys(gpus), dict.fromkeys(engines)):
        g = catalog.gpu(gid)
        engine = default_engine(g.family) if axis_engine == AUTO else axis_engine
        eff = profile.for_family(g.family, engine)
        rows.append(
            {
                "gpu": gid,
                "engine": engine,
                "gpu_name": g.name or gid,
                "gpu_family": g.family,
                "gpu_memory_bytes": g.memory_bytes,
                "memory_bandwidth_bytes_per_s": g.memory_bandwidth_gbps * 1e9,
                "gpus_per_node": g.gpus_per_node,
                "scale_up_domain_gpus": g.nvlink_group,
                "scale_up_bandwidth_bytes_per_s": _bytes_per_s(g.scale_up_gbps_per_direction),
                "pcie_bandwidth_bytes_per_s": _bytes_per_s(g.pcie_gbps_per_direction),
                "scale_out_bandwidth_bytes_per_s": _bytes_per_s(g.scale_out_gbps_per_direction),
                "gpu_tdp_w": g.tdp_w,
                **eff.model_dump(),
                **{
                    f"band_{group}_{end}": (profile.bands.get(group) or [None, None])[i]
                    for group in ("decode", "prefill", "throughput")
                    for i, end in enumerate(("low", "high"))
                },
            }
        )
    return _frame(rows)


def model_table(catalog: Catalog, models: Sequence[str]) -> pl.LazyFrame:
    rows = []
    for mid in dict.fromkeys(models):
        a = catalog.model(mid).architecture
        rows.append(
            {
                "model": mid,
                "params_total": float(a.params_total),
                "params_active": float(a.params_active),
                "layers": a.layers,
                "hidden_size": a.hidden_size,
                "attention_heads": a.attention_heads,
                "kv_heads": a.kv_heads,
                "attention_head_dim": a.attention_head_dim,
                "decode_attention_head_dim": a.decode_attention_head_dim,
                "attention_topk": a.attention_topk,
                "indexer_flops_per_key": 2.0 * a.attention_layers * a.indexer_heads * a.indexer_head_dim,
                "indexer_elements_per_token": float(a.attention_layers * a.indexer_head_dim),
                "vocab_size": a.vocab_size,
                "max_context_tokens": a.max_context_tokens,
                "experts": a.experts,
                "experts_per_token": a.experts_per_token,
                "moe_layers": a.moe_layers,
                "expert_params": float(a.expert_params),
                "kv_elements_per_token": float(a.kv_elements_per_token),
                "kv_window_elements_per_token": float(a.kv_elements_per_token_window),
                "sliding_window_tokens": a.sliding_window,
                "attention_layers": a.attention_layers,
                "state_bytes_per_sequence": float(a.state_bytes_per_sequence),
                "mlp_active_width": a.mlp_active_width,
            }
        )
    return _frame(rows)


def auto_precision(catalog: Catalog, model: str, named: Mapping[str, str]) -> str:
    """What the precision `auto` means for a model: the format its name states (a -FP8, -AWQ,
    -NVFP4 repackaging), else its checkpoint's own (config.json's quantization_config), else bf16."""
    return named.get(model) or catalog.model(model).default_precision or "bf16"


def model_precisions(catalog: Catalog, axes: Axes) -> list[tuple[str, str]]:
    """(model, precision) pairs of the grid, `auto` resolved per model (pairs listed once)."""
    pairs = (
        (m, auto_precision(catalog, m, axes.named_precision) if p == AUTO else p)
        for m in dict.fromkeys(axes.model)
        for p in dict.fromkeys(axes.precision)
    )
    return list(dict.fromkeys(pairs))


def precision_table(catalog: Catalog, gpus: Sequence[str], precisions: Sequence[str]) -> pl.LazyFrame:
    """gpu x precision facts: compute dtype after fallback, peak rate, notes."""
    rates = []
    for gid, pid in product(dict.fromkeys(gpus), dict.fromkeys(precisions)):
        g, p = catalog.gpu(gid), catalog.precision(pid)
        flops, used = g.peak_flops(p.compute_dtype)
        note = None
        if flops and used != p.compute_dtype:
            note = f"{gid} has no published {p.compute_dtype} rate; matmuls use its {used} rate"
        rates.append(
            {
                "gpu": gid,
                "precision": pid,
                "bytes_per_weight": p.bytes_per_weight,
                "activation_bytes_per_element": p.activation_bytes,
                "compute_dtype": used,
                "peak_flops_per_s": flops,
                "notes": note,
            }
        )
    return _frame(rates)


def kv_table(
    catalog: Catalog,
    engines: Sequence[str],
    models: Sequence[str],
    precisions: Sequence[str],
    kv_precisions: Sequence[str],
) -> pl.LazyFrame:
    """engine x model x precision x kv_precision: the KV format in force (`kv_cache_format`; `auto`
    = the engine's own choice, catalog/engines.auto_kv_precision, else the 16-bit activation dtype)
    and its bytes per element."""
    rows = []
    for eid, mid, pid, kid in product(*(dict.fromkeys(x) for x in (engines, models, precisions, kv_precisions))):
        p = catalog.precision(pid)
        model = catalog.model(mid)
        modelopt = "hf_quant_config" in (model.default_precision_source or "")
        engine_choice = auto_kv_precision(eid, p.compute_dtype, model.architecture.is_mla, modelopt)
        fmt = (engine_choice or p.activation_dtype) if kid == "auto" else kid
        kv_bytes = p.activation_bytes if fmt == p.activation_dtype else catalog.precision(fmt).bytes_per_weight
        rows.append(
            {
                "engine": eid,
                "model": mid,
                "precision": pid,
                "kv_precision": kid,
                "kv_cache_format": fmt,
                "kv_bytes_per_element": kv_bytes,
            }
        )
    return _frame(rows)


def _bytes_per_s(gbps: float | None) -> float | None:
    return gbps * 1e9 if gbps else None


def _axis(name: str, values: Sequence) -> pl.LazyFrame:
    return pl.LazyFrame({name: pl.Series(name, list(values), dtype=SCHEMA[name])})


@dataclass(frozen=True)
class GridParts:
    """The grid as three small tables whose cross product is the grid: layouts (gpu x model x
    precision x kv_precision x tp x pp, with their facts), lengths (input x output) and batches."""

    layouts: pl.LazyFrame
    lengths: pl.LazyFrame
    batches: pl.LazyFrame
    exclude: Sequence[dict[str, Sequence]] = ()
    contexts: Sequence[int] | None = None

    @property
    def keep(self) -> pl.Expr | None:
        """Rows to keep (exclusion rules and the context axis), None = all."""
        return keep_filter(self.exclude, self.contexts)

    def _filter(self, frame: pl.LazyFrame) -> pl.LazyFrame:
        return frame if self.keep is None else frame.filter(self.keep)

    def frame(self) -> pl.LazyFrame:
        """The unestimated grid, one row per configuration."""
        return self._filter(self.layouts.join(self.lengths, **_CROSS).join(self.batches, **_CROSS))

    def estimate(self, chunk_rows: int | None = None) -> pl.LazyFrame:
        """The estimated grid, each stage on the smallest table it needs. With `chunk_rows`, the
        layouts are taken a slice at a time (each slice about that many rows), so a sink can stream
        a grid far larger than memory."""
        if chunk_rows is None:
            return self._estimate(self.layouts)
        layouts = self.layouts.collect()
        per_layout = self.lengths.select(pl.len()).collect().item() * self.batches.select(pl.len()).collect().item()
        step = max(1, chunk_rows // max(per_layout, 1))
        return pl.concat(
            [self._estimate(layouts.slice(i, step).lazy()) for i in range(0, max(layouts.height, 1), step)]
        )

    def options(self) -> pl.LazyFrame:
        """Layouts x lengths with their estimates, before any batch: one row per hardware option.
        Exclusion rules that name a batch do not apply (an option's batch is chosen later)."""
        keep = keep_filter([r for r in self.exclude if "batch" not in r], self.contexts)
        frame = add_length_estimates(add_layout_estimates(self.layouts).join(self.lengths, **_CROSS))
        return frame if keep is None else frame.filter(keep)

    def _estimate(self, layouts: pl.LazyFrame) -> pl.LazyFrame:
        lengths = add_length_estimates(add_layout_estimates(layouts).join(self.lengths, **_CROSS))
        return add_batch_estimates(self._filter(lengths.join(self.batches, **_CROSS)))


_CROSS = {"how": "cross", "maintain_order": "left_right"}


def keep_filter(exclude: Sequence[dict[str, Sequence]], contexts: Sequence[int] | None = None) -> pl.Expr | None:
    """Rows to keep: not matched by any exclusion rule (a rule matches when every axis it names
    has one of its values), and, for a `context` axis, input + output equal to a listed context."""
    keep: list[pl.Expr] = []
    for rule in exclude:
        matched = [_matches(axis, values) for axis, values in rule.items()]
        if matched:
            keep.append(~pl.all_horizontal(matched))
    if contexts is not None:
        keep.append((pl.col("input_tokens") + pl.col("output_tokens")).is_in(list(contexts)))
    return pl.all_horizontal(keep) if keep else None


def _matches(axis: str, values: Sequence) -> pl.Expr:
    if axis == "batch":
        ints = [v for v in values if v != MAX]
        hit = pl.col("batch").is_in(ints) & ~pl.col("batch_is_max")
        return (hit | pl.col("batch_is_max")) if MAX in values else hit
    if axis == "context":
        return (pl.col("input_tokens") + pl.col("output_tokens")).is_in(list(values))
    return pl.col(axis).is_in(list(values))


def grid_parts(
    catalog: Catalog,
    axes: Axes,
    profile: Profile,
    exclude: Sequence[dict[str, Sequence]] = (),
    contexts: Sequence[int] | None = None,
) -> GridParts:
    pairs = model_precisions(catalog, axes)
    precisions = [p for _, p in pairs]
    rates = precision_table(catalog, axes.gpu, precisions)
    kv = kv_table(catalog, resolved_engines(catalog, axes.gpu, axes.engine), axes.model, precisions, axes.kv_precision)
    by_model = pl.LazyFrame(
        {"model": [m for m, _ in pairs], "precision": [p for _, p in pairs]},
        schema={"model": SCHEMA["model"], "precision": SCHEMA["precision"]},
    )
    left = {"how": "left", "maintain_order": "left"}
    layouts = (
        gpu_table(catalog, axes.gpu, profile, axes.engine)
        .join(model_table(catalog, axes.model), **_CROSS)
        .join(by_model, on="model", how="inner", maintain_order="left_right")
        .join(_axis("kv_precision", dict.fromkeys(axes.kv_precision)), **_CROSS)
        .join(_axis("tp", dict.fromkeys(axes.tp)), **_CROSS)
        .join(_axis("pp", dict.fromkeys(axes.pp)), **_CROSS)
        .join(_axis("ep", dict.fromkeys(axes.ep)), **_CROSS)
        .join(_axis("dp_attention", dict.fromkeys(axes.dp_attention)), **_CROSS)
        .join(rates, on=["gpu", "precision"], **left)
        .join(kv, on=["engine", "model", "precision", "kv_precision"], **left)
    )
    lengths = _axis("input_tokens", dict.fromkeys(axes.input_tokens)).join(
        _axis("output_tokens", dict.fromkeys(axes.output_tokens)), **_CROSS
    )
    batch_is_max = [b == MAX for b in dict.fromkeys(axes.batch)]
    batches = pl.LazyFrame(
        {
            "batch": pl.Series([1 if b == MAX else int(b) for b in dict.fromkeys(axes.batch)], dtype=pl.Int64),
            "batch_is_max": batch_is_max,
        }
    )
    return GridParts(layouts, lengths, batches, tuple(exclude), contexts)


def expand(catalog: Catalog, axes: Axes, profile: Profile) -> pl.LazyFrame:
    """The unestimated grid frame: the cross product of the axes, joined with every fact column."""
    return grid_parts(catalog, axes, profile).frame()
