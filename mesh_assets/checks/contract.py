"""A declared column contract compared with the staged rows: drift reported column by column."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from mesh_assets.model.product import Column


def schema_drift(contract: Sequence[Column] | None, partition_column: str, df: DataFrame) -> list[str]:
    """Column-by-column differences between a declared contract and ``df``'s schema (none without one)."""
    if contract is None:
        return []
    actual = {f.name: f for f in df.schema.fields}
    drift = []
    for column in contract:
        found = actual.get(column.name)
        if found is None:
            drift.append(f"column {column.name} is missing")
        elif found.dataType.simpleString() != column.type.lower():
            drift.append(f"column {column.name} is {found.dataType.simpleString()}, contract says {column.type}")
        elif not column.nullable and found.nullable:
            drift.append(f"column {column.name} is nullable, contract says not null")
    declared = {c.name for c in contract} | {partition_column}
    drift += [f"column {name} is not in the contract" for name in actual if name not in declared]
    return drift
