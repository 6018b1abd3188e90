"""Table kinds: what a run does to its table, declared on an output as SQLMesh declares a model's kind.

A run always computes rows for its partitions (a batch of the source's time, or the whole source when the
output is unpartitioned), stages them and audits them; its kind says how those rows become the table:

- ``partitions``: they replace the run's partitions (facts, one partition at a time);
- ``full``: they replace the whole table (an unpartitioned output);
- ``append``: events never rewritten, inserted once (a re-run inserts nothing it inserted before);
- ``merge``: an upsert by ``unique_key`` (SQLMesh ``INCREMENTAL_BY_UNIQUE_KEY``, dbt's ``merge`` strategy);
- ``history``: slowly changing dimension type 2 (SQLMesh ``SCD_TYPE_2``, dbt snapshots);
- ``changes``: an ordered change feed applied by ``sequence_by`` (Lakeflow's ``AUTO CDC``), SCD type 1 or 2.

Each kind is a class: its fields, what it requires of the output, the checks it implies and how a past range
may be recomputed. How each kind commits is the storage's (:mod:`mesh_assets.storage.strategies`).
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from mesh_assets.model.checks import CheckSpec, Unique
from mesh_assets.model.grain import Grain
from mesh_assets.model.names import Identifier
from mesh_assets.model.partitions import PartitionRange

REPLAY = "replay"
"""The asset metadata that carries a kind's :class:`Replay` rule, when it is not ``any``: what backfills plan by."""
KEY_CHECK = "unique_key"
"""The name of the blocking check every keyed kind implies on its staged rows."""


class Replay(enum.Enum):
    """How a past range of a table may be recomputed once later partitions were applied on top of it."""

    ANY = "any"
    """Alone: the result does not depend on the order runs are applied in."""
    FORWARD = "forward"
    """Only with every later applied partition, replayed in order (a run that reaches the latest one)."""
    REBUILD = "rebuild"
    """Only by a rebuild, which replays every partition in order from an empty table."""


def _keys(value: Any) -> Any:
    return (value,) if isinstance(value, str) else value


class _OneOrMany:
    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"anyOf": [{"type": "string"}, handler(core_schema)]}


Keys = Annotated[tuple[Identifier, ...], BeforeValidator(_keys), _OneOrMany()]
"""One column or a list of them (``unique_key: order_id`` or ``unique_key: [order_id, line]``)."""


