"""Rack scale: layouts across servers and NVLink domains, each collective on the slowest link its
group crosses (llmsweep/estimate/parallel.py), with values derived by hand.

Facts used (llmsweep gpus): h100-sxm NVLink 450 GB/s per direction in a scale-up domain of 8 (one
HGX server), one 400 Gb/s NIC per GPU = 50 GB/s; gb200 NVLink 900 GB/s in a domain of 72, 4 GPUs
per compute tray. The `ideal` profile has no latencies; `default` has alpha = 10 us inside a
server or domain and NET across the network (network_latency_s: 25 us before the fit, fitted on
the rows that decode across servers, calibrate/network.py).
"""

from __future__ import annotations

import pytest

from llmsweep.catalog import load_catalog

from .conftest import REFERENCE, estimate_row, needs_reference

R1 = "deepseek-ai/DeepSeek-R1"  # d = 7,168, 61 layers, 58 MoE layers, k = 8 of 256 experts, 128 heads
NIC = 50e9  # bytes/s per GPU per direction
NVLINK_H100, NVLINK_GB200 = 450e9, 900e9
NET = load_catalog().profile("default").defaults.network_latency_s  # about 49 us


def r1(profile: str = "ideal", **axes) -> dict:
    base = {"gpu": "h100-sxm", "model": R1, "precision": "fp8", "input_tokens": 1024, "output_tokens": 256}
    return estimate_row(profile, **{**base, **axes})


def test_deepseek_r1_fp8_on_two_hgx_h100_servers_with_tp8_pp2():
    # 671,026,419,200 fp8 weights, the bf16 embedding and LM head (2 x 129,280 x 7,168) one byte more
    # each: 672,879,777,280 bytes over 16 GPUs = 42,054,986,080 bytes each: fits 80 GiB.
    row = r1("default", tp=8, pp=2, batch=8)
    assert (row["gpus"], row["servers_per_replica"]) == (16, 2)
    assert row["weight_bytes"] == (671_026_419_200 + 1_853_358_080) / 16 == 42_054_986_080
    assert row["fits"] and row["reason"] is None
    assert (row["tp_link"], row["pp_link"], row["expert_link"]) == ("scale-up", "scale-out", None)
    # The one stage boundary crosses the NIC: alpha NET + 8 tokens x 7,168 x 2 bytes / 50 GB/s
    # = NET + 2.29376e-6 s on top of the same tp-8 all-reduces as at pp 1.
    assert pytest.approx(2.29376e-6, rel=1e-12) == 8 * 7_168 * 2 / NIC
    one_stage = r1("default", tp=8, pp=1, batch=8)
    assert row["decode_comm_s"] - one_stage["decode_comm_s"] == pytest.approx(NET + 2.29376e-6, rel=1e-9)


def test_ep16_over_two_servers_pays_the_all_to_all_over_the_nic():
    # tp 1 x dp_attention 16, ep 16 on two HGX H100 servers. Dispatch + combine per token:
    # 2 x 58 layers x k 8 x d 7,168 x 2 bytes = 13,303,808 bytes. Of the 16 ep ranks 8 share the
    # sender's server: 1/16 is the sender itself, 7/16 go over NVLink and 8/16 over the NIC.
    volume = 2 * 58 * 8 * 7_168 * 2
    assert volume == 13_303_808
    per_token = volume * (7 / 16 / NVLINK_H100 + 8 / 16 / NIC)
    row = r1(tp=1, dp_attention=16, ep=16, batch=64)  # 4 sequences per attention group
    assert (row["gpus"], row["servers_per_replica"], row["expert_link"]) == (16, 2, "scale-out")
    assert row["decode_comm_s"] == pytest.approx(4 * per_token, rel=1e-12)
    # = 4 x 13,303,808 x (9.7222e-13 + 1e-11) = 5.8392e-4 s; over NVLink alone it would be
    # 4 x 13,303,808 x 15/16 / 450e9 = 1.1086e-4 s
    assert row["decode_comm_s"] == pytest.approx(5.8392e-4, rel=1e-4)
    assert row["decode_comm_s"] > 5 * 4 * volume * 15 / 16 / NVLINK_H100
    # default profile: the all-to-all latency is the network's (2 x 58 x NET, 5.7 ms per step at 49 us)
    slow = r1("default", tp=1, dp_attention=16, ep=16, batch=64)
    fast = r1("default", tp=1, dp_attention=8, ep=8, batch=64)
    assert slow["decode_comm_s"] - 64 / 16 * volume * (7 / 16 / NVLINK_H100 + 8 / 16 / NIC) == pytest.approx(
        2 * 58 * NET, rel=1e-9
    )
    assert fast["decode_comm_s"] - 64 / 8 * volume * (7 / 8) / NVLINK_H100 == pytest.approx(2 * 58 * 1e-5, rel=1e-9)


