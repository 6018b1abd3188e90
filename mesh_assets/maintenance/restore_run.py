"""The restore's run: check the target, restore in one commit, record the restored partitions' materializations
and their checks, then mark what was computed from the withdrawn versions suspect and tell its owners."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import dagster as dg

from mesh_assets.assets.catalog import CatalogMesh
from mesh_assets.backfill.invalidate import Marked, failed_checks, invalidation, notify
from mesh_assets.backfill.plan import BackfillError, parse_asset_key
from mesh_assets.checks.results import target_of
from mesh_assets.graph.resolve import MeshGraph, Table, TableKind
from mesh_assets.maintenance.restore import RestoreRefused, Target, materializations, restore, target, version_at
from mesh_assets.model.checks import VALID
from mesh_assets.run.recheck import recheck
from mesh_assets.storage.resource import MeshResource


@dataclass(frozen=True)
class Restored:
    """What a restore did: the table, the version restored, the new version, the partitions brought back and
    what it marked suspect."""

    ref: str
    to_version: int
    version: int
    partitions: tuple[str | None, ...]
    suspects: tuple[Marked, ...]
    problems: tuple[str, ...] = ()


def restorable(graph: MeshGraph, domain: str, name: str) -> Table:
    """The product output ``name`` (``<domain>/<table>`` or a table of ``domain``), or why it cannot be restored."""
    ref = name if "/" in name or "." in name else f"{domain}/{name}"
    mesh = CatalogMesh.of(graph)
    try:
        key = parse_asset_key(ref, mesh.graph)
    except BackfillError as exc:
        raise RestoreRefused(str(exc)) from None
    table = graph.get(*key.path)
    if table is None or key.path[0] != domain:
        raise RestoreRefused(f"{key.to_user_string()} is not a table of {domain}")
    if table.kind is TableKind.PRODUCT and not table.status.deployed:
        raise RestoreRefused(
            f"{key.to_user_string()} is retired: it has no asset to restore (see mesh maintain --retired)"
        )
    if table.kind is not TableKind.PRODUCT:
        raise RestoreRefused(
            f"{key.to_user_string()} is not a Mesh product's output: Mesh restores only the tables it publishes"
        )
    return table


def resolve_version(mesh: MeshResource, table: Table, to_version: int | None, to_timestamp: str | None) -> Target:
    """The restore's :class:`Target` from a version or a time, or why it cannot be done."""
    if (to_version is None) == (to_timestamp is None):
        raise RestoreRefused("give exactly one of --to-version and --to-timestamp")
    location = mesh.registry.location(table.domain, table.name)
    s3 = mesh.registry.s3
    version = to_version if to_version is not None else version_at(location, s3, str(to_timestamp))
    return target(table, location, s3, version)


def _published(instance: dg.DagsterInstance, key: dg.AssetKey) -> Iterator[tuple[int, str | None, int]]:
    """Every materialization of ``key`` that names its Delta version, newest first: (storage id, partition,
    version)."""
    cursor = None
    while True:
        found = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), 1000, cursor=cursor)
        for record in found.records:
            event = record.asset_materialization
            recorded = event.metadata.get("delta_version") if event else None
            if event is not None and recorded is not None:
                yield record.storage_id, event.partition, int(getattr(recorded, "value", recorded))
        if not found.has_more:
            return
        cursor = found.cursor


def withdrawn(instance: dg.DagsterInstance, table: Table, version: int) -> tuple[str | None, ...]:
    """The partitions whose latest materialization a commit after ``version`` published: what a restore of a
    keyed table (merge, history, changes) takes back. Such a table's files are not laid out by the run's
    partitions (a merge updates a key's row wherever it is), so its log cannot say which runs it withdraws."""
    latest: dict[str | None, int] = {}
    for _, partition, published in _published(instance, table.key):
        latest.setdefault(partition, published)
    return tuple(sorted((p for p, v in latest.items() if v > version), key=lambda p: p or ""))


