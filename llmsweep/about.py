"""The About sheet of estimates.xlsx: what a finance reader needs to read the workbook on its own (the
sweep, the traffic and targets, the prices and cost assumptions, the run's notes, what each column of
the options sheet means), taken from the run's manifest in the words the report uses, never recomputed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llmsweep import answer as answers
from llmsweep.columns import BY_NAME, OPTION_COLUMNS
from llmsweep.report import has_targets, rank_statement, workload_defaults, yaml_spec


@dataclass(frozen=True)
class Line:
    """One row of the About sheet: `kind` is title, section, item (label + text), head (a table's
    header) or row (a table's row); `cells` in columns A.. (text, or a number with `unit`)."""

    kind: str
    cells: tuple[object, ...]
    unit: str | None = None  # of a number in the third cell (a price), for its number format


# How to read the two columns finance asks about (their OPTION_COLUMNS descriptions are in the dictionary)
READING = (
    (
        "One row",
        "Each row of the options sheet is one model and lengths on one GPU and price offer, at the layout "
        "(precision, parallelism, batch) that serves it best under the targets; the plan sheet has every layout.",
    ),
    (
        "Rank",
        "Ranks count every layout that meets the targets (the plan sheet), best first, per model and lengths. "
        "This sheet keeps only the best layout of each GPU and offer, so its ranks skip numbers (for "
        "example 1, 4, 5, 12): each skipped rank is another layout of a GPU and offer listed above it.",
    ),
    (
        "Batch and Concurrency",
        "Batch is the most requests one replica can run at once within the targets, measured as a load test "
        "does (that many clients, each sending its next request when the last is answered). Concurrency is "
        "what one replica has in flight at the traffic the plan gives it; with a workload the fleet is sized "
        "for the peak with headroom and spare replicas, so Concurrency is usually well below Batch, and "
        "Capacity (requests/s) says how much more a replica could take.",
    ),
)


def about_lines(manifest: dict, sheets: dict[str, Sequence[str]]) -> list[Line]:
    """The About sheet, row by row, from the run's manifest (what `llmsweep run` writes to manifest.json,
    as the reports read it) and the workbook's other sheets (name: its columns)."""
    spec = yaml_spec(manifest)
    sweep = manifest["sweep"]
    title = spec.get("title") or spec.get("name") or sweep["name"]
    load = spec.get("workload") or {}
    slo = spec.get("slo") or {}
    finance = manifest.get("finance") or {}
    horizon = finance.get("horizon_years", 3)
    prices = manifest.get("prices") or {}
    lines = [
        Line("title", (str(title),)),
        Line("section", ("The run",)),
        Line("item", ("Sweep", f"{sweep['name']} (file {sweep['file']}, sha256 {sweep['sha256']})")),
        Line(
            "item",
            (
                "llmsweep",
                f"version {manifest['llmsweep_version']}; efficiency profile "
                f"{(manifest.get('profile') or {}).get('name', '')}",
            ),
        ),
        Line(
            "item",
            (
                "Date",
                "not stamped: the same sweep and version write the same file, byte for byte; the sweep's sha256 "
                "above names the inputs, and each example price below carries its own date",
            ),
        ),
        Line("item", ("Configurations", f"{manifest.get('rows', 0):,} estimated")),
        Line("item", ("Sheets", "; ".join(SHEETS[s] for s in sheets if s in SHEETS))),
        Line("section", ("Workload and targets",)),
    ]
    if load:
        lines.append(
            Line("item", ("Traffic", answers.traffic_statement(load, workload_defaults()).removeprefix("Traffic: ")))
        )
    else:
        lines.append(Line("item", ("Traffic", "no workload: each option is one replica, fully loaded")))
    if load.get("input_tokens") is not None and load.get("output_tokens") is not None:
        lines.append(
            Line("item", ("Lengths", f"{load['input_tokens']:,} tokens in, {load['output_tokens']:,} out per request"))
        )
    targets = answers.targets_text(slo).removeprefix("with ") if has_targets(spec) else "no latency targets"
    lines.append(Line("item", ("Latency targets", targets)))
    rank_by = manifest.get("rank_by") or "usd_per_million_output_tokens"
    lines.append(
        Line(
            "item",
            (
                "Ranking",
                rank_statement(rank_by, bool(load), horizon, users=bool(load) and load.get("users") is not None),
            ),
        )
    )
    lines.append(Line("section", ("Costs",)))
    if prices:
        lines.append(Line("item", ("Assumptions", str(finance.get("statement") or ""))))
        lines.append(Line("item", ("Horizon", f"{horizon:g} years (horizon_years)")))
        lines.append(Line("item", ("Rent paid", f"{finance.get('rent_paid', '24/7')} (rent_paid)")))
        lines.append(Line("head", ("GPU and offer", "Source and terms", "USD per GPU-hour")))
        for key, price in prices.items():
            lines.append(Line("row", (key, price_terms(price), price.get("usd_per_gpu_hour")), "USD/h"))
        priced = {p.get("gpu") for p in prices.values()}
        for gpu in (manifest.get("catalog") or {}).get("gpus", {}):
            if gpu not in priced:
                lines.append(Line("row", (gpu, "no price: its cost columns are empty and it is not ranked by cost")))
    else:
        lines.append(Line("item", ("Prices", "none: the cost columns are empty")))
    notes = list(manifest.get("notes") or [])
    if notes:
        lines.append(Line("section", ("Notes of the run",)))
        lines.extend(Line("item", ("Note", note)) for note in notes)
    lines.append(Line("section", ("Reading the options sheet",)))
    lines.extend(Line("item", pair) for pair in READING)
    lines.append(Line("section", ("Columns of the options sheet",)))
    lines.append(Line("head", ("Column", "Meaning", "Unit", "Plan column")))
    for col in OPTION_COLUMNS:
        scale = {1e3: " x 1000", 1e6: " x 10^6"}.get(col.scale, "")
        source = f"{col.source}{scale}" if col.source in BY_NAME else ""
        lines.append(Line("row", (col.header, col.description.replace("`", ""), col.unit, source)))
    others = [s for s in sheets if s != "options"]
    if others:
        lines.append(Line("section", (f"Columns of the {' and '.join(others)} sheet{'s' if len(others) > 1 else ''}",)))
        lines.append(Line("head", ("Column", "Meaning", "Unit")))
        named = dict.fromkeys(n for s in others for n in sheets[s] if n in BY_NAME)
        for name in named:
            lines.append(Line("row", (name, BY_NAME[name].description.replace("`", ""), BY_NAME[name].unit)))
    return lines


SHEETS = {
    "options": "options: the answer, one row per model, lengths, GPU and price offer at its best layout",
    "plan": "plan: every layout that can run, at the largest batch that meets the targets, ranked",
    "estimates": "estimates: every configuration of the grid, one row each (with why one does not fit)",
}


# A purchase's terms as the About sheet states them, in the order a buyer reads them: key -> wording.
BUY_TERMS = (
    ("server_usd", "{:,.0f} USD per server without its GPUs"),
    ("network_usd_per_server", "{:,.0f} USD of network per server"),
    ("years", "written off over {:g} years"),
    ("power_usd_per_kwh", None),  # with its PUE and average draw: power_terms
    ("hosting_usd_per_kw_month", "hosting {:g} USD per kW-month"),
    ("rack_usd_per_month", "{:,.0f} USD per rack-month"),
    ("rack_kw", "{:g} kW per rack"),
    ("servers_per_rack", "{:,} servers per rack"),
)


def price_terms(price: dict) -> str:
    """'sweep: bought; 35,000 USD per GPU, ...': where a price comes from and the terms the sweep gave it."""
    parts = [str(price.get("source") or "")]
    if price.get("kind") == "buy":
        if price.get("purchase_usd_per_gpu") is not None:
            parts.append(f"{price['purchase_usd_per_gpu']:,.0f} USD per GPU")
        for key, wording in BUY_TERMS:
            if not price.get(key):
                continue
            parts.append(
                wording.format(price[key])
                if wording
                else f"power {price[key]:g} USD per kWh at PUE {price.get('pue', 1.0):g}, "
                f"{price.get('power_utilization', 0):.0%} of full power on average"
            )
    if price.get("host_kw"):
        parts.append(
            f"host power {price['host_kw']:g} kW per server (in Power (kW) and the opex; energy per token counts "
            "the GPUs alone)"
        )
    if price.get("citation"):
        parts.append(str(price["citation"]))
    return "; ".join(p for p in parts if p)
