"""Invalidation after publish: published partitions found wrong are failed by their ``valid`` check, with the
reason, and every published partition computed from them is failed as suspect, naming its invalid sources.

A failed ``valid`` is a failed blocking check like any other: consumers do not start on the partition (the
run's readiness refuses it, the automation holds it back), the Dagster UI shows it on the partition, and a run
that publishes the partition again passes the check and clears the mark. Suspects are found through the asset
graph's partition mappings, level after level: a partition that read a suspect is suspect too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import dagster as dg

from mesh_assets.alerts.notify import Alert, AlertNotSent, run_url, send
from mesh_assets.backfill.plan import BackfillError, downstream_partitions, parse_asset_key, partition_bounds
from mesh_assets.checks.results import target_of
from mesh_assets.compat import AssetGraph, PartitionsSubset
from mesh_assets.model.checks import VALID
from mesh_assets.settings import AlertSettings

INVALIDATED_BY_TAG = "mesh/invalidated_by"


@dataclass(frozen=True)
class Marked:
    """Partitions of one asset failed as invalid (the root) or suspect (downstream), and why."""

    key: dg.AssetKey
    partitions: tuple[str | None, ...]
    reason: str
    sources: tuple[str, ...] = ()
    """``<domain>/<table> <partition>`` of the invalid partitions this one was computed from (suspects)."""

    @property
    def suspect(self) -> bool:
        return bool(self.sources)

    def describe(self) -> str:
        keys = ", ".join(p or "-" for p in self.partitions)
        return f"{self.key.to_user_string()} {keys}: {'suspect' if self.suspect else 'invalid'}"


def _published(instance: dg.DagsterInstance, key: dg.AssetKey, subset: PartitionsSubset | None) -> list[str | None]:
    """The published partitions of ``subset`` (``[None]`` for a published unpartitioned asset)."""
    if subset is None:
        return [None] if instance.get_latest_materialization_event(key) is not None else []
    return sorted(set(subset.get_partition_keys()) & instance.get_materialized_partitions(key))


def _fail(instance: dg.DagsterInstance, marked: Marked, by: str) -> None:
    description = (
        f"suspect: computed from invalid {', '.join(marked.sources)} ({marked.reason})"
        if marked.suspect
        else f"invalidated: {marked.reason}"
    )
    metadata: dict = {"reason": marked.reason, "invalidated_by": by}
    if marked.sources:
        metadata["invalid_sources"] = dg.MetadataValue.json(list(marked.sources))
    for partition in marked.partitions:
        instance.report_runless_asset_event(
            dg.AssetCheckEvaluation(
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
        )


def _has_valid_check(graph: AssetGraph, key: dg.AssetKey) -> bool:
    return dg.AssetCheckKey(key, VALID) in graph.get(key).check_keys


def _suspects(
    graph: AssetGraph, instance: dg.DagsterInstance, root: dg.AssetKey, subset: PartitionsSubset | None
) -> Iterator[tuple[dg.AssetKey, list[str | None]]]:
    """Each asset downstream of ``root``'s ``subset`` with its published partitions that read it, level by
    level: a partition reached only through partitions never published is not a suspect."""
    reached: dict[dg.AssetKey, PartitionsSubset | None] = {root: subset}
    for current in graph.toposorted_asset_keys:
        if current not in reached:
            continue
        if current != root:
            published = _published(instance, current, reached[current])
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


def _alert(graph: AssetGraph, marked: Marked, root: Marked, run_id: str | None, settings: AlertSettings) -> Alert:
    """The owners of ``marked``'s table (from its asset's owners, tags and contacts) told what was marked."""
    node = graph.get(marked.key)
    contacts = node.metadata.get("contacts")
    chats = [c["value"] for c in (contacts.value if contacts is not None else []) if c.get("kind") == "chat"]
    invalid = f"{root.key.to_user_string()} {', '.join(p or '-' for p in root.partitions)}"
    return Alert(
        kind="input invalidated" if marked.suspect else "invalidated",
        domain=marked.key.path[0],
        product=node.tags.get("product", ""),
        table=marked.key.path[-1],
        owner=next(iter(node.owners), ""),
        channel=chats[0] if chats else "",
        message=f"{invalid} invalidated: {marked.reason}"
        + (f"; computed from it, {marked.describe()}: consumers wait until it is re-run" if marked.suspect else ""),
        partitions=[p or "-" for p in marked.partitions],
        checks=[VALID],
        run_id=run_id,
        run_url=run_url(run_id, settings) if run_id else None,
        source=root.key.to_user_string().replace("/", ".") if marked.suspect else None,
    )


def notify(graph: AssetGraph, marked: list[Marked], settings: AlertSettings, run_id: str | None = None) -> list[str]:
    """One alert per marked table to its domain's channel; why each alert that could not be sent failed."""
    problems = []
    for m in marked:
        try:
            send(_alert(graph, m, marked[0], run_id, settings), settings)
        except AlertNotSent as exc:
            problems.append(f"alert to {m.key.path[0]}'s channel failed: {exc}")
    return problems


def invalidate(
    instance: dg.DagsterInstance,
    graph: AssetGraph,
    asset: str | dg.AssetKey,
    start: str | None,
    end: str | None,
    reason: str,
    by: str = "mesh invalidate",
) -> list[Marked]:
    """Fail ``valid`` on ``asset``'s published partitions ``start``..``end`` (the table, when unpartitioned) and
    on every published partition downstream that read them; what was marked, the root first. (The owners are
    told by :func:`notify`.)"""
    if not reason.strip():
        raise BackfillError("an invalidation needs a reason (consumers' owners read it)")
    key = asset if isinstance(asset, dg.AssetKey) else parse_asset_key(asset, graph)
    if not _has_valid_check(graph, key):
        raise BackfillError(f"{key.to_user_string()} is not a Mesh product's output; only those can be invalidated")
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
    marked = [Marked(key, tuple(root), reason)]
    marked += [
        Marked(child, tuple(partitions), reason, sources)
        for child, partitions in _suspects(graph, instance, key, subset)
        if _has_valid_check(graph, child)
    ]
    for m in marked:
        _fail(instance, m, by)
    return marked
