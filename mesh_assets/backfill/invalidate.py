"""Invalidation after publish: published partitions found wrong are failed by their ``valid`` check, with the
reason, and every published partition computed from them is failed as suspect, naming its invalid sources.

A failed ``valid`` is a failed blocking check like any other: consumers do not start on the partition (the
run's readiness refuses it, the automation holds it back), the Dagster UI shows it on the partition, and a run
that publishes the partition again passes the check and clears the mark. Suspects are found through the asset
graph's partition mappings, level after level: a partition that read a suspect is suspect too.

Only a Mesh product's outputs carry ``valid``. An external table is refused: Mesh did not publish it, and
what clears it is its writer re-landing the partitions (its readers then go stale and the automation
recomputes them). A dbt model is refused as the root, and reached downstream it is not marked, only told:
its own readers are marked, and it is re-run after the fix. The marks are recorded by a run (the
``<domain>__invalidate`` job, which ``mesh invalidate`` executes in its own process): Dagster keeps one
run-less result per check and partition, so a partition could otherwise be invalidated only once.

The mesh is walked as the catalog describes it (:class:`~mesh_assets.assets.catalog.CatalogMesh`): the run
executes no other domain's product code, so a domain whose files fail or hang cannot fail another's
invalidation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import dagster as dg

from mesh_assets.alerts.notify import Alert, chat_channel, deliver, describe_failure, email_addresses, linked, run_url
from mesh_assets.alerts.queue import Outbox
from mesh_assets.assets.catalog import CatalogMesh
from mesh_assets.backfill.plan import BackfillError, downstream_partitions, parse_asset_key, partition_bounds
from mesh_assets.checks.results import target_of
from mesh_assets.compat import PartitionsSubset
from mesh_assets.graph.resolve import TableKind
from mesh_assets.model.checks import VALID
from mesh_assets.settings import AlertSettings


@dataclass(frozen=True)
class Marked:
    """Partitions of one asset failed as invalid (the root) or suspect (downstream), and why; a dbt model's
    partitions that read them are listed too, not marked (``held`` false)."""

    key: dg.AssetKey
    partitions: tuple[str | None, ...]
    reason: str
    sources: tuple[str, ...] = ()
    """``<domain>/<table> <partition>`` of the invalid partitions this one was computed from (suspects)."""
    held: bool = True
    """Its ``valid`` check is failed, so its readers wait; false for a dbt model, which has no such check."""

    @property
    def suspect(self) -> bool:
        return bool(self.sources)

    def describe(self) -> str:
        keys = ", ".join(p or "-" for p in self.partitions)
        if not self.held:
            return (
                f"{self.key.to_user_string()} {keys}: computed from it, not marked ({UNHELD}); re-run it after the fix"
            )
        return f"{self.key.to_user_string()} {keys}: {'suspect' if self.suspect else 'invalid'}"


UNHELD = "not a Mesh product's output: no valid check"


def _published(instance: dg.DagsterInstance, key: dg.AssetKey, subset: PartitionsSubset | None) -> list[str | None]:
    """The published partitions of ``subset`` (``[None]`` for a published unpartitioned asset)."""
    if subset is None:
        return [None] if instance.get_latest_materialization_event(key) is not None else []
    return sorted(set(subset.get_partition_keys()) & instance.get_materialized_partitions(key))


def failed_checks(instance: dg.DagsterInstance, marked: Marked, by: str) -> Iterator[dg.AssetCheckEvaluation]:
    """The failed ``valid`` results of ``marked``'s partitions, each pointing at the partition's latest
    materialization (what it judged), for the invalidation's run to record."""
    description = (
        f"suspect: computed from invalid {', '.join(marked.sources)} ({marked.reason})"
        if marked.suspect
        else f"invalidated: {marked.reason}"
    )
    metadata: dict = {"reason": marked.reason, "invalidated_by": by}
    if marked.sources:
        metadata["invalid_sources"] = dg.MetadataValue.json(list(marked.sources))
    for partition in marked.partitions:
        yield dg.AssetCheckEvaluation(
            asset_key=marked.key,
            check_name=VALID,
            passed=False,
            partition=partition,
            severity=dg.AssetCheckSeverity.ERROR,
            blocking=True,
            description=description,
            metadata=metadata,
            target_materialization_data=target_of(instance, marked.key, partition),
        )


