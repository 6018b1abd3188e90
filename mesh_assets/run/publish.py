"""Stage, audit and publish a node's computed rows: one Delta commit of the partitions that passed.

Staged rows are invisible to readers; the checks judge them per partition; rows outside the run's partitions
refuse the whole write; the partitions whose blocking checks passed are committed together, and the others
keep their previous version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from mesh_assets.checks.evaluate import audit
from mesh_assets.checks.guard import write_guard
from mesh_assets.checks.outcomes import CheckOutcome, failed_partitions
from mesh_assets.graph.resolve import Node
from mesh_assets.model.errors import Refused
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.delta import version_or_none
from mesh_assets.storage.schema import SchemaRule
from mesh_assets.storage.tables import TableRegistry
from mesh_assets.storage.writer import WriteFailed, WriteResult, commit, stage


class RowsOutsidePartitions(Refused):
    """The computation returned rows of partitions the run does not write: nothing is committed."""


def refuse_rows_outside(name: str, column: str, part: PartitionRange, counts: dict[str | None, int]) -> None:
    """Refuse the run when staged rows fall outside its partitions (or have no partition value).

    Delta enforces ``replaceWhere`` only on a table that exists: the write that creates a table would commit
    rows of other days into those days. Checking the staged counts catches every write the same way.
    """
    own = set(part.keys())
    outside = {k: n for k, n in counts.items() if n and k not in own}
    if not outside:
        return
    listed = ", ".join(
        f"{k if k is not None else f'no {column}'} ({n} rows)"
        for k, n in sorted(outside.items(), key=lambda item: item[0] or "")
    )
    raise RowsOutsidePartitions(
        description=f"{name}: rows outside the run's partitions {part.describe()} were refused, nothing was "
        f"written: {listed}",
        metadata={"partitions_outside_the_run": sorted(k or "-" for k in outside)},
    )


@dataclass(frozen=True)
class Published:
    """The audit's verdicts and the commit (None when nothing passed)."""

    result: WriteResult | None
    outcomes: list[CheckOutcome]
    failed: dict[str | None, list[CheckOutcome]]


def publish(
    spark: SparkSession,
    registry: TableRegistry,
    node: Node,
    rows: DataFrame,
    part: PartitionRange | None,
    blocked: dict[str | None, list[str]],
    *,
    run_id: str,
    schema: SchemaRule,
    keep: Callable[[], bool] = lambda: True,
) -> Published:
    """Stage ``rows``, audit them per partition, and commit the partitions that passed (and were computed).
    ``keep``: whether to hold the rows in executor storage between audit and write; without, both compute them
    (only for rows that compute the same each time: :mod:`mesh_assets.run.staging`), asked only when the rows
    are staged (optimizing the plan to tell lists every input's files). A run of every partition whose checks
    the write can judge itself writes first (:func:`guarded_write`), and is audited only when that write stops."""
    table = node.table
    location = registry.location(table.domain, table.name)
    if not blocked and not schema.rebuild:
        guarded = guarded_write(spark, registry, node, rows, part, run_id=run_id, schema=schema)
        if guarded is not None:
            return guarded
    staged = stage(rows, keep())
    try:
        audited = audit(spark, table, staged, part, location)
        if part is not None:
            refuse_rows_outside(table.ref, table.partition_column, part, audited.counts)
        outcomes = [o for o in audited.outcomes if o.partition not in blocked]
        failed = failed_partitions(outcomes)
        chosen = [v for v in part.values() if part.grain.key(v) not in {*blocked, *failed}] if part else None
        if (part is None and None in failed) or chosen == []:
            return Published(None, outcomes, failed)
        result = commit(
            spark,
            staged,
            location,
            partition_column=table.partition_column if part else None,
            partitions=part,
            publish=chosen if failed or blocked else None,
            commit_info={"dagster_run_id": run_id, "asset": table.ref},
            name=table.ref,
            counts=audited.counts,
            schema=schema,
            s3=registry.s3,
        )
    finally:
        staged.unpersist()
    registry.register(spark, table.domain, table.name)
    return Published(result, outcomes, failed)


def guarded_write(
    spark: SparkSession,
    registry: TableRegistry,
    node: Node,
    rows: DataFrame,
    part: PartitionRange | None,
    *,
    run_id: str,
    schema: SchemaRule,
) -> Published | None:
    """Write ``rows`` through the guard of the table's checks (:mod:`mesh_assets.checks.guard`): one read of the
    rows, and a commit only when each of them passed. None when the table does not exist yet or its checks need
    the audit first, or when the guard stopped the write (a row failed, or fell outside the run, or could not be
    computed): the caller audits then. A write that failed for its storage raises as any write does."""
    table = node.table
    location = registry.location(table.domain, table.name)
    if version_or_none(location, registry.s3) is None:
        return None  # a table's first write is audited first: a stopped one would leave files where none were
    case_sensitive = spark.conf.get("spark.sql.caseSensitive", "false") == "true"
    guard = write_guard(table, rows, part, case_sensitive, table.checks)
    if guard is None:
        return None
    try:
        result = commit(
            spark,
            rows.where(guard.condition),
            location,
            partition_column=table.partition_column if part else None,
            partitions=part,
            commit_info={"dagster_run_id": run_id, "asset": table.ref},
            name=table.ref,
            rows_from_log=True,
            schema=schema,
            s3=registry.s3,
        )
    except WriteFailed as failed:
        if failed.about_storage:
            raise
        return None
    registry.register(spark, table.domain, table.name)
    return Published(result, guard.outcomes(part), {})
