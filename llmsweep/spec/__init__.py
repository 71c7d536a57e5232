"""The sweep file: YAML -> a validated, frozen `SweepSpec` -> a resolved `Sweep`.

Every problem in the file is collected and reported together as `file:line: key.path: message`
(unknown keys and names come with a did-you-mean). See DESIGN.md §3 for the format; the JSON
Schema (`llmsweep schema`) is generated from the models.

    models.py    the pydantic models of the file (SweepSpec and its parts) and the JSON Schema
    problems.py  pydantic errors -> problems at the key path and line the file wrote
    resolve.py   the names of a validated spec resolved against the catalog (and the sweep's own)
    exclude.py   the `exclude` rules
    loader.py    load(): read, validate, resolve -> Sweep; the grid's and the plan's size limits
"""

from __future__ import annotations

from llmsweep.spec.loader import DEFAULT_MAX_ROWS, MAX_SUGGESTIONS, Sweep, load, plan_size
from llmsweep.spec.models import (
    AXES,
    EVERY_GPU,
    FORMATS,
    OFFER_ID,
    CostSpec,
    GridSpec,
    ReportSpec,
    SloSpec,
    SweepSpec,
    WorkloadSpec,
    json_schema,
)
from llmsweep.yamlfile import format_path

__all__ = [
    "AXES",
    "DEFAULT_MAX_ROWS",
    "EVERY_GPU",
    "FORMATS",
    "MAX_SUGGESTIONS",
    "OFFER_ID",
    "CostSpec",
    "GridSpec",
    "ReportSpec",
    "SloSpec",
    "Sweep",
    "SweepSpec",
    "WorkloadSpec",
    "format_path",
    "json_schema",
    "load",
    "plan_size",
]
