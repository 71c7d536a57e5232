"""GPUs a sweep defines: `inherit` from a catalog GPU, and the notes `validate` prints when a new
GPU lacks a fact that decides what can run or how fast."""

from __future__ import annotations

import polars as pl
from click.testing import CliRunner

from llmsweep import pipeline
from llmsweep.cli import main
from llmsweep.spec import load


def sweep(tmp_path, gpus: str, gpu_axis: str = "[mine, h200-sxm]"):
    path = tmp_path / "s.yaml"
    path.write_text(
        f"name: custom\ngrid: {{gpu: {gpu_axis}, model: [llama-3.1-70b], precision: [fp8], tp: [1, 2]}}\ngpus:\n{gpus}"
    )
    return path


def test_an_inherited_gpu_is_the_catalog_gpu_with_its_changes(tmp_path):
    s = load(sweep(tmp_path, "  mine: {inherit: H200, memory_gb: 200}\n"))
    frame = pipeline.compute(s).collect().with_columns(pl.col(pl.Categorical).cast(pl.String))
    mine, h200 = (frame.filter(pl.col("gpu") == g) for g in ("mine", "h200-sxm"))
    assert mine["gpu_family"].to_list() == ["hopper", "hopper"]  # same efficiency profile
    assert mine["decode_tokens_per_s_per_seq"].to_list() == h200["decode_tokens_per_s_per_seq"].to_list()
    assert mine["gpu_memory_bytes"][0] == 200 * 2**30 and h200["gpu_memory_bytes"][0] == 141 * 2**30
    assert mine["fits"].to_list() == [True, True]  # tp 2 runs: the NVLink facts came with it
    gpu = s.catalog.gpu("mine")
    assert gpu.aliases == [] and gpu.cloud_prices == []  # names and prices are the catalog GPU's own
    assert "inherited from h200-sxm" in gpu.sources[-1].source
    assert gpu.scale_out_gbps_per_direction == 50.0  # the network facts came with it too
    assert s.notes == ()


def test_a_bare_new_gpu_gets_notes_from_validate(tmp_path):
    path = sweep(tmp_path, "  mine: {memory_gb: 96, memory_bandwidth_gbps: 4000, dense_tflops: {fp8: 1800}}\n")
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0, r.output
    assert "note: gpus.mine: no `family` or `inherit`: the profile's defaults apply" in r.output
    assert "note: gpus.mine: no interconnect bandwidth" in r.output and "tp > 1 or ep > 1" in r.output
    assert "note: gpus.mine: gpus_per_node not given: 8 per server assumed" in r.output
    assert (
        "note: gpus.mine: no scale_out_gbps_per_direction (network bandwidth per GPU between servers): "
        "layouts across servers cannot be costed"
    ) in r.output


def test_a_new_gpu_that_states_its_network_gets_no_network_note(tmp_path):
    gpu = "{memory_gb: 96, memory_bandwidth_gbps: 4000, dense_tflops: {fp8: 1800}, scale_out_gbps_per_direction: 50}"
    r = CliRunner().invoke(main, ["validate", str(sweep(tmp_path, f"  mine: {gpu}\n"))])
    assert r.exit_code == 0, r.output
    assert "gpus_per_node not given" in r.output and "scale_out_gbps_per_direction" not in r.output


def test_inherit_problems(tmp_path):
    path = sweep(tmp_path, "  mine: {inherit: h2000}\n  h200-sxm: {inherit: h100-sxm}\n")
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "s.yaml:4: gpus.mine.inherit: unknown gpu 'h2000'; did you mean 'h200-sxm'" in r.output
    assert "s.yaml:5: gpus.h200-sxm.inherit: 'h200-sxm' is already the catalog's h200-sxm" in r.output
    assert "grid.gpu" not in r.output  # the broken entry is reported once
