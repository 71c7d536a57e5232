"""The xPyD search's budget (plan/xpyd.within_budget): 72 GPUs a replica bounds what the plan searches,
never what the sweep gives. A listed worker count is planned as given, whatever the replica's size,
and a worker that alone takes more than the budget still gets a replica of one worker per pool: every
decode option the estimator estimates has a row in plan.csv."""

from __future__ import annotations

import polars as pl
import yaml
from click.testing import CliRunner

from llmsweep import plan
from llmsweep.cli import main
from llmsweep.grid import Axes, grid_parts

R1 = "deepseek-ai/DeepSeek-R1"
L70 = "meta-llama/Llama-3.1-70B"  # the catalog id (the sweep file also takes the Instruct name)
SEARCHED = ("prefill_workers", "decode_workers")


def pairs_searched(catalog, searched: tuple[str, ...], **over) -> list[tuple[int, int, int]]:
    """(prefill workers, decode workers, GPUs a replica) of the search's candidates: Llama-3.1-70B fp8 on
    H100 SXM, prefill and decode workers of tp 8 (8 GPUs each), 2,048 in / 256 out."""
    axes = dict(
        gpu=["h100-sxm"],
        model=[L70],
        precision=["fp8"],
        tp=[8],
        input_tokens=[2048],
        output_tokens=[256],
        batch=["max"],
        mode=["disaggregated"],
    )
    axes = plan.search_axes(Axes(**{**axes, **over}), searched)
    parts = grid_parts(catalog, axes, catalog.profile("default"))
    frame = plan.candidates(parts, searched).collect()
    assert frame["layout_reason"].null_count() == frame.height  # every pair can run: none is a fallback
    return sorted(frame.select("prefill_workers", "decode_workers", "gpus").rows())


def test_the_search_budget_by_hand(catalog):
    # Both counts searched: 8 x + 8 y <= 72, x + y <= 9: 8 + 7 + ... + 1 = 36 pairs, as before.
    both = pairs_searched(catalog, SEARCHED)
    assert both == sorted((x, y, 8 * (x + y)) for x in range(1, 17) for y in range(1, 17) if x + y <= 9)
    assert len(both) == 36
    # Decode workers listed [4, 10]: each as given, outside the budget (10 x 8 = 80 GPUs alone is more
    # than 72); the searched prefill pool within 72 GPUs, 8 x <= 72, x = 1..9: 2 x 9 = 18 pairs of
    # 8 (x + y) GPUs, 40 to 152. (Before: 4 decode workers with x <= 5 only, 10 never.)
    decode = pairs_searched(catalog, ("prefill_workers",), decode_workers=[4, 10])
    assert decode == [(x, y, 8 * (x + y)) for x in range(1, 10) for y in (4, 10)]
    assert (len(decode), decode[0][2], decode[-1][2]) == (18, 40, 152)
    # Prefill workers listed [10]: the decode pool searched the same way, y = 1..9, 88 to 152 GPUs.
    prefill = pairs_searched(catalog, ("decode_workers",), prefill_workers=[10])
    assert prefill == [(10, y, 8 * (10 + y)) for y in range(1, 10)]


def test_a_worker_wider_than_the_budget_keeps_one_of_each(catalog):
    """DeepSeek-R1 decode workers of attention DP 72 x EP 72 on GB200 (a whole NVL72 rack) beside prefill
    workers of tp 8 x ep 8, both counts searched: 72 + 8 = 80 GPUs for 1P1D is over the budget already,
    so the search keeps 1P1D (it had no candidate, and the plan no row, for this decode option). The
    replica spans 80 / 4 = 20 GB200 trays, beyond the 72-GPU NVLink domain: its KV cache crosses the
    NICs, as estimates.csv's 1P1D row says."""
    axes = Axes(
        gpu=["gb200"],
        model=[R1],
        precision=["fp8"],
        tp=[1],
        dp_attention=[72],
        ep=[72],
        input_tokens=[8192],
        output_tokens=[1024],
        batch=["max"],
        mode=["disaggregated"],
        prefill_tp=[8],
        prefill_ep=[8],
        prefill_dp_attention=[1],
    )
    parts = grid_parts(catalog, plan.search_axes(axes, SEARCHED), catalog.profile("default"))
    frame = plan.candidates(parts, SEARCHED).collect()
    cols = ["prefill_workers", "decode_workers", "gpus", "servers_per_replica", "kv_link", "layout_reason"]
    assert frame.select(cols).rows() == [(1, 1, 80, 20, "scale-out", None)]
    chosen, stats = plan.search(frame, plan.PlanInputs({}, None, None, "tco_usd", worker_search=SEARCHED))
    assert chosen.select("prefill_workers", "decode_workers", "gpus").rows() == [(1, 1, 80)]
    assert (stats.decode_options, stats.candidates, stats.evaluated) == (1, 1, 1)


def test_listed_decode_workers_beyond_72_gpus_are_planned(tmp_path):
    """`llmsweep run` with 10 listed decode workers of 8 H100s and the prefill pool left to the plan:
    plan.csv and options.csv have the option, at the prefill pool the search picks among x = 1..9
    (replicas of 88 to 152 GPUs), the KV cache over the NICs; the note says what was searched. Before,
    plan.csv and options.csv were empty and no note said why."""
    sweep = {
        "name": "wide-decode",
        "grid": {
            "gpu": ["h100-sxm"],
            "model": ["meta-llama/Llama-3.1-70B-Instruct"],
            "precision": ["fp8"],
            "input_tokens": [2048],
            "output_tokens": [256],
            "batch": ["max"],
            "tp": [8],
            "mode": ["disaggregated"],
            "decode": {"workers": [10]},
        },
        "workload": {"requests_per_s": 20, "input_tokens": 2048, "output_tokens": 256},
        "slo": {"ttft_s": 2.0, "tpot_s": 0.05},
        "report": {"formats": ["csv"]},
    }
    path = tmp_path / "wide.yaml"
    path.write_text(yaml.safe_dump(sweep))
    r = CliRunner().invoke(main, ["run", str(path), "-o", str(tmp_path / "out"), "--quiet"])
    assert r.exit_code == 0, r.output
    notes = [line for line in r.output.splitlines() if line.startswith("note: xPyD search:")]
    assert len(notes) == 1 and notes[0].startswith(
        "note: xPyD search: 9 worker pairs (x prefill, y decode workers; a count the sweep does not list runs "
        "1-16, the pools so searched within 72 GPUs a replica, or one worker each where one takes more; a listed "
        "count as given, whatever the replica's size) with every prefill layout, for 1 decode option; "
    )
    folder = tmp_path / "out" / "wide-decode"
    rows = pl.read_csv(folder / "plan.csv").select("prefill_workers", "decode_workers", "gpus", "kv_link").rows()
    assert len(rows) == 1
    x, y, gpus, link = rows[0]
    assert 1 <= x <= 9 and (y, gpus, link) == (10, 8 * (x + 10), "scale-out")
    shown = pl.read_csv(folder / "options.csv").select("xPyD", "KV link").rows()
    assert shown == [(f"{x}P10D", "scale-out")]