def _has_valid_check(mesh: CatalogMesh, key: dg.AssetKey) -> bool:
    table = mesh.table(key)
    return table is not None and table.kind is TableKind.PRODUCT and any(c.check_name == VALID for c in table.checks)


def _applied_after(
    mesh: CatalogMesh, instance: dg.DagsterInstance, key: dg.AssetKey, keys: list[str | None]
) -> list[str]:
    """The published partitions of a keyed table (``merge``, ``history``, ``changes``) after the first of ``keys``:
    its state since then holds what those applied, so they are suspect too; none for another kind."""
    table = mesh.table(key)
    first = min((k for k in keys if k is not None), default=None)
    if table is None or first is None or not table.table_kind.keyed:
        return []
    return sorted(k for k in instance.get_materialized_partitions(key) if k > first and k not in keys)


def _suspects(
    mesh: CatalogMesh, instance: dg.DagsterInstance, root: dg.AssetKey, subset: PartitionsSubset | None
) -> Iterator[tuple[dg.AssetKey, list[str | None]]]:
    """Each asset downstream of ``root``'s ``subset`` with its published partitions that read it, level by
    level: a partition reached only through partitions never published is not a suspect. A keyed table's
    partitions applied after a suspect one are suspect too (:func:`_applied_after`)."""
    graph = mesh.graph
    reached: dict[dg.AssetKey, PartitionsSubset | None] = {root: subset}
    for current in graph.toposorted_asset_keys:
        if current not in reached:
            continue
        if current != root:
            published = _published(instance, current, reached[current])
            published = sorted([*published, *_applied_after(mesh, instance, current, published)])
            if not published:
                continue
            yield current, published
            pdef = graph.get(current).partitions_def
            if pdef is not None:
                reached[current] = pdef.empty_subset().with_partition_keys(published)
        for child in sorted(graph.get(current).child_keys):
            mapped = downstream_partitions(graph, current, reached[current], child)
            if mapped is not None and mapped.is_empty:
                continue
            previous = reached.get(child)
            reached[child] = mapped if previous is None or mapped is None else previous | mapped


def _alert(mesh: CatalogMesh, marked: Marked, root: Marked, run_id: str | None, settings: AlertSettings) -> Alert:
    """The owners of ``marked``'s table (its product's owner and contacts, from the catalog) told what was marked."""
    table = mesh.table(marked.key)
    contacts = table.contacts if table is not None else ()
    invalid = f"{root.key.to_user_string()} {', '.join(p or '-' for p in root.partitions)}"
    return Alert(
        kind="input invalidated" if marked.suspect else "invalidated",
        domain=marked.key.path[0],
        product=table.product if table is not None else "",
        table=marked.key.path[-1],
        owner=table.owner if table is not None else "",
        channel=chat_channel(contacts),
        emails=email_addresses(contacts),
        message=f"{invalid} invalidated: {marked.reason}" + _consequence(marked),
        partitions=[p or "-" for p in marked.partitions],
        checks=[VALID],
        run_id=run_id,
        run_url=run_url(run_id, settings) if run_id else None,
        source=root.key.to_user_string().replace("/", ".") if marked.suspect else None,
    )


def _consequence(marked: Marked) -> str:
    """What the invalidation means for ``marked``'s table, after the reason."""
    if not marked.suspect:
        return ""
    if not marked.held:
        return f"; {marked.describe()}"
    return f"; computed from it, {marked.describe()}: consumers wait until it is re-run"


