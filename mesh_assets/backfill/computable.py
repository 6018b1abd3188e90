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

from mesh_assets.assets.specs import MIN_COMPLETE_KEY
from mesh_assets.compat import AssetGraph, PartitionsSubset


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


def _unreadable(
    graph: AssetGraph, published: _Published, key: dg.AssetKey, subset: PartitionsSubset
) -> dict[dg.AssetKey, tuple[set[str], set[str]]]:
    """Per input of ``key``: (partitions of ``subset`` that read an input partition neither published nor
    planned, those input partitions). Mapped through the partition mappings a subset at a time, not a key at a
    time: a rebuild plans thousands of partitions."""
    child_def = graph.get(key).partitions_def
    assert child_def is not None
    everything = set(subset.get_partition_keys())
    out: dict[dg.AssetKey, tuple[set[str], set[str]]] = {}
    for parent in sorted(graph.get(key).parent_keys, key=lambda k: k.to_user_string()):
        parent_def = graph.get(parent).partitions_def
        mapping = graph.get_partition_mapping(key, parent)
        if parent_def is None or isinstance(mapping, dg.AllPartitionMapping):
            if not published.ever(parent):
                out[parent] = (everything, set())
            continue
        needed = mapping.get_upstream_mapped_partitions_result_for_partitions(subset, child_def, parent_def)
        missing = set(needed.partitions_subset.get_partition_keys()) - published.keys(parent)
        share = _min_complete(graph, key, parent)
        if missing and share is not None:
            missing = _short(mapping, child_def, parent_def, everything, published.keys(parent), share)
        if missing:
            readers = mapping.get_downstream_partitions_for_partitions(
                parent_def.empty_subset().with_partition_keys(sorted(missing)), parent_def, child_def
            )
            out[parent] = (set(readers.get_partition_keys()) & everything, missing)
    return out


def _min_complete(graph: AssetGraph, key: dg.AssetKey, parent: dg.AssetKey) -> float | None:
    """The share of ``parent``'s window that lets a partition of ``key`` run (its ``min_complete``), if declared."""
    declared = graph.get(key).metadata.get(MIN_COMPLETE_KEY)
    shares = getattr(declared, "value", declared) or {}
    return shares.get(".".join(parent.path))


def _short(
    mapping: dg.PartitionMapping,
    child_def: dg.PartitionsDefinition,
    parent_def: dg.PartitionsDefinition,
    keys: set[str],
    available: set[str],
    share: float,
) -> set[str]:
    """The missing input partitions of the partitions in ``keys`` whose window has less than ``share`` of its
    input partitions published or planned (a rollup with ``min_complete`` runs on the rest)."""
    missing: set[str] = set()
    for key in sorted(keys):
        one = child_def.empty_subset().with_partition_keys([key])
        window = set(
            mapping.get_upstream_mapped_partitions_result_for_partitions(
                one, child_def, parent_def
            ).partitions_subset.get_partition_keys()
        )
        if window and len(window & available) / len(window) < share:
            missing |= window - available
    return missing


def _read_by(
    graph: AssetGraph, key: dg.AssetKey, parent: dg.AssetKey, dropped: set[str], missing: set[str]
) -> set[str]:
    """The missing input partitions that the dropped partitions read (the reason names only those)."""
    child_def, parent_def = graph.get(key).partitions_def, graph.get(parent).partitions_def
    assert child_def is not None and parent_def is not None
    mapping = graph.get_partition_mapping(key, parent)
    needed = mapping.get_upstream_mapped_partitions_result_for_partitions(
        child_def.empty_subset().with_partition_keys(sorted(dropped)), child_def, parent_def
    )
    return missing & set(needed.partitions_subset.get_partition_keys())


def _reason(parent: dg.AssetKey, missing: set[str]) -> str:
    keys = sorted(missing)
    return f"{parent.to_user_string()}{' ' + _span(keys) if keys else ''} never materialized"


def computable(
    graph: AssetGraph, instance: dg.DagsterInstance, reached: dict[dg.AssetKey, PartitionsSubset | None]
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
            never = [
                p for p in sorted(graph.get(key).parent_keys, key=lambda k: k.to_user_string()) if not published.ever(p)
            ]
            if never:
                left_out.append(LeftOut(key, ("(unpartitioned)",), _reason(never[0], set())))
            else:
                kept[key] = None
            continue
        gone: set[str] = set()
        for parent, (dropped, missing) in _unreadable(graph, published, key, subset).items():
            dropped -= gone  # said once, for the first input that cannot be read
            if dropped:
                read = _read_by(graph, key, parent, dropped, missing) if missing else missing
                left_out.append(LeftOut(key, tuple(sorted(dropped)), _reason(parent, read)))
                gone |= dropped
        if gone:
            partitions_def = graph.get(key).partitions_def
            assert partitions_def is not None
            subset = partitions_def.empty_subset().with_partition_keys(
                [p for p in subset.get_partition_keys() if p not in gone]
            )
        if not subset.is_empty:
            kept[key] = subset
    return kept, left_out