def test_tp16_ep16_over_two_servers_all_reduces_over_the_nic_and_sends_no_all_to_all():
    # tp 16 x ep 16 without attention DP on two HGX H100 servers (TensorRT-LLM's disaggregated decode
    # workers of measured-serving-dev.csv): every GPU holds every token, so the experts need no
    # dispatch; the ring all-reduces cross the NICs: 2 x 61 layers x 2 x 15/16 x 7,168 x 2 bytes =
    # 3,279,360 bytes per token at 50 GB/s, and in `default` 2 x 61 x NET of latency a step.
    assert 2 * 61 * 2 * 15 / 16 * 7_168 * 2 == 3_279_360
    row = r1(tp=16, ep=16, batch=8)
    assert (row["gpus"], row["servers_per_replica"]) == (16, 2)
    assert (row["tp_link"], row["expert_link"]) == ("scale-out", None)
    assert row["decode_comm_s"] == pytest.approx(8 * 3_279_360 / NIC, rel=1e-12)  # 5.2470e-4 s
    fitted = r1("default", tp=16, ep=16, batch=8)
    assert fitted["decode_comm_s"] == pytest.approx(8 * 3_279_360 / NIC + 2 * 61 * NET, rel=1e-9)


def test_gb200_nvl72_dp_attention8_ep32_stays_on_nvlink():
    # tp 4 x dp_attention 8 = 32 GPUs: 8 compute trays of 4, all in one NVLink domain of 72.
    row = r1(gpu="gb200", tp=4, dp_attention=8, ep=32, batch=64)
    assert (row["gpus"], row["servers_per_replica"]) == (32, 8)
    assert (row["tp_link"], row["expert_link"], row["pp_link"]) == ("scale-up", "scale-up", None)
    assert row["fits"] and row["reason"] is None
    # 64 / 8 = 8 tokens per attention group. All-reduce: 2 x 61 layers x 2 x 3/4 x 7,168 x 2 bytes
    # = 2,623,488 bytes per token over 900 GB/s. All-to-all: 13,303,808 / tp 4 x 31/32 per token.
    allreduce = 2 * 61 * 2 * (3 / 4) * 7_168 * 2
    assert allreduce == 2_623_488
    alltoall = 13_303_808 / 4 * 31 / 32
    assert row["decode_comm_s"] == pytest.approx(8 * (allreduce + alltoall) / NVLINK_GB200, rel=1e-12)


def test_a_four_server_pipeline_at_batch_1_is_the_sum_of_its_stages():
    # Llama-3.1-405B bf16 (126 layers, d 16,384) on tp 8 x pp 4 = 32 H100s in 4 servers. Each
    # stage reads a quarter of the weights at tp 8, so the four stages together take what one
    # 8-GPU stage holding everything would (the memory and compute terms are equal), plus the 3
    # stage boundaries, each across the network: 3 x 16,384 x 2 bytes / 50 GB/s = 1.96608e-6 s.
    base = {"gpu": "h100-sxm", "model": "meta-llama/Llama-3.1-405B", "precision": "bf16", "batch": 1}
    four = estimate_row(**base, tp=8, pp=4)
    one = estimate_row(**base, tp=8, pp=1)
    assert (four["servers_per_replica"], four["pp_link"]) == (4, "scale-out")
    assert four["decode_memory_s"] == one["decode_memory_s"]
    assert four["decode_step_s"] - one["decode_step_s"] == pytest.approx(3 * 16_384 * 2 / NIC, rel=1e-9)
    # inside one server (tp 2 x pp 4 = 8 GPUs) the boundaries use NVLink: 3 x 32,768 / 450 GB/s
    two = estimate_row(**base, tp=2, pp=4)
    two_one = estimate_row(**base, tp=2, pp=1)
    assert two["pp_link"] == "scale-up" and two["servers_per_replica"] == 1
    assert two["decode_step_s"] - two_one["decode_step_s"] == pytest.approx(3 * 32_768 / NVLINK_H100, rel=1e-9)


def test_tp_across_servers_runs_its_all_reduce_through_the_nics():
    # tp 16 on two HGX H100 servers (SGLang's DeepSeek deployment): 2 x 61 x 2 x 15/16 x 7,168 x 2
    # = 3,279,360 bytes per token over 50 GB/s.
    row = r1(tp=16, batch=1)
    assert (row["tp_link"], row["servers_per_replica"]) == ("scale-out", 2)
    assert row["decode_comm_s"] == pytest.approx(2 * 61 * 2 * 15 / 16 * 7_168 * 2 / NIC, rel=1e-12)


