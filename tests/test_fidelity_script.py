"""scripts/calibrate_default.py's grouping and its table of rows the data cannot tell apart."""

from __future__ import annotations

import importlib.util
import sys

import polars as pl
import pytest

from llmsweep.calibrate import Measurement, read_file
from llmsweep.catalog import load_catalog

from .conftest import ROOT


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("calibrate_default", ROOT / "scripts" / "calibrate_default.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_leaving_a_model_out_leaves_out_its_network(script):
    # aiconfigurator lists DeepSeek-R1 under DeepSeek-V3's name; InferenceX as DeepSeek-R1
    assert script.network("deepseek-ai/DeepSeek-R1") == script.network("deepseek-ai/DeepSeek-V3")
    assert script.network("meta-llama/Llama-3.1-8B") == "meta-llama/Llama-3.1-8B"


def test_every_network_of_the_loaded_files_is_one_held_out_group(script):
    # aiconfigurator's DeepSeek-V3 rows and InferenceX's DeepSeek-R1 rows are one network: a fold
    # holding one out while fitting the other would score DeepSeek on DeepSeek
    catalog = load_catalog()
    groups: dict[str, set[str]] = {}
    for path in script.FILES[1:]:  # measured-load-dev.csv, measured-serving-dev.csv
        for m in read_file(path, catalog).measurements:
            groups.setdefault(script.network(m.model), set()).add(script.by_source_or_model(m))
    assert {n: g for n, g in groups.items() if g != {n}} == {}
    assert script.network("deepseek-ai/DeepSeek-R1") in groups


@pytest.mark.parametrize(("read", "nominal"), [(922, 1024), (1024, 1024), (7373, 8192), (8192, 8192), (128, 128)])
def test_nominal_length_is_the_power_of_two_a_benchmark_asked_for(script, read, nominal):
    # InferenceX's rows are read at their mean length, 0.9 x 1,024 = 921.6 -> 922
    assert script._nominal(read) == nominal


def _row(id_: str, source: str, measured_ms: float, estimated_ms: float, input_tokens: int) -> tuple[dict, Measurement]:
    m = Measurement(
        id=id_,
        source=source,
        gpu="b300",
        model="deepseek-ai/DeepSeek-R1" if "InferenceX" in source else "deepseek-ai/DeepSeek-V3",
        precision="fp8",
        kv_precision="fp8",
        tp=8,
        pp=1,
        batch=4,
        input_tokens=input_tokens,
        output_tokens=1024 if input_tokens == 1024 else 922,
        metric="ttft_ms",
        column="ttft_s",
        measured=measured_ms / 1e3,
        assumptions="",
        engine="sglang",
    )
    row = {
        "metric": "ttft_ms",
        "engine": "sglang",
        "gpu": "b300",
        "precision": "fp8",
        "tp": 8,
        "ep": 1,
        "dp_attention": 1,
        "batch": "4",
        "serving": "aggregated",
        "source": source,
        "measured": measured_ms,
        "ratio": estimated_ms / measured_ms,
    }
    return row, m


def test_two_sources_of_one_configuration_are_counted_with_their_floor(script):
    """aiconfigurator 400 ms and InferenceX 100 ms for one configuration (InferenceX read at 0.9 of
    the nominal lengths): 4x apart; an estimate at their geometric mean, 200 ms, is off by
    |200/400 - 1| = 50 % and |200/100 - 1| = 100 %, median 75 %; `default` at 300 ms by 25 % and
    200 %, median 112.5 %, printed to the nearest even whole per cent: 112 %."""
    pairs = [
        _row("a", "ai-dynamo/aiconfigurator", 400.0, 300.0, 1024),
        _row("b", "SemiAnalysisAI/InferenceX", 100.0, 300.0, 922),
        _row("c", "ai-dynamo/aiconfigurator", 50.0, 50.0, 2048),  # alone in its configuration: not listed
    ]
    frame = pl.DataFrame([row for row, _ in pairs])
    table = script.contradictions(frame, [m for _, m in pairs])
    lines = table.splitlines()
    assert len(lines) == 3
    assert lines[2] == "| `ttft_ms` | two sources | 1 | 2 | 4.00× (4.0×) | 75% | 112% |"


def test_the_quoted_ttft_ratios_are_of_the_matching_loaded_rows_only(script):
    # three TTFT rows of vLLM on H100 (estimates 2x, 1x and 0.5x measured in one validation), and rows
    # the quote must leave out: another engine, a TPOT row, a max-throughput row, a disaggregated row
    residuals = pl.DataFrame(
        {
            "metric": ["ttft_ms"] * 3 + ["ttft_ms", "tpot_ms", "ttft_ms", "ttft_ms"],
            "serving": ["aggregated"] * 6 + ["disaggregated"],
            "batch": ["8", "16", "32", "8", "8", "max", "8"],
            "engine": ["vllm"] * 3 + ["sglang", "vllm", "vllm", "vllm"],
            "gpu": ["h100-sxm"] * 7,
            "measured": [100.0, 200.0, 400.0, 100.0, 10.0, 100.0, 100.0],
            "est": [200.0, 200.0, 200.0, 900.0, 90.0, 900.0, 900.0],
        }
    )
    ratios = script.ratios(residuals, "est", engine="vllm", gpu="h100-sxm")
    assert ratios.to_list() == [2.0, 1.0, 0.5]
    assert ratios.median() == 1.0  # the median of 0.5, 1 and 2
    assert script.ratios(residuals, "est", "tpot_ms", engine="vllm").to_list() == [9.0]  # the TPOT row alone
