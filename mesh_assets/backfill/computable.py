"""Which planned partitions can be computed: the ones whose every input partition is published or planned.

A downstream backfill through a window reaches partitions past the last one ever materialized (fixing
day D replans the 7-day windows ending on D..D+6); their other inputs never existed, so a run of them can
only be refused. Planning them would make the range's run refuse them and the backfill end failed, so the
plan leaves them out and says why; everything else, including every partition that was materialized from
the old data, is recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
from dagster._core.definitions.partitions.subset import PartitionsSubset


@dataclass(frozen=True)
class LeftOut:
    """Partitions of one asset the plan leaves out, and why (the first input partition missing)."""

    key: dg.AssetKey
    partitions: tuple[str, ...]
    reason: str

    def describe(self) -> str:
        return f"{self.key.to_user_string()} {_span(list(self.partitions))}: {self.reason}"


class _Published:
    """The instance's published partitions per asset, read once each, plus what the plan will publish."""

    def __init__(self, instance: dg.DagsterInstance, planned: dict[dg.AssetKey, PartitionsSubset | None]):
        self.instance, self.planned = instance, planned
        self._cache: dict[dg.AssetKey, set[str]] = {}

    def keys(self, key: dg.AssetKey) -> set[str]:
        if key not in self._cache:
            self._cache[key] = set(self.instance.get_materialized_partitions(key))
        planned = self.planned.get(key)
        return self._cache[key] | (set(planned.get_partition_keys()) if planned is not None else set())

    def ever(self, key: dg.AssetKey) -> bool:
        if key in self.planned:
            return True
        return bool(self.keys(key)) or self.instance.get_latest_materialization_event(key) is not None


def _span(keys: list[str]) -> str:
    return keys[0] if len(keys) == 1 else f"{keys[0]}..{keys[-1]} ({len(keys)})"


def _missing(
    graph: BaseAssetGraph, published: _Published, key: dg.AssetKey, partition: str | None
) -> tuple[dg.AssetKey, tuple[str, ...]] | None:
    """The first input of ``key``'s ``partition`` with partitions neither published nor planned, and those
    partitions (``()`` for a table never materialized at all); None when every input is there."""
    for parent in sorted(graph.get(key).parent_keys):
        mapping = graph.get_partition_mapping(key, parent) if partition is not None else None
        whole = partition is None or isinstance(mapping, dg.AllPartitionMapping)
        if not graph.get(parent).is_partitioned or whole:
            if not published.ever(parent):
                return parent, ()
            continue
        needed = graph.get_parent_partition_keys_for_child(partition, parent, key).partitions_subset
        have = published.keys(parent)
        if missing := tuple(sorted(k for k in needed.get_partition_keys() if k not in have)):
            return parent, missing
    return None


def _reason(parent: dg.AssetKey, missing: set[str]) -> str:
    keys = sorted(missing)
    return f"{parent.to_user_string()}{' ' + _span(keys) if keys else ''} never materialized"


def computable(
    graph: BaseAssetGraph, instance: dg.DagsterInstance, reached: dict[dg.AssetKey, PartitionsSubset | None]
) -> tuple[dict[dg.AssetKey, PartitionsSubset | None], list[LeftOut]]:
    """``reached`` without the partitions that cannot be computed, in dependency order, and what was left out."""
    kept: dict[dg.AssetKey, PartitionsSubset | None] = {}
    published = _Published(instance, kept)
    left_out: list[LeftOut] = []
    for key in graph.toposorted_asset_keys:
        if key not in reached:
            continue
        subset = reached[key]
        if subset is None:
            if found := _missing(graph, published, key, None):
                left_out.append(LeftOut(key, ("(unpartitioned)",), _reason(found[0], set(found[1]))))
            else:
                kept[key] = None
            continue
        by_parent: dict[dg.AssetKey, tuple[list[str], set[str]]] = {}
        for partition in subset.get_partition_keys():
            if found := _missing(graph, published, key, partition):
                dropped, missing = by_parent.setdefault(found[0], ([], set()))
                dropped.append(partition)
                missing.update(found[1])
        if by_parent:
            left_out += [
                LeftOut(key, tuple(sorted(dropped)), _reason(parent, missing))
                for parent, (dropped, missing) in sorted(by_parent.items(), key=lambda item: item[0].to_user_string())
            ]
            gone = {p for dropped, _ in by_parent.values() for p in dropped}
            partitions_def = graph.get(key).partitions_def
            assert partitions_def is not None
            subset = partitions_def.empty_subset().with_partition_keys(
                [p for p in subset.get_partition_keys() if p not in gone]
            )
        if not subset.is_empty:
            kept[key] = subset
    return kept, left_out
