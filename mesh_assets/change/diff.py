"""What changed between a base and the working tree, product by product and table by table, and which changes break the
tables' readers.

Against a git base each table's declaration is compared field by field (its spec, its inputs, its SQL or code);
against the instance (no base), each published partition's recorded code version and revision with the ones the
working tree computes. A table's schema change is judged against the published table (the columns its newest commit
recorded) or, never published, the base's declared contract; the new schema is the declared ``contract``, or without
one the columns a SQL product's query names (by name only; a PySpark product's are Spark's to find, so without a
contract its schema is not judged). Breaking: a dropped or retyped column, other partitioning, another table kind or
``unique_key`` (or a history's validity columns), no longer published, removed while readable. A breaking change
to a table the base published is what ``mesh plan`` refuses: the change belongs in a new major version beside it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import dagster as dg

from mesh_assets.change.records import InstanceRecords
from mesh_assets.change.sides import Side
from mesh_assets.graph.resolve import Table, TableKind
from mesh_assets.storage.schema_change import SchemaChange, compare_columns

UNKNOWN = "type unknown"
"""A column's type where only its name is known: a SQL product's query names its columns, not their types."""
LIFECYCLE = {"status", "sunset"}
"""Spec fields reported as the table's (effective) status rather than as fields."""


class Change(enum.StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass(frozen=True)
class Consumer:
    """A table that reads a changed one, and who to tell."""

    table: str
    owner: str
    contacts: tuple[str, ...]

    @classmethod
    def of(cls, table: Table) -> Consumer:
        return cls(table.ref, table.owner, tuple(c.value for c in table.contacts))

    def describe(self) -> str:
        return f"{self.table} ({', '.join([self.owner, *self.contacts])})"


@dataclass(frozen=True)
class TableDiff:
    """One table added, removed or changed, with what its readers must know."""

    change: Change
    before: Table | None
    after: Table | None
    fields: tuple[str, ...] = ()
    code: str | None = None
    """``sql`` or ``python`` when the source changed."""
    stale: tuple[str | None, ...] | None = None
    """The published partitions its change makes stale (``None``: every published one, when its code version
    changed; ``()``: none)."""
    schema: SchemaChange | None = None
    schema_against: str | None = None
    breaking: tuple[str, ...] = ()
    gating: bool = False
    """The base published it: a breaking change fails the plan."""
    consumers: tuple[Consumer, ...] = ()

    @property
    def table(self) -> Table:
        table = self.after or self.before
        assert table is not None
        return table

    @property
    def key(self) -> dg.AssetKey:
        return self.table.key

    @property
    def refused(self) -> bool:
        return bool(self.breaking) and self.gating

    def to_json(self) -> dict[str, Any]:
        schema = None
        if self.schema is not None:
            schema = {
                "against": self.schema_against,
                "added": [c.describe() for c in self.schema.added],
                "dropped": [c.describe() for c in self.schema.dropped],
                "retyped": [c.describe() for c in self.schema.retyped],
                "additive": self.schema.additive,
            }
        return {
            "table": self.table.ref,
            "version": self.table.version,
            "change": self.change.value,
            "fields": list(self.fields),
            "code": self.code,
            "schema": schema,
            "breaking": list(self.breaking),
            "published": self.gating,
            "consumers": [{"table": c.table, "owner": c.owner, "contacts": list(c.contacts)} for c in self.consumers],
        }


@dataclass(frozen=True)
class ProductDiff:
    domain: str
    name: str
    change: Change
    fields: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.domain}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"product": self.ref, "change": self.change.value, "fields": list(self.fields)}


def _columns(columns: dict[str, str] | None, table: Table) -> dict[str, str] | None:
    """Columns as compared: type names lower-cased, the partition column (Mesh's own) left out."""
    if columns is None:
        return None
    return {n: t.lower() for n, t in columns.items() if n.lower() != table.partition_column.lower()}


def _contract(table: Table | None) -> dict[str, str] | None:
    if table is None or table.contract is None:
        return None
    return _columns({c.name: c.type for c in table.contract}, table)


