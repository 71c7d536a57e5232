"""Model entries: config.json fields, license and sources; the architecture is read from the fields."""

from __future__ import annotations

from functools import cached_property

from pydantic import BaseModel, ConfigDict, model_validator

from llmsweep.catalog.architecture import Architecture, checkpoint_precision, read_config


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    config: dict
    license: str = "unknown: check the model card"
    aliases: list[str] = []
    reference_id: str | None = None
    params_reference: dict = {}
    kv_bytes_per_token_fp16_reference: int | None = None
    default_precision: str | None = None  # the checkpoint's weight format (a precisions.yaml id)
    default_precision_source: str | None = None
    sources: list[dict] = []
    notes: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _precision_from_config(cls, data):
        """Entries built from a config.json (a user's file) read the checkpoint format from it."""
        if isinstance(data, dict) and "default_precision" not in data and isinstance(data.get("config"), dict):
            pid, why = checkpoint_precision(data["config"])
            if pid:
                data = {**data, "default_precision": pid, "default_precision_source": why}
        return data

    @cached_property
    def architecture(self) -> Architecture:
        return read_config(self.config, where=f"model {self.name}")
