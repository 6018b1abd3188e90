"""Which columns know a row of a table, for a diff: its kind's ``unique_key``, else its ``unique`` check's keys,
else none (the whole row is compared)."""

from __future__ import annotations

from mesh_assets.graph.resolve import Table
from mesh_assets.model.checks import Unique
from mesh_assets.model.lifecycle import Classification

WITHHELD_FROM = {Classification.L2, Classification.L3}
"""Classifications whose rows a diff shows no value of, not even a key (counts and column names only), as a
classified table's alerts and check samples quote none."""


def withheld_reason(table: Table) -> str | None:
    """Why a diff of ``table`` shows no example key; None when it may."""
    if table.classification in WITHHELD_FROM:
        return f"{table.ref} is classified {table.classification}: example keys withheld"
    return None


def table_key(table: Table) -> tuple[str, ...]:
    """The key a diff matches rows on. A ``unique`` check holds within a partition, so its keys are read with
    the partition column; an empty key means the whole row."""
    kind_key = tuple(table.table_kind.unique_key)
    if kind_key:
        return kind_key
    unique = next((c for c in table.checks if isinstance(c, Unique)), None)
    if unique is None:
        return ()
    keys = tuple(unique.keys)
    partition = table.partition_column
    return keys if partition in keys or not table.grain.partitioned else (partition, *keys)