def _schema(before: Table | None, after: Table, records: InstanceRecords) -> tuple[SchemaChange | None, str | None]:
    """How ``after``'s schema differs from the published table's (else ``before``'s contract): its declared
    contract, or without one the columns its query names (by name: their types are Spark's to find)."""
    published = _columns(records.of(after.key).columns, after)
    old, against = (published, "published table") if published is not None else (_contract(before), "contract")
    new = _contract(after)
    if new is None and after.columns is not None and old is not None:
        named = _columns(dict.fromkeys(after.columns, UNKNOWN), after) or {}
        typed = {k.lower(): t for k, t in old.items()}
        new = {name: typed.get(name.lower(), UNKNOWN) for name in named}
    if new is None or old is None:
        return None, None
    change = compare_columns(old, new)
    return (change, against) if change.changed else (None, None)


def _value(value: object) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _inputs(table: Table) -> set[tuple]:
    return {(d.name, d.domain, d.table, d.window, d.deadline, d.version) for d in table.declared}


def _fields(before: Table, after: Table) -> list[str]:
    """The spec fields that differ (``published: true -> false`` for a plain value), inputs and status."""
    assert before.spec is not None and after.spec is not None
    old = before.spec.model_dump(mode="json", by_alias=True, exclude={"line", *LIFECYCLE})
    new = after.spec.model_dump(mode="json", by_alias=True, exclude={"line", *LIFECYCLE})
    out = []
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name), new.get(name)
        if a != b:
            plain = not isinstance(a, list | dict) and not isinstance(b, list | dict)
            out.append(f"{name}: {_value(a)} -> {_value(b)}" if plain and name != "description" else name)
    if _inputs(before) != _inputs(after):
        out.append("inputs")
    if before.lifecycle() != after.lifecycle():
        out.append(f"status: {before.lifecycle()} -> {after.lifecycle()}")
    return out


def _breaking(before: Table, after: Table, schema: SchemaChange | None) -> list[str]:
    out = []
    if before.published and not after.published:
        out.append("no longer published")
    if before.grain is not after.grain:
        out.append(f"partitioning {before.grain.name.lower()} -> {after.grain.name.lower()}")
    if before.partition_column != after.partition_column:
        out.append(f"partition column {before.partition_column} -> {after.partition_column}")
    old, new = before.table_kind, after.table_kind
    if old.name != new.name:  # what a run does to the rows readers hold: another kind is another table
        out.append(f"kind {old.name} -> {new.name}")
    elif old.unique_key != new.unique_key:
        out.append(f"unique_key {', '.join(old.unique_key) or 'none'} -> {', '.join(new.unique_key) or 'none'}")
    elif old.extra_columns != new.extra_columns:
        out.append(f"{new.name} columns {', '.join(old.extra_columns)} -> {', '.join(new.extra_columns)}")
    if schema is not None and not schema.additive:
        out += [c.describe() for c in (*schema.dropped, *schema.retyped)]
    return out


def _consumers(key: tuple[str, str], *sides: Side) -> tuple[Consumer, ...]:
    refs = sorted({ref for side in sides for ref in side.graph.consumers(*key)})
    found = []
    for ref in refs:
        domain, name = ref.split(".", 1)
        table = next(t for side in sides if (t := side.graph.get(domain, name)) is not None)
        found.append(Consumer.of(table))
    return tuple(found)


def _published(table: Table) -> bool:
    return table.published and table.status.readable and table.kind is not TableKind.DBT


def _declared(before: Table, after: Table) -> bool:
    """Whether anything a reader or a run sees differs (the product's revision aside)."""
    return (
        _fields(before, after) != []
        or before.code_version != after.code_version
        or before.source_version != after.source_version
    )


