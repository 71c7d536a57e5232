"""The packaged catalogs: complete, sourced, generated from the reference, names resolve."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from llmsweep.errors import LlmsweepError, UnknownNameError

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
    refs = {r for g in catalog.gpus.values() for r in g.reference_id.split(", ")}
    for fname in ("gpus.yaml", "gpus-extra.yaml", "gpus-2026.yaml"):
        for g in yaml.safe_load((REFERENCE / fname).read_text())["gpus"]:
            assert f"{fname}:{g['id']}" in refs
    # the H20's 141 GB variant has its own entry
    assert catalog.gpu("h20-141gb").reference_id == "gpus-2026.yaml:h20 variant h20-141gb"


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
        ("B300", "b300"),
        ("HGX B300", "b300"),
        ("GB300 NVL72", "gb300"),
        ("H20 96GB", "h20"),
        ("H20 141GB", "h20-141gb"),
        ("DGX Spark", "dgx-spark"),
        ("GB10", "dgx-spark"),
        ("MI350X", "mi350x"),
        ("AMD Instinct MI355X", "mi355x"),
        ("Intel Arc Pro B60", "arc-pro-b60"),
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


def test_fp4_names_each_gpu_vendors_format(catalog):
    # `fp4` is no one format: resolve_precision keeps it, fp4_format picks the GPU vendor's
    assert catalog.resolve_precision("FP4").id == "fp4"
    assert [catalog.fp4_format(g).id for g in ("b200", "gb300", "h100-sxm", "mi355x", "mi300x")] == [
        "nvfp4",
        "nvfp4",
        "nvfp4",
        "mxfp4",
        "mxfp4",
    ]
    assert catalog.fp4_format("mi355x").note == "fp4 on mi355x is mxfp4, AMD's FP4 format"
    # no format of the vendor's own, or a KV cache (not resolved per GPU): nvfp4, as before
    assert (
        catalog.fp4_format("m2-ultra").note
        == "fp4 on m2-ultra is nvfp4 (Apple has no FP4 format of its own; NVIDIA's assumed)"
    )
    kv = catalog.kv_format("fp4")
    assert (kv.id, kv.note) == ("nvfp4", "a KV cache's fp4 is nvfp4: the KV-cache axis is not resolved per GPU")
    assert (catalog.kv_format("fp8").id, catalog.kv_format("fp8").note) == ("fp8", None)
    # the explicit names are themselves
    assert [catalog.weight_format(p, "mi355x").id for p in ("nvfp4", "mxfp4", "fp8")] == ["nvfp4", "mxfp4", "fp8"]
    assert catalog.resolve_precision("nvfp4-w4a4").id == "nvfp4" and catalog.resolve_precision("MX-FP4").id == "mxfp4"


def test_cli_precisions_fp4_lists_each_vendors_format():
    from llmsweep.listing import render

    shown = json.loads(render("precision", "fp4", "json"))
    assert (shown["id"], shown["formats"], shown["otherwise"]) == ("fp4", {"NVIDIA": "nvfp4", "AMD": "mxfp4"}, "nvfp4")
    # the list names it too, since a sweep may write it: its bits are the format each GPU takes
    listed = json.loads(render("precision", None, "json"))[-1]
    assert listed == {
        "id": "fp4",
        "name": "FP4, the GPU vendor's own",
        "bits_per_weight": None,
        "bytes_per_weight": None,
        "compute_dtype": "fp4",
        "source": "nvfp4 on NVIDIA, mxfp4 on AMD, else nvfp4 (llmsweep precisions fp4)",
    }


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
    # a misspelt parameter names its line and the parameter meant
    good = catalog.profile("ideal").model_dump()
    good["defaults"]["routed_activaton_passes"] = good["defaults"].pop("routed_activation_passes")
    path.write_text(yaml.safe_dump(good, sort_keys=False))
    line = path.read_text().splitlines().index("  routed_activaton_passes: 0.0") + 1
    with pytest.raises(LlmsweepError) as e:
        catalog.profile(str(path))
    assert str(e.value) == (
        f"{path}: not a valid efficiency profile: defaults.routed_activaton_passes: Extra inputs are not "
        f"permitted (did you mean routed_activation_passes?) (line {line})"
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # an engine typo would silently give vLLM's rows the shared values (no admission limit)
        (
            lambda d: d["engines"].__setitem__("vlm", d["engines"].pop("vllm")),
            r"engines\.vlm: not an engine \(did you mean vllm\?\).* \(line \d+\)",
        ),
        (
            lambda d: d["families"].__setitem__("hoppr", d["families"].pop("hopper")),
            r"families\.hoppr: no GPU in the catalog has the family 'hoppr' \(did you mean hopper\?\) \(line \d+\)",
        ),
        (
            lambda d: d["engines"]["sglang"]["families"].__setitem__(
                "hoper", d["engines"]["sglang"]["families"].pop("hopper")
            ),
            r"engines\.sglang\.families\.hoper: no GPU .* \(did you mean hopper\?\)",
        ),
        # YAML's true is no limit of 1 running request
        (
            lambda d: d["engines"]["vllm"]["defaults"].__setitem__("max_running_requests", True),
            r"engines\.vllm\.defaults\.max_running_requests: expected a number, got true",
        ),
        # a bound of 0 reads as such, not as "greater than -1"
        (
            lambda d: d["defaults"].__setitem__("max_running_requests", -1),
            r"defaults\.max_running_requests: Input should be greater than or equal to 0",
        ),
        (
            lambda d: d["engines"]["vllm"]["defaults"].__setitem__("max_runing_requests", 64),
            r"max_runing_requests: Extra inputs are not permitted \(did you mean max_running_requests\?\) "
            r"\(got 64\.0\) \(line \d+\)",
        ),
    ],
)
def test_a_profile_slip_in_an_engine_or_family_is_an_error(tmp_path, catalog, edit, message):
    data = catalog.profile("default").model_dump()
    edit(data)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(LlmsweepError, match=message):
        catalog.profile(str(path))


def test_a_custom_gpu_family_far_from_the_catalogs_is_kept(tmp_path, catalog):
    data = catalog.profile("default").model_dump()
    data["families"]["my-asic"] = {"bandwidth_efficiency": 0.5}
    data["families"]["hopper2"] = {"bandwidth_efficiency": 0.6}  # extends a catalog family: on purpose
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert catalog.profile(str(path)).for_family("my-asic").bandwidth_efficiency == 0.5
    assert catalog.profile(str(path)).for_family("hopper2").bandwidth_efficiency == 0.6


def test_a_profile_band_of_an_unknown_group_names_the_groups(tmp_path, catalog):
    good = catalog.profile("default").model_dump()
    good["bands"]["disagregated_prefill"] = good["bands"].pop("disaggregated_prefill")
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(good, sort_keys=False))
    with pytest.raises(
        LlmsweepError,
        match=r"bands\.disagregated_prefill: not a band group \(did you mean "
        r"disaggregated_prefill\?\); groups: decode, prefill, throughput, disaggregated_decode",
    ):
        catalog.profile(str(path))


# -- gpus-2026.yaml ---------------------------------------------------------------------------


def test_2026_gpus_family_and_node_facts(catalog):
    # (family, GPUs per node, GPUs on the scale-up link, per-direction link GB/s) as gpus-2026.yaml's
    # interconnect blocks state them; Blackwell Ultra parts share the blackwell profile family
    expected = {
        "b300": ("blackwell", 8, 8, 900),
        "gb300": ("blackwell", 4, 72, 900),
        "h20": ("hopper", 8, 8, 450),
        "h20-141gb": ("hopper", 8, 8, 450),
        "dgx-spark": ("blackwell", 1, 1, None),
        "mi350x": ("cdna", 8, 8, 535.5),
        "mi355x": ("cdna", 8, 8, 535.5),
        "arc-pro-b60": ("xe", 8, 1, None),
    }
    for gid, (family, per_node, group, link) in expected.items():
        g = catalog.gpu(gid)
        assert (g.family, g.gpus_per_node, g.nvlink_group, g.scale_up_gbps_per_direction) == (
            family,
            per_node,
            group,
            link,
        ), gid
        assert any(s.ref.startswith("gpus-2026.yaml") for s in g.sources), gid


def test_2026_disagreeing_sources_record_the_choice_and_both_sides(catalog):
    b300 = catalog.gpu("b300")
    assert (b300.dense_tflops.fp4, b300.dense_tflops.int8, b300.dense_tflops.bf16) == (14000, 153.5, 2250)
    fp4 = next(d for d in b300.derived if d.startswith("choice: fp4"))
    assert "aic_b300_sxm" in fp4 and "pg_glenn_b300" in fp4 and "stas_acc" in fp4
    int8 = next(d for d in b300.derived if d.startswith("choice: int8"))
    assert "153.5" in int8 and "4500" in int8
    assert any("146.5" in d for d in catalog.gpu("h20-141gb").derived)
    # derived_fields are carried: GB300's sparse rates from the rack totals, DGX Spark FP4 = 1000 / 2
    assert any("1,440 PF / 72" in d for d in catalog.gpu("gb300").derived)
    spark = catalog.gpu("dgx-spark")
    assert spark.dense_tflops.fp4 == 500 and any("1000 / 2" in d for d in spark.derived)
    # unpublished peaks stay unknown: the estimator falls back to fp32 and says so
    assert spark.dense_tflops.bf16 is None and spark.peak_flops("bf16") == (31e12, "fp32")


def test_2026_misquotes_are_not_repeated(catalog):
    # gpus-2026.yaml meta.known_misquotes_and_catalog_errors
    b300 = catalog.gpu("b300")
    assert (b300.memory_gb, b300.memory_bandwidth_gbps) == (288, 8000)  # not 240 GB / 10+ TB/s
    assert catalog.gpu("mi355x").dense_tflops.fp4 == 10100  # 20.1 PF is the sparse figure
    assert catalog.gpu("mi350x").dense_tflops.fp4 == 9230  # 18.45 PF is sparse
    assert catalog.gpu("dgx-spark").memory_bandwidth_gbps == 273  # not "over 900 GB/s"
    assert catalog.gpu("gb200").memory_gb == 186  # not 129 GB
    assert catalog.gpu("rtx-pro-6000-server").memory_bandwidth_gbps == 1597  # not 1.5 TB/s on 384 bits
    coreweave = [p for p in catalog.gpu("gb200").cloud_prices if "CoreWeave" in p["provider"]]
    assert [p["usd_per_gpu_hour"] for p in coreweave] == [10.50]  # $42/h is a 4-GPU slice


def test_2026_price_updates_for_existing_entries(catalog):
    b200 = catalog.gpu("b200")
    spheron = next(p for p in b200.cloud_prices if p["provider"] == "Spheron B200")
    assert (spheron["usd_per_gpu_hour"], spheron["as_of"]) == (6.03, "2026-03-17")
    assert spheron["source"].startswith("https://www.spheron.network/")
    assert any(p["usd_per_gpu_hour"] == 1.95 for p in catalog.gpu("mi325x").cloud_prices)
    assert any(p["usd_per_gpu_hour"] == 1.50 for p in catalog.gpu("mi300x").cloud_prices)
    gb200 = catalog.gpu("gb200")
    assert gb200.launch_year == 2024 and any("launch_year" in d for d in gb200.derived)
    # the RTX PRO 6000 Server copy in gpus-2026.yaml agrees with gpus-extra.yaml and adds its prices
    server = catalog.gpu("rtx-pro-6000-server")
    assert "gpus-2026.yaml:rtx-pro-6000-blackwell-server" in server.reference_id
    assert any(p["usd_per_gpu_hour"] == 0.66 for p in server.cloud_prices)


# -- scale-up domain and scale-out network ---------------------------------------------------


def _sources_naming(g, field: str) -> list:
    return [s for s in g.sources if any(f.startswith(field) for f in s.fields)]


@pytest.mark.parametrize(
    ("gid", "group", "scale_out", "ref"),
    [
        # DGX/HGX H100: 8x ConnectX-7 400 Gb/s, one per GPU: 400 / 8 = 50 GB/s (llmsweep assumption)
        ("h100-sxm", 8, 50.0, "llmsweep"),
        # gpus-2026.yaml: ConnectX-8 800 Gb/s per GPU; aiconfigurator 100 GB/s per GPU per direction = 800 / 8
        ("b300", 8, 100.0, "gpus-2026.yaml interconnect"),
        # NVL72 (gpus.yaml nvlink_domain); compute tray ConnectX-7 400 Gb/s per GPU = 50 (llmsweep assumption)
        ("gb200", 72, 50.0, "llmsweep"),
        ("gb300", 72, 100.0, "gpus-2026.yaml interconnect"),
        # AMD platforms: 8x 400 Gb/s NICs for 8 GPUs = 50 (llmsweep assumption)
        ("mi300x", 8, 50.0, "llmsweep"),
        ("mi355x", 8, 50.0, "llmsweep"),
        # DGX A100: ConnectX-6 200 Gb/s per GPU = 25 (llmsweep assumption)
        ("a100-80gb-sxm", 8, 25.0, "llmsweep"),
        # Gaudi 3: 3 of 24 on-chip 200 GbE ports leave the server: 600 / 8 = 75 (llmsweep assumption)
        ("gaudi3", 8, 75.0, "llmsweep"),
        # DGX Spark: one ConnectX-7 200 Gb/s port = 25 (gpus-2026.yaml networking)
        ("dgx-spark", 1, 25.0, "gpus-2026.yaml interconnect"),
        # single-server parts: unknown, so layouts across servers cannot be costed
        ("m4-max", 1, None, None),
        ("rtx-4090", 1, None, None),
        ("l40s", 1, None, None),
    ],
)
def test_scale_up_domain_and_scale_out_with_their_source(catalog, gid, group, scale_out, ref):
    g = catalog.gpu(gid)
    assert (g.nvlink_group, g.scale_out_gbps_per_direction) == (group, scale_out)
    named = _sources_naming(g, "scale_out_gbps_per_direction")
    if scale_out is None:
        assert named == []
        return
    assert [s.ref for s in named] == [ref]
    line = next(f for f in named[0].fields if f.startswith("scale_out_gbps_per_direction"))
    assert line.startswith(f"scale_out_gbps_per_direction {scale_out:g}: ")
    if ref == "llmsweep":  # a stated assumption naming the reference design
        assert named[0].source.startswith("llmsweep assumption:") and "Gb/s" in line
    else:  # the reference's own networking text
        assert "Gb/s" in line and any(d.startswith("scale_out_gbps_per_direction") for d in g.derived)


def test_stated_network_figures_are_the_references(catalog):
    b300 = _sources_naming(catalog.gpu("b300"), "scale_out_gbps_per_direction")[0].fields[-1]
    assert "800 Gb/s" in b300 and "100 GB/s per GPU per direction" in b300
    gb300 = _sources_naming(catalog.gpu("gb300"), "scale_out_gbps_per_direction")[0].fields[-1]
    assert "ConnectX-8 800 Gb/s per GPU" in gb300
    # GB200's 72-GPU domain is the reference's nvlink_domain, not an assumption
    (domain,) = _sources_naming(catalog.gpu("gb200"), "nvlink_group")
    assert (domain.ref, domain.fields) == ("gpus.yaml interconnect", ["nvlink_group 72: 72 GPUs (NVL72)"])
    # aiconfigurator's GB200 figure (gpus-2026.yaml meta) is named where the assumption is taken instead
    assert "100 GB/s" in _sources_naming(catalog.gpu("gb200"), "scale_out_gbps_per_direction")[0].fields[-1]


def test_data_centre_scale_up_domains(catalog):
    eight = ["a100-40gb-sxm", "a100-80gb-sxm", "v100-32gb-sxm", "v100-16gb-sxm", "h100-sxm", "h200-sxm"]
    eight += ["b200", "b300", "h20", "h20-141gb", "mi300x", "mi325x", "mi350x", "mi355x", "gaudi2", "gaudi3"]
    for gid in eight:
        assert catalog.gpu(gid).nvlink_group == 8, gid
    for gid in ("gb200", "gb300"):
        assert catalog.gpu(gid).nvlink_group == 72, gid
    for gid in ("a100-80gb-pcie", "h100-pcie", "h100-nvl", "a40"):  # NVLink-bridged pairs
        assert catalog.gpu(gid).nvlink_group == 2, gid
    for gid in ("l4", "l40s", "a10", "a10g", "t4", "rtx-pro-6000-server", "m2-ultra"):
        assert catalog.gpu(gid).nvlink_group == 1, gid
    # Gaudi's scale-up link is its on-chip RoCE mesh: stas_net's per-direction figure (all 24 ports)
    assert [catalog.gpu(g).scale_up_gbps_per_direction for g in ("gaudi2", "gaudi3")] == [300, 600]


def test_rack_scale_facts_carry_a_source(catalog):
    for gid, g in catalog.gpus.items():
        if g.nvlink_group > g.gpus_per_node:  # a domain wider than a server (NVL72) must say where it came from
            assert _sources_naming(g, "nvlink_group"), gid
        if g.scale_out_gbps_per_direction is not None:
            assert _sources_naming(g, "scale_out_gbps_per_direction"), gid


def test_cli_lists_scale_up_domain_and_scale_out():
    import json

    from click.testing import CliRunner

    from llmsweep.cli import main

    r = CliRunner().invoke(main, ["gpus", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = {row["id"]: row for row in json.loads(r.output)}
    assert (rows["gb300"]["scale_up_domain_gpus"], rows["gb300"]["scale_out_gbps"]) == (72, 100.0)
    assert (rows["m4-max"]["scale_up_domain_gpus"], rows["m4-max"]["scale_out_gbps"]) == (1, None)
    r = CliRunner().invoke(main, ["gpus", "--format", "csv"])
    assert r.output.splitlines()[0].split(",")[10:12] == ["scale_up_domain_gpus", "scale_out_gbps"]


# -- model-configs/ ---------------------------------------------------------------------------


@needs_reference
def test_every_model_config_is_in_the_catalog_with_sources_and_license(catalog):
    for path in sorted((REFERENCE / "model-configs").glob("*_config.json")):
        if path.name.endswith("_hf_quant_config.json"):
            continue
        hf_id = path.name.removesuffix("_config.json").replace("--", "/", 1)
        r = catalog.resolve_model(hf_id)
        m = catalog.model(r.id)
        assert any(path.name.removesuffix("_config.json") in s["source"] for s in m.sources), hf_id
        assert any(s["ref"] in ("model-configs README", f"checkpoint {hf_id}") for s in m.sources), hf_id
        # a quantized repackaging (nvidia/...-FP8) is a name of its base model; its suffix is the format
        assert m.license and (r.precision or m.default_precision), hf_id


@pytest.mark.parametrize(
    ("name", "precision"),
    [
        ("nvidia/Llama-3.1-70B-Instruct-FP8", "fp8"),  # hf_quant_config.json quant_algo FP8
        ("nvidia/Qwen3-235B-A22B-NVFP4", "nvfp4"),  # hf_quant_config.json quant_algo NVFP4
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "fp8"),
        ("zai-org/GLM-5-FP8", "fp8"),  # quantization_config quant_method fp8
        ("zai-org/GLM-5", "bf16"),  # no quantization: dtype bfloat16
        ("deepseek-ai/DeepSeek-R1", "fp8"),
        ("moonshotai/Kimi-K2-Instruct", "fp8"),
        ("moonshotai/Kimi-K2.5", "int4-g32"),  # compressed-tensors int4, group 32 (routed experts)
        ("openai/gpt-oss-120b", "mxfp4"),  # experts in MXFP4, attention bf16
        ("Qwen/Qwen3.5-397B-A17B", "bf16"),
        ("meta-llama/Llama-3.1-8B", None),  # models.yaml states no checkpoint format
    ],
)
def test_default_precision_is_the_checkpoints_format(catalog, name, precision):
    """The name's quantization suffix, else the checkpoint's own format (config.json)."""
    r = catalog.resolve_model(name)
    m = catalog.model(r.id)
    assert (r.precision or m.default_precision) == precision
    if precision and not r.precision:
        assert precision in catalog.precisions and m.default_precision_source


def test_default_precision_of_a_users_config_file(tmp_path, catalog):
    cfg = dict(catalog.model("deepseek-ai/DeepSeek-R1").config)
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps(cfg))
    m = catalog.model(catalog.resolve_model(str(path)).id)
    assert (m.default_precision, m.default_precision_source) == (
        "fp8",
        "config.json quantization_config.quant_method fp8",
    )


def test_cli_shows_b300_with_every_source():
    from click.testing import CliRunner

    from llmsweep.cli import main

    r = CliRunner().invoke(main, ["gpus", "b300"])
    assert r.exit_code == 0, r.output
    shown = yaml.safe_load(r.output)
    assert shown["id"] == "b300" and shown["family"] == "blackwell"
    assert (shown["memory_gb"], shown["memory_bandwidth_gbps"], shown["dense_tflops"]["fp4"]) == (288, 8000, 14000)
    refs = {s["ref"] for s in shown["sources"]}
    assert {"aic_b300_sxm", "pg_verda_gb300", "pg_glenn_b300", "stas_acc", "gpus-2026.yaml interconnect"} <= refs
    assert all(s["source"] for s in shown["sources"])
    assert any(d.startswith("choice: fp4") for d in shown["derived"])
    assert shown["cloud_prices"][0]["source"].startswith("https://www.ornnai.com/")


@pytest.mark.parametrize("name", ["deepseek-r1", "deepseek-ai/DeepSeek-R1"])
def test_cli_shows_deepseek_r1_with_every_source(name):
    from click.testing import CliRunner

    from llmsweep.cli import main

    r = CliRunner().invoke(main, ["models", name])
    assert r.exit_code == 0, r.output
    shown = yaml.safe_load(r.output)
    assert shown["id"] == "deepseek-ai/DeepSeek-R1"
    assert (shown["license"], shown["default_precision"]) == ("MIT", "fp8")
    assert shown["default_precision_source"] == "config.json quantization_config.quant_method fp8"
    assert {s["ref"] for s in shown["sources"]} == {"config.json", "model-configs README"}
    assert "deepseek-ai--DeepSeek-R1_config.json" in shown["sources"][0]["source"]
    assert shown["params_reference"]["source"].startswith("models.yaml readme_dsv3")
    c = shown["computed"]
    assert (c["kv_bytes_per_token_fp16"], c["mla_latent_width"], c["shared_experts"]) == (70_272, 576, 1)
    assert (c["layers"]["moe"], c["layers"]["dense_in_moe_model"]) == (58, 3)


def test_fp4_is_read_in_any_spelling(catalog):
    for name in ("fp4", "FP4", " fp4 ", "FP-4", "fp_4"):
        assert catalog.resolve_precision(name).id == "fp4", name
    # a vendor's FP4 named is that vendor's format, on every GPU
    assert catalog.resolve_precision("NVIDIA FP4").id == "nvfp4" and catalog.resolve_precision("AMD FP4").id == "mxfp4"
