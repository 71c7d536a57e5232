"""`llmsweep gpus | models | precisions`: the catalogs as tables, JSON or CSV, with sources."""

from __future__ import annotations

import csv
import io
import json

from llmsweep.catalog import load_catalog
from llmsweep.catalog.precisions import FP4_FALLBACK, GENERIC_FP4
from llmsweep.present import table


def _gpu_rows(cat) -> list[dict]:
    rows = []
    for gid, g in cat.gpus.items():
        r = g.dense_tflops
        rows.append(
            {
                "id": gid,
                "name": g.name,
                "memory_gb": g.memory_gb,
                "bandwidth_gbps": g.memory_bandwidth_gbps,
                "fp16_tflops": r.fp16,
                "bf16_tflops": r.bf16,
                "fp8_tflops": r.fp8,
                "fp4_tflops": r.fp4,
                "tdp_w": g.tdp_w,
                "link_gbps": g.scale_up_gbps_per_direction or g.pcie_gbps_per_direction,
                "scale_up_domain_gpus": g.nvlink_group,
                "scale_out_gbps": g.scale_out_gbps_per_direction,
                "gpus_per_node": g.gpus_per_node,
                "n_sources": len(g.sources),
            }
        )
    return rows


def _model_rows(cat) -> list[dict]:
    rows = []
    for mid, m in cat.models.items():
        a = m.architecture
        rows.append(
            {
                "id": mid,
                "params_b": round(a.params_total / 1e9, 2),
                "active_b": round(a.params_active / 1e9, 2),
                "layers": a.layers,
                "kv_heads": a.kv_heads if not a.is_mla else "MLA",
                "kv_bytes_per_token_fp16": a.kv_elements_per_token * 2,
                "max_context": a.max_context_tokens,
                "license": m.license,
            }
        )
    return rows


def _precision_rows(cat) -> list[dict]:
    """One row per format, then the generic `fp4` a sweep may name: its bits are the format each vendor's
    GPUs take (`llmsweep precisions fp4` gives the mapping)."""
    rows = [
        {
            "id": pid,
            "name": p.name,
            "bits_per_weight": p.bits_per_weight,
            "bytes_per_weight": p.bytes_per_weight,
            "compute_dtype": p.compute_dtype,
            "source": p.sources[0] if p.sources else "",
        }
        for pid, p in cat.precisions.items()
    ]
    formats = _fp4_entry(cat)["formats"]
    mapping = ", ".join(f"{pid} on {vendor}" for vendor, pid in formats.items())
    rows.append(
        {
            "id": GENERIC_FP4,
            "name": "FP4, the GPU vendor's own",
            "bits_per_weight": None,  # the format's: per GPU
            "bytes_per_weight": None,
            "compute_dtype": "fp4",
            "source": f"{mapping}, else {FP4_FALLBACK} (llmsweep precisions fp4)",
        }
    )
    return rows


def _fp4_entry(cat) -> dict:
    """`llmsweep precisions fp4`: no one format, each GPU vendor's own (Catalog.fp4_format)."""
    return {
        "id": GENERIC_FP4,
        "name": "FP4, each GPU vendor's own format",
        "formats": {vendor: pid for pid, p in cat.precisions.items() for vendor in p.fp4_of},
        "otherwise": FP4_FALLBACK,
        "notes": (
            f"A sweep's weight precision fp4 is resolved per GPU, by its vendor; {FP4_FALLBACK} on other GPUs "
            f"and for a KV cache. Name nvfp4 or mxfp4 for one format on every GPU."
        ),
    }


def render(kind: str, name: str | None, fmt: str) -> str:
    cat = load_catalog()
    if name:
        if kind == "gpu":
            rid = cat.resolve_gpu(name).id
            entry = {"id": rid, **cat.gpu(rid).model_dump(exclude_none=True)}
        elif kind == "model":
            rid = cat.resolve_model(name).id
            m = cat.model(rid)
            a = m.architecture
            entry = {
                "id": rid,
                **m.model_dump(exclude_none=True),
                "computed": {
                    "source": "llmsweep.catalog.architecture.read_config, from the config fields above",
                    "params_total": a.params_total,
                    "params_active": a.params_active,
                    "kv_bytes_per_token_fp16": a.kv_elements_per_token * 2,
                    "kv_full_bytes_per_token_fp16": a.kv_full_elements_per_token * 2,
                    "kv_window_bytes_per_token_fp16": a.kv_window_elements_per_token * 2,
                    "window_tokens": a.sliding_window,
                    "layers": {
                        "full_attention": a.full_attention_layers,
                        "window": a.sliding_layers,
                        "fixed_state": a.state_layers,
                        "moe": a.moe_layers,
                        "dense_in_moe_model": a.dense_layers,
                    },
                    "mla_latent_width": a.mla_kv_width or None,
                    "dsa_indexer_head_dim": a.indexer_head_dim or None,
                    "shared_experts": a.shared_experts,
                    "state_bytes_per_sequence": a.state_bytes_per_sequence,
                },
            }
        else:
            rid = cat.resolve_precision(name).id
            entry = (
                _fp4_entry(cat)
                if rid == GENERIC_FP4
                else {"id": rid, **cat.precision(rid).model_dump(exclude_none=True)}
            )
        if fmt == "table":
            import yaml

            return yaml.safe_dump(entry, sort_keys=False, allow_unicode=True, width=100).rstrip()
        rows = [entry]
    else:
        rows = {"gpu": _gpu_rows, "model": _model_rows, "precision": _precision_rows}[kind](cat)
    if fmt == "json":
        return json.dumps(rows if not name else rows[0], indent=2)
    if fmt == "csv":
        buf = io.StringIO()
        from llmsweep.export import safe_cell

        flat = [{k: safe_cell(json.dumps(v) if isinstance(v, dict | list) else v) for k, v in r.items()} for r in rows]
        w = csv.DictWriter(buf, fieldnames=list(flat[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(flat)
        return buf.getvalue()
    return table(list(rows[0]), [list(r.values()) for r in rows])
