"""Stage, audit and publish a node's computed rows: one Delta commit of the partitions that passed.

Staged rows are invisible to readers; the checks judge them per partition; rows outside the run's partitions
refuse the whole write; the partitions whose blocking checks passed are committed together, and the others
keep their previous version.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from pyspark.sql import DataFrame, SparkSession

from mesh_assets.checks.evaluate import audit
from mesh_assets.checks.guard import write_guard
from mesh_assets.checks.outcomes import CheckOutcome, failed_partitions
from mesh_assets.graph.resolve import Node
from mesh_assets.model.errors import Refused
from mesh_assets.model.kinds import Kind, Replay
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.run.compute import CHANGE_FEED
from mesh_assets.storage.delta import version_or_none
from mesh_assets.storage.schema import SchemaRule
from mesh_assets.storage.strategies import Target, strategy_for
from mesh_assets.storage.tables import TableRegistry
from mesh_assets.storage.writer import WriteFailed, WriteResult, stage


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
    feeds: Mapping[str, int] | None = None,
    keep: Callable[[], bool] = lambda: True,
) -> Published:
    """Stage ``rows``, audit them per partition, and commit the partitions that passed (and were computed) the
    way the table's kind commits (:mod:`mesh_assets.storage.strategies`).
    ``keep``: whether to hold the rows in executor storage between audit and write; without, both compute them
    (only for rows that compute the same each time: :mod:`mesh_assets.run.staging`), asked only when the rows
    are staged (optimizing the plan to tell lists every input's files). A run of every partition whose checks
    the write can judge itself writes first (:func:`guarded_write`), and is audited only when that write stops.
    ``feeds``: the upstream versions read by window ``changes``, recorded in the commit for the next run."""
    table, kind = node.table, node.table.table_kind
    target = Target(
        registry.location(table.domain, table.name),
        table.ref,
        registry.s3,
        partition_column=table.partition_column if part else None,
        partitions=part,
        region_column=table.region_column if part is not None and part.region is not None else None,
        commit_info={"dagster_run_id": run_id, "asset": table.ref}
        | ({CHANGE_FEED: json.dumps(dict(feeds), sort_keys=True)} if feeds else {}),
        schema=schema,
        properties={"delta.enableChangeDataFeed": "true"} if node.output.change_feed else {},
    )
    if not blocked and not schema.rebuild and kind.replaces:
        guarded = guarded_write(spark, registry, node, rows, target)
        if guarded is not None:
            return guarded
    staged = stage(rows, keep())
    try:
        audited = audit(spark, table, staged, part, target.location)
        if part is not None and (within := kind.rows_within(part)) is not None:
            refuse_rows_outside(table.ref, table.partition_column, within, audited.counts)
        outcomes = [o for o in audited.outcomes if o.partition not in blocked]
        failed = failed_partitions(outcomes)
        chosen = publishable(kind, part, {*blocked, *failed})
        if kind.keyed and part is not None and set(failed) - set(part.keys()):
            chosen = []  # a refused partition of the rows' own, outside the run's: none of its rows may apply
        if (part is None and None in failed) or chosen == []:
            return Published(None, outcomes, failed)
        published = replace(target, publish=chosen if failed or blocked else None, counts=audited.counts)
        result = strategy_for(kind).commit(spark, staged, published)
    finally:
        staged.unpersist()
    registry.register(spark, table.domain, table.name)
    return Published(result, outcomes, failed)


def publishable(kind: Kind, part: PartitionRange | None, refused: set[str | None]) -> list[datetime] | None:
    """The partitions of ``part`` a commit publishes: those not refused, or, for a kind that applies partitions
    in order, those before the first refused one (a later one applied without it could not be put right by
    recomputing it alone). None when unpartitioned."""
    if part is None:
        return None
    if kind.replay is Replay.ANY:
        return [v for v in part.values() if part.grain.key(v) not in refused]
    return list(itertools.takewhile(lambda v: part.grain.key(v) not in refused, part.values()))


def guarded_write(
    spark: SparkSession, registry: TableRegistry, node: Node, rows: DataFrame, target: Target
) -> Published | None:
    """Write ``rows`` through the guard of the table's checks (:mod:`mesh_assets.checks.guard`): one read of the
    rows, and a commit only when each of them passed. None when the table does not exist yet or its checks need
    the audit first, or when the guard stopped the write (a row failed, or fell outside the run, or could not be
    computed): the caller audits then. A write that failed for its storage raises as any write does."""
    table, part = node.table, target.partitions
    if version_or_none(target.location, registry.s3) is None:
        return None  # a table's first write is audited first: a stopped one would leave files where none were
    case_sensitive = spark.conf.get("spark.sql.caseSensitive", "false") == "true"
    guard = write_guard(table, rows, part, case_sensitive, table.checks)
    if guard is None:
        return None
    try:
        result = strategy_for(table.table_kind).commit(
            spark, rows.where(guard.condition), replace(target, rows_from_log=True)
        )
    except WriteFailed as failed:
        if failed.about_storage:
            raise
        return None
    registry.register(spark, table.domain, table.name)
    return Published(result, guard.outcomes(part), {})
