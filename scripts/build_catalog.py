"""Regenerate llmsweep/catalog/gpus.yaml and models.yaml from the sourced reference files.

    python scripts/build_catalog.py [--reference ../shared/reference]

The reference files (shared/reference/*.yaml) hold datasheet and config.json facts, each with
its sources. This script copies those facts into llmsweep's catalog schema, under stable ids and
with aliases, and keeps every source with its entry. The few facts that are not in the reference
(GPUs per server, NVLink group sizes, most scale-out NIC bandwidths, the older models people still
benchmark, licenses) are written below with their own source or labelled as an assumption. Nothing
is silently derived: every correction or derivation is listed in the entry's `derived` field.

`tests/test_catalog.py` re-runs this script and checks the committed files are its output.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from llmsweep.catalog.architecture import checkpoint_precision  # noqa: E402

CATALOG = ROOT / "llmsweep" / "catalog"

# reference id -> (llmsweep id, aliases, family, gpus_per_node, nvlink_group)
# gpus_per_node: GPUs in one typical server (HGX/OAM baseboards hold 8; an assumption for
# PCIe cards; 1 for desktops and Apple). nvlink_group: the scale-up domain, GPUs joined by the
# fast link (8 on HGX/OAM baseboards, Gaudi's on-chip RoCE mesh included; 72 in a GB200/GB300
# NVL72 rack; 2 for bridged PCIe pairs; 1 where there is none: the build writes 1 whenever the
# entry has no scale-up bandwidth).
GPU_IDS: dict[str, tuple[str, list[str], str, int, int]] = {
    "a100-sxm4-40gb": ("a100-40gb-sxm", ["A100 40GB", "A100 SXM4 40GB", "A100-SXM4-40GB"], "ampere", 8, 8),
    "a100-sxm4-80gb": (
        "a100-80gb-sxm",
        ["A100 80GB SXM", "A100 SXM", "A100 80GB", "A100", "A100 SXM4 80GB", "A100-SXM4-80GB"],
        "ampere",
        8,
        8,
    ),
    "a100-pcie-80gb": ("a100-80gb-pcie", ["A100 PCIe", "A100 80GB PCIe", "A100-PCIE-80GB"], "ampere", 8, 2),
    "h100-sxm5-80gb": (
        "h100-sxm",
        ["H100 SXM", "H100 SXM5", "H100 80GB", "H100", "H100 SXM5 80GB", "h100-sxm5-80gb", "H100 80GB HBM3"],
        "hopper",
        8,
        8,
    ),
    "h100-pcie-80gb": ("h100-pcie", ["H100 PCIe", "H100 PCIe 80GB", "H100-PCIE-80GB"], "hopper", 8, 2),
    "h100-nvl-94gb": ("h100-nvl", ["H100 NVL", "H100 NVL 94GB"], "hopper", 8, 2),
    "h200-sxm-141gb": ("h200-sxm", ["H200", "H200 SXM", "H200 141GB", "H200 SXM 141GB"], "hopper", 8, 8),
    "b200-sxm": ("b200", ["B200", "HGX B200", "B200 SXM"], "blackwell", 8, 8),
    "gb200-per-gpu": ("gb200", ["GB200", "GB200 NVL72"], "blackwell", 4, 72),
    "l40s": ("l40s", ["L40S"], "ada", 8, 1),
    "l40": ("l40", ["L40"], "ada", 8, 1),
    "l4": ("l4", ["L4"], "ada", 8, 1),
    "a10g": ("a10g", ["A10G"], "ampere", 8, 1),
    "a10": ("a10", ["A10"], "ampere", 8, 1),
    "t4": ("t4", ["T4", "Tesla T4"], "turing", 8, 1),
    "v100-sxm2-32gb": ("v100-32gb-sxm", ["V100", "V100 32GB", "V100 SXM2 32GB", "Tesla V100"], "volta", 8, 8),
    "v100-sxm2-16gb": ("v100-16gb-sxm", ["V100 16GB", "V100 SXM2 16GB"], "volta", 8, 8),
    "tesla-p40": ("p40", ["P40", "Tesla P40"], "pascal", 8, 1),
    "tesla-p100-pcie-16gb": ("p100-16gb-pcie", ["P100", "Tesla P100", "P100 16GB"], "pascal", 8, 1),
    "rtx-2080-ti": ("rtx-2080-ti", ["RTX 2080 Ti", "2080 Ti"], "geforce", 4, 2),
    "rtx-3060-12gb": ("rtx-3060-12gb", ["RTX 3060", "RTX 3060 12GB", "3060"], "geforce", 4, 1),
    "rtx-3070": ("rtx-3070", ["RTX 3070", "3070"], "geforce", 4, 1),
    "rtx-3080-10gb": ("rtx-3080-10gb", ["RTX 3080", "RTX 3080 10GB", "3080"], "geforce", 4, 1),
    "rtx-3080-ti": ("rtx-3080-ti", ["RTX 3080 Ti", "3080 Ti"], "geforce", 4, 1),
    "rtx-3090": ("rtx-3090", ["RTX 3090", "3090", "GeForce RTX 3090"], "geforce", 4, 1),
    "rtx-3090-ti": ("rtx-3090-ti", ["RTX 3090 Ti", "3090 Ti"], "geforce", 4, 1),
    "rtx-4060-ti-16gb": ("rtx-4060-ti-16gb", ["RTX 4060 Ti", "RTX 4060 Ti 16GB"], "geforce", 4, 1),
    "rtx-4070": ("rtx-4070", ["RTX 4070", "4070"], "geforce", 4, 1),
    "rtx-4070-ti": ("rtx-4070-ti", ["RTX 4070 Ti", "4070 Ti"], "geforce", 4, 1),
    "rtx-4080": ("rtx-4080", ["RTX 4080", "4080"], "geforce", 4, 1),
    "rtx-4090": ("rtx-4090", ["RTX 4090", "4090", "GeForce RTX 4090"], "geforce", 4, 1),
    "rtx-5080": ("rtx-5080", ["RTX 5080", "5080"], "geforce", 4, 1),
    "rtx-5090": ("rtx-5090", ["RTX 5090", "5090", "GeForce RTX 5090"], "geforce", 4, 1),
    "rtx-6000-ada": ("rtx-6000-ada", ["RTX 6000 Ada", "RTX 6000 Ada Generation"], "ada", 4, 1),
    "rtx-a6000": ("rtx-a6000", ["RTX A6000", "A6000"], "ampere", 4, 2),
    "a40": ("a40", ["A40"], "ampere", 8, 2),
    "rtx-pro-6000-blackwell-workstation": (
        "rtx-pro-6000-workstation",
        ["RTX PRO 6000", "RTX PRO 6000 Blackwell", "RTX PRO 6000 Workstation"],
        "blackwell",
        4,
        1,
    ),
    "rtx-pro-6000-blackwell-server": (
        "rtx-pro-6000-server",
        ["RTX PRO 6000 Server", "RTX PRO 6000 Blackwell Server Edition"],
        "blackwell",
        8,
        1,
    ),
    "amd-rx-7900-xtx": ("rx-7900-xtx", ["RX 7900 XTX", "7900 XTX", "Radeon RX 7900 XTX"], "rdna", 4, 1),
    "amd-mi210": ("mi210", ["MI210", "Instinct MI210"], "cdna", 8, 1),
    "mi250x": ("mi250x", ["MI250X", "Instinct MI250X"], "cdna", 8, 8),
    "mi300x": ("mi300x", ["MI300X", "Instinct MI300X"], "cdna", 8, 8),
    "mi325x": ("mi325x", ["MI325X", "Instinct MI325X"], "cdna", 8, 8),
    "gaudi2": ("gaudi2", ["Gaudi 2", "Gaudi2", "HL-225"], "gaudi", 8, 8),
    "gaudi3": ("gaudi3", ["Gaudi 3", "Gaudi3", "HL-325L"], "gaudi", 8, 8),
    "apple-m1": ("m1", ["M1", "Apple M1"], "apple", 1, 1),
    "apple-m1-pro": ("m1-pro", ["M1 Pro", "Apple M1 Pro"], "apple", 1, 1),
    "apple-m1-max": ("m1-max", ["M1 Max", "Apple M1 Max"], "apple", 1, 1),
    "apple-m1-ultra": ("m1-ultra", ["M1 Ultra", "Apple M1 Ultra"], "apple", 1, 1),
    "apple-m2": ("m2", ["M2", "Apple M2"], "apple", 1, 1),
    "apple-m2-pro": ("m2-pro", ["M2 Pro", "Apple M2 Pro"], "apple", 1, 1),
    "apple-m2-max": ("m2-max", ["M2 Max", "Apple M2 Max"], "apple", 1, 1),
    "apple-m2-ultra": ("m2-ultra", ["M2 Ultra", "Apple M2 Ultra"], "apple", 1, 1),
    "apple-m3": ("m3", ["M3", "Apple M3"], "apple", 1, 1),
    "apple-m3-pro": ("m3-pro", ["M3 Pro", "Apple M3 Pro"], "apple", 1, 1),
    "apple-m3-max": ("m3-max", ["M3 Max", "Apple M3 Max"], "apple", 1, 1),
    "apple-m3-ultra": ("m3-ultra", ["M3 Ultra", "Apple M3 Ultra"], "apple", 1, 1),
    "apple-m4": ("m4", ["M4", "Apple M4"], "apple", 1, 1),
    "apple-m4-pro": ("m4-pro", ["M4 Pro", "Apple M4 Pro"], "apple", 1, 1),
    "apple-m4-max": ("m4-max", ["M4 Max", "Apple M4 Max"], "apple", 1, 1),
    # gpus-2026.yaml (per node and NVLink domain as its interconnect block states them)
    "b300-sxm": ("b300", ["B300", "HGX B300", "B300 SXM", "DGX B300"], "blackwell", 8, 8),
    "gb300-per-gpu": ("gb300", ["GB300", "GB300 NVL72"], "blackwell", 4, 72),
    "h20": ("h20", ["H20", "HGX H20", "H20 96GB"], "hopper", 8, 8),
    "dgx-spark-gb10": ("dgx-spark", ["DGX Spark", "GB10", "Project DIGITS", "NVIDIA GB10"], "blackwell", 1, 1),
    "mi350x": ("mi350x", ["MI350X", "Instinct MI350X"], "cdna", 8, 8),
    "mi355x": ("mi355x", ["MI355X", "Instinct MI355X"], "cdna", 8, 8),
    "arc-pro-b60": ("arc-pro-b60", ["Arc Pro B60", "Intel Arc Pro B60", "B60"], "xe", 8, 1),
}
# gpus-2026.yaml `variants` given their own entry: (parent reference id, variant name) -> (id, aliases)
GPU_VARIANTS = {
    ("h20", "H20 141GB HBM3e"): ("h20-141gb", ["H20 141GB", "H20-3e", "H20E", "H20 HBM3e"]),
}

# Where gpus-2026.yaml's sources disagree: the value the catalog uses and why, with both sides'
# sources (the reference's notes hold the full CONFLICTS text). Misquotes listed in its meta
# (e.g. B300 240 GB / 10 TB/s, MI355X 20.1 PF FP4 as dense, DGX Spark 900 GB/s) are not used.
GPU_CHOICES = {
    "b300": [
        "fp4 14000 TFLOPS dense: aic_b300_sxm (Blackwell Ultra datasheet '14 PFLOPS dense') and "
        "pg_verda_gb300 (14 PF); "
        "not 13125 (pg_glenn_b300) nor 12600 fp4 / 15000 nvfp4 (stas_acc, DGX B300 datasheet)",
        "int8 153.5 TOPS dense: aic_b300_sxm (307 sparse / 2) and pg_verda_gb300 (0.15 POPS), a cut INT8 path; "
        "not 4500 (stas_acc, pg_glenn_b300 repeat B200's figure)",
        "fp32 75 TFLOPS: pg_glenn_b300 and pg_verda_gb300 (HGX 600 TF / 8); not 80.0 (stas_acc)",
        "memory 288 GB (vendor label: pg_glenn_b300, stas_acc, pg_acecloud_hgxb300); aic_b300_sxm stores 275040 MiB "
        "reported by nvidia-smi, pg_verda_gb300 270 GB",
        "bandwidth 8000 GB/s (pg_glenn_b300 'max', stas_acc, pg_acecloud_hgxb300); "
        "not 7750 (aic_b300_sxm: 62 TB/s / 8) "
        "nor 7700 (pg_verda_gb300)",
        "tdp 1100 W (aic_b300_sxm 'configurable up to 1,100 W', pg_verda_gb300); not 1000 W maximum TGP (stas_power) "
        "nor 1400 W (pg_glenn_b300, the GB300 figure)",
    ],
    "gb300": [
        "int8 165 TOPS dense (aic_gb300, pg_verda_gb300 0.165 POPS); not 5000 (stas_acc)",
        "memory 288 GB (vendor label, pg_awesome_gb300); aic_gb300 stores 284208 MiB reported by nvidia-smi, "
        "pg_verda_gb300 279 GB",
    ],
    "h20": ["tdp 400 W (pg_tweaktown_h20, pg_smbom_h20, pg_willitrunai_h20); not 350 W (aic_h20_pr243)"],
    "h20-141gb": [
        "bf16 148 / fp8 and int8 296 dense (aic_h20_3e_pr1435, the 96 GB H20's rates on the same die); "
        "not 146.5 / 293 (aic_h20e_branch)",
    ],
    "dgx-spark": [
        "bandwidth 273 GB/s (NVIDIA product page via pg_aiinfra_spark); not 301 GB/s (raw 256-bit x 9400 MT/s, "
        "pg_ferra_gb10)",
        "fp16 / bf16 / fp8 unknown (NVIDIA publishes only FP4 with sparsity and FP32): matmuls fall back to the "
        "fp32 rate and the row says so",
    ],
    "arc-pro-b60": [
        "fp8 unknown: aic_b60 states 'B60 has no native FP8 matrix-compute support' (it models fp8 at the bf16 rate)"
    ],
}

# Names that several catalog entries answer to: the most common variant wins and the
# resolver says so. (alias -> the ids it could mean, first = chosen)
GPU_AMBIGUOUS = {
    "A100": ["a100-80gb-sxm", "a100-40gb-sxm", "a100-80gb-pcie"],
    "A100 80GB": ["a100-80gb-sxm", "a100-80gb-pcie"],
    "H100": ["h100-sxm", "h100-pcie", "h100-nvl"],
    "H100 80GB": ["h100-sxm", "h100-pcie"],
    "V100": ["v100-32gb-sxm", "v100-16gb-sxm"],
    "RTX PRO 6000": ["rtx-pro-6000-workstation", "rtx-pro-6000-server"],
    "H20": ["h20", "h20-141gb"],
}

GPUS_PER_NODE_SOURCE = (
    "llmsweep assumption: 8 GPUs per HGX/OAM/PCIe server, 4 per GB200 compute tray (72 per NVLink "
    "domain), 4 per workstation, 1 for Apple SoCs; scale-out (NIC) bandwidth per GPU, where the "
    "reference states none, from the platform's reference design named beside the field; override "
    "per GPU in a sweep"
)

# Scale-out (NIC) bandwidth per GPU, GB/s per direction (Gb/s / 8): what a layout that spans
# servers communicates over. Where the reference states the GPU's networking, the value is read
# from it: (value, words its `networking` text must contain, how the value follows from them); a
# changed reference fails the build instead of drifting.
SCALE_OUT_FROM_REFERENCE: dict[str, tuple[float, str, str]] = {
    "b300": (100.0, "100 GB/s per GPU per direction", "aiconfigurator's figure; = 800 Gb/s ConnectX-8 / 8"),
    "gb300": (100.0, "100 GB/s per GPU per direction", "aiconfigurator's figure; = 800 Gb/s ConnectX-8 / 8"),
    "dgx-spark": (
        25.0,
        "ConnectX-7 200 Gb/s",
        "one 200 Gb/s port / 8: two units cluster over one QSFP cable, so the two ports are not added",
    ),
}
# Where the reference states no NIC: a stated llmsweep assumption, the platform's reference design.
# Absent = unknown (None: layouts across servers cannot be costed): PCIe cards, whose servers carry
# anything from one shared 25 Gb/s port to a 400 Gb/s NIC per card, and desktop, workstation and
# Apple parts (single-server parts).
NIC_400G = "one 400 Gb/s NIC per GPU"
SCALE_OUT_ASSUMED: dict[str, tuple[float, str]] = {
    **dict.fromkeys(
        ("a100-40gb-sxm", "a100-80gb-sxm"),
        (25.0, "one 200 Gb/s NIC per GPU (DGX A100 reference design: 8x ConnectX-6 200 Gb/s HDR, one per GPU)"),
    ),
    **dict.fromkeys(
        ("v100-32gb-sxm", "v100-16gb-sxm"),
        (
            6.25,
            "one 100 Gb/s NIC per two GPUs (DGX-1 with V100: 4x 100 Gb/s EDR InfiniBand for 8 GPUs; "
            "DGX-2: 8 for 16); not the A100-era 200 Gb/s per GPU, which no V100 reference design had",
        ),
    ),
    "h100-sxm": (50.0, f"{NIC_400G} (DGX/HGX H100 reference design: 8x ConnectX-7 400 Gb/s)"),
    "h200-sxm": (50.0, f"{NIC_400G} (DGX/HGX H200 reference design: 8x ConnectX-7 400 Gb/s)"),
    "h20": (50.0, f"{NIC_400G} (the HGX H100 reference design, 8x ConnectX-7 400 Gb/s, assumed for HGX H20)"),
    "b200": (50.0, f"{NIC_400G} (DGX/HGX B200 reference design: 8x ConnectX-7 400 Gb/s)"),
    "gb200": (
        50.0,
        f"{NIC_400G} (GB200 NVL72 compute tray: one ConnectX-7 400 Gb/s per GPU); not aiconfigurator's "
        "100 GB/s 'InfiniBand CX8' (gpus-2026.yaml meta cross-check of gb200): ConnectX-8 is the GB300 tray's NIC",
    ),
    "mi250x": (
        25.0,
        "one 200 Gb/s NIC per GPU (HPE Cray EX235a, the Frontier node: 4x Slingshot 200 Gb/s for 4 MI250X)",
    ),
    **dict.fromkeys(
        ("mi300x", "mi325x", "mi350x", "mi355x"),
        (50.0, f"{NIC_400G} (AMD Instinct MI300X / MI325X / MI355X platforms: 8x 400 Gb/s NICs for 8 GPUs)"),
    ),
    "gaudi2": (
        37.5,
        "3 of the 24 on-chip 100 GbE RoCE ports = 300 Gb/s (Intel's 8-card Gaudi 2 server: 21 ports join the "
        "7 peers, 3 leave the server); the reference gives the 24 ports, not this split",
    ),
    "gaudi3": (
        75.0,
        "3 of the 24 on-chip 200 GbE RoCE ports = 600 Gb/s (Intel's 8-card Gaudi 3 baseboard: 21 ports join "
        "the 7 peers, 3 leave the server); the reference gives the 24 ports, not this split",
    ),
}
# Source entries that say where an entry's node facts (GPUs per server, scale-up domain,
# scale-out) came from; they are rebuilt per entry, never copied between entries.
NODE_REFS = {"llmsweep", "gpus.yaml interconnect", "gpus-extra.yaml interconnect", "gpus-2026.yaml interconnect"}

# Corrections to reference values, each with the reference's own cross-check as its source.
GPU_CORRECTIONS = {
    "rtx-5090": {
        "dense_tflops": {"fp16": 209.5, "bf16": 209.5, "fp8": 419.0},
        "why": (
            "gpus-extra.yaml meta.cross_checks_against_gpus_yaml: the rtx-5090 entry in gpus.yaml lists "
            "FP16-accumulate figures (419.2 / 838.4); inference kernels accumulate in FP32, whose dense "
            "rates are BF16/FP16 209.5 and FP8 419 (RTX Blackwell whitepaper rows quoted in "
            "gh_fixlog_blackwell and gh_gaunernst_mma)"
        ),
    },
}

# Listings a reference source states but the reference's price list leaves out, keyed by the source's
# reference key: px_packet quotes "H200 SXM $2.25/hr" beside the B200 SXM $3.75 that gpus-2026.yaml
# records, so without it H200's latest on-demand listing was a March 2026 one at $6.35.
PRICE_ADDITIONS = {
    "h200-sxm": [
        {
            "provider": "packet.ai H200 SXM",
            "usd_per_gpu_hour": 2.25,
            "as_of": "2026-06",
            "type": "on-demand",
            "source": "px_packet",
            "note": "stated in the same June 2026 listing as B200's $3.75 (gpus-2026.yaml records only B200's)",
        }
    ],
}

PCIE_GBPS_PER_LANE = {3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}  # PCI-SIG, per direction after encoding
PCIE_SOURCE = (
    "derived: PCI-SIG per-lane rates after encoding (Gen3 0.985, Gen4 1.969, Gen5 3.938, Gen6 7.563 GB/s "
    "per direction) x lanes, from the interconnect.pcie field"
)

# Older models people still benchmark, not in models.yaml. Fields are copied from each
# repository's config.json (source given per entry); parameter counts are computed by
# llmsweep.catalog.architecture from those fields.
EXTRA_MODELS = [
    {
        "id": "huggyllama/llama-30b",
        "name": "LLaMA-30B",
        "aliases": ["llama-30b", "LLaMA 30B", "llama-33b", "LLaMA-33B"],
        "license": "LLaMA research license (non-commercial)",
        "config": {
            "model_type": "llama",
            "hidden_size": 6656,
            "num_hidden_layers": 60,
            "num_attention_heads": 52,
            "num_key_value_heads": 52,
            "intermediate_size": 17920,
            "vocab_size": 32000,
            "max_position_embeddings": 2048,
            "tie_word_embeddings": False,
        },
        "sources": [
            "https://huggingface.co/huggyllama/llama-30b/blob/main/config.json",
            "LLaMA paper arXiv 2302.13971 Table 2 (32.5B, 60 layers, 52 heads, d 6656)",
        ],
    },
    {
        "id": "codellama/CodeLlama-7b-hf",
        "name": "CodeLlama-7B",
        "aliases": [
            "codellama-7b",
            "CodeLlama 7B",
            "codellama/CodeLlama-7b-Instruct-hf",
            "codellama/CodeLlama-7b-Python-hf",
        ],
        "license": "Llama 2 Community License",
        "config": {
            "model_type": "llama",
            "hidden_size": 4096,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "intermediate_size": 11008,
            "vocab_size": 32016,
            "max_position_embeddings": 16384,
            "tie_word_embeddings": False,
        },
        "sources": ["https://huggingface.co/codellama/CodeLlama-7b-hf/blob/main/config.json"],
    },
    {
        "id": "codellama/CodeLlama-34b-hf",
        "name": "CodeLlama-34B",
        "aliases": [
            "codellama-34b",
            "CodeLlama 34B",
            "codellama/CodeLlama-34b-Instruct-hf",
            "codellama/CodeLlama-34b-Python-hf",
            "Phind/Phind-CodeLlama-34B-v2",
        ],
        "license": "Llama 2 Community License",
        "config": {
            "model_type": "llama",
            "hidden_size": 8192,
            "num_hidden_layers": 48,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "intermediate_size": 22016,
            "vocab_size": 32000,
            "max_position_embeddings": 16384,
            "tie_word_embeddings": False,
        },
        "sources": ["https://huggingface.co/codellama/CodeLlama-34b-hf/blob/main/config.json"],
    },
    {
        "id": "EleutherAI/gpt-j-6b",
        "name": "GPT-J-6B",
        "aliases": ["gpt-j-6b", "GPT-J 6B", "gptj-6b"],
        "license": "Apache-2.0",
        "config": {
            "model_type": "gptj",
            "hidden_size": 4096,
            "num_hidden_layers": 28,
            "num_attention_heads": 16,
            "num_key_value_heads": 16,
            "intermediate_size": 16384,
            "vocab_size": 50400,
            "max_position_embeddings": 2048,
            "tie_word_embeddings": False,
            "mlp": "gelu",
            "attention_bias": False,
        },
        "sources": [
            "https://huggingface.co/EleutherAI/gpt-j-6b/blob/main/config.json "
            "(n_embd 4096, n_layer 28, n_head 16, n_positions 2048, vocab 50400, n_inner null = 4 x n_embd)"
        ],
    },
    {
        "id": "mistralai/Mistral-7B-v0.3",
        "name": "Mistral-7B-v0.3",
        "aliases": ["mistral-7b-v0.3", "Mistral 7B v0.3", "mistralai/Mistral-7B-Instruct-v0.3"],
        "license": "Apache-2.0",
        "config": {
            "model_type": "mistral",
            "hidden_size": 4096,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "intermediate_size": 14336,
            "vocab_size": 32768,
            "max_position_embeddings": 32768,
            "tie_word_embeddings": False,
            "sliding_window": None,
        },
        "sources": ["https://huggingface.co/mistralai/Mistral-7B-v0.3/blob/main/config.json (sliding_window null)"],
    },
    {
        "id": "meta-llama/Meta-Llama-3-8B",
        "name": "Llama-3-8B",
        "aliases": [
            "llama-3-8b",
            "Llama 3 8B",
            "meta-llama/Meta-Llama-3-8B-Instruct",
            "meta-llama/Llama-3-8B",
        ],
        "license": "Meta Llama 3 Community License",
        "config": {
            "model_type": "llama",
            "hidden_size": 4096,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "intermediate_size": 14336,
            "vocab_size": 128256,
            "max_position_embeddings": 8192,
            "tie_word_embeddings": False,
        },
        "sources": [
            "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json "
            "(same layer shapes as Llama-3.1-8B in models.yaml; 8k context)"
        ],
    },
    {
        "id": "meta-llama/Meta-Llama-3-70B",
        "name": "Llama-3-70B",
        "aliases": [
            "llama-3-70b",
            "Llama 3 70B",
            "meta-llama/Meta-Llama-3-70B-Instruct",
            "meta-llama/Llama-3-70B",
        ],
        "license": "Meta Llama 3 Community License",
        "config": {
            "model_type": "llama",
            "hidden_size": 8192,
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "intermediate_size": 28672,
            "vocab_size": 128256,
            "max_position_embeddings": 8192,
            "tie_word_embeddings": False,
        },
        "sources": [
            "https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json "
            "(same layer shapes as Llama-3.1-70B in models.yaml; 8k context)"
        ],
    },
    {
        "id": "meta-llama/Llama-3.3-70B-Instruct",
        "name": "Llama-3.3-70B-Instruct",
        "aliases": ["llama-3.3-70b", "Llama 3.3 70B"],
        "license": "Llama 3.3 Community License",
        "config": {
            "model_type": "llama",
            "hidden_size": 8192,
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "intermediate_size": 28672,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "tie_word_embeddings": False,
        },
        "sources": [
            "https://huggingface.co/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json "
            "(same architecture as Llama-3.1-70B)"
        ],
    },
]

# reference model id -> (HF id used as llmsweep id, aliases, license)
MODEL_IDS: dict[str, tuple[str, list[str], str]] = {
    "llama-2-7b": (
        "meta-llama/Llama-2-7b-hf",
        [
            "llama-2-7b",
            "Llama 2 7B",
            "meta-llama/Llama-2-7b-chat-hf",
            "meta-llama/Llama-2-7b",
            "TheBloke/Llama-2-7B-GPTQ",
            "TheBloke/Llama-2-7B-GGUF",
            "TheBloke/Llama-2-7B-AWQ",
        ],
        "Llama 2 Community License",
    ),
    "llama-2-13b": (
        "meta-llama/Llama-2-13b-hf",
        [
            "llama-2-13b",
            "Llama 2 13B",
            "meta-llama/Llama-2-13b-chat-hf",
            "TheBloke/Llama-2-13B-GPTQ",
            "TheBloke/Llama-2-13B-GGUF",
        ],
        "Llama 2 Community License",
    ),
    "llama-2-70b": (
        "meta-llama/Llama-2-70b-hf",
        [
            "llama-2-70b",
            "Llama 2 70B",
            "meta-llama/Llama-2-70b-chat-hf",
            "TheBloke/Llama-2-70B-GPTQ",
            "TheBloke/Llama-2-70B-GGUF",
        ],
        "Llama 2 Community License",
    ),
    "llama-3.1-8b": (
        "meta-llama/Llama-3.1-8B",
        [
            "llama-3.1-8b",
            "Llama 3.1 8B",
            "meta-llama/Meta-Llama-3.1-8B",
            "meta-llama/Llama-3.1-8B-Instruct",
            "meta-llama/Meta-Llama-3.1-8B-Instruct",
            "neuralmagic/Meta-Llama-3.1-8B-FP8",
            "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8",
            "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        ],
        "Llama 3.1 Community License",
    ),
    "llama-3.1-70b": (
        "meta-llama/Llama-3.1-70B",
        [
            "llama-3.1-70b",
            "Llama 3.1 70B",
            "meta-llama/Meta-Llama-3.1-70B",
            "meta-llama/Llama-3.1-70B-Instruct",
            "meta-llama/Meta-Llama-3.1-70B-Instruct",
            "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
            "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4",
        ],
        "Llama 3.1 Community License",
    ),
    "llama-3.1-405b": (
        "meta-llama/Llama-3.1-405B",
        [
            "llama-3.1-405b",
            "Llama 3.1 405B",
            "meta-llama/Meta-Llama-3.1-405B",
            "meta-llama/Llama-3.1-405B-Instruct",
            "meta-llama/Meta-Llama-3.1-405B-Instruct",
            "meta-llama/Llama-3.1-405B-Instruct-FP8",
            "NousResearch/Hermes-3-Llama-3.1-405B",
            "NousResearch/Hermes-3-Llama-3.1-405B-FP8",
        ],
        "Llama 3.1 Community License",
    ),
    "mistral-7b-v0.1": (
        "mistralai/Mistral-7B-v0.1",
        ["mistral-7b-v0.1", "Mistral 7B v0.1", "mistralai/Mistral-7B-Instruct-v0.1"],
        "Apache-2.0",
    ),
    "mixtral-8x7b-v0.1": (
        "mistralai/Mixtral-8x7B-v0.1",
        ["mixtral-8x7b", "Mixtral 8x7B", "mistralai/Mixtral-8x7B-Instruct-v0.1"],
        "Apache-2.0",
    ),
    "mixtral-8x22b-v0.1": (
        "mistralai/Mixtral-8x22B-v0.1",
        ["mixtral-8x22b", "Mixtral 8x22B", "mistralai/Mixtral-8x22B-Instruct-v0.1"],
        "Apache-2.0",
    ),
    "qwen2.5-7b": (
        "Qwen/Qwen2.5-7B",
        ["qwen2.5-7b", "Qwen2.5 7B", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct-AWQ"],
        "Apache-2.0",
    ),
    "qwen2.5-32b": (
        "Qwen/Qwen2.5-32B",
        ["qwen2.5-32b", "Qwen2.5 32B", "Qwen/Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-32B-Instruct-AWQ"],
        "Apache-2.0",
    ),
    "qwen2.5-72b": (
        "Qwen/Qwen2.5-72B",
        ["qwen2.5-72b", "Qwen2.5 72B", "Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct-AWQ"],
        "Qwen License (tongyi-qianwen)",
    ),
    "qwen3-30b-a3b": (
        "Qwen/Qwen3-30B-A3B",
        ["qwen3-30b-a3b", "Qwen3 30B A3B", "Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-30B-A3B-FP8"],
        "Apache-2.0",
    ),
    "qwen3-235b-a22b": (
        "Qwen/Qwen3-235B-A22B",
        [
            "qwen3-235b-a22b",
            "Qwen3 235B A22B",
            "Qwen/Qwen3-235B-A22B-Instruct-2507",
            "Qwen/Qwen3-235B-A22B-FP8",
        ],
        "Apache-2.0",
    ),
    "deepseek-v3": (
        "deepseek-ai/DeepSeek-V3",
        ["deepseek-v3", "DeepSeek V3", "deepseek-ai/DeepSeek-V3-0324"],
        "DeepSeek Model License (code MIT)",
    ),
    "gemma-2-9b": (
        "google/gemma-2-9b",
        ["gemma-2-9b", "Gemma 2 9B", "google/gemma-2-9b-it"],
        "Gemma Terms of Use",
    ),
    "gemma-2-27b": (
        "google/gemma-2-27b",
        ["gemma-2-27b", "Gemma 2 27B", "google/gemma-2-27b-it"],
        "Gemma Terms of Use",
    ),
    "phi-3-mini-4k-instruct": (
        "microsoft/Phi-3-mini-4k-instruct",
        ["phi-3-mini", "Phi-3 mini", "phi-3-mini-4k-instruct"],
        "MIT",
    ),
    "gpt-oss-120b": ("openai/gpt-oss-120b", ["gpt-oss-120b", "gpt-oss 120b"], "Apache-2.0"),
    "gpt-oss-20b": ("openai/gpt-oss-20b", ["gpt-oss-20b", "gpt-oss 20b"], "Apache-2.0"),
}

# shared/reference/model-configs/<stem>_config.json (aiconfigurator's copies of Hugging Face
# config.json files) -> (llmsweep id = the HF id, aliases, license, published parameter counts).
# The license text and its source are the model-configs README's; "published" is (total, active,
# where it is stated): the figures in the model's own name where it carries them.
MODEL_CONFIGS: dict[str, tuple[str, list[str], str, tuple[str, str, str] | None]] = {
    "deepseek-ai--DeepSeek-R1": (
        "deepseek-ai/DeepSeek-R1",
        ["deepseek-r1", "DeepSeek R1", "DeepSeek-R1"],
        "MIT",
        ("671B", "37B", "models.yaml readme_dsv3 (DeepSeek-V3, the same architecture: 671B total / 37B activated)"),
    ),
    "deepseek-ai--DeepSeek-V3.2": (
        "deepseek-ai/DeepSeek-V3.2",
        ["deepseek-v3.2", "DeepSeek V3.2", "DeepSeek-V3.2"],
        "MIT (stated for DeepSeek-V3.2-Exp)",
        ("671B", "37B", "models.yaml readme_dsv3 (the DeepSeek-V3 body; V3.2 adds the DSA indexer)"),
    ),
    "Qwen--Qwen3-8B": ("Qwen/Qwen3-8B", ["qwen3-8b", "Qwen3 8B"], "Apache-2.0", None),
    "Qwen--Qwen3-32B": ("Qwen/Qwen3-32B", ["qwen3-32b", "Qwen3 32B"], "Apache-2.0", None),
    "Qwen--Qwen3-235B-A22B": ("Qwen/Qwen3-235B-A22B", [], "Apache-2.0", ("235B", "22B", "the model's name")),
    "Qwen--Qwen3-Coder-480B-A35B-Instruct": (
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        ["qwen3-coder-480b", "Qwen3 Coder 480B", "qwen3-coder-480b-a35b"],
        "Apache-2.0",
        ("480B", "35B", "the model's name"),
    ),
    "Qwen--Qwen3.5-27B": (
        "Qwen/Qwen3.5-27B",
        ["qwen3.5-27b", "Qwen3.5 27B"],
        "not found for this size (Qwen3.5-397B-A17B: Apache-2.0)",
        ("27B", "27B", "the model's name (dense)"),
    ),
    "Qwen--Qwen3.5-122B-A10B": (
        "Qwen/Qwen3.5-122B-A10B",
        ["qwen3.5-122b", "Qwen3.5 122B", "qwen3.5-122b-a10b"],
        "not found for this size (Qwen3.5-397B-A17B: Apache-2.0)",
        ("122B", "10B", "the model's name"),
    ),
    "Qwen--Qwen3.5-397B-A17B": (
        "Qwen/Qwen3.5-397B-A17B",
        ["qwen3.5-397b", "Qwen3.5 397B", "qwen3.5-397b-a17b"],
        "Apache-2.0",
        ("397B", "17B", "the model's name"),
    ),
    "meta-llama--Llama-4-Scout-17B-16E-Instruct": (
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        ["llama-4-scout", "Llama 4 Scout", "meta-llama/Llama-4-Scout-17B-16E"],
        "Llama 4 Community License",
        ("109B", "17B", "Meta's Llama 4 model card (109B total incl. the vision encoder); 17B active is in the name"),
    ),
    "meta-llama--Llama-4-Maverick-17B-128E-Instruct": (
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        ["llama-4-maverick", "Llama 4 Maverick", "meta-llama/Llama-4-Maverick-17B-128E"],
        "Llama 4 Community License",
        ("400B", "17B", "Meta's Llama 4 model card (400B total); 17B active is in the name"),
    ),
    "moonshotai--Kimi-K2-Instruct": (
        "moonshotai/Kimi-K2-Instruct",
        ["kimi-k2", "Kimi K2", "moonshotai/Kimi-K2-Base", "moonshotai/Kimi-K2-Instruct-0905"],
        "Modified MIT",
        ("1T", "32B", "Kimi K2 model card ('1 trillion total parameters', '32 billion activated')"),
    ),
    "moonshotai--Kimi-K2.5": (
        "moonshotai/Kimi-K2.5",
        ["kimi-k2.5", "Kimi K2.5"],
        "Modified MIT",
        ("1T", "32B", "Kimi K2 model card (K2.5 keeps the K2 text model: 61 layers, 384 experts, 8 per token)"),
    ),
    "zai-org--GLM-5": ("zai-org/GLM-5", ["glm-5", "GLM 5", "GLM-5"], "MIT", None),
    "zai-org--GLM-5-FP8": (
        "zai-org/GLM-5-FP8",
        ["glm-5-fp8", "GLM 5 FP8"],
        "not found for the FP8 repository (GLM-5: MIT)",
        None,
    ),
    "MiniMaxAI--MiniMax-M2.5": (
        "MiniMaxAI/MiniMax-M2.5",
        ["minimax-m2.5", "MiniMax M2.5", "MiniMax-M2.5"],
        "Modified MIT (MiniMax-M2.5 LICENSE: display 'MiniMax M2.5' in commercial products)",
        None,
    ),
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8": (
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
        ["nemotron-3-super", "Nemotron 3 Super", "nemotron-3-super-120b"],
        "NVIDIA Nemotron Open Model License",
        ("120B", "12B", "the model's name"),
    ),
    "nvidia--Llama-3.1-70B-Instruct-FP8": (
        "nvidia/Llama-3.1-70B-Instruct-FP8",
        ["llama-3.1-70b-fp8-nvidia"],
        "not found for this repository (sibling nvidia/Llama-3.1-405B-Instruct-FP8: "
        "nvidia-open-model-license and llama3.1)",
        None,
    ),
    "nvidia--Qwen3-235B-A22B-NVFP4": (
        "nvidia/Qwen3-235B-A22B-NVFP4",
        ["qwen3-235b-a22b-nvfp4"],
        "not found for this repository (sibling card: nvidia-open-model-license; Apache License 2.0)",
        ("235B", "22B", "the model's name"),
    ),
    "google--gemma-4-26B-A4B": (
        "google/gemma-4-26B-A4B",
        ["gemma-4-26b-a4b", "Gemma 4 26B", "gemma-4-26b", "google/gemma-4-26B-A4B-it"],
        "Apache-2.0",
        ("26B", "4B", "the model's name"),
    ),
    "openai--gpt-oss-120b": ("openai/gpt-oss-120b", [], "Apache-2.0", None),
    "openai--gpt-oss-20b": ("openai/gpt-oss-20b", [], "Apache-2.0", None),
}
# Quantized repackagings of a model in the catalog: the same architecture, so they are names of
# that entry (the name's -FP8 / -NVFP4 suffix selects the precision), not models of their own.
QUANTIZED_CHECKPOINTS = {
    "nvidia--Llama-3.1-70B-Instruct-FP8": "meta-llama/Llama-3.1-70B",
    "nvidia--Qwen3-235B-A22B-NVFP4": "Qwen/Qwen3-235B-A22B",
    "zai-org--GLM-5-FP8": "zai-org/GLM-5",
}
MODEL_CONFIGS_SOURCE = (
    "ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce "
    "aic-core/src/aiconfigurator_core/model_configs/{file} (Apache-2.0; byte-for-byte copy in "
    "shared/reference/model-configs)"
)
# config.json keys that describe other towers or tooling, not the language model llmsweep sizes.
CONFIG_DROP = {"vision_config", "audio_config", "auto_map", "id2label", "label2id", "task_specific_params"}

# Keys of the reference's moe block that are its own summaries, not config.json keys.
REFERENCE_ONLY_KEYS = {"expert_intermediate_size", "shared_experts"}

LICENSE_SOURCE = "license named on the model's Hugging Face model card (check the current terms before use)"


def _pcie_gbps(text: str | None) -> tuple[float | None, str | None]:
    """PCIe bandwidth per direction from the interconnect.pcie text, and how it was obtained."""
    if not text:
        return None, None
    m = re.search(r"(?:Gen\s*|PCIe\s*)(\d)(?:\.0)?\s*x\s*(\d+)", text)
    if m:
        gen, lanes = int(m.group(1)), int(m.group(2))
        gbps = round(PCIE_GBPS_PER_LANE[gen] * lanes, 1)
        return gbps, f"pcie_gbps_per_direction {gbps} ({PCIE_SOURCE})"
    m = re.search(r"(\d+(?:\.\d+)?) GB/s per direction", text)
    if m:  # no lane count, but the reference states the per-direction figure
        return float(m.group(1)), f"pcie_gbps_per_direction {m.group(1)} as stated in interconnect.pcie: {text!r}"
    return None, None


def _num(v):
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    return None


def _sources(entry: dict, index: dict) -> list[dict]:
    out = []
    for s in entry.get("sources") or []:
        ref = s["ref"]
        out.append({"ref": ref, "source": index.get(ref, ref), "fields": [str(f) for f in s.get("fields") or []]})
    return out


def _scale_out(gid: str, ref_id: str, ic: dict) -> tuple[float | None, str | None, bool]:
    """Scale-out GB/s per direction per GPU, the `fields` line saying where it came from, and
    whether the reference states it (else it is a stated llmsweep assumption, or unknown)."""
    text = str(ic.get("networking") or "")
    if gid in SCALE_OUT_FROM_REFERENCE:
        value, words, how = SCALE_OUT_FROM_REFERENCE[gid]
        if words not in text:
            raise SystemExit(f"{ref_id}: interconnect.networking no longer says {words!r}: {text!r}")
        return value, f"scale_out_gbps_per_direction {value:g}: {text}", True
    if text:
        raise SystemExit(f"{ref_id}: the reference states networking ({text!r}); add it to SCALE_OUT_FROM_REFERENCE")
    if gid in SCALE_OUT_ASSUMED:
        value, design = SCALE_OUT_ASSUMED[gid]
        return value, f"scale_out_gbps_per_direction {value:g}: {design}", False
    return None, None, False


def _node_sources(
    g: dict, fname: str, per_node: int, group: int, scale_out_line: str | None, scale_out_sourced: bool
) -> list[dict]:
    """Where GPUs per server, the scale-up domain (nvlink_group) and the scale-out bandwidth came
    from: the reference's interconnect block where it states them, else the llmsweep assumption."""
    ic = g.get("interconnect") or {}
    stated, assumed = [], []
    domain = ic.get("nvlink_domain")
    if domain and group > 1 and int(str(domain).split()[0]) != group:
        raise SystemExit(f"{g['id']}: nvlink_group {group} but interconnect.nvlink_domain says {domain!r}")
    if fname == "gpus-2026.yaml":  # this file states the node and the NVLink domain
        if domain or group == 1:
            why = domain or ic.get("nvlink_note") or "no scale-up link"
        else:
            why = (
                f"{ic['infinity_fabric_links']} Infinity Fabric links per GPU, one to each other GPU of the "
                f"{per_node}-GPU server"
            )
        stated += [f"gpus_per_node {per_node}: {ic.get('gpus_per_node')}", f"nvlink_group {group}: {why}"]
    elif domain:
        stated.append(f"nvlink_group {group}: {domain}")
        assumed.append("gpus_per_node")
    else:
        assumed += ["gpus_per_node", "nvlink_group"]
    if scale_out_line:
        (stated if scale_out_sourced else assumed).append(scale_out_line)
    out = []
    if stated:
        out.append(
            {
                "ref": f"{fname} interconnect",
                "source": f"shared/reference/{fname}, entry {g['id']}, interconnect block",
                "fields": stated,
            }
        )
    if assumed:
        out.append({"ref": "llmsweep", "source": GPUS_PER_NODE_SOURCE, "fields": assumed})
    return out


