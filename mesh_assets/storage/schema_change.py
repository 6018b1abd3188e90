"""How one table schema differs from another, column by column, and whether the change is additive: the part of
schema evolution that needs no Spark (a write compares Spark schemas, ``mesh plan`` declared and recorded ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ColumnChange:
    """One column that differs: ``before`` is its type in the published table, ``after`` in the staged rows."""

    name: str
    before: str | None
    after: str | None

    def describe(self) -> str:
        if self.before is None:
            return f"added column {self.name} ({self.after})"
        if self.after is None:
            return f"dropped column {self.name} ({self.before})"
        return f"retyped column {self.name} ({self.before} -> {self.after})"


@dataclass(frozen=True)
class SchemaChange:
    """The columns a write adds, drops and retypes (a rename is a drop and an add)."""

    added: tuple[ColumnChange, ...] = ()
    dropped: tuple[ColumnChange, ...] = ()
    retyped: tuple[ColumnChange, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.dropped or self.retyped)

    @property
    def additive(self) -> bool:
        """Only new columns: rows already published read NULL for them, nothing they hold is lost."""
        return not (self.dropped or self.retyped)

    def describe(self) -> str:
        return ", ".join(c.describe() for c in (*self.dropped, *self.retyped, *self.added))


def compare_columns(published: Mapping[str, str], staged: Mapping[str, str]) -> SchemaChange:
    """How ``staged`` differs from ``published`` (column name -> type name), column by column.

    Names match case-insensitively, as Spark and Delta resolve them; nullability is not compared (Delta stores
    written columns as nullable); types compare by their name as given.
    """
    before = {name.lower(): (name, kind) for name, kind in published.items()}
    after = {name.lower(): (name, kind) for name, kind in staged.items()}
    return SchemaChange(
        added=tuple(ColumnChange(name, None, kind) for k, (name, kind) in after.items() if k not in before),
        dropped=tuple(ColumnChange(name, kind, None) for k, (name, kind) in before.items() if k not in after),
        retyped=tuple(
            ColumnChange(name, kind, after[k][1])
            for k, (name, kind) in before.items()
            if k in after and kind != after[k][1]
        ),
    )
