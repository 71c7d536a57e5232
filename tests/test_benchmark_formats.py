"""Benchmark files as the tools write them (fixtures hand-written from each tool's output models,
versions in tests/data/formats and the format modules): every row maps; a malformed file is one
line; real-world GPU, GGUF and llama.cpp type names resolve."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from llmsweep.calibrate.readers import read_file
from llmsweep.cli import main
from llmsweep.errors import LlmsweepError

from .conftest import DATA

F = DATA / "formats"
H100 = {"gpu": "h100-sxm"}


def read(name: str, **defaults):
    result = read_file(F / name, defaults=defaults)
    assert result.skipped == [], result.skipped  # every row maps
    return {(m.id.rsplit(":", 1)[-1] if ":" in m.id else m.id): m for m in result.measurements}, result


def test_aiperf_json_schema_1_4():  # aiperf 0.13.0, JsonExportData.SCHEMA_VERSION "1.4"
    rows, _ = read("profile_export_aiperf.json")  # the GPU from AIPerf's GPU telemetry
    assert {m.gpu for m in rows.values()} == {"h100-sxm"}
    assert set(rows) == {"ttft_ms", "ttft_p90_ms", "ttft_p99_ms", "itl_ms", "e2e_latency_ms", "output_throughput_tok_s"}
    ttft = rows["ttft_ms"]
    assert (ttft.model, ttft.batch, ttft.input_tokens, ttft.output_tokens) == ("meta-llama/Llama-3.1-8B", 16, 1024, 256)
    assert ttft.measured == pytest.approx(48.7e-3) and rows["ttft_p99_ms"].measured == pytest.approx(91.3e-3)
    assert rows["e2e_latency_ms"].column == "request_latency_s" and rows["e2e_latency_ms"].stated == 3071.4
    assert rows["output_throughput_tok_s"].measured == 1334.0


def test_aiperf_csv():
    rows, _ = read("profile_export_aiperf.csv", model="meta-llama/Llama-3.1-8B-Instruct", **H100)
    assert rows["itl_ms"].measured == pytest.approx(11.8e-3) and rows["output_throughput_tok_s"].measured == 1334.0
    assert rows["ttft_ms"].batch == "max"  # the CSV states no concurrency: said in the row's assumptions
    assert "batch not stated" in rows["ttft_ms"].assumptions


def test_guidellm_benchmarks_json():  # guidellm 0.8.1, metadata version 2
    result = read_file(F / "benchmarks.json", defaults=H100)
    assert result.skipped == [] and len(result.measurements) == 3 * 7
    by = {m.id: m for m in result.measurements}
    assert by["benchmarks.json[1]:ttft_ms"].batch == 1  # synchronous: one stream
    assert by["benchmarks.json[2]:tpot_ms"].batch == 8  # concurrent, streams 8
    assert by["benchmarks.json[3]:ttft_ms"].request_rate == 4.0  # constant rate, open loop
    assert by["benchmarks.json[2]:e2e_latency_ms"].measured == pytest.approx(1.46)  # request_latency is in seconds
    assert by["benchmarks.json[1]:ttft_ms"].model == "Qwen/Qwen3-8B"
    assert (by["benchmarks.json[1]:ttft_ms"].input_tokens, by["benchmarks.json[1]:ttft_ms"].output_tokens) == (512, 128)


def test_sglang_bench_serving_jsonl():  # sglang 0.5.23, sglang/benchmark/serving.py
    result = read_file(F / "sglang_bench_serving.jsonl", defaults=H100)
    assert result.skipped == [] and len(result.measurements) == 2 * 8
    by = {m.id: m for m in result.measurements}
    first = by["sglang_bench_serving.jsonl:1:ttft_ms"]
    assert (first.model, first.batch, first.input_tokens, first.output_tokens) == ("Qwen/Qwen3-8B", 16, 1024, 1024)
    assert first.engine == "sglang"
    assert by["sglang_bench_serving.jsonl:2:output_throughput_tok_s"].measured == 105.0
    assert by["sglang_bench_serving.jsonl:1:ttft_median_ms"].column == "ttft_s"


def test_vllm_bench_sweep_summary():  # vllm 0.33.0, vllm/benchmarks/sweep/serve.py summary.json
    result = read_file(F / "vllm_sweep_summary.json", defaults=H100)
    assert result.skipped == [] and len(result.measurements) == 2 * 5
    m = next(x for x in result.measurements if x.metric == "ttft_ms")
    assert (m.tp, m.batch, m.input_tokens, m.output_tokens) == (4, 32, 1024, 256)  # tensor_parallel_size override


@pytest.mark.parametrize("name", ["llama_batched_bench.jsonl", "llama_batched_bench.md"])
def test_llama_batched_bench(name):
    model = "ggml-org/Meta-Llama-3.1-8B-Instruct-Q4_0-GGUF"  # the GGUF repository names the type
    result = read_file(F / name, defaults={"gpu": "rtx-4090", "model": model})
    assert result.skipped == []
    ms = result.measurements
    assert [(m.metric, m.batch, m.input_tokens, m.output_tokens) for m in ms] == [
        ("decode_tok_s_per_seq", 1, 128, 128),
        ("prefill_tok_s", 1, 128, 0),
        ("decode_tok_s_per_seq", 8, 128, 128),
        ("decode_tok_s_per_seq", 1, 512, 128),
        ("prefill_tok_s", 1, 512, 0),
    ]
    assert ms[2].measured == pytest.approx(243.23 / 8)  # S_TG / B: each sequence's rate
    assert {m.model for m in ms} == {"meta-llama/Llama-3.1-8B"} and {m.precision for m in ms} == {"q4_0"}


def test_e2e_latency_metric():
    rows, _ = read("e2e_latency.csv")
    assert {m.column for m in rows.values()} == {"request_latency_s"}
    assert rows["e2e-1"].gpu == "a100-80gb-sxm" and rows["e2e-1"].measured == pytest.approx(1.65)


def test_calibrate_compares_a_format_end_to_end(tmp_path):
    result = CliRunner().invoke(
        main, ["calibrate", str(F / "sglang_bench_serving.jsonl"), "--gpu", "h100-sxm", "-o", str(tmp_path / "c")]
    )
    assert result.exit_code == 0, result.output
    text = (tmp_path / "c" / "comparison.csv").read_text()
    assert "e2e_latency_ms" in text and "ttft_p99_ms" in text


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.json", '{"benchmarks": [', "invalid JSON"),
        ("bad.md", "| PP | TG | B | X |\n|---|---|---|---|\n| 1 | 2 | 3 | 4 |\n", "not llama-batched-bench's"),
        ("bad.jsonl", '{"a": 1}\n{"b": 2}\n', "neither SGLang bench_serving nor llama-batched-bench"),
        ("bad.csv", "Metric,avg,min\nnonsense,1,2\n", "no Time to First Token or Output Token Throughput row"),
    ],
)
def test_malformed_files_are_one_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    result = CliRunner().invoke(main, ["calibrate", str(path), "--gpu", "h100-sxm", "--model", "llama-3.1-8b"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output


def test_a_format_without_the_gpu_asks_for_it():
    with pytest.raises(LlmsweepError, match="SGLang bench_serving results do not name the GPU; give --gpu"):
        read_file(F / "sglang_bench_serving.jsonl")


@pytest.mark.parametrize(
    ("name", "gpu"),
    [
        ("Apple M1 Pro (14-core GPU)", "m1-pro"),
        ("NVIDIA GB10 (DGX Spark)", "dgx-spark"),
        ("AMD MI300X GPU", "mi300x"),
        ("GB200 NVL72", "gb200"),
    ],
)
def test_gpu_names_with_the_variant_in_brackets(catalog, name, gpu):
    assert catalog.resolve_gpu(name).id == gpu


def test_gguf_repositories_and_llama_cpp_types(catalog):
    m = catalog.resolve_model("ggml-org/Qwen3-30B-A3B-Instruct-Q8_0-GGUF")
    assert (m.id, m.precision) == ("Qwen/Qwen3-30B-A3B", "q8_0")
    assert catalog.resolve_model("unsloth/Qwen3-8B-MXFP4-GGUF").precision == "mxfp4"
    assert [catalog.resolve_precision(p).id for p in ("Q4_0", "MXFP4", "F16")] == ["q4_0", "mxfp4", "fp16"]
    with pytest.raises(LlmsweepError, match=r"add it under `models:` in a sweep"):
        catalog.resolve_model("ggml-org/Qwen3-Coder-30B-A3B-Instruct-Q8_0-GGUF")


def test_llama_batched_bench_shared_prompt_and_separate_generation(tmp_path):
    """-pps: one prompt prefilled for all B (S_PP = PP / T_PP, compared as one prompt's prefill);
    is_tg_separate: the B sequences generate one after another (S_TG is one sequence's rate)."""
    header = "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n"
    rule = "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n"
    row = "|   128 |    128 |    4 |    640 |    0.108 |  1186.64 |   12.600 |    40.63 |   12.708 |    50.35 |\n"
    for shared, separate, expected in (
        (1, 0, [("decode_tok_s_per_seq", 4, 40.63 / 4), ("prefill_tok_s", 1, 1186.64)]),
        (0, 1, [("decode_tok_s_per_seq", 1, 40.63)]),
    ):
        path = tmp_path / f"bb-{shared}{separate}.md"
        settings = f"main: n_kv_max = 4096, is_pp_shared = {shared}, is_tg_separate = {separate}, n_gpu_layers = 99\n\n"
        path.write_text(settings + header + rule + row)
        result = read_file(path, defaults={"gpu": "rtx-4090", "model": "llama-3.1-8b", "precision": "q4_0"})
        assert result.skipped == []
        got = [(m.metric, m.batch, m.measured) for m in result.measurements]
        assert got == [(a, b, pytest.approx(c)) for a, b, c in expected]


def test_aiperf_csv_with_the_concurrency_given(tmp_path):
    rows, _ = read("profile_export_aiperf.csv", model="meta-llama/Llama-3.1-8B-Instruct", batch=16, **H100)
    assert {m.batch for m in rows.values()} == {16}
    args = ["calibrate", str(F / "profile_export_aiperf.csv"), "--gpu", "H100 SXM", "--model", "llama-3.1-8b"]
    result = CliRunner().invoke(main, [*args, "--batch", "16", "-o", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert ",16," in (tmp_path / "c" / "comparison.csv").read_text()


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (F / name).read_text().splitlines() if line.strip()]


def _aiperf_json(big):
    data = json.loads((F / "profile_export_aiperf.json").read_text())
    data["time_to_first_token"]["avg"] = big
    return json.dumps(data), "export.json", "export.json:ttft_ms"


def _aiperf_csv(big):
    text = (F / "profile_export_aiperf.csv").read_text()
    return text.replace("Time to First Token (ms),48.70,", f"Time to First Token (ms),{big},"), "a.csv", "a.csv:ttft_ms"


def _guidellm(big):
    data = json.loads((F / "benchmarks.json").read_text())
    data["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["mean"] = big
    return json.dumps(data), "benchmarks.json", "benchmarks.json[1]:ttft_ms"


def _sglang(big):  # the mean prompt length, total_input_tokens / completed, is what goes wrong here
    first, *rest = _lines("sglang_bench_serving.jsonl")
    first["total_input_tokens"] = big
    return "\n".join(json.dumps(r) for r in [first, *rest]), "s.jsonl", "s.jsonl:1:ttft_ms"


def _llama_batched(big):
    first, *rest = _lines("llama_batched_bench.jsonl")
    first["speed_tg"] = big
    return "\n".join(json.dumps(r) for r in [first, *rest]), "b.jsonl", "b.jsonl:1:decode"


@pytest.mark.parametrize(
    ("make", "big"),
    [(_aiperf_json, 10**400), (_aiperf_csv, 10**400), (_aiperf_csv, "nan"), (_guidellm, 10**400), (_sglang, 10**400)]
    + [(_llama_batched, 10**400)],
)
def test_a_value_beyond_a_float_or_nan_is_listed_not_dropped(tmp_path, make, big):
    # an integer too large for a float (JSON allows it) or a CSV's nan is no measurement: the row is
    # listed in unmapped.csv with the reason, not dropped without a word, and never a traceback
    text, name, rid = make(big)
    path = tmp_path / name
    path.write_text(text)
    result = read_file(path, defaults={"gpu": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16"})
    reasons = {s["id"]: s["reason"] for s in result.skipped}
    assert "is not a finite number" in reasons.get(rid, ""), (reasons, [m.id for m in result.measurements])


def test_a_csv_with_old_mac_line_endings_reads_as_with_newlines(tmp_path):
    # CR alone ends a line (classic Mac OS, some spreadsheet exports): the file's format is told from
    # its first line, which must not be the whole file
    text = (DATA / "measured-dev.csv").read_text()
    lines = text.splitlines()[:6]
    unix, mac = tmp_path / "lf.csv", tmp_path / "cr.csv"
    unix.write_text("\n".join(lines) + "\n")
    mac.write_bytes(("\r".join(lines) + "\r").encode())
    got = [(m.id, m.measured) for m in read_file(mac).measurements]
    assert got == [(m.id, m.measured) for m in read_file(unix).measurements] and len(got) == 5
    # and a two-byte file of two CR-separated cells is one clear error, not a csv.Error traceback
    (tmp_path / "x.csv").write_bytes(b"a\rb")
    result = CliRunner().invoke(main, ["calibrate", str(tmp_path / "x.csv"), "-o", str(tmp_path / "o")])
    assert result.exit_code == 1 and "missing column(s)" in result.output and "Traceback" not in result.output