def _gpu_entry(g: dict, fname: str, index: dict) -> dict:
    """One reference GPU in the catalog's schema (ids, family and node facts from GPU_IDS)."""
    gid, aliases, family, per_node, nvlink_group = GPU_IDS[g["id"]]
    tf = g.get("dense_tflops") or {}
    tops = g.get("dense_tops") or {}
    rates = {k: _num(tf.get(k)) for k in ("fp32", "tf32", "fp16", "bf16", "fp8", "fp4")}
    rates["int8"] = _num(tops.get("int8"))
    rates["int4"] = _num(tops.get("int4"))
    derived = [str(d) for d in g.get("derived_fields") or []]
    fix = GPU_CORRECTIONS.get(gid)
    if fix:
        for k, v in fix["dense_tflops"].items():
            derived.append(f"dense_tflops.{k}: {rates[k]} -> {v} ({fix['why']})")
            rates[k] = v
    derived += [f"choice: {c}" for c in GPU_CHOICES.get(gid, [])]
    ic = g.get("interconnect") or {}
    nvlink = _num(ic.get("nvlink_gbps_per_direction"))
    if nvlink is None and _num(ic.get("nvlink_gbps_bidirectional")):
        nvlink = ic["nvlink_gbps_bidirectional"] / 2
        derived.append("nvlink_gbps_per_direction = nvlink_gbps_bidirectional / 2")
    if nvlink is None and _num(ic.get("infinity_fabric_gbps_unidirectional_total")):
        nvlink = float(ic["infinity_fabric_gbps_unidirectional_total"])
        derived.append("scale-up link = Infinity Fabric unidirectional total")
    m = re.search(r"(\d+(?:\.\d+)?) GB/s per direction", str(ic.get("scale_up") or ""))
    if nvlink is None and m:  # Gaudi: the on-chip RoCE ports are its scale-up link
        nvlink = float(m.group(1))
        derived.append(
            f"scale-up link {nvlink:g} GB/s per direction as interconnect.scale_up states it ({ic['scale_up']}); "
            "that figure counts all 24 ports, of which Intel's 8-card servers give 21 to the 7 peers and 3 to "
            "scale-out (scale_out_gbps_per_direction)"
        )
    pcie, how = _pcie_gbps(ic.get("pcie"))
    if how:
        derived.append(how)
    group = nvlink_group if nvlink else 1
    scale_out, scale_out_line, scale_out_sourced = _scale_out(gid, g["id"], ic)
    if scale_out_sourced:
        how = SCALE_OUT_FROM_REFERENCE[gid][2]
        derived.append(f"scale_out_gbps_per_direction {scale_out:g} from interconnect.networking: {how}")
    return {
        "name": g["name"],
        "vendor": g["vendor"],
        "family": family,
        "arch": g.get("arch"),
        "form_factor": g.get("form_factor"),
        "reference_id": f"{fname}:{g['id']}",
        "aliases": aliases,
        "memory_gb": _num(g["memory_gb"]),
        "memory_type": g.get("memory_type"),
        "memory_bandwidth_gbps": _num(g["memory_bandwidth_gbps"]),
        "dense_tflops": rates,
        "tdp_w": _num(g.get("tdp_w")),
        "scale_up_gbps_per_direction": nvlink,
        "nvlink_group": group,
        "pcie_gbps_per_direction": pcie,
        "scale_out_gbps_per_direction": scale_out,
        "gpus_per_node": per_node,
        "launch_year": g.get("launch_year"),
        "cloud_prices": [
            {**p, "source": index.get(p.get("source"), p.get("source"))} for p in g.get("cloud_prices") or []
        ],
        "sources": _sources(g, index) + _node_sources(g, fname, per_node, group, scale_out_line, scale_out_sourced),
        "derived": derived,
        "notes": g.get("notes"),
    }


