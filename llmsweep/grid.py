"""Axes + catalog -> the grid frame: one row per configuration, joined with the facts the
estimator needs (GPU, model, precision, efficiency profile).

The cross product is built lazily from small per-entity tables; no Python runs per row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import product

import polars as pl

from llmsweep.catalog import Catalog, Profile
from llmsweep.catalog.engines import (
    AUTO,
    auto_kv_precision,
    default_engine,
    gpu_platform,
    mtp_draft_tokens,
    platform_reason,
)
from llmsweep.catalog.gpus import FALLBACK
from llmsweep.columns import BAND_GROUPS, POOL_COLUMNS, SCHEMA
from llmsweep.estimate import add_batch_estimates, add_layout_estimates, add_length_estimates, disaggregated

MAX = "max"
# Rows of both serving modes share these columns, so a disaggregated row pairs a decode option with
# the prefill options of the same hardware, model, lengths and prefix cache (disaggregated.pair).
PAIR_KEYS = [
    "gpu",
    "engine",
    "model",
    "precision",
    "kv_precision",
    "input_tokens",
    "output_tokens",
    "prefix_hit_rate",
    "prefix_shared",
]


@dataclass(frozen=True)
class Speculation:
    """One speculative-decoding setting (estimate/speculative.py): `method` none, mtp, eagle or
    draft; k = `draft_tokens` (None for mtp: the engine's own default, catalog/engines.
    MTP_DRAFT_TOKENS); the per-token `acceptance` (None = the profile's default for the method) or
    `tokens_per_step` from per-position rates; `draft_model` (a catalog id) for draft."""

    method: str = "none"
    draft_tokens: int | None = 0
    acceptance: float | None = None
    tokens_per_step: float | None = None
    draft_model: str | None = None

    @property
    def label(self) -> str:
        """How reports name it: none, mtp k=1, eagle k=3 a=0.7, draft:<model> k=4 (mtp without k:
        "mtp", the engine's depth)."""
        if self.method == "none":
            return "none"
        name = f"draft:{self.draft_model}" if self.method == "draft" else self.method
        depth = "" if self.draft_tokens is None else f" k={self.draft_tokens}"
        given = f" a={self.acceptance:g}" if self.acceptance is not None else ""
        return f"{name}{depth}{given}"


NO_SPECULATION = Speculation()


def aggregated_defaults(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Serving-mode columns for a frame built without them (calibrate's configurations): aggregated,
    no speculative decoding, no prefix cache; columns the frame has are kept."""
    have = set(frame.collect_schema().names())
    none = speculation_table_row(NO_SPECULATION, None)
    values = {
        "mode": "aggregated",
        **dict.fromkeys(POOL_COLUMNS),
        **none,
        "prefix_hit_rate": 0.0,
        "prefix_shared": False,
    }
    return frame.with_columns(pl.lit(v, SCHEMA[k]).alias(k) for k, v in values.items() if k not in have)


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
    # serving modes (estimate/disaggregated.py, speculative.py, prefix.py)
    mode: Sequence[str] = ("aggregated",)
    prefill_workers: Sequence[int] = (1,)
    decode_workers: Sequence[int] = (1,)
    prefill_tp: Sequence[int] | None = None  # None: the grid's tp (and so on)
    prefill_pp: Sequence[int] | None = None
    prefill_ep: Sequence[int] | None = None
    prefill_dp_attention: Sequence[int] | None = None
    speculative: Sequence[Speculation] = (NO_SPECULATION,)
    prefix_hit_rate: Sequence[float] = (0.0,)
    prefix_shared: bool = False
    # precision a model's name asked for (nvidia/...-FP8 -> fp8): what `auto` means for it
    named_precision: Mapping[str, str] = field(default_factory=dict)

    def prefill_layout(self, name: str) -> Sequence[int]:
        """A prefill worker's layout axis (`tp`, `pp`, `ep`, `dp_attention`): its own, else the grid's."""
        own = getattr(self, f"prefill_{name}")
        return getattr(self, name) if own is None else own

    @property
    def disaggregated(self) -> bool:
        return "disaggregated" in self.mode

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
            self.speculative,
            self.prefix_hit_rate,
        ):
            n *= len(v)
        per_layout = int("aggregated" in self.mode)
        if self.disaggregated:
            pools = len(self.prefill_workers) * len(self.decode_workers)
            for name in ("tp", "pp", "ep", "dp_attention"):
                pools *= len(self.prefill_layout(name))
            per_layout += pools
        return n * per_layout


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
                "platform_reason": platform_reason(engine, gpu_platform(g.vendor, g.family)),
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
                    for group in BAND_GROUPS
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
                "embedding_params": float(a.embedding_params),
                "lm_head_params": float(a.lm_head_params),
                "tied_embeddings": a.tied_embeddings,
                "layers": a.layers,
                "tp_allreduces": a.tp_allreduces,
                "hidden_size": a.hidden_size,
                "moe_width": a.moe_width or a.hidden_size,
                "attention_heads": a.attention_heads,
                "kv_heads": a.kv_heads,
                "full_kv_heads": a.full_kv_heads or a.kv_heads,
                "window_fraction": a.window_attention_share,
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
                "chunked_window": a.window_kind == "chunked",
                "attention_layers": a.attention_layers,
                "state_bytes_per_sequence": float(a.state_bytes_per_sequence),
                "mlp_active_width": a.mlp_active_width,
            }
        )
    return _frame(rows)


def checkpoint_table(catalog: Catalog, pairs: Sequence[tuple[str, str]]) -> pl.LazyFrame:
    """model x precision pairs with the parameters the checkpoint keeps unconverted in that format
    (ModelEntry.kept_params: gpt-oss's attention and routers in mxfp4, 0 in any other format)."""
    pairs = list(dict.fromkeys(pairs))
    return pl.LazyFrame(
        {
            "model": [m for m, _ in pairs],
            "precision": [p for _, p in pairs],
            "unconverted_params": [float(catalog.model(m).kept_params(p)) for m, p in pairs],
        },
        schema={
            "model": SCHEMA["model"],
            "precision": SCHEMA["precision"],
            "unconverted_params": SCHEMA["unconverted_params"],
        },
    )


def auto_precision(catalog: Catalog, model: str, named: Mapping[str, str]) -> str:
    """What the precision `auto` means for a model: the format its name states (a -FP8, -AWQ,
    -NVFP4 repackaging), else its checkpoint's own (config.json's quantization_config), else bf16."""
    return named.get(model) or catalog.model(model).default_precision or "bf16"


def weight_formats(catalog: Catalog, axes: Axes) -> list[tuple[str, str, str, str | None]]:
    """(gpu, model, precision, note) of the grid: `auto` resolved per model (auto_precision), `fp4`
    per GPU (Catalog.fp4_format: nvfp4 on NVIDIA, mxfp4 on AMD), with a note saying so. A format
    two spellings name on one GPU (fp4 and mxfp4 on an AMD GPU) is listed once, with the note."""
    found: dict[tuple[str, str, str], str | None] = {}
    for g, m, asked in product(*(dict.fromkeys(x) for x in (axes.gpu, axes.model, axes.precision))):
        r = catalog.weight_format(auto_precision(catalog, m, axes.named_precision) if asked == AUTO else asked, g, m)
        found[(g, m, r.id)] = found.get((g, m, r.id)) or r.note
    return [(*key, note) for key, note in found.items()]


def model_precisions(catalog: Catalog, axes: Axes, formats: Sequence[tuple] | None = None) -> list[tuple[str, str]]:
    """(model, precision) pairs of the grid, `auto` resolved per model and `fp4` per GPU (pairs
    listed once), from `formats` (weight_formats) when the caller has them."""
    formats = weight_formats(catalog, axes) if formats is None else formats
    return list(dict.fromkeys((m, p) for _, m, p, _ in formats))


def format_table(formats: Sequence[tuple[str, str, str, str | None]]) -> pl.LazyFrame:
    """gpu x model -> the weight formats of the grid (weight_formats), with the note of a resolved `fp4`."""
    return pl.LazyFrame(
        {k: [f[i] for f in formats] for i, k in enumerate(("gpu", "model", "precision", "format_note"))},
        schema={
            "gpu": SCHEMA["gpu"],
            "model": SCHEMA["model"],
            "precision": SCHEMA["precision"],
            "format_note": pl.String,
        },
    )


def precision_table(catalog: Catalog, gpus: Sequence[str], precisions: Sequence[str]) -> pl.LazyFrame:
    """gpu x precision facts: compute dtype after fallback, peak rate, notes."""
    rates = []
    for gid, pid in product(dict.fromkeys(gpus), dict.fromkeys(precisions)):
        g, p = catalog.gpu(gid), catalog.precision(pid)
        flops, used = g.peak_flops(p.compute_dtype)
        attention_flops, _ = g.peak_flops(p.activation_dtype)
        fp8_flops, fp8_used = g.peak_flops("fp8")
        note = None
        if used == "fp4" and not catalog.fp4_units_take(pid, gid):
            # FP4 units that do not take the format's scales (NVFP4 on AMD CDNA 4) are no FP4 units
            # for it: weight-only, as without any (Catalog.fp4_units_take)
            flops, used = g.peak_flops(FALLBACK["fp4"][1])
            takes = [
                q for q, f in catalog.precisions.items() if f.compute_dtype == "fp4" and catalog.fp4_units_take(q, gid)
            ]
            note = (
                f"{gid}'s FP4 units take {', '.join(takes)}, not {pid}; {pid} runs weight-only: "
                f"matmuls use its {used} rate"
            )
        elif flops and used != p.compute_dtype and p.compute_dtype == "fp4":
            # a 4-bit float format without FP4 units is weight-only (W4A16): the weights are
            # dequantised to 16-bit for the matmuls (vLLM's Marlin, gpt-oss's triton kernels on Hopper)
            note = f"{gid} has no published fp4 rate; {pid} runs weight-only: matmuls use its {used} rate"
        elif flops and used != p.compute_dtype:
            note = f"{gid} has no published {p.compute_dtype} rate; matmuls use its {used} rate"
        rates.append(
            {
                "gpu": gid,
                "precision": pid,
                "bytes_per_weight": p.bytes_per_weight,
                "unquantized_bytes_per_weight": p.unquantized_bytes_per_weight,
                "activation_bytes_per_element": p.activation_bytes,
                "compute_dtype": used,
                "peak_flops_per_s": flops,
                "attention_peak_flops_per_s": attention_flops or flops,
                "fp8_peak_flops_per_s": fp8_flops or attention_flops or flops,
                # the fp8 rate is the GPU's own, not a 16-bit fallback (its fp8 share applies)
                "fp8_rate": bool(fp8_flops) and fp8_used == "fp8",
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
        # NVIDIA ModelOpt's checkpoint: the model's own (its hf_quant_config.json) or NVIDIA's FP4 format
        modelopt = "hf_quant_config" in (model.default_precision_source or "") or "NVIDIA" in p.fp4_of
        engine_choice = auto_kv_precision(eid, p.compute_dtype, model.architecture.is_mla, modelopt)
        fmt = (engine_choice or p.activation_dtype) if kid == "auto" else kid
        kv_bytes = p.activation_bytes if fmt == p.activation_dtype else catalog.precision(fmt).bytes_per_weight
        # attention kernels over an fp8 (or fp4) cache run at the fp8 rate; integer and GGUF caches
        # are dequantised to the 16-bit activation dtype first
        fp8_attention = fmt != p.activation_dtype and catalog.precision(fmt).compute_dtype in ("fp8", "fp4")
        rows.append(
            {
                "engine": eid,
                "model": mid,
                "precision": pid,
                "kv_precision": kid,
                "kv_cache_format": fmt,
                "kv_bytes_per_element": kv_bytes,
                "fp8_attention": fp8_attention,
            }
        )
    return _frame(rows)


def speculation_table(catalog: Catalog, settings: Sequence[Speculation], engines: Sequence[str]) -> pl.LazyFrame:
    """The speculative-decoding axis per engine: one row per engine and setting, with the draft
    model's facts and an MTP depth left open resolved to the engine's default."""
    rows = []
    for engine, spec in product(dict.fromkeys(engines), dict.fromkeys(settings)):
        draft = catalog.model(spec.draft_model).architecture if spec.draft_model else None
        if spec.draft_tokens is None:
            spec = replace(spec, draft_tokens=mtp_draft_tokens(engine))
        rows.append({"engine": engine, **speculation_table_row(spec, draft)})
    return _frame(rows)


def speculation_table_row(spec: Speculation, draft) -> dict:
    """One row of the speculative-decoding axis (`draft`: the draft model's architecture, or None)."""
    return {
        "speculative": spec.method,
        "draft_tokens": spec.draft_tokens,
        "draft_model": spec.draft_model,
        "acceptance_rate": spec.acceptance,
        "given_tokens_per_step": spec.tokens_per_step,
        "draft_params_total": float(draft.params_total) if draft else None,
        "draft_params_active": float(draft.params_active) if draft else None,
        # its embedding and LM head (counted once when tied), kept at 16 bits as a target's are
        "draft_unquantized_params": float(
            draft.embedding_params + (0 if draft.tied_embeddings else draft.lm_head_params)
        )
        if draft
        else None,
        "draft_layers": draft.layers if draft else None,
        "draft_kv_elements_per_token": float(draft.kv_elements_per_token) if draft else None,
        "draft_kv_heads": draft.kv_heads if draft else None,
    }


def _bytes_per_s(gbps: float | None) -> float | None:
    return gbps * 1e9 if gbps else None


def _axis(name: str, values: Sequence) -> pl.LazyFrame:
    return pl.LazyFrame({name: pl.Series(name, list(values), dtype=SCHEMA[name])})


@dataclass(frozen=True)
class GridParts:
    """The grid as small tables whose cross product is the grid: layouts (gpu x model x precision x
    kv_precision x tp x pp x ep x dp_attention x speculative, with their facts), lengths (input x
    output x prefix hit rate) and batches; for disaggregated rows also the prefill workers' layouts
    and the (prefill_workers, decode_workers) pairs."""

    layouts: pl.LazyFrame
    lengths: pl.LazyFrame
    batches: pl.LazyFrame
    exclude: Sequence[dict[str, Sequence]] = ()
    contexts: Sequence[int] | None = None
    aggregated: bool = True
    prefill_layouts: pl.LazyFrame | None = None  # None: no disaggregated rows
    workers: pl.LazyFrame | None = None

    @property
    def keep(self) -> pl.Expr | None:
        """Rows to keep (exclusion rules and the context axis), None = all."""
        return keep_filter(self.exclude, self.contexts)

    @property
    def option_keep(self) -> pl.Expr | None:
        """Options to keep, before any batch: the exclusion rules that name no batch (an option's batch
        is chosen later) and the context axis; None = all."""
        return keep_filter([r for r in self.exclude if "batch" not in r], self.contexts)

    def _filter(self, frame: pl.LazyFrame, keep: pl.Expr | None) -> pl.LazyFrame:
        return frame if keep is None else frame.filter(keep)

    def frame(self) -> pl.LazyFrame:
        """The unestimated grid, one row per configuration (aggregated rows; disaggregated rows
        exist only estimated, since they pair estimated options)."""
        return self._filter(self.layouts.join(self.lengths, **_CROSS).join(self.batches, **_CROSS), self.keep)

    def estimate(self, chunk_rows: int | None = None) -> pl.LazyFrame:
        """The estimated grid, each stage on the smallest table it needs. With `chunk_rows`, the
        layouts are taken a slice at a time (each slice about that many rows), so a sink can stream
        a grid far larger than memory."""
        if chunk_rows is None:
            return self._estimate(self.layouts)
        layouts = self.layouts.collect()
        per_layout = self.lengths.select(pl.len()).collect().item() * self.batches.select(pl.len()).collect().item()
        if self.workers is not None and self.prefill_layouts is not None:
            per_layout *= 1 + self.workers.select(pl.len()).collect().item() * max(
                1, self.prefill_layouts.select(pl.len()).collect().item() // max(layouts.height, 1)
            )
        step = max(1, chunk_rows // max(per_layout, 1))
        return pl.concat(
            [self._estimate(layouts.slice(i, step).lazy()) for i in range(0, max(layouts.height, 1), step)],
            how="diagonal_relaxed",
        )

    def options(self) -> pl.LazyFrame:
        """Layouts x lengths with their estimates, before any batch: one row per hardware option
        (a disaggregated option: a decode option x a prefill option x a worker pair). Exclusion rules
        that name a batch do not apply (an option's batch is chosen later)."""
        parts = [self._filter(f, self.option_keep) for _, f in self._options(self.layouts)]
        return parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal_relaxed")

    def _options(self, layouts: pl.LazyFrame) -> list[tuple[bool, pl.LazyFrame]]:
        """(disaggregated?, options) for the serving modes the grid has."""
        decode = add_length_estimates(add_layout_estimates(layouts).join(self.lengths, **_CROSS))
        parts = [(False, decode)] if self.aggregated else []
        if self.prefill_layouts is not None and self.workers is not None:
            prefill = add_length_estimates(add_layout_estimates(self.prefill_layouts).join(self.lengths, **_CROSS))
            parts.append((True, disaggregated.pair(decode, prefill, PAIR_KEYS, self.workers)))
        return parts

    def _estimate(self, layouts: pl.LazyFrame) -> pl.LazyFrame:
        parts = [
            add_batch_estimates(self._filter(options.join(self.batches, **_CROSS), self.keep), disaggregated=disagg)
            for disagg, options in self._options(layouts)
        ]
        return parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal_relaxed")


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
    # a pool axis (prefill_workers, ...) is null in an aggregated row, which no rule on it matches
    return pl.col(axis).is_in(list(values)).fill_null(False)


def grid_parts(
    catalog: Catalog,
    axes: Axes,
    profile: Profile,
    exclude: Sequence[dict[str, Sequence]] = (),
    contexts: Sequence[int] | None = None,
) -> GridParts:
    formats = weight_formats(catalog, axes)
    pairs = model_precisions(catalog, axes, formats)
    precisions = [p for _, p in pairs]
    rates = precision_table(catalog, axes.gpu, precisions)
    engines = resolved_engines(catalog, axes.gpu, axes.engine)
    kv = kv_table(catalog, engines, axes.model, precisions, axes.kv_precision)
    by_model = checkpoint_table(catalog, pairs)
    left = {"how": "left", "maintain_order": "left"}
    inner = {"how": "inner", "maintain_order": "left_right"}
    hardware = (
        gpu_table(catalog, axes.gpu, profile, axes.engine)
        .join(model_table(catalog, axes.model), **_CROSS)
        .join(format_table(formats), on=["gpu", "model"], **inner)
        .join(by_model, on=["model", "precision"], **inner)
        .join(_axis("kv_precision", dict.fromkeys(axes.kv_precision)), **_CROSS)
    )

    def layouts_of(tp, pp, ep, dp, speculation: Sequence[Speculation]) -> pl.LazyFrame:
        return (
            hardware.join(_axis("tp", dict.fromkeys(tp)), **_CROSS)
            .join(_axis("pp", dict.fromkeys(pp)), **_CROSS)
            .join(_axis("ep", dict.fromkeys(ep)), **_CROSS)
            .join(_axis("dp_attention", dict.fromkeys(dp)), **_CROSS)
            .join(
                speculation_table(catalog, speculation, engines), on="engine", how="inner", maintain_order="left_right"
            )
            .join(rates, on=["gpu", "precision"], **left)
            .join(kv, on=["engine", "model", "precision", "kv_precision"], **left)
            .with_columns(  # a resolved `fp4` is said first, then any compute-dtype fallback
                notes=pl.when(pl.col("format_note").is_null())
                .then(pl.col("notes"))
                .otherwise(pl.concat_str("format_note", "notes", separator="; ", ignore_nulls=True))
                .cast(SCHEMA["notes"])
            )
            .drop("format_note")
            .with_columns(
                mode=pl.lit("aggregated", SCHEMA["mode"]),
                **{n: pl.lit(None, SCHEMA[n]) for n in POOL_COLUMNS},
            )
        )

    layouts = layouts_of(axes.tp, axes.pp, axes.ep, axes.dp_attention, axes.speculative)
    prefill_layouts = workers = None
    if axes.disaggregated:
        prefill_layouts = layouts_of(
            *(axes.prefill_layout(n) for n in ("tp", "pp", "ep", "dp_attention")), [NO_SPECULATION]
        )
        workers = _axis("prefill_workers", dict.fromkeys(axes.prefill_workers)).join(
            _axis("decode_workers", dict.fromkeys(axes.decode_workers)), **_CROSS
        )
    lengths = (
        _axis("input_tokens", dict.fromkeys(axes.input_tokens))
        .join(_axis("output_tokens", dict.fromkeys(axes.output_tokens)), **_CROSS)
        .join(_axis("prefix_hit_rate", dict.fromkeys(float(h) for h in axes.prefix_hit_rate)), **_CROSS)
        .with_columns(prefix_shared=pl.lit(axes.prefix_shared))
    )
    batch_is_max = [b == MAX for b in dict.fromkeys(axes.batch)]
    batches = pl.LazyFrame(
        {
            "batch": pl.Series([1 if b == MAX else int(b) for b in dict.fromkeys(axes.batch)], dtype=pl.Int64),
            "batch_is_max": batch_is_max,
        }
    )
    return GridParts(
        layouts,
        lengths,
        batches,
        tuple(exclude),
        contexts,
        aggregated="aggregated" in axes.mode,
        prefill_layouts=prefill_layouts,
        workers=workers,
    )


def expand(catalog: Catalog, axes: Axes, profile: Profile) -> pl.LazyFrame:
    """The unestimated grid frame: the cross product of the axes, joined with every fact column."""
    return grid_parts(catalog, axes, profile).frame()
