"""Checks on their own: a product's checks re-run on partitions already published, nothing recomputed.

After a rule changes, or to confirm that a table was fixed in place, an operator runs the domain's checks job
(``<domain>__checks``) with the table and the partitions in its config (``table``, ``start``, ``end``: one
key, or a range such as ``2021-06-01`` .. ``2021-06-07``), as the invalidation job takes them. A check-only run
of the output itself (the UI's *Execute checks*) works too, the partitions named by the run's tag
``mesh/check_partitions`` (``2021-06-01..2021-06-07``). Each check judges the published rows of each published
partition and its result points at the partition's current materialization, so it gates consumers (and shows in
the UI) like the results of the run that published it. ``valid`` is not re-run: only a new publication or an
invalidation changes it.
"""

from __future__ import annotations

from dataclasses import replace

import dagster as dg
from pyspark.sql import functions as F

from mesh_assets.checks.evaluate import evaluate
from mesh_assets.checks.results import evaluation, target_of
from mesh_assets.graph.resolve import Node
from mesh_assets.model.checks import VALID
from mesh_assets.model.partitions import PartitionRange, ranges_of_regions
from mesh_assets.storage.resource import MeshResource

PARTITIONS_TAG = "mesh/check_partitions"


def tagged(context: dg.AssetExecutionContext, node: Node) -> tuple[str | None, str | None]:
    """The first and last partition keys the run's tag names; (None, None) for an unpartitioned table."""
    if not node.table.grain.partitioned:
        return None, None
    named = context.run.tags.get(PARTITIONS_TAG)
    if not named:
        raise dg.Failure(description=f"{node.table.ref}: tag the run {PARTITIONS_TAG}=<first>..<last> (or one key)")
    first, _, last = named.partition("..")
    return first.strip(), (last or first).strip()


def recheck(
    context: dg.OpExecutionContext,
    mesh: MeshResource,
    node: Node,
    first: str | None,
    last: str | None,
    selected: set[str] | None = None,
) -> None:
    """Evaluate the table's checks (those ``selected``, default all) on its published partitions from ``first``
    to ``last`` (default: ``first``), logging one result per check and partition."""
    table, key = node.table, node.table.key
    names = (selected or {c.check_name for c in table.checks}) - {VALID}
    checks = [c for c in table.checks if c.check_name in names]
    parts: list[PartitionRange | None] = [None]
    if table.grain.partitioned:
        if first is None:
            raise dg.Failure(description=f"{table.ref}: name the partitions to check (start, and end for a range)")
        try:
            parts = list(_ranges(node, first, last or first))
        except (ValueError, dg.DagsterError) as exc:
            raise dg.Failure(description=f"{table.ref}: {exc}") from None
    have = context.instance.get_materialized_partitions(key) if table.grain.partitioned else set()
    found = [(part, _published(context, node, part, have)) for part in parts]
    count = sum(len(published) for _, published in found)
    if not count:
        raise dg.Failure(description=f"{table.ref}: no published partition to check in the run's range")
    location = mesh.registry.location(table.domain, table.name)
    for part, published in found:
        if not published:
            continue
        rows = mesh.spark.read.format("delta").load(location)
        if part is not None:
            values = [part.literal(part.grain.parse(k)) for k in published if k is not None]
            rows = rows.where(F.col(table.partition_column).isin(values))
            if part.region is not None:
                rows = rows.where(F.col(table.region_column) == F.lit(part.region))
        for outcome in evaluate(mesh.spark, table, rows, part, location, checks):
            if outcome.partition in published:
                if part is not None and part.region is not None:
                    outcome = replace(outcome, partition=part.dagster_key(outcome.partition))
                context.log_event(evaluation(key, outcome, target_of(context.instance, key, outcome.partition)))
    context.log.info(f"{table.ref}: {len(checks)} check(s) re-run on {count} published partition(s)")


def _ranges(node: Node, first: str, last: str) -> list[PartitionRange]:
    """The partitions ``first``..``last`` name: of a table partitioned by date and region (``2021-06-01|eu``),
    each region's dates in the rectangle they span, as Dagster reads such a range."""
    table = node.table
    if not table.regions:
        return [PartitionRange.from_keys(table.grain, first, last)]
    assert table.partitions_def is not None
    keys = table.partitions_def.get_partition_keys_in_range(dg.PartitionKeyRange(first, last))
    return ranges_of_regions(table.grain, table.regions, table.zones, list(keys))


def _published(context: dg.OpExecutionContext, node: Node, part: PartitionRange | None, have: set[str]) -> list:
    """The keys of ``part`` (its dates, for a region's) that are published; ``[None]`` for a published
    unpartitioned table."""
    if part is None:
        return [None] if context.instance.get_latest_materialization_event(node.table.key) else []
    return [k for k in part.keys() if part.dagster_key(k) in have]
