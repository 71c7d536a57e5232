"""Names as users' files spell them -> catalog ids (and, for models, the precision a suffix names).

The table is tests/data/names.csv. Rows marked `needs_entry` name GPUs or models the catalog does
not have yet: they are skipped until the clean name in `expected` resolves, then they must pass.
"""

from __future__ import annotations

import csv
import json
import re

import pytest
from click.testing import CliRunner

from llmsweep.catalog import AmbiguousNameError
from llmsweep.catalog.names import QUANT_STRONG, QUANT_WEAK, ModelIndex, parse_gpu, parse_model
from llmsweep.cli import main
from llmsweep.errors import LlmsweepError, UnknownNameError

from .conftest import DATA

ROWS = list(csv.DictReader((DATA / "names.csv").open(encoding="utf-8")))


def _row_id(row: dict) -> str:
    return f"{row['kind']}:{row['name']}"


def test_the_table_has_at_least_60_rows_for_todays_catalog():
    assert len([r for r in ROWS if not r["needs_entry"]]) >= 60
    assert {r["kind"] for r in ROWS} == {"gpu", "model"}


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_real_spellings(catalog, row):
    resolve = getattr(catalog, f"resolve_{row['kind']}")
    expected = row["expected"]
    if row["needs_entry"]:
        # the clean name, resolved the same way, names the entry (every such entry is in the catalog now)
        expected = resolve(expected).id
    else:
        assert expected in (catalog.gpus if row["kind"] == "gpu" else catalog.models)
    r = resolve(row["name"])
    assert r.id == expected
    if row["kind"] == "model":
        assert r.precision == (row["precision"] or None)


def test_notes_say_what_was_dropped_and_read(catalog):
    r = catalog.resolve_model("nvidia/Llama-3.3-70B-Instruct-FP8")
    assert (r.id, r.precision) == ("meta-llama/Llama-3.3-70B-Instruct", "fp8")
    assert r.note == "model 'nvidia/Llama-3.3-70B-Instruct-FP8' read as meta-llama/Llama-3.3-70B-Instruct: " + (
        "'-FP8' names precision fp8"
    )
    r = catalog.resolve_model("TheBloke/Llama-2-7B-Chat-GPTQ")
    assert r.note == (
        "model 'TheBloke/Llama-2-7B-Chat-GPTQ' read as meta-llama/Llama-2-7b-hf: "
        "'-Chat' ignored: instruct, chat and base variants share one architecture; '-GPTQ' names precision int4"
    )
    r = catalog.resolve_model("Qwen/Qwen3-235B-A22B-Thinking-2507")
    assert r.note == (
        "model 'Qwen/Qwen3-235B-A22B-Thinking-2507' read as Qwen/Qwen3-235B-A22B: "
        "'-Thinking' ignored: instruct, chat and base variants share one architecture; "
        "'-2507' ignored: a dated release of the same architecture"
    )
    assert catalog.resolve_model("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF").note.endswith(
        "'-GGUF' is a file format whose files come in many precisions: give the precision (e.g. q4_k_m)"
    )
    r = catalog.resolve_model("Llama-3.1-8B-Instruct-FP8-INT4")
    assert r.precision is None
    assert r.note.endswith("'-FP8-INT4' names several precisions (fp8, int4): give the precision")
    assert catalog.resolve_model("Meta-Llama-3.1-8B-Instruct-Q4_K_S.gguf").note.endswith(
        "'-Q4_K_S-GGUF' names no precision in the catalog (`llmsweep precisions` lists them)"
    )


def test_exact_ids_and_plain_aliases_say_nothing(catalog):
    for name in ("meta-llama/Llama-3.1-8B", "Llama 3.1 70B", "gpt-oss-20b", "meta-llama/Llama-3.3-70B-Instruct"):
        r = catalog.resolve_model(name)
        assert (r.note, r.precision) == (None, None), name
    # an alias naming a variant its id does not: the report shows the id, so the name read is said
    assert catalog.resolve_model("meta-llama/Llama-3.1-8B-Instruct").note == (
        "model 'meta-llama/Llama-3.1-8B-Instruct' read as meta-llama/Llama-3.1-8B: '-Instruct' ignored: instruct, "
        "chat and base variants share one architecture"
    )
    for name in ("NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-32GB", "H100 SXM5 80GB HBM3"):
        assert catalog.resolve_gpu(name).note is None, name


