from __future__ import annotations

from pathlib import Path

import pytest

from llmsweep.catalog import load_catalog
from llmsweep.grid import Axes, grid_parts

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT.parent / "shared" / "reference"
DATA = Path(__file__).resolve().parent / "data"


def estimate_rows(profile: str = "ideal", **axes) -> list[dict]:
    """Estimate a small grid (axes as in grid.Axes, single values allowed) and return its rows."""
    axes = {k: v if isinstance(v, list | tuple | bool) else [v] for k, v in axes.items()}
    cat = load_catalog()
    return grid_parts(cat, Axes(**axes), cat.profile(profile)).estimate().collect().to_dicts()


def estimate_row(profile: str = "ideal", **axes) -> dict:
    (row,) = estimate_rows(profile, **axes)
    return row


@pytest.fixture
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def procurement_run(tmp_path_factory):
    """sweeps/procurement.yaml run once for every test module that reads it (every format it asks for:
    csv, parquet, xlsx, html, md); the tests read its folder and never write there."""
    from llmsweep import pipeline

    return pipeline.run(ROOT / "sweeps" / "procurement.yaml", tmp_path_factory.mktemp("procurement"))


needs_reference = pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"{REFERENCE} is not present")
