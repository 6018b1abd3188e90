"""Schema evolution: what a write would change in the published table's schema, and what the policy allows.

Delta on its own publishes a dropped column as NULLs and fails every later write after an added or retyped
one with a metadata mismatch. Mesh compares the staged schema with the published one before the commit:
an added column is merged in (``mergeSchema``) under the default ``additive`` policy; a dropped, renamed
(dropped + added) or retyped column, or any change under ``strict``, is refused before anything is written,
naming the columns and the tables that read this one. A rebuild (``mesh rebuild``) is the declared path for
those: it rewrites the whole table with the new schema in one commit (``overwriteSchema``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from mesh_assets.model.grain import Grain, midnight
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.model.product import SchemaPolicy
from mesh_assets.storage.schema_change import SchemaChange, compare_columns


def compare(published: StructType, staged: StructType) -> SchemaChange:
    """How ``staged`` differs from ``published``, column by column (see :func:`compare_columns`); types compare by
    their SQL name, nested fields included."""
    return compare_columns(
        {f.name: f.dataType.simpleString() for f in published.fields},
        {f.name: f.dataType.simpleString() for f in staged.fields},
    )


class SchemaChangeRefused(ValueError):
    """A write whose schema change its policy does not allow; nothing was written."""


@dataclass(frozen=True)
class SchemaRule:
    """What a write may do to its table's schema: the output's policy, whether this run is a rebuild, and the
    tables that read it (named when a change is refused)."""

    policy: SchemaPolicy = "additive"
    rebuild: bool = False
    consumers: tuple[str, ...] = ()


ADDITIVE = SchemaRule()
"""The default: new columns are merged in, nothing else changes without a rebuild."""


def refusal(name: str, change: SchemaChange, rule: SchemaRule) -> SchemaChangeRefused:
    strict = " (schema: strict)" if change.additive else ""
    readers = f"read by {', '.join(rule.consumers)}" if rule.consumers else "no product reads it"
    return SchemaChangeRefused(
        f"{name}: schema change refused: {change.describe()}{strict}; {readers}. Nothing was written. "
        f"Rewrite the whole table with the new schema: `mesh rebuild {name.replace('.', '/', 1)}` "
        "(README, Schema changes)"
    )


def write_options(name: str, change: SchemaChange, rule: SchemaRule) -> dict[str, str]:
    """The Delta options that apply ``change`` under ``rule``; raises :class:`SchemaChangeRefused` otherwise."""
    if rule.rebuild:
        return {"overwriteSchema": "true"}
    if not change.changed:
        return {}
    if change.additive and rule.policy == "additive":
        return {"mergeSchema": "true"}
    raise refusal(name, change, rule)


def bound_key(value: date | datetime, grain: Grain) -> str:
    """A partition column's value as its partition key. PySpark hands a timestamp to Python as the process's
    local wall-clock time, so it is turned back into UTC first."""
    if isinstance(value, datetime):
        return grain.key(value.astimezone(UTC))
    return grain.key(midnight(value))


def check_rebuild_covers(
    spark: SparkSession, location: str, name: str, column: str, partitions: PartitionRange
) -> None:
    """Refuse a rebuild whose range leaves out partitions the table holds: its commit would drop them.

    The table's bounds are a plain min and max of its partition column, which Delta answers from its log."""
    lo, hi = spark.read.format("delta").load(location).agg(F.min(column), F.max(column)).first()
    if lo is None:
        return
    held = bound_key(lo, partitions.grain), bound_key(hi, partitions.grain)
    first, last = partitions.grain.key(partitions.start), partitions.grain.key(partitions.end)
    if first <= held[0] and held[1] <= last:
        return
    raise SchemaChangeRefused(
        f"{name}: a rebuild must cover every partition of the table: it holds {held[0]}..{held[1]}, the run "
        f"covers {first}..{last}. Nothing was written; launch it with `mesh rebuild {name.replace('.', '/', 1)}`"
    )


def schema_options(
    spark: SparkSession,
    staged: StructType,
    location: str,
    name: str,
    rule: SchemaRule,
    *,
    partition_column: str | None,
    partitions: PartitionRange | None,
) -> dict[str, str]:
    """The schema options of a write to the existing table at ``location``, checked before anything is written."""
    if rule.rebuild and partitions is not None and partition_column is not None:
        check_rebuild_covers(spark, location, name, partition_column, partitions)
    published = spark.read.format("delta").load(location).schema
    return write_options(name, compare(published, staged), rule)


REBUILD_TAG = "mesh/rebuild"


def rebuild_requested(tags: Mapping[str, str]) -> bool:
    """Whether a run's tags ask for a rebuild; a value other than ``true`` or ``false`` is refused."""
    value = tags.get(REBUILD_TAG, "false").strip().lower()
    if value not in {"true", "false"}:
        raise ValueError(f"tag {REBUILD_TAG} must be 'true' or 'false', not {tags[REBUILD_TAG]!r}")
    return value == "true"