@pytest.mark.parametrize(
    ("name", "gid", "note"),
    [
        (
            "H100",
            "h100-sxm",
            "gpu 'H100' is ambiguous; using h100-sxm (the most common variant; also: h100-pcie, h100-nvl)",
        ),
        (
            "NVIDIA H100",
            "h100-sxm",
            "gpu 'NVIDIA H100' is ambiguous; using h100-sxm (the most common variant; also: h100-pcie, h100-nvl)",
        ),
        (
            "NVIDIA A100 80GB",
            "a100-80gb-sxm",
            "gpu 'NVIDIA A100 80GB' is ambiguous; using a100-80gb-sxm (the most common variant; also: a100-80gb-pcie)",
        ),
        (
            "Tesla V100 SXM2",
            "v100-32gb-sxm",
            "gpu 'Tesla V100 SXM2' is ambiguous; using v100-32gb-sxm (the most common variant; also: v100-16gb-sxm)",
        ),
    ],
)
def test_known_ambiguous_gpus_pick_a_default_and_say_so(catalog, name, gid, note):
    r = catalog.resolve_gpu(name)
    assert (r.id, r.note) == (gid, note)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "A100 20GB",
            "unknown gpu 'A100 20GB'; did you mean 'a100-40gb-sxm' or 'a100-80gb-sxm'? (no a100 in the catalog is "
            "20 GB; its variants: a100-40gb-sxm (40 GB), a100-80gb-sxm (80 GB), a100-80gb-pcie (80 GB))",
        ),
        (
            "NVIDIA A100-PCIE-40GB",
            "unknown gpu 'NVIDIA A100-PCIE-40GB'; did you mean 'a100-40gb-sxm' or 'a100-80gb-sxm'? "
            "(no a100 in the catalog is 40 GB pcie; its variants: a100-40gb-sxm (40 GB), a100-80gb-sxm (80 GB), "
            "a100-80gb-pcie (80 GB))",
        ),
        (
            "H200 NVL",
            "unknown gpu 'H200 NVL'; did you mean 'h200-sxm'? (no h200 in the catalog is nvl; its variants: "
            "h200-sxm (141 GB))",
        ),
        (
            "RTX 3060 8GB",
            "unknown gpu 'RTX 3060 8GB'; did you mean 'rtx-3060-12gb'? (no rtx-3060 in the catalog is 8 GB; its "
            "variants: rtx-3060-12gb (12 GB))",
        ),
        ("Quadro RTX 6000", "unknown gpu 'Quadro RTX 6000'; did you mean"),
        # the part's number first: a typo in its letters is a 3070, not a 4070 Ti one letter closer
        ("RTX 3070 Tii", "unknown gpu 'RTX 3070 Tii'; did you mean 'rtx-3070' or"),
    ],
)
def test_unknown_gpu_variants_are_errors_not_guesses(catalog, name, message):
    with pytest.raises(UnknownNameError) as e:
        catalog.resolve_gpu(name)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "meta-llama/Llama-3.2-3B-Instruct",
            "unknown model 'meta-llama/Llama-3.2-3B-Instruct'; did you mean",
        ),
        (
            "meta-llama/Llama-3.1-8C",
            "unknown model 'meta-llama/Llama-3.1-8C'; did you mean 'meta-llama/Llama-3.1-8B'",
        ),
        ("Qwen/Qwen2.5-Coder-32B-Instruct", "unknown model 'Qwen/Qwen2.5-Coder-32B-Instruct'; did you mean"),
        ("mistralai/Mistral-7B-Instruct-v0.2", "unknown model 'mistralai/Mistral-7B-Instruct-v0.2'; did you mean"),
    ],
)
def test_models_of_another_architecture_are_never_conflated(catalog, name, message):
    with pytest.raises(UnknownNameError) as e:
        catalog.resolve_model(name)
    assert str(e.value).startswith(message)


def _index(*ids: str) -> ModelIndex:
    return ModelIndex({i: [] for i in ids}, lambda tok: None)


