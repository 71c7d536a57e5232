"""What every part of the sweep file's models shares: the strict, frozen base model and the
list-valued axis (a single value may stand for a list of one)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


def _as_list(v: Any) -> Any:
    """An axis may be written as one value instead of a list of one."""
    return v if isinstance(v, list) else [v]


def _axis(item: Any, description: str, default: list | None = None) -> Any:
    kwargs = {"min_length": 1, "description": description}
    if default is None:
        return Annotated[list[item], BeforeValidator(_as_list), Field(**kwargs)]
    return Annotated[list[item], BeforeValidator(_as_list), Field(default=default, **kwargs)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
