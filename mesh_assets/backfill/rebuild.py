"""Rebuilds: the declared path for a schema change that cannot be merged in (a dropped, renamed or retyped column).

A rebuild is one asset backfill over every partition of a table, first to last, whose runs carry the tag
``mesh/rebuild=true``. A run with that tag writes its whole range in one commit that replaces the table and
its schema (Delta's ``overwriteSchema``), and refuses to write when the table holds partitions outside that
range (they would be dropped). The UI launches the same by adding the tag in the Materialize dialog.
"""

from __future__ import annotations

import dagster as dg

from mesh_assets.backfill.computable import LeftOut, computable
from mesh_assets.backfill.plan import LAUNCHED_BY_TAG, BackfillError, BackfillPlan, parse_asset_key, planned
from mesh_assets.compat import AssetGraph, PartitionsSubset
from mesh_assets.model.regions import NO_REGIONAL_REBUILD
from mesh_assets.storage.schema import REBUILD_TAG


def _closure(graph: AssetGraph, root: dg.AssetKey) -> list[dg.AssetKey]:
    """``root`` and every executable asset downstream of it, in dependency order."""
    reached = {root}
    for key in graph.toposorted_asset_keys:
        if key in reached:
            reached |= {child for child in graph.get(key).child_keys if graph.get(child).is_executable}
    return [key for key in graph.toposorted_asset_keys if key in reached]


def plan_rebuild(
    graph: AssetGraph,
    root: str | dg.AssetKey,
    *,
    downstream: bool = False,
    instance: dg.DagsterInstance | None = None,
) -> BackfillPlan:
    """Every partition of ``root`` (and, with ``downstream``, of every asset that reads it), as one backfill
    whose runs rewrite each table whole with its new schema. With ``instance``, partitions whose inputs were
    never published are left out (they could only be refused), as :func:`plan_backfill` does."""
    key = root if isinstance(root, dg.AssetKey) else parse_asset_key(root, graph)
    if not graph.get(key).is_executable:
        raise BackfillError(f"{key.to_user_string()} is an external table; Mesh does not write it")
    reached: dict[dg.AssetKey, PartitionsSubset | None] = {}
    for k in _closure(graph, key) if downstream else [key]:
        pdef = graph.get(k).partitions_def
        if isinstance(pdef, dg.MultiPartitionsDefinition):
            raise BackfillError(NO_REGIONAL_REBUILD.format(ref=k.to_user_string()))
        reached[k] = None if pdef is None else pdef.subset_with_all_partitions()
        if reached[k] is not None and reached[k].is_empty:
            raise BackfillError(f"{k.to_user_string()} has no partitions yet; nothing to rebuild")
    left_out: list[LeftOut] = []
    if instance is not None:
        reached, left_out = computable(graph, instance, reached)
    assets = tuple(planned(graph, k, subset) for k, subset in reached.items())
    if not assets:
        return BackfillPlan(key, None, (), tuple(left_out))
    name = key.to_user_string()
    return BackfillPlan(
        key,
        assets[0].ranges[0] if assets[0].ranges else None,
        assets,
        tuple(left_out),
        tags={REBUILD_TAG: "true", LAUNCHED_BY_TAG: "mesh rebuild"},
        title=f"Rebuild {name}{' and downstream' if len(assets) > 1 else ''}",
        description="Planned by `mesh rebuild`: every partition, each table rewritten with its new schema in one "
        "commit.",
    )