def test_two_entries_left_after_stripping_are_an_error_listing_both():
    index = _index("org-a/Foo-7B", "org-b/Foo-7B-Instruct", "org-c/Foo-7B-Chat")
    with pytest.raises(AmbiguousNameError) as e:
        index.resolve("someone/Foo-7B-it-AWQ")
    assert str(e.value) == (
        "ambiguous model 'someone/Foo-7B-it-AWQ': it matches org-a/Foo-7B, org-b/Foo-7B-Instruct "
        "and org-c/Foo-7B-Chat; name one of them (`llmsweep models` lists them)"
    )
    assert index.resolve("org-b/Foo-7B-Instruct").id == "org-b/Foo-7B-Instruct"  # exact
    r = index.resolve("someone/Foo-7B-Instruct-AWQ")  # as one entry writes it, repackaged
    assert (r.id, r.precision) == ("org-b/Foo-7B-Instruct", "int4")
    r = index.resolve("org-c/Foo-7B-it-AWQ")  # the org picks one
    assert (r.id, r.precision) == ("org-c/Foo-7B-Chat", "int4")


def test_a_variant_with_its_own_entry_is_not_taken_for_the_base():
    index = _index("Qwen/Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B-Thinking-2507")
    assert index.resolve("nvidia/Qwen3-235B-A22B-FP8").id == "Qwen/Qwen3-235B-A22B"
    assert index.resolve("Qwen/Qwen3-235B-A22B-Thinking-2507-FP8").id == "Qwen/Qwen3-235B-A22B-Thinking-2507"
    with pytest.raises(AmbiguousNameError):
        index.resolve("Qwen/Qwen3-235B-A22B-Instruct-2507")


def test_gpu_variant_overlap_outside_the_known_groups_is_an_error():
    from llmsweep.catalog.names import GpuIndex

    index = GpuIndex({"x1-16gb": ["X1 16GB"], "x1-32gb": ["X1 32GB"]}, {"x1-16gb": 16, "x1-32gb": 32})
    with pytest.raises(AmbiguousNameError) as e:
        index.resolve("NVIDIA X1")
    assert str(e.value) == (
        "ambiguous gpu 'NVIDIA X1': it matches x1-16gb and x1-32gb; name one of them (`llmsweep gpus` lists them)"
    )
    assert index.resolve("X1 32GB PCIe").id == "x1-32gb"


def test_the_suffix_map_names_catalog_precisions(catalog):
    for pid in {*QUANT_STRONG.values(), *QUANT_WEAK.values()} - {None}:
        assert pid in catalog.precisions


def test_parsers():
    assert parse_gpu("Tesla V100-SXM2-32GB") == parse_gpu("v100 32 GB SXM")
    assert (parse_gpu("NVIDIA H100 80GB HBM3").family, parse_gpu("GB200 NVL72").family) == ("h100", "gb200")
    m = parse_model("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16")
    assert (m.org, m.key, m.variants, m.quant) == ("redhatai", "llama-3.1-8b", ("Instruct",), ("quantized", "w4a16"))
    assert parse_model("nvidia/Llama-3_3-Nemotron-Super-49B-v1").key == "llama-3.3-nemotron-super-49b-v1"


@pytest.mark.parametrize(
    ("name", "precision", "said"),
    [
        ("amd/DeepSeek-R1-MXFP4-Preview", "mxfp4", "'-MXFP4-Preview' names precision mxfp4"),
        ("amd/DeepSeek-R1-0528-MXFP4-Preview", "mxfp4", "'-MXFP4-Preview' names precision mxfp4"),
        ("nvidia/DeepSeek-R1-0528-FP4-v2", "nvfp4", "'-FP4-v2' names precision nvfp4"),
    ],
)
def test_a_release_after_the_quantization_suffix_is_the_checkpoints(catalog, name, precision, said):
    found = catalog.resolve_model(name)
    assert (found.id, found.precision) == ("deepseek-ai/DeepSeek-R1", precision)
    assert said in found.note