def _computed_after(instance: dg.DagsterInstance, marked: Marked, since: int) -> Marked | None:
    """``marked`` without the partitions last computed before the event ``since``: they cannot have read what was
    published from then on (a reader of the whole table marks every partition)."""
    kept = []
    for partition in marked.partitions:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=marked.key, asset_partitions=[partition] if partition else None), 1
        ).records
        if not records or records[0].storage_id > since:
            kept.append(partition)
    return replace(marked, partitions=tuple(kept)) if kept else None


def suspects(
    instance: dg.DagsterInstance,
    mesh: CatalogMesh,
    table: Table,
    partitions: list[str | None],
    reason: str,
    version: int,
) -> list[Marked]:
    """What downstream read ``partitions`` of ``table`` as published (before the restore) after ``version``,
    merged per table."""
    merged: dict[dg.AssetKey, Marked] = {}
    published = instance.get_materialized_partitions(table.key) if table.grain.partitioned else None
    for partition in partitions:
        if published is not None and partition not in published:
            continue
        for marked in invalidation(instance, mesh, table.key, partition, partition, reason)[1:]:
            seen = merged.get(marked.key)
            if seen is None:
                merged[marked.key] = marked
                continue
            parts = tuple(sorted({*seen.partitions, *marked.partitions}, key=lambda p: p or ""))
            merged[marked.key] = replace(
                seen, partitions=parts, sources=tuple(sorted({*seen.sources, *marked.sources}))
            )
    firsts = [storage_id for storage_id, _, published in _published(instance, table.key) if published > version]
    if not firsts:
        return list(merged.values())
    return [m for m in (_computed_after(instance, m, min(firsts)) for m in merged.values()) if m is not None]


def _valid(instance: dg.DagsterInstance, table: Table, partition: str | None, version: int) -> dg.AssetCheckEvaluation:
    return dg.AssetCheckEvaluation(
        asset_key=table.key,
        check_name=VALID,
        passed=True,
        partition=partition,
        severity=dg.AssetCheckSeverity.ERROR,
        blocking=True,
        description=f"restored to version {version}",
        target_materialization_data=target_of(instance, table.key, partition),
    )


def restore_in_run(context: Any, mesh: MeshResource, domain: str, graph: MeshGraph, alerts: Any) -> Restored:
    """The ``<domain>__restore`` op's body (config: table, to_version or to_timestamp)."""
    config = context.op_config
    instance = context.instance
    try:
        table = restorable(graph, domain, config["table"])
        aim = resolve_version(mesh, table, config.get("to_version"), config.get("to_timestamp"))
        if table.table_kind.keyed:
            aim = replace(aim, partitions=withdrawn(instance, table, aim.version))
    except RestoreRefused as exc:
        raise dg.Failure(description=f"{exc}; nothing restored") from None
    catalog = CatalogMesh.of(graph)
    reason = f"{table.ref} restored to version {aim.version}: versions {aim.version + 1}..{aim.latest} withdrawn"
    marked = suspects(instance, catalog, table, list(aim.partitions), reason, aim.version)
    location = mesh.registry.location(table.domain, table.name)
    version = restore(mesh.spark, location, aim.version, mesh.registry.s3)
    context.log.info(f"{table.ref}: restored to version {aim.version} as version {version}")
    for event in materializations(instance, table, location, mesh.registry.s3, aim, version):
        context.log_event(event)
    if any(c.check_name == VALID for c in table.checks):
        for partition in aim.partitions:
            context.log_event(_valid(instance, table, partition, aim.version))
    keys = [p for p in aim.partitions if p is not None]
    node = graph.nodes.get((table.domain, table.name))
    if node is not None and any(c.check_name != VALID for c in table.checks) and (keys or not table.grain.partitioned):
        recheck(context, mesh, node, min(keys) if keys else None, max(keys) if keys else None)
    for m in marked:
        for evaluation in failed_checks(instance, m, f"run {context.run_id}") if m.held else ():
            context.log_event(evaluation)
        context.log.info(m.describe())
    root = Marked(table.key, aim.partitions, reason)
    problems = notify(catalog, [root, *marked], alerts, context.run_id, context.instance) if marked else []
    for problem in problems:
        context.log.warning(problem)
    return Restored(table.ref, aim.version, version, aim.partitions, tuple(marked), tuple(problems))
