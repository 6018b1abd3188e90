"""What one Mesh asset does when it runs, step by step:

gate (readiness) -> compute (read windows, transform) -> stage, audit, publish (one commit) -> record (events).

Each step is a function with its collaborators passed in; lineage hooks in around the whole run at one place
(:func:`execute`), not inside the steps. Failure alerts come from each domain's run-failure sensor. The gate and
the record run in the step (they need the Dagster instance); the body between them (:mod:`mesh_assets.run.body`)
runs on the step's SparkSession, or in a Spark application launched through Dagster Pipes when the product's
engine mode is ``submit`` (:mod:`mesh_assets.run.submit`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import dagster as dg

from mesh_assets.engine.identity import identify_run, use_identity
from mesh_assets.graph.resolve import Node, Table
from mesh_assets.model.errors import Refused
from mesh_assets.model.kinds import Replay
from mesh_assets.model.partitions import PartitionRange, ranges_of_regions
from mesh_assets.model.regions import NO_REGIONAL_REBUILD
from mesh_assets.run.body import RunPlan, run_body
from mesh_assets.run.failures import step_failures
from mesh_assets.run.hooks import run_hooks
from mesh_assets.run.layers import records_for
from mesh_assets.run.outcome import RunOutcome, in_dagster_keys, merged
from mesh_assets.run.readiness import Partial, landed_keys, table_watermarks, unready_partitions
from mesh_assets.run.record import record
from mesh_assets.run.replay import refuse_out_of_order
from mesh_assets.settings import EngineMode, MeshSettings
from mesh_assets.storage.resource import MeshResource
from mesh_assets.storage.schema import SchemaRule, rebuild_requested

__all__ = ["RunOutcome", "execute", "run_output"]


def partition_range(context: dg.AssetExecutionContext, table: Table) -> PartitionRange | None:
    """The partitions this run writes: one key, or a range for a single-run backfill."""
    if not table.grain.partitioned:
        return None
    keys = context.partition_key_range
    return PartitionRange.from_keys(table.grain, keys.start, keys.end)


def region_ranges(context: dg.AssetExecutionContext, table: Table) -> list[PartitionRange]:
    """The partitions this run writes of a table partitioned by date and region: one range of dates per region,
    in the table's order of regions (see :func:`~mesh_assets.model.partitions.region_ranges`)."""
    return ranges_of_regions(table.grain, table.regions, table.zones, context.partition_keys)


def reads_own_past(node: Node) -> bool:
    """The product reads its own earlier partitions (a ``previous`` window on its own table)."""
    return any(read.table.key == node.table.key and read.input.window.skips_current for read in node.reads)


def engine_mode(node: Node, settings: MeshSettings) -> EngineMode:
    """Where ``node``'s body runs: its product's ``engine``, else the deployment's ``engine.mode``."""
    return node.product.engine or settings.engine.mode


def run_output(
    context: dg.AssetExecutionContext, mesh: MeshResource, node: Node, consumers: tuple[str, ...]
) -> RunOutcome:
    """Compute, stage, check and publish one output for the run's partition(s).

    A product that reads its own past, or whose kind applies each partition as a state (``history``), computes a
    range partition by partition, in order, each one published (one commit each) before the next; a kind that
    applies partitions in order stops at the first one not published. A past range the table's kind cannot
    recompute alone is refused first (:mod:`mesh_assets.run.replay`). A table partitioned by date and region
    runs each region's dates as such a range, its own commit replacing that region's dates alone."""
    if node.table.regions:
        if rebuild_requested(context.run.tags):
            raise Refused(NO_REGIONAL_REBUILD.format(ref=node.table.ref))
        parts = region_ranges(context, node.table)
        outcomes = [in_dagster_keys(_run_range(context, mesh, node, consumers, part)) for part in parts]
        return outcomes[0] if len(outcomes) == 1 else merged(parts[0], outcomes)
    return _run_range(context, mesh, node, consumers, partition_range(context, node.table))


def _run_range(
    context: dg.AssetExecutionContext,
    mesh: MeshResource,
    node: Node,
    consumers: tuple[str, ...],
    part: PartitionRange | None,
) -> RunOutcome:
    rebuild = rebuild_requested(context.run.tags)
    kind = node.table.table_kind
    if kind.replay is not Replay.ANY and part is not None:
        records = records_for(context.instance, mesh.environment)(node.table)
        applied = records.get_materialized_partitions(node.table.key)
        refuse_out_of_order(node.table, part, applied, rebuild)
    if part is None or len(part.values()) == 1 or not (reads_own_past(node) or kind.per_partition):
        return _run(context, mesh, node, consumers, part, rebuild=rebuild)
    done: list[str] = []
    outcomes = []
    for value in part.values():
        single = part.single(value)
        if outcomes and kind.replay is not Replay.ANY and outcomes[-1].result is None:
            why = f"not applied: {done[-1] if done else 'an earlier partition'} was the last applied, in order"
            outcomes.append(RunOutcome(None, single, [], {}, blocked={single.grain.key(value): [why]}))
            continue
        outcome = _run(context, mesh, node, consumers, single, done, rebuild=rebuild and not outcomes)
        done += list(outcome.result.partition_rows) if outcome.result else []
        outcomes.append(outcome)
    return merged(part, outcomes)


def _run(
    context: dg.AssetExecutionContext,
    mesh: MeshResource,
    node: Node,
    consumers: tuple[str, ...],
    part: PartitionRange | None,
    earlier: list[str] | None = None,
    *,
    rebuild: bool,
) -> RunOutcome:
    watermark = table_watermarks(mesh.registry.location, mesh.settings.s3)
    records = records_for(context.instance, mesh.environment)
    partial: Partial = {}
    blocked = unready_partitions(
        context.instance, node, part, earlier or (), landed_keys(mesh), watermark, records=records, partial=partial
    )
    runnable = [part.single(v) for v in part.values() if part.grain.key(v) not in blocked] if part else []
    if blocked and not runnable:
        return RunOutcome(None, part, [], {}, blocked=blocked)
    settings = mesh.settings
    plan = RunPlan(
        part,
        runnable,
        context.run.run_id,
        SchemaRule(node.output.schema_policy, rebuild, consumers),
        settings.lineage.undeclared_reads_for(node.domain),
        blocked,
        node.withheld,
    )
    if engine_mode(node, settings) is EngineMode.SUBMIT and settings.environment is None:  # an environment runs here
        from mesh_assets.run.submit import launch

        outcome = launch(context, mesh, node, plan)
    else:
        use_identity(mesh.spark, settings, node.domain)  # its writes with its domain's storage keys
        outcome = run_body(mesh.spark, mesh.registry, node, plan, context.log)
    return replace(outcome, incomplete=partial) if partial else outcome


def execute(
    context: dg.AssetExecutionContext, mesh: MeshResource, node: Node, consumers: tuple[str, ...]
) -> Iterator[Any]:
    """The asset's body: the run with its hooks (lineage), then its events; a classified output's errors
    reach them without row values; the run is tagged with the domain whose identity ran it."""
    identify_run(context, mesh.settings, node.domain)
    with run_hooks(context, mesh, node) as hooks, step_failures(node.table):
        outcome = run_output(context, mesh, node, consumers)
        hooks.finished(outcome)
        yield from record(context, node, outcome)
