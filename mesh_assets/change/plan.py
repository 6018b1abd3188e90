"""A change's plan: what it adds, removes and changes, whom it breaks, and the partitions it makes stale, with
their rows; what ``mesh plan`` prints and ``mesh apply`` launches as one backfill.

The partitions: every published partition of a table whose code version changed (against the instance: those
computed by another code version), every published partition downstream of them that reads one (through the
asset graph's partition mappings, as Dagster's staleness does), and every partition of a new table that its
inputs let it compute. Partitions that cannot be computed (an input partition never published) are left out
and said why, as ``mesh backfill`` does. Retired tables are not recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dagster as dg

from mesh_assets.backfill.computable import LeftOut, computable
from mesh_assets.backfill.plan import LAUNCHED_BY_TAG, BackfillPlan, PlannedAsset, downstream_partitions, planned
from mesh_assets.change.diff import Change, ProductDiff, TableDiff
from mesh_assets.change.records import InstanceRecords
from mesh_assets.compat import AssetGraph, PartitionsSubset
from mesh_assets.model.lifecycle import Status

BASE_TAG = "mesh/plan_base"


@dataclass(frozen=True)
class Recompute:
    """One asset's planned partitions, their rows at their last materialization, and why they are planned."""

    asset: PlannedAsset
    rows: int | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        ranges = self.asset.describe().split(", ") if self.asset.ranges else []
        return {
            "asset": self.asset.key.to_user_string(),
            "partitions": ranges,
            "count": self.asset.partition_count,
            "rows": self.rows,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ChangePlan:
    base: str
    products: tuple[ProductDiff, ...]
    tables: tuple[TableDiff, ...]
    recompute: tuple[Recompute, ...] = ()
    left_out: tuple[LeftOut, ...] = ()

    @property
    def refused(self) -> list[TableDiff]:
        """The breaking changes to tables the base published: each needs a new major version instead."""
        return [t for t in self.tables if t.refused]

    @property
    def exit_code(self) -> int:
        return 1 if self.refused else 0

    @property
    def partition_count(self) -> int:
        return sum(r.asset.partition_count or 1 for r in self.recompute)

    def backfill(self) -> BackfillPlan:
        """The partitions as one asset backfill, tagged with the plan's base."""
        assert self.recompute, "an empty plan launches nothing"
        assets = tuple(r.asset for r in self.recompute)
        return BackfillPlan(
            root=assets[0].key,
            root_range=None,
            assets=assets,
            left_out=self.left_out,
            tags={LAUNCHED_BY_TAG: "mesh apply", BASE_TAG: self.base},
            title=f"mesh apply: {self.partition_count} partition(s) of {len(assets)} table(s), since {self.base}",
            description=f"Planned by `mesh plan` against {self.base}: the partitions the change makes stale or new.",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "products": [p.to_json() for p in self.products],
            "tables": [t.to_json() for t in self.tables],
            "partitions": [r.to_json() for r in self.recompute],
            "left_out": [item.describe() for item in self.left_out],
            "refused": [t.table.ref for t in self.refused],
            "exit_code": self.exit_code,
        }


def _published(graph: AssetGraph, records: InstanceRecords, key: dg.AssetKey) -> PartitionsSubset | None:
    """The published partitions of ``key`` as a subset; ``None`` for an unpartitioned table."""
    pdef = graph.get(key).partitions_def
    if pdef is None:
        return None
    keys = [p for p in records.of(key).partitions if p is not None and pdef.has_partition_key(p)]
    return pdef.empty_subset().with_partition_keys(keys)


def _roots(
    graph: AssetGraph, records: InstanceRecords, tables: tuple[TableDiff, ...]
) -> dict[dg.AssetKey, tuple[PartitionsSubset | None, str]]:
    """The partitions each changed or new table recomputes itself, and why."""
    roots: dict[dg.AssetKey, tuple[PartitionsSubset | None, str]] = {}
    for diff in tables:
        table = diff.after
        if table is None or not table.status.readable or not graph.has(table.key):
            continue
        if not graph.get(table.key).is_executable:
            continue
        pdef = graph.get(table.key).partitions_def
        if diff.change is Change.ADDED:
            roots[table.key] = (pdef.subset_with_all_partitions() if pdef else None, "new table")
        elif diff.stale is None or diff.stale:
            published = _published(graph, records, table.key)
            if pdef is not None and published is not None and diff.stale:
                published = pdef.empty_subset().with_partition_keys([p for p in diff.stale if p is not None])
            if published is None and not records.of(table.key).partitions:
                continue
            if published is None or not published.is_empty:
                roots[table.key] = (published, f"{diff.code} changed" if diff.code else "code version changed")
    return roots


def _downstream(
    graph: AssetGraph, records: InstanceRecords, roots: dict[dg.AssetKey, tuple[PartitionsSubset | None, str]]
) -> tuple[dict[dg.AssetKey, PartitionsSubset | None], dict[dg.AssetKey, str]]:
    """The roots and every published partition downstream that reads one of their partitions."""
    reached = {key: subset for key, (subset, _) in roots.items()}
    reasons = {key: why for key, (_, why) in roots.items()}
    for key in graph.toposorted_asset_keys:
        if key not in reached:
            continue
        for child in sorted(graph.get(key).child_keys):
            if not graph.get(child).is_executable or graph.get(child).tags.get("status") == Status.RETIRED:
                continue
            mapped = downstream_partitions(graph, key, reached[key], child)
            published = _published(graph, records, child)
            if mapped is None:  # an unpartitioned reader: stale when it was ever published
                if not records.of(child).partitions:
                    continue
            else:
                assert published is not None
                mapped = mapped & published
                if mapped.is_empty:
                    continue
            previous = reached.get(child, mapped)
            reached[child] = mapped if previous is None or mapped is None else previous | mapped
            reasons.setdefault(child, f"reads {key.to_user_string()}")
    return reached, reasons


def plan_change(
    base: str,
    products: list[ProductDiff],
    tables: list[TableDiff],
    graph: AssetGraph | None,
    instance: dg.DagsterInstance,
    records: InstanceRecords,
) -> ChangePlan:
    """The plan of the diffs: with ``graph`` (the working tree's assets), the partitions to recompute."""
    plan = ChangePlan(base, tuple(products), tuple(tables))
    if graph is None:
        return plan
    roots = _roots(graph, records, plan.tables)
    if not roots:
        return plan
    reached, reasons = _downstream(graph, records, roots)
    kept, left_out = computable(graph, instance, reached)
    order = {k: i for i, k in enumerate(graph.toposorted_asset_keys)}
    recompute = []
    for key in sorted(kept, key=order.__getitem__):
        asset = planned(graph, key, kept[key])
        pdef = graph.get(key).partitions_def
        keys = [k for r in asset.ranges for k in pdef.get_partition_keys_in_range(r)] if pdef and asset.ranges else None
        recompute.append(Recompute(asset, records.of(key).rows(keys), reasons[key]))
    return ChangePlan(base, plan.products, plan.tables, tuple(recompute), tuple(left_out))