def _variant_entry(parent: dict, g: dict, v: dict, index: dict) -> tuple[str, dict]:
    """A `variants` row of gpus-2026.yaml as its own GPU: only the facts the row states; the rest
    of the datasheet is left unknown rather than copied from the parent."""
    vid, aliases = GPU_VARIANTS[(g["id"], v["name"].split(" (")[0].split(" '")[0].strip())]
    rate = lambda text: float(str(text).split()[0])  # noqa: E731 - "148 (source) / 146.5 (source)": the first
    e = {**parent, "name": f"NVIDIA {v['name']}", "reference_id": f"gpus-2026.yaml:{g['id']} variant {vid}"}
    e["aliases"] = aliases
    e["memory_gb"] = _num(v["memory_gb"])
    e["memory_type"] = "HBM3e"
    e["memory_bandwidth_gbps"] = _num(v["memory_bandwidth_gbps"])
    bf16 = rate(str(v["bf16"]).split("/")[-1])
    fp8 = rate(str(v["fp8"]).split("/")[-1])
    e["dense_tflops"] = {
        "fp32": None,
        "tf32": None,
        "fp16": None,
        "bf16": bf16,
        "fp8": fp8,
        "fp4": None,
        "int8": fp8,
        "int4": None,
    }
    e["tdp_w"] = _num(v["tdp_w"])
    e["launch_year"] = None
    e["cloud_prices"] = []
    e["sources"] = [
        {
            "ref": ref,
            "source": index[ref],
            "fields": [f"variant {v['name']}: memory, bandwidth, bf16, fp8/int8, power, NVLink"],
        }
        for ref in v["sources"]
    ] + [s for s in parent["sources"] if s["ref"] in NODE_REFS]
    e["derived"] = [f"choice: {c}" for c in GPU_CHOICES.get(vid, [])] + [
        "int8 = fp8: both source files list 'int8/fp8' at one rate",
        "NVLink 450 GB/s per direction, 8 per node: the H20 entry's interconnect "
        "(aic_h20_3e_pr1435: 900 GB/s bidirectional); scale-out: the H20 entry's",
        "fp32, tf32, fp16, PCIe, launch year: not stated for this variant (fp16 falls back to the bf16 rate)",
    ]
    e["pcie_gbps_per_direction"] = None
    e["notes"] = v.get("note")
    return vid, e