class Kind(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    unique_key: Keys = ()
    """The columns that identify a row: required by the keyed kinds; on the others, a blocking check that no
    two rows of a partition share them (and the key ``mesh diff`` matches rows by)."""
    keyed: ClassVar[bool] = False
    """Rows are matched to the table's rows by ``unique_key``: the commit is a ``MERGE``."""
    replaces: ClassVar[bool] = False
    """The commit replaces partitions (or the table) with the rows: a write may judge its checks as it goes."""
    per_partition: ClassVar[bool] = False
    """A range is applied one partition at a time, in order, each in its own commit (each is a state)."""

    def check_grain(self, grain: Grain) -> None:
        """Raise ``ValueError`` when an output of ``grain`` cannot have this kind."""

    def implied_checks(self) -> tuple[CheckSpec, ...]:
        """Blocking checks the kind needs on the staged rows before it may commit them."""
        return (Unique(keys=self.unique_key, name=KEY_CHECK),) if self.unique_key else ()

    @property
    def replay(self) -> Replay:
        return Replay.ANY

    def describe(self) -> str:
        """One line for the asset's metadata and ``mesh list``: ``merge on order_id by updated_at``."""
        return self.name

    def rows_within(self, part: PartitionRange) -> PartitionRange | None:
        """The partitions a run over ``part`` may hold rows of; None: any (its rows are matched by key)."""
        return None if self.keyed else part

    @property
    def extra_columns(self) -> tuple[str, ...]:
        """Columns the kind adds to the computed rows in the table (history's validity)."""
        return ()


class Partitions(Kind):
    """Replace the run's partitions with its rows: one ``replaceWhere`` commit; the others are untouched."""

    name: Literal["partitions"] = "partitions"
    replaces: ClassVar[bool] = True

    def check_grain(self, grain: Grain) -> None:
        if not grain.partitioned:
            raise ValueError("kind partitions needs a partitioned output: use kind: full for partitioning: none")


class Full(Kind):
    """Replace the whole table with the run's rows."""

    name: Literal["full"] = "full"
    replaces: ClassVar[bool] = True

    def check_grain(self, grain: Grain) -> None:
        if grain.partitioned:
            raise ValueError(
                f"kind full is for unpartitioned outputs; a {grain} output replaces the partitions it computes: "
                "remove the kind, or set partitioning: none to rewrite the whole table"
            )


class Append(Kind):
    """Insert the run's rows that the table does not hold yet; never update or delete one.

    A row is known by ``unique_key`` when declared (the event's id), else by all its columns, within the run's
    partitions: re-running a range inserts nothing it inserted before, and late events are added."""

    name: Literal["append"] = "append"

    def describe(self) -> str:
        return f"append on {', '.join(self.unique_key)}" if self.unique_key else "append"


class _Keyed(Kind):
    keyed: ClassVar[bool] = True
    unique_key: Annotated[Keys, Field(min_length=1)]


class Merge(_Keyed):
    """Upsert the run's rows by ``unique_key``: matched rows are updated (or deleted where ``delete`` holds),
    new keys inserted. Two rows of a key are decided by ``sequence_by`` (the greater wins, across the partitions
    of a range too; an older row never overwrites a newer one already in the table); without it, two rows of a
    key in one partition are refused by name and across a range the later partition wins. ``within_last``: the
    ``MERGE`` scans only the table's rows of the run's partitions and the N before them (a key's partition
    column must be stable, such as an order's day; rows of older partitions are refused)."""

    name: Literal["merge"] = "merge"
    sequence_by: Identifier | None = None
    delete: str | None = Field(default=None, min_length=1)
    """A SQL condition over a computed row: where it holds, the key's row is deleted (and never inserted)."""
    within_last: int | None = Field(default=None, ge=0, le=3660)

    def check_grain(self, grain: Grain) -> None:
        if self.within_last is not None and not grain.partitioned:
            raise ValueError("within_last needs a partitioned output: it limits the partitions a merge scans")

    def implied_checks(self) -> tuple[CheckSpec, ...]:
        keys = self.unique_key + ((self.sequence_by,) if self.sequence_by else ())
        return (Unique(keys=keys, name=KEY_CHECK),)

    @property
    def replay(self) -> Replay:
        return Replay.ANY if self.sequence_by else Replay.FORWARD

    def rows_within(self, part: PartitionRange) -> PartitionRange | None:
        return part.widen(self.within_last) if self.within_last is not None else None

    def describe(self) -> str:
        by = f" by {self.sequence_by}" if self.sequence_by else ""
        return f"merge on {', '.join(self.unique_key)}{by}"


class History(_Keyed):
    """A slowly changing dimension (type 2): each version of a key is a row valid from ``valid_from`` until
    ``valid_to`` (null while current, ``is_current`` true). The run's rows are the source's state, one per key;
    a key whose ``updated_at`` moved (or, with ``check_columns``, whose values differ) closes its current row
    and opens a new one; a key missing from a run's rows is closed (``deletes: close``) or kept (``keep``).
    Re-running the same input adds nothing."""

    name: Literal["history"] = "history"
    per_partition: ClassVar[bool] = True
    updated_at: Identifier | None = None
    check_columns: tuple[Identifier, ...] | None = None
    deletes: Literal["close", "keep"] = "close"
    valid_from: Identifier = "valid_from"
    valid_to: Identifier = "valid_to"
    is_current: Identifier = "is_current"

    @model_validator(mode="after")
    def _one_detection(self) -> History:
        if (self.updated_at is None) == (self.check_columns is None):
            raise ValueError("history detects changes by exactly one of updated_at or check_columns")
        if self.check_columns is not None and not self.check_columns:
            raise ValueError("check_columns must name at least one column")
        return self

    def check_grain(self, grain: Grain) -> None:
        if not grain.partitioned:
            raise ValueError(
                "kind history needs a partitioned output: each partition is the source's state at its start, "
                "when its changes and deletes take effect"
            )

    @property
    def replay(self) -> Replay:
        return Replay.REBUILD

    @property
    def extra_columns(self) -> tuple[str, ...]:
        return (self.valid_from, self.valid_to, self.is_current)

    def describe(self) -> str:
        by = f"updated_at {self.updated_at}" if self.updated_at else f"check {', '.join(self.check_columns or ())}"
        return f"history on {', '.join(self.unique_key)} by {by}"


class Changes(_Keyed):
    """Apply an ordered change feed: each computed row is an insert, update or delete (where ``delete`` holds)
    of its key, ordered by ``sequence_by``; out-of-order and late events are resolved by sequence, never by
    arrival. ``scd_type: 1`` keeps the current row per key; ``2`` keeps every version as ``history`` does.
    ``except_columns`` are the feed's own columns left out of the table (an operation code)."""

    name: Literal["changes"] = "changes"
    sequence_by: Identifier
    delete: str | None = Field(default=None, min_length=1)
    except_columns: tuple[Identifier, ...] = ()
    scd_type: Literal[1, 2] = 1
    valid_from: Identifier = "valid_from"
    valid_to: Identifier = "valid_to"
    is_current: Identifier = "is_current"

    @model_validator(mode="after")
    def _keys_are_stored(self) -> Changes:
        left_out = [c for c in (*self.unique_key, self.sequence_by) if c in self.except_columns]
        if left_out:
            raise ValueError(
                f"except_columns may not name {', '.join(left_out)}: the table keeps its keys and sequence_by "
                "(they order the events a later run applies)"
            )
        return self

    def implied_checks(self) -> tuple[CheckSpec, ...]:
        return (Unique(keys=(*self.unique_key, self.sequence_by), name=KEY_CHECK),)

    @property
    def replay(self) -> Replay:
        return Replay.ANY if self.scd_type == 1 else Replay.REBUILD

    @property
    def extra_columns(self) -> tuple[str, ...]:
        return (self.valid_from, self.valid_to, self.is_current) if self.scd_type == 2 else ()

    def describe(self) -> str:
        return f"changes on {', '.join(self.unique_key)} by {self.sequence_by} (scd {self.scd_type})"


def _named(value: Any) -> Any:
    """``kind: full`` is ``kind: {name: full}``."""
    return {"name": value} if isinstance(value, str) else value


class _NameOrMapping:
    """The JSON schema of a kind as YAML may write it: a name, or a mapping checked against its kind's model."""

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        names = ["partitions", "full", "append"]  # the kinds that need no field
        return {"anyOf": [{"type": "string", "enum": names}, handler(core_schema)]}


KindSpec = Annotated[
    Annotated[Partitions | Full | Append | Merge | History | Changes, Field(discriminator="name")],
    BeforeValidator(_named),
    _NameOrMapping(),
]
"""A table's kind as an output declares it: a name (``full``) or a mapping (``{name: merge, unique_key: id}``)."""


def default_kind(grain: Grain) -> Kind:
    """The kind of an output that declares none: its partitions replaced, or the whole table when it has none."""
    return Partitions() if grain.partitioned else Full()
