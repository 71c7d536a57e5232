"""Model entries: config.json fields, license and sources; the architecture is read from the fields."""

from __future__ import annotations

from functools import cached_property

from pydantic import BaseModel, ConfigDict

from llmsweep.catalog.architecture import Architecture, read_config


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    config: dict
    license: str = "unknown: check the model card"
    aliases: list[str] = []
    reference_id: str | None = None
    params_reference: dict = {}
    kv_bytes_per_token_fp16_reference: int | None = None
    sources: list[dict] = []
    notes: str | None = None

    @cached_property
    def architecture(self) -> Architecture:
        return read_config(self.config, where=f"model {self.name}")