def test_a_release_word_elsewhere_names_the_model():
    # not after a quantization suffix, -v1 / -V2 / -Preview are the model's own (DeepSeek-V2 is not DeepSeek)
    assert parse_model("deepseek-ai/DeepSeek-V2").key == "deepseek-v2"
    assert parse_model("Qwen/Qwen3-32B-Preview").key == "qwen3-32b-preview"
    assert parse_model("amd/DeepSeek-R1-MXFP4-Preview").quant == ("MXFP4", "Preview")


def test_a_name_of_thousands_of_release_words_is_read_not_a_recursion_error():
    # each -v2 looked back through the ones before it, a call deeper each: 1,500 of them raised RecursionError
    many = "-v2" * 1500
    found = CliRunner().invoke(main, ["estimate", "--gpu", "h100-sxm", "--model", f"Llama-3.1-8B-FP8{many}"])
    assert found.exit_code == 0 and "'-FP8-v2-v2-v2" in found.output, found.output[-2000:]
    r = CliRunner().invoke(main, ["estimate", "--gpu", "h100-sxm", "--model", f"Llama-3.1-8B{many}"])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output[-2000:]
    assert "unknown model 'Llama-3.1-8B-v2-v2-v2" in r.output
    assert parse_model(f"DeepSeek-R1-MXFP4-Preview{'-Preview' * 1500}").key == "deepseek-r1"


@pytest.mark.parametrize(
    ("name", "mid", "precision"),
    [
        ("nvidia/Llama-3.3-70B-Instruct-FP8/", "meta-llama/Llama-3.3-70B-Instruct", "fp8"),
        ("amd/DeepSeek-R1-MXFP4-Preview/", "deepseek-ai/DeepSeek-R1", "mxfp4"),
        ("Meta-Llama-3-8B//", "meta-llama/Meta-Llama-3-8B", None),
    ],
)
def test_a_trailing_slash_ends_no_name(catalog, name, mid, precision):
    # the slash left an empty repo name: unknown, with a did-you-mean of Llama-3.1-70B for Llama-3.3-70B's FP8
    found = catalog.resolve_model(name)
    assert (found.id, found.precision) == (mid, precision)


def test_local_config_paths_are_not_read_as_repo_names(catalog, tmp_path):
    folder = tmp_path / "Llama-3.1-8B-Instruct"
    folder.mkdir()
    assert catalog.resolve_model(str(folder)).id == f"file:{folder}"


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_cli_estimate_takes_the_precision_from_the_model_name():
    r = invoke(
        "estimate",
        "--gpu",
        "NVIDIA H100 80GB HBM3",
        "--model",
        "nvidia/Llama-3.1-70B-Instruct-FP8",
        "--tp",
        "2",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)
    assert (row["gpu"], row["model"], row["precision"]) == ("h100-sxm", "meta-llama/Llama-3.1-70B", "fp8")
    # fp8: one byte per weight, the bf16 embedding and LM head (2 x 128,256 x 8,192) two, over tp 2
    assert row["weight_bytes"] * 2 == pytest.approx(70.55e9 + 2_101_346_304, rel=0.01)
    assert (
        "note: model 'nvidia/Llama-3.1-70B-Instruct-FP8' read as meta-llama/Llama-3.1-70B: '-Instruct' ignored: "
        "instruct, chat and base variants share one architecture; '-FP8' names precision fp8"
    ) in r.stderr


def test_cli_estimate_precision_given_wins_and_is_said():
    r = invoke(
        "estimate",
        "--gpu",
        "NVIDIA H100 80GB HBM3",
        "--model",
        "nvidia/Llama-3.1-70B-Instruct-FP8",
        "--precision",
        "bf16",
        "--tp",
        "2",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["precision"] == "bf16"
    assert "note: precision bf16 as given, not the fp8 the model name says" in r.stderr


@pytest.mark.parametrize(("gpu", "vendor", "fp4"), [("mi355x", "AMD", "mxfp4"), ("b200", "NVIDIA", "nvfp4")])
def test_cli_estimate_fp4_is_the_gpus_vendors_format(gpu, vendor, fp4):
    # --precision fp4 on MI355X is MXFP4 (AMD's FP4 format); the model name's -FP4 is NVIDIA's
    # checkpoint, NVFP4, so fp4 given overrides it on AMD and is it on NVIDIA
    args = ["--model", "nvidia/DeepSeek-R1-FP4", "--precision", "FP4", "--tp", "8", "--format", "json"]
    r = invoke("estimate", "--gpu", gpu, *args)
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)
    assert (row["precision"], row["notes"]) == (fp4, f"fp4 on {gpu} is {fp4}, {vendor}'s FP4 format")
    overridden = "note: precision FP4 (mxfp4) as given, not the nvfp4 the model name says"
    assert (overridden in r.stderr) == (vendor == "AMD")