def notify(
    mesh: CatalogMesh,
    marked: list[Marked],
    settings: AlertSettings,
    run_id: str | None = None,
    instance: dg.DagsterInstance | None = None,
) -> list[str]:
    """One alert per table reached (marked or not) to its domain's channel and its email contacts; why each
    alert that could not be sent failed. A run's (``run_id`` on ``instance``) wait in its own queue for the
    domain's alert sensor to retry them (:mod:`mesh_assets.alerts.queue`)."""
    problems: list[str] = []
    for m in marked:
        alert = _alert(mesh, m, marked[0], run_id, settings)
        if instance is not None and run_id is not None:
            Outbox.of_run(instance, alert.domain, run_id).send(alert, settings, problems.append)
            continue
        alert = linked(alert, settings)
        problems += [describe_failure(alert, via, reason) for via, reason in deliver(alert, settings).items()]
    return problems


def _names(keys: Iterable[dg.AssetKey]) -> str:
    return ", ".join(sorted(k.to_user_string() for k in keys)) or "none"


def _refusal(mesh: CatalogMesh, key: dg.AssetKey) -> str:
    """Why ``key`` cannot be invalidated, and what to do instead."""
    node, name, table = mesh.graph.get(key), key.to_user_string(), mesh.table(key)
    if table is None:
        return f"{name} is not a table of the mesh's catalog (does its domain load? mesh validate)"
    if table.kind is TableKind.EXTERNAL:
        readers = _names(k for k in node.child_keys if _has_valid_check(mesh, k))
        return (
            f"{name} is an external table: Mesh did not publish it and cannot hold its readers on it. Re-land the "
            "fixed partitions (what read them goes stale and the automation recomputes it), or invalidate what "
            f"was computed from them (readers: {readers})"
        )
    sources = _names(k for k in node.parent_keys if _has_valid_check(mesh, k))
    return (
        f"{name} is not a Mesh product's output (a dbt model): it has no valid check to fail. Re-run it once "
        f"fixed (mesh backfill {name} --start .. --end .. --downstream), or invalidate the products it was "
        f"computed from ({sources})"
    )


def invalidation(
    instance: dg.DagsterInstance,
    mesh: CatalogMesh,
    asset: str | dg.AssetKey,
    start: str | None,
    end: str | None,
    reason: str,
) -> list[Marked]:
    """What invalidating ``asset``'s published partitions ``start``..``end`` (the table, when unpartitioned)
    marks: them, then every published partition downstream that read them, the root first; nothing is
    recorded (:func:`failed_checks` are, by the invalidation's run, and :func:`notify` tells the owners)."""
    if not reason.strip():
        raise BackfillError("an invalidation needs a reason (consumers' owners read it)")
    graph = mesh.graph
    key = asset if isinstance(asset, dg.AssetKey) else parse_asset_key(asset, graph)
    if not _has_valid_check(mesh, key):
        raise BackfillError(_refusal(mesh, key))
    pdef = graph.get(key).partitions_def
    subset: PartitionsSubset | None = None
    if pdef is not None:
        if start is None:
            raise BackfillError(f"{key.to_user_string()} is partitioned: give --start (and --end)")
        rng = partition_bounds(pdef, start, end or start)
        subset = pdef.empty_subset().with_partition_key_range(pdef, rng)
    root = _published(instance, key, subset)
    if not root:
        raise BackfillError(f"{key.to_user_string()} has no published partition in the range")
    if subset is not None and pdef is not None:
        subset = pdef.empty_subset().with_partition_keys(root)
    sources = tuple(f"{key.to_user_string()} {p}".rstrip() for p in root if p) or (key.to_user_string(),)
    later = _applied_after(mesh, instance, key, root)
    if later and pdef is not None:
        subset = pdef.empty_subset().with_partition_keys([*root, *later])
    own = [Marked(key, tuple(later), reason, sources)] if later else []
    return [Marked(key, tuple(root), reason), *own] + [
        Marked(child, tuple(partitions), reason, sources, held=_has_valid_check(mesh, child))
        for child, partitions in _suspects(mesh, instance, key, subset)
    ]
