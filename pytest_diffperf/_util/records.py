"""Strict pydantic records that write back the keys they were made or read with."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

# Unknown keys refused, types exact (no "2532.2" or true read as a number), numbers finite.
EXACT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

Count = Annotated[int, Field(ge=0)]


class Record(BaseModel):
    """A strict record that writes the keys it was made or read with (a static run's row names no side)."""

    model_config = EXACT

    @model_serializer(mode="wrap")
    def _as_made(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        return {k: v for k, v in dumped.items() if k in self.model_fields_set}