def test_cli_estimate_ambiguous_and_unknown_names_exit_1():
    r = invoke("estimate", "--gpu", "A100 20GB", "--model", "llama-3.1-8b")
    assert r.exit_code == 1
    assert "unknown gpu 'A100 20GB'; did you mean 'a100-40gb-sxm' or 'a100-80gb-sxm'?" in r.output


def test_sweep_names_resolve_with_notes(tmp_path):
    from llmsweep.spec import load

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: t\ngrid:\n  gpu: ['NVIDIA H100 80GB HBM3', 'Tesla V100-SXM2-32GB']\n"
        "  model: [nvidia/Llama-3.3-70B-Instruct-FP8, 'Llama 3.1 8B']\n  precision: [fp8]\n"
        "  input_tokens: [128]\n  output_tokens: [16]\n  batch: [1]\n",
        encoding="utf-8",
    )
    try:
        sweep = load(path)
    except LlmsweepError as e:  # pragma: no cover - the message is the useful part
        pytest.fail(str(e))
    assert sweep.axes.gpu == ["h100-sxm", "v100-32gb-sxm"]
    assert sweep.axes.model == ["meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.1-8B"]
    assert any("'-FP8' names precision fp8" in n for n in sweep.notes)


def test_every_catalog_model_is_found_under_any_org_and_suffix(catalog):
    """Rule-based, so it holds for entries added later without new aliases."""
    for mid in catalog.models:
        base = re.sub(r"-(FP8|NVFP4)$", "", mid.rpartition("/")[2])  # a checkpoint named by its format
        for name, precision in (
            (f"someone/{base}-FP8", "fp8"),
            (f"someone/{base}-AWQ", "int4"),
            (f"{base}-NVFP4", "nvfp4"),
            (f"{base.upper()}-GGUF", None),
        ):
            r = catalog.resolve_model(name)
            assert (r.id, r.precision) == (mid, precision), name


def test_every_catalog_gpu_is_found_with_marketing_words(catalog):
    for gid, gpu in catalog.gpus.items():
        if gpu.vendor:
            assert catalog.resolve_gpu(f"{gpu.vendor.split()[0]} {gid.upper()}").id == gid
        for alias in gpu.aliases:
            # (memory-type words are dropped as marketing: an alias that only a memory type tells
            # apart, e.g. "H20 HBM3e", resolves exactly but not with more words around it)
            if alias not in catalog.gpu_ambiguous and "HBM" not in alias:
                assert catalog.resolve_gpu(f"{alias} Edition").id == gid, alias


@pytest.mark.parametrize("name", ["", "/", "org/", "-FP8", "NVIDIA", "gguf"])
def test_degenerate_names_are_unknown(catalog, name):
    if name not in ("", "/"):  # those are folders: read as a local config.json
        with pytest.raises(UnknownNameError):
            catalog.resolve_model(name)
    with pytest.raises(UnknownNameError):
        catalog.resolve_gpu(name)


@pytest.mark.parametrize(("name", "gpu"), [("rtx4090", "rtx-4090"), ("H100SXM", "h100-sxm"), ("mi300x", "mi300x")])
def test_gpu_names_punctuation_aside(catalog, name, gpu):
    assert catalog.resolve_gpu(name).id == gpu


def test_cli_estimate_says_what_a_kv_cache_fp4_is():
    r = invoke(
        "estimate",
        "--gpu",
        "mi355x",
        "--model",
        "deepseek-r1",
        "--precision",
        "fp4",
        "--kv-precision",
        "fp4",
        "--tp",
        "8",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["kv_precision"] == "nvfp4"
    assert "note: a KV cache's fp4 is nvfp4: the KV-cache axis is not resolved per GPU" in r.stderr