def build_gpus(ref_dir: Path) -> dict:
    gpus = {}
    for fname in ("gpus.yaml", "gpus-extra.yaml"):
        data = yaml.safe_load((ref_dir / fname).read_text())
        index = data["source_index"]
        for g in data["gpus"]:
            gpus[GPU_IDS[g["id"]][0]] = _gpu_entry(g, fname, index)
    data = yaml.safe_load((ref_dir / "gpus-2026.yaml").read_text())
    index = data["source_index"]
    for g in data["gpus"]:
        e = _gpu_entry(g, "gpus-2026.yaml", index)
        gid = GPU_IDS[g["id"]][0]
        if gid in gpus:  # a copy of an existing entry: its datasheet must agree; add new sources and prices
            old = gpus[gid]
            for k in ("memory_gb", "memory_bandwidth_gbps", "dense_tflops", "tdp_w", "scale_out_gbps_per_direction"):
                if old[k] != e[k]:
                    raise SystemExit(
                        f"gpus-2026.yaml {g['id']}: {k} {e[k]} differs from {old['reference_id']} {old[k]}"
                    )
            old["reference_id"] += f", gpus-2026.yaml:{g['id']}"
            seen = {s["ref"] for s in old["sources"]}
            old["sources"] += [s for s in e["sources"] if s["ref"] not in seen | NODE_REFS | {"gpus_extra_yaml"}]
            old["cloud_prices"] += e["cloud_prices"]
            continue
        gpus[gid] = e
        for v in g.get("variants") or []:
            vid, ve = _variant_entry(e, g, v, index)
            gpus[vid] = ve
    for upd in data["price_updates_for_existing_entries"]:
        e = gpus[GPU_IDS[upd["id"]][0]]
        prices = [{**p, "source": index.get(p["source"], p["source"])} for p in upd["cloud_prices"]]
        e["cloud_prices"] += prices
        e["sources"].append(
            {
                "ref": "gpus-2026.yaml price_updates_for_existing_entries",
                "source": "shared/reference/gpus-2026.yaml price_updates_for_existing_entries",
                "fields": [f"cloud_prices: {p['provider']} {p['usd_per_gpu_hour']} ({p['as_of']})" for p in prices],
            }
        )
        if upd.get("launch_year") and e["launch_year"] is None:
            e["launch_year"] = int(str(upd["launch_year"])[:4])
            e["derived"].append(
                f"launch_year from gpus-2026.yaml price_updates_for_existing_entries: {upd['launch_year']}"
            )
    for gid, added in PRICE_ADDITIONS.items():
        prices = [{**p, "source": index[p["source"]]} for p in added]
        gpus[gid]["cloud_prices"] += prices
        gpus[gid]["sources"].append(
            {
                "ref": "llmsweep price additions",
                "source": "scripts/build_catalog.py PRICE_ADDITIONS (a listing the reference's own source quotes)",
                "fields": [f"cloud_prices: {p['provider']} {p['usd_per_gpu_hour']} ({p['as_of']})" for p in prices],
            }
        )
    return gpus


