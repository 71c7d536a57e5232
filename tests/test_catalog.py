"""The packaged catalogs: complete, sourced, generated from the reference, names resolve."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from llmsweep.errors import UnknownNameError

from .conftest import REFERENCE, ROOT, needs_reference


@needs_reference
def test_catalog_files_are_the_build_scripts_output():
    out = subprocess.run(
        [sys.executable, "scripts/build_catalog.py", "--check", "--reference", str(REFERENCE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


@needs_reference
def test_every_reference_gpu_is_in_the_catalog(catalog):
    refs = {g.reference_id for g in catalog.gpus.values()}
    for fname in ("gpus.yaml", "gpus-extra.yaml"):
        for g in yaml.safe_load((REFERENCE / fname).read_text())["gpus"]:
            assert f"{fname}:{g['id']}" in refs


def test_every_entry_carries_sources(catalog):
    for gid, g in catalog.gpus.items():
        assert g.sources, gid
    for mid, m in catalog.models.items():
        assert m.sources and m.license, mid
    for pid, p in catalog.precisions.items():
        assert p.sources, pid
    for name, p in catalog.profiles.items():
        assert p.sources, name


def test_dense_rates_not_sparse(catalog):
    # NVIDIA prints H100 SXM BF16 "1,979" with sparsity; the dense peak is 989
    assert catalog.gpu("h100-sxm").dense_tflops.bf16 == 989
    assert catalog.gpu("mi300x").dense_tflops.fp8 == 2614.9
    # gpus.yaml's rtx-5090 lists FP16-accumulate rates; FP32-accumulate (what kernels use) is 209.5
    g = catalog.gpu("rtx-5090")
    assert (g.dense_tflops.bf16, g.dense_tflops.fp8) == (209.5, 419.0)
    assert any("FP16-accumulate" in d for d in g.derived)
    # Apple publishes no fp16 tensor rate: it stays unknown
    assert catalog.gpu("m2-ultra").dense_tflops.fp16 is None


@pytest.mark.parametrize(
    ("name", "gid"),
    [
        ("H100 SXM", "h100-sxm"),
        ("h100-sxm5-80gb", "h100-sxm"),
        ("A100 80GB SXM", "a100-80gb-sxm"),
        ("RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("M2 Ultra", "m2-ultra"),
        ("m2-ultra", "m2-ultra"),
        ("L40S", "l40s"),
        ("RTX 3080 10GB", "rtx-3080-10gb"),
        ("MI300X", "mi300x"),
        ("Gaudi 3", "gaudi3"),
        ("b200", "b200"),
        ("GB200", "gb200"),
        ("rtx pro 6000 server", "rtx-pro-6000-server"),
    ],
)
def test_gpu_names_resolve(catalog, name, gid):
    r = catalog.resolve_gpu(name)
    assert (r.id, r.note) == (gid, None)


def test_ambiguous_gpu_names_pick_the_common_variant_and_say_so(catalog):
    r = catalog.resolve_gpu("H100 80GB")
    assert r.id == "h100-sxm"
    assert r.note == "gpu 'H100 80GB' is ambiguous; using h100-sxm (the most common variant; also: h100-pcie)"
    assert catalog.resolve_gpu("A100 80GB").id == "a100-80gb-sxm"


@pytest.mark.parametrize(
    ("name", "mid"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B"),
        ("meta-llama/llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-hf"),
        ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "meta-llama/Llama-3.1-70B"),
        ("TheBloke/Llama-2-7B-GGUF", "meta-llama/Llama-2-7b-hf"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mistral-7B-v0.3"),
        ("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct"),
        ("deepseek-r1", "deepseek-ai/DeepSeek-R1"),
        ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-R1"),
        ("deepseek-v3", "deepseek-ai/DeepSeek-V3"),
    ],
)
def test_model_aliases(catalog, name, mid):
    assert catalog.resolve_model(name).id == mid


def test_older_models_people_benchmark_are_present(catalog):
    for mid in (
        "meta-llama/Llama-2-13b-hf",
        "meta-llama/Llama-2-70b-hf",
        "huggyllama/llama-30b",
        "codellama/CodeLlama-7b-hf",
        "codellama/CodeLlama-34b-hf",
        "EleutherAI/gpt-j-6b",
        "mistralai/Mistral-7B-v0.3",
        "meta-llama/Meta-Llama-3-8B",
        "meta-llama/Meta-Llama-3-70B",
        "meta-llama/Llama-3.3-70B-Instruct",
    ):
        assert mid in catalog.models


@pytest.mark.parametrize(
    ("name", "bits", "compute"),
    [
        ("fp32", 32, "fp32"),
        ("fp16", 16, "fp16"),
        ("bf16", 16, "bf16"),
        ("fp8", 8, "fp8"),
        ("int8", 8, "int8"),
        ("int4", 4.125, "fp16"),
        ("nvfp4", 4.5, "fp4"),
        ("mxfp4", 4.25, "fp4"),
        ("q8_0", 8.5, "fp16"),
        ("q6_k", 6.5625, "fp16"),
        ("q5_k_m", 5.67, "fp16"),
        ("q4_k_m", 4.85, "fp16"),
        ("q4_0", 4.5, "fp16"),
        ("q3_k_m", 3.91, "fp16"),
        ("q2_k", 3.4, "fp16"),
        ("4.0bpw", 4.0, "fp16"),
        ("2.5BPW", 2.5, "fp16"),
    ],
)
def test_precisions(catalog, name, bits, compute):
    p = catalog.precision(catalog.resolve_precision(name).id)
    assert (p.bits_per_weight, p.compute_dtype) == (bits, compute)


@pytest.mark.parametrize(
    ("kind", "name", "message"),
    [
        ("gpu", "H10 SXM", "unknown gpu 'H10 SXM'; did you mean 'h100-sxm'"),
        (
            "model",
            "meta-llama/Llama-3.1-8C",
            "unknown model 'meta-llama/Llama-3.1-8C'; did you mean 'meta-llama/Llama-3.1-8B'",
        ),
        ("precision", "bf61", "unknown precision 'bf61'; did you mean 'bf16'?"),
        ("precision", "0bpw", "unknown precision '0bpw'"),
    ],
)
def test_unknown_names(catalog, kind, name, message):
    with pytest.raises(UnknownNameError) as e:
        getattr(catalog, f"resolve_{kind}")(name)
    assert str(e.value).startswith(message)


def test_profiles(catalog):
    ideal = catalog.profile("ideal").for_family("hopper")
    assert (ideal.bandwidth_efficiency, ideal.compute_efficiency, ideal.step_overhead_s) == (1.0, 1.0, 0.0)
    default = catalog.profile("default")
    assert default.for_family("apple").memory_reserve_fraction == 0.25
    assert default.for_family("hopper").memory_reserve_fraction == 0.1
    with pytest.raises(UnknownNameError, match="did you mean 'ideal'"):
        catalog.profile("idael")


def test_profile_file(tmp_path, catalog):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(catalog.profile("ideal").model_dump()))
    assert catalog.profile(str(path)) == catalog.profile("ideal")
    path.write_text("description: x\ndefaults: {bandwidth_efficiency: 2}\n")
    with pytest.raises(Exception, match=r"p.yaml: not a valid efficiency profile: defaults.bandwidth_efficiency"):
        catalog.profile(str(path))
