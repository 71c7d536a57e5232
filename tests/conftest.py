from __future__ import annotations

from pathlib import Path

import pytest

from llmsweep.catalog import load_catalog
from llmsweep.estimate import add_estimates
from llmsweep.grid import Axes, expand

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT.parent / "shared" / "reference"
DATA = Path(__file__).resolve().parent / "data"


def estimate_rows(profile: str = "ideal", **axes) -> list[dict]:
    """Estimate a small grid (axes as in grid.Axes, single values allowed) and return its rows."""
    axes = {k: v if isinstance(v, list | tuple) else [v] for k, v in axes.items()}
    cat = load_catalog()
    return add_estimates(expand(cat, Axes(**axes), cat.profile(profile))).collect().to_dicts()


def estimate_row(profile: str = "ideal", **axes) -> dict:
    (row,) = estimate_rows(profile, **axes)
    return row


@pytest.fixture
def catalog():
    return load_catalog()


needs_reference = pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"{REFERENCE} is not present")