def build_models(ref_dir: Path) -> dict:
    data = yaml.safe_load((ref_dir / "models.yaml").read_text())
    index = data["source_index"]
    models = {}
    for m in data["models"]:
        mid, aliases, license_ = MODEL_IDS[m["id"]]
        cfg = {"model_type": m["model_type"], **{k: v for k, v in m["config"].items() if v is not None}}
        # models.yaml describes the released weights in words ("fp8 e4m3, 128x128 blocks", "mxfp4
        # for MoE weights"); its first word names the precision. Absent = not stated.
        quant = str(cfg.pop("quantization", "") or "")
        precision = quant.split()[0].lower() if quant.split() else None
        if precision not in {"fp8", "mxfp4", "nvfp4", "bf16", "fp16"}:
            precision = None
        # Flatten the reference's moe / mla / sliding_window blocks back into config.json keys, so
        # catalog entries and users' config.json files go through the same reader.
        for block in ("moe", "mla"):
            cfg.update({k: v for k, v in (m.get(block) or {}).items() if k not in REFERENCE_ONLY_KEYS})
        sw = m.get("sliding_window") or {}
        if isinstance(sw.get("sliding_window"), int):
            cfg["sliding_window"] = sw["sliding_window"]
            if sw.get("use_sliding_window") is False:
                cfg["use_sliding_window"] = False
        # llmsweep counts parameters from the config; the reference's counts are kept beside
        # each entry and tests/test_architecture.py checks the two agree.
        p = m["params"]
        if isinstance(p.get("computed_total_from_config"), int):
            params = {
                "total": p["computed_total_from_config"],
                "source": "models.yaml params.computed_total_from_config",
            }
            if isinstance(p.get("computed_active_from_config"), int):
                params["active"] = p["computed_active_from_config"]
        else:  # gpt-oss: no computed count in models.yaml; the official total is used
            total = float(str(p["official_total"]).split("B")[0]) * 1e9
            active = float(str(p["official_active"]).split("B")[0]) * 1e9
            params = {
                "total": int(total),
                "active_excluding_input_embedding": int(active),
                "source": f"models.yaml params.official_total / official_active ({p['official_total']})",
            }
        models[mid] = {
            "name": m["name"],
            "reference_id": f"models.yaml:{m['id']}",
            "aliases": aliases,
            "license": license_,
            "config": cfg,
            "params_reference": params,
            "kv_bytes_per_token_fp16_reference": m.get("kv_bytes_per_token_fp16"),
            "default_precision": precision,
            "default_precision_source": f"models.yaml config.quantization: {quant}" if precision else None,
            "sources": _sources(m, index) + [{"ref": "license", "source": LICENSE_SOURCE, "fields": ["license"]}],
            "notes": m.get("notes"),
        }
    for e in EXTRA_MODELS:
        models[e["id"]] = {
            "name": e["name"],
            "reference_id": None,
            "aliases": e["aliases"],
            "license": e["license"],
            "config": e["config"],
            "params_reference": {},
            "kv_bytes_per_token_fp16_reference": None,
            "sources": [{"ref": "config.json", "source": s, "fields": ["config"]} for s in e["sources"]]
            + [{"ref": "license", "source": LICENSE_SOURCE, "fields": ["license"]}],
            "notes": "parameter counts computed by llmsweep from the config fields",
        }
    add_model_configs(models, ref_dir)
    return models