def test_uneven_expert_placement():
    # ep 12 on 256 experts (tp 1 x dp_attention 12): the busiest rank holds ceil(256 / 12) = 22
    # experts, 22 x 12 / 256 = 1.03125 times the mean: 58 x 22 x 44,040,192 routed bytes per GPU.
    row = r1(gpu="gb200", tp=1, dp_attention=12, ep=12, batch=12)
    assert row["reason"] is None
    dense = 671_026_419_200 + 1_853_358_080 - 58 * 256 * 44_040_192  # the bf16 embedding and LM head: + 1 byte each
    assert row["weight_bytes"] == pytest.approx(dense + 58 * 22 * 44_040_192, rel=1e-12)


@pytest.mark.parametrize(
    "axes, reason",
    [
        (
            {"tp": 12},
            "tp does not divide the model's attention heads (for MoE models engines run such GPU counts "
            "attention data-parallel: set dp_attention with a tp that divides the heads, e.g. tp 1)",
        ),
        ({"tp": 1, "dp_attention": 512, "ep": 512, "gpu": "gb200"}, "ep exceeds the model's routed experts"),
        (
            {"gpu": "rtx-4090", "model": "Qwen/Qwen3-30B-A3B", "precision": "int4", "dp_attention": 2},
            "no known interconnect bandwidth for the experts' gather over the dp_attention groups",
        ),
        (
            {"gpu": "l40s", "tp": 1, "pp": 16},
            "the layout spans servers (more GPUs than one server or NVLink domain) and the GPU has no known "
            "scale-out network bandwidth (scale_out_gbps_per_direction)",
        ),
    ],
)
def test_layouts_that_cannot_run(axes, reason):
    row = r1(**axes)
    assert row["reason"] == reason and not row["fits"]


def _pool_rows(reference) -> list[dict]:
    """Every pool of measured-serving-dev.csv as an aggregated replica of its own (the worker's
    layout; the concurrency a decode worker carries, or one prompt for a prefill worker)."""
    import polars as pl

    serving = pl.read_csv(reference / "measured-serving-dev.csv", infer_schema_length=0)
    rows = []
    for row in serving.to_dicts():
        if row["mode"] != "disagg":
            rows.append(row)
            continue
        for pool in ("prefill", "decode"):
            workers = int(row[f"{pool}_workers"] or 1)
            batch = -(-int(row["batch"]) // workers) if pool == "decode" else 1
            layout = {k: row[f"{pool}_{k}"] for k in ("tp", "pp", "dp_attention", "ep", "moe_tp")}
            gpus = int(layout["tp"]) * int(layout["pp"]) * int(layout["dp_attention"])
            pooled = {"id": f"{row['id']}-{pool}", "batch": str(batch), "num_gpus": str(gpus), "mode": "agg"}
            rows.append(row | layout | pooled)
    return rows


@needs_reference
def test_every_measured_layout_can_run_where_real_hardware_ran_it(tmp_path):
    """Every layout of measured-load-dev.csv and every pool of measured-serving-dev.csv (as a replica
    of its own) is accepted: no layout rule refuses what an engine ran."""
    import csv

    import polars as pl

    from llmsweep.calibrate.comparison import Evaluator
    from llmsweep.calibrate.readers import read_measurements
    from llmsweep.catalog import load_catalog
    from llmsweep.estimate import add_estimates

    load = pl.read_csv(REFERENCE / "measured-load-dev.csv", infer_schema_length=0).to_dicts()
    rows = load + _pool_rows(REFERENCE)
    fields = list(load[0])
    path = tmp_path / "layouts.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    catalog = load_catalog()
    measurements, skipped = read_measurements(path, catalog)
    assert skipped == [] and len(measurements) == len(rows)
    estimates = add_estimates(Evaluator.build(measurements, catalog.profile("default"), catalog).base.lazy())
    frame = estimates.select("gpu", "model", "tp", "pp", "dp_attention", "ep", "fits", "layout_reason", "reason")
    frame = frame.collect()
    refused = frame.filter(pl.col("layout_reason").is_not_null()).unique()
    assert refused.height == 0, refused
    # Rows that do not fit at the measured concurrency (an unstated KV precision read as 16-bit, or
    # clients beyond the KV slots) say why: memory, never the layout.
    assert frame.filter(~pl.col("fits") & pl.col("reason").is_null()).height == 0
    assert frame.filter(~pl.col("fits"))["reason"].unique().to_list() in (
        [],
        ["does not fit: memory_per_gpu_bytes exceeds usable_memory_bytes"],
    )
