"""Checks on their own: a product's checks re-run on partitions already published, nothing recomputed.

After a rule changes, or to confirm that a table was fixed in place, an operator runs the output's checks job
(``<domain>__<table>__checks``) with the tag ``mesh/check_partitions`` naming a partition or a range
(``2021-06-01..2021-06-07``): a job of checks alone has no partitions of its own. Each check judges the
published rows of each published partition and its result points at the partition's current materialization,
so it gates consumers (and shows in the UI) like the results of the run that published it. ``valid`` is not
re-run: only a new publication or an invalidation changes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import dagster as dg
from pyspark.sql import functions as F

from mesh_assets.checks.evaluate import evaluate
from mesh_assets.checks.results import evaluation, target_of
from mesh_assets.graph.resolve import Node
from mesh_assets.model.checks import VALID
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.resource import MeshResource

PARTITIONS_TAG = "mesh/check_partitions"


def _range(context: dg.AssetExecutionContext, node: Node) -> PartitionRange | None:
    """The partitions the run's tag names; None for an unpartitioned table."""
    grain = node.table.grain
    if not grain.partitioned:
        return None
    named = context.run.tags.get(PARTITIONS_TAG)
    if not named:
        raise dg.Failure(description=f"{node.table.ref}: tag the run {PARTITIONS_TAG}=<first>..<last> (or one key)")
    first, _, last = named.partition("..")
    return PartitionRange.from_keys(grain, first.strip(), (last or first).strip())


def recheck(context: dg.AssetExecutionContext, mesh: MeshResource, node: Node) -> Iterator[Any]:
    """Evaluate the selected checks on the published rows of the run's published partitions."""
    table, key = node.table, node.table.key
    selected = {k.name for k in context.selected_asset_check_keys} - {VALID}
    checks = [c for c in table.checks if c.check_name in selected]
    part = _range(context, node)
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
    yield from ()