def _clean_config(cfg: dict) -> dict:
    """config.json as llmsweep keeps it: the language model's fields (other towers and tooling
    dropped), nulls dropped (absent = not stated), module lists over 16 names shortened."""
    out = {}
    for k, v in cfg.items():
        if k in CONFIG_DROP or v is None:
            continue
        if isinstance(v, dict):
            v = _clean_config(v)
        elif isinstance(v, list) and len(v) > 16 and all(isinstance(x, str) for x in v) and k != "layer_types":
            v = v[:8] + [f"... {len(v) - 8} more (see the source config.json)"]
        out[k] = v
    return out


def _readme_rows(ref_dir: Path) -> dict[str, list[str]]:
    """The model-configs README table: file name -> its cells (model, architecture, KV, quantization, license)."""
    rows = {}
    for line in (ref_dir / "model-configs" / "README.md").read_text().splitlines():
        m = re.match(r"^\| `([^`]+)` \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
    return rows


def add_model_configs(models: dict, ref_dir: Path) -> None:
    """Entries for every config.json in model-configs/; a model already built from models.yaml
    keeps its reference counts and takes the verbatim config (with its quantization and layer fields)."""
    folder = ref_dir / "model-configs"
    readme = _readme_rows(ref_dir)
    for stem, (mid, aliases, license_, published) in MODEL_CONFIGS.items():
        fname = f"{stem}_config.json"
        raw = json.loads((folder / fname).read_text())
        quant_file = folder / f"{stem}_hf_quant_config.json"
        quant = json.loads(quant_file.read_text()) if quant_file.exists() else None
        precision, why = checkpoint_precision(raw, quant)
        cells = readme[fname]
        sources = [
            {"ref": "config.json", "source": MODEL_CONFIGS_SOURCE.format(file=fname), "fields": ["config"]},
            {
                "ref": "model-configs README",
                "source": f"shared/reference/model-configs/README.md, row {fname}",
                "fields": [f"architecture: {cells[1]}", f"attention / KV: {cells[2]}", f"license: {cells[4]}"],
            },
        ]
        if quant:
            sources.append(
                {
                    "ref": "hf_quant_config.json",
                    "source": MODEL_CONFIGS_SOURCE.format(file=quant_file.name),
                    "fields": [f"default_precision ({json.dumps(quant['quantization'])[:200]})"],
                }
            )
        towers = ("vision_config", "audio_config")
        dropped = [k for k in towers if raw.get(k) or (raw.get("text_config") or {}).get(k)]
        note = (
            "Parameters counted from the language model's fields (main model; MTP / next-token "
            "prediction layers and " + (", ".join(dropped) if dropped else "other towers") + " not counted)."
        )
        if stem in QUANTIZED_CHECKPOINTS:  # a name of the base entry, with where its format is stated
            base = models[QUANTIZED_CHECKPOINTS[stem]]
            base["aliases"] = list(dict.fromkeys([*base["aliases"], mid, *aliases]))
            base["sources"].append(
                {
                    "ref": f"checkpoint {mid}",
                    "source": MODEL_CONFIGS_SOURCE.format(file=(quant_file if quant else folder / fname).name),
                    "fields": [f"{mid}: same architecture, weights in {precision} ({why})"],
                }
            )
            continue
        if mid in models:  # already built from models.yaml: same model, verbatim config
            e = models[mid]
            e["aliases"] = list(dict.fromkeys(e["aliases"] + aliases))
            e["config"] = _clean_config(raw)
            e["sources"] = sources + e["sources"]
            e["default_precision"], e["default_precision_source"] = precision, why
            continue
        params = {}
        if published:
            params = {"official_total": published[0], "official_active": published[1], "source": published[2]}
        models[mid] = {
            "name": mid.split("/", 1)[1],
            "reference_id": f"model-configs:{fname}",
            "aliases": aliases,
            "license": license_,
            "config": _clean_config(raw),
            "params_reference": params,
            "kv_bytes_per_token_fp16_reference": None,
            "default_precision": precision,
            "default_precision_source": why,
            "sources": sources,
            "notes": note,
        }


HEADER = (
    "# Generated by scripts/build_catalog.py from shared/reference/{src}. Do not edit by hand:\n"
    "# change the reference or the script, then re-run it.\n"
)


def render(ref_dir: Path) -> dict[str, str]:
    dump = lambda d: yaml.safe_dump(d, sort_keys=False, allow_unicode=True, width=120)  # noqa: E731
    return {
        "gpus.yaml": HEADER.format(src="gpus.yaml, gpus-extra.yaml, gpus-2026.yaml")
        + dump({"ambiguous_aliases": GPU_AMBIGUOUS, "gpus": build_gpus(ref_dir)}),
        "models.yaml": HEADER.format(src="models.yaml, model-configs/") + dump({"models": build_models(ref_dir)}),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference")
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed files differ")
    args = ap.parse_args(argv)
    out = render(args.reference)
    stale = [n for n, text in out.items() if (CATALOG / n).read_text() != text] if args.check else []
    if args.check:
        print("stale: " + ", ".join(stale) if stale else "catalog is up to date")
        return 1 if stale else 0
    for n, text in out.items():
        (CATALOG / n).write_text(text)
        print(f"wrote {CATALOG / n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
