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

import dagster as dg
from pyspark.sql import functions as F

from mesh_assets.checks.evaluate import evaluate
from mesh_assets.checks.results import evaluation, target_of
from mesh_assets.graph.resolve import Node
from mesh_assets.model.checks import VALID
from mesh_assets.model.partitions import PartitionRange
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
    part = None
    if table.grain.partitioned:
        if first is None:
            raise dg.Failure(description=f"{table.ref}: name the partitions to check (start, and end for a range)")
        try:
            part = PartitionRange.from_keys(table.grain, first, last or first)
        except ValueError as exc:
            raise dg.Failure(description=f"{table.ref}: {exc}") from None
    if part is None:
        published: list[str | None] = [None] if context.instance.get_latest_materialization_event(key) else []
    else:
        have = context.instance.get_materialized_partitions(key)
        published = [k for k in part.keys() if k in have]
    if not published:
        raise dg.Failure(description=f"{table.ref}: no published partition to check in the run's range")
    location = mesh.registry.location(table.domain, table.name)
    rows = mesh.spark.read.format("delta").load(location)
    if part is not None:
        values = [part.literal(part.grain.parse(k)) for k in published if k is not None]
        rows = rows.where(F.col(table.partition_column).isin(values))
    for outcome in evaluate(mesh.spark, table, rows, part, location, checks):
        if outcome.partition in published:
            context.log_event(evaluation(key, outcome, target_of(context.instance, key, outcome.partition)))
    context.log.info(f"{table.ref}: {len(checks)} check(s) re-run on {len(published)} published partition(s)")
