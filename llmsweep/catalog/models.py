"""Model entries: config.json fields, license and sources; the architecture is read from the fields."""

from __future__ import annotations

from functools import cached_property

from pydantic import BaseModel, ConfigDict, model_validator

from llmsweep.catalog.architecture import Architecture, checkpoint_precision, read_config, unconverted_params


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

    @cached_property
    def _unconverted(self) -> tuple[str | None, int]:
        return checkpoint_precision(self.config)[0], unconverted_params(self.config, self.architecture)

    def kept_params(self, precision: str) -> int:
        """Parameters held at 16 bits, beyond the embedding and LM head, when the weights are in
        `precision`: the modules the checkpoint's config.json lists as unconverted if `precision` is
        the checkpoint's own format (gpt-oss-120b in mxfp4: its attention and routers,
        969,078,528), else 0 (a format the model is requantised to says nothing about them)."""
        native, kept = self._unconverted
        return kept if precision == native else 0
