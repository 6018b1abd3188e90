"""Which input partitions one output partition reads: ``same``, ``last N``, ``previous N`` or ``all``; or, for a
``changes`` output, ``changes``: the upstream's Change Data Feed since what its last run consumed."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema


class Window(BaseModel):
    """Which input partitions one output partition reads.

    ``same``: the same partition; ``last``: the ``n`` partitions ending on it; ``previous``: the ``n``
    partitions before it (a product reading its own past); ``all``: the whole table; ``changes``: the rows the
    upstream changed (its Delta Change Data Feed) after the version the output's last run consumed, up to the
    version pinned when the run started (a first run reads the whole table at that version as inserts).
    YAML accepts ``same``, ``all``, ``last_7``, ``previous_1``, ``{last: 7}`` or ``{previous: 1}``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["same", "last", "previous", "all", "changes"] = "same"
    n: int = Field(default=1, ge=1, le=3660)

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, value: Any) -> Any:
        if isinstance(value, str):
            for kind in ("last", "previous"):
                if value.startswith(f"{kind}_") and value[len(kind) + 1 :].isdigit():
                    return {"kind": kind, "n": int(value[len(kind) + 1 :])}
            return {"kind": value}
        if isinstance(value, dict) and len(value) == 1 and set(value) <= {"last", "previous"}:
            [(kind, n)] = value.items()
            return {"kind": kind, "n": n}
        return value

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """Every form YAML accepts, so an editor completes and checks ``last_7`` as it does ``{last: 7}``."""
        short = {"type": "string", "pattern": r"^(same|all|changes|last_[0-9]+|previous_[0-9]+)$"}
        counted = [
            {"type": "object", "properties": {k: {"type": "integer", "minimum": 1}}, "required": [k]}
            for k in ("last", "previous")
        ]
        return {"anyOf": [short, *counted, handler(core_schema)]}

    @property
    def lookback(self) -> int:
        """Partitions before the current one that are read too."""
        return {"last": self.n - 1, "previous": self.n}.get(self.kind, 0)

    @property
    def whole(self) -> bool:
        """The window is not a range of partitions: ``all``, or ``changes`` (what changed, wherever it is)."""
        return self.kind in ("all", "changes")

    @property
    def skips_current(self) -> bool:
        """The window ends before the partition being computed (``previous``)."""
        return self.kind == "previous"


def same() -> Window:
    return Window(kind="same")


def last(n: int) -> Window:
    return Window(kind="last", n=n)


def previous(n: int = 1) -> Window:
    """The ``n`` partitions before the one being computed: a product's own past (running totals)."""
    return Window(kind="previous", n=n)


def all_partitions() -> Window:
    return Window(kind="all")