def compare_tables(base: Side, work: Side, records: InstanceRecords) -> list[TableDiff]:
    """Every table the working tree adds, removes or changes against ``base``."""
    diffs = []
    old, new = base.tables, work.tables
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key), new.get(key)
        consumers = _consumers(key, base, work)
        if before is None and after is not None:
            diffs.append(TableDiff(Change.ADDED, None, after))
        elif after is None and before is not None:
            gone = ["removed while published: retire it first (status: retired), once its readers moved"]
            diffs.append(
                TableDiff(
                    Change.REMOVED,
                    before,
                    None,
                    breaking=tuple(gone if _published(before) else ()),
                    gating=_published(before),
                    consumers=consumers,
                )
            )
        elif before is not None and after is not None and _declared(before, after):
            schema, against = _schema(before, after, records)
            code = after.language if before.source_version != after.source_version else None
            diffs.append(
                TableDiff(
                    Change.CHANGED,
                    before,
                    after,
                    tuple(_fields(before, after)),
                    code,
                    None if before.code_version != after.code_version else (),
                    schema,
                    against,
                    tuple(_breaking(before, after, schema)),
                    _published(before),
                    consumers,
                )
            )
    return diffs


def compare_products(base: Side, work: Side) -> list[ProductDiff]:
    """Every product the working tree adds, removes or changes (which of its own fields) against ``base``."""
    diffs = []
    for key in sorted(base.products.keys() | work.products.keys()):
        before, after = base.products.get(key), work.products.get(key)
        if before is None:
            diffs.append(ProductDiff(*key, Change.ADDED))
        elif after is None:
            diffs.append(ProductDiff(*key, Change.REMOVED))
        elif before.revision != after.revision:
            fields = before.fields.keys() | after.fields.keys()
            changed = [
                f"{name}: {_value(before.fields.get(name))} -> {_value(after.fields.get(name))}"
                if not isinstance(after.fields.get(name), list | dict) and name != "description"
                else name
                for name in sorted(fields)
                if before.fields.get(name) != after.fields.get(name)
            ]
            diffs.append(ProductDiff(*key, Change.CHANGED, tuple(changed or ["tables"])))
    return diffs


def compare_with_instance(work: Side, records: InstanceRecords) -> tuple[list[ProductDiff], list[TableDiff]]:
    """The working tree against what the instance last published: each product output whose published partitions
    were computed by another code version (those partitions are stale) or another revision of its product, and
    each never published. A table removed from the specs is seen only against a git base."""
    tables, revised = [], {}
    for key, table in sorted(work.tables.items()):
        if table.kind is not TableKind.PRODUCT:
            continue
        published = records.of(table.key).partitions
        if not published:
            tables.append(TableDiff(Change.ADDED, None, table, ("never published on this instance",)))
            continue
        stale = tuple(sorted((p for p, r in published.items() if r.code_version != table.code_version), key=str))
        revisions = sorted({r.revision for r in published.values() if r.revision and r.revision != table.revision})
        if revisions:
            revised[(table.domain, table.product)] = f"revision {', '.join(revisions)} -> {table.revision}"
        if stale:
            schema, against = _schema(None, table, records)
            tables.append(
                TableDiff(
                    Change.CHANGED,
                    None,
                    table,
                    (
                        f"code version -> {table.code_version} ({len(stale)} published partition(s) computed by "
                        "another)",
                    ),
                    stale=stale,
                    schema=schema,
                    schema_against=against,
                    breaking=tuple(_breaking(table, table, schema)),
                    gating=_published(table),
                    consumers=_consumers(key, work),
                )
            )
    products = [ProductDiff(*key, Change.CHANGED, (why,)) for key, why in sorted(revised.items())]
    return products, tables


def compare_models_with_instance(work: Side, records: InstanceRecords) -> list[TableDiff]:
    """The working tree's dbt models whose published partitions the instance records as computed by another code
    version (their SQL changed since, as dbt's ``state:modified`` finds against production's manifest), whatever
    the plan's base: the base's dbt project is not parsed. A model the instance never published is left out."""
    diffs = []
    for key, table in sorted(work.graph.tables.items()):
        if table.kind is not TableKind.DBT or table.code_version is None:
            continue
        published = records.of(table.key).partitions
        stale = tuple(sorted((p for p, r in published.items() if r.code_version != table.code_version), key=str))
        if stale:
            version = table.code_version[:12]
            why = f"dbt model's code version -> {version} ({len(stale)} published partition(s) computed by another)"
            diffs.append(TableDiff(Change.CHANGED, None, table, (why,), "sql", stale, consumers=_consumers(key, work)))
    return diffs
