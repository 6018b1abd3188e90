"""Lineage-driven backfills: the downstream closure of a fixed partition range, as one Dagster backfill.

Fixing days D1..Dn of an asset makes stale every downstream partition whose window reads one of them.
The plan walks the asset graph in topological order and maps each asset's partitions to its children's
through the declared partition mappings (a ``last 7`` input maps day D to D..D+6), so the plan is exactly
what Dagster itself considers downstream. It is launched as ONE asset backfill
(:mod:`mesh_assets.backfill.launch`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import dagster as dg

from mesh_assets.backfill.computable import LeftOut, computable
from mesh_assets.backfill.in_order import in_order
from mesh_assets.compat import AssetGraph, PartitionsSubset
from mesh_assets.model.grain import DATE, REGION, Grain, region_key
from mesh_assets.model.partitions import ranges_of_regions


class BackfillError(ValueError):
    """A backfill request that cannot be planned (unknown asset, bad or out-of-range partition)."""


def parse_asset_key(name: str, graph: AssetGraph) -> dg.AssetKey:
    """``food_delivery/orders`` or ``food_delivery.orders`` -> the asset key, which must be in ``graph``."""
    parts = [p for p in name.replace(".", "/").split("/") if p]
    key = dg.AssetKey(parts)
    if not parts or not graph.has(key):
        raise BackfillError(f"unknown asset {name!r} (expected <domain>/<table> or <domain>.<table>)")
    return key


def partition_bounds(partitions_def: dg.PartitionsDefinition, start: str, end: str) -> dg.PartitionKeyRange:
    """Validated partition keys for ``start``..``end``; a day given for an hourly asset means its 24 hours."""
    try:
        grain = Grain.of_partitions(partitions_def)
        first, last = grain.span(start)[0], grain.span(end)[1]
    except ValueError as exc:  # PartitionKeyError among them
        raise BackfillError(str(exc)) from None
    if last < first:
        raise BackfillError(f"the range ends ({end}) before it starts ({start})")
    keys = grain.key(first), grain.key(last)
    for key in keys:
        if not partitions_def.has_partition_key(key):
            first_key = partitions_def.get_first_partition_key()
            last_key = partitions_def.get_last_partition_key()
            raise BackfillError(f"partition {key} does not exist (partitions run from {first_key} to {last_key})")
    return dg.PartitionKeyRange(*keys)


def root_subset(
    partitions_def: dg.PartitionsDefinition, start: str, end: str, region: str | None
) -> tuple[PartitionsSubset, dg.PartitionKeyRange]:
    """The partitions ``start``..``end`` name, and their span: of a table partitioned by date and region, those
    dates of ``region`` (None: of every region)."""
    if not isinstance(partitions_def, dg.MultiPartitionsDefinition):
        if region is not None:
            raise BackfillError(f"--region {region}: the table is not partitioned by region")
        rng = partition_bounds(partitions_def, start, end)
        return partitions_def.empty_subset().with_partition_key_range(partitions_def, rng), rng
    dates = partition_bounds(partitions_def.get_partitions_def_for_dimension(DATE), start, end)
    regions = partitions_def.get_partitions_def_for_dimension(REGION).get_partition_keys()
    if region is not None and region not in regions:
        raise BackfillError(f"--region {region}: not a region of the table ({', '.join(regions)})")
    chosen = [region] if region is not None else regions
    subset = partitions_def.empty_subset()
    for name in chosen:
        rng = dg.PartitionKeyRange(region_key(dates.start, name), region_key(dates.end, name))
        subset = subset.with_partition_key_range(partitions_def, rng)
    return subset, dg.PartitionKeyRange(region_key(dates.start, chosen[0]), region_key(dates.end, chosen[-1]))


def _ranges(subset: PartitionsSubset, partitions_def: dg.PartitionsDefinition) -> tuple[dg.PartitionKeyRange, ...]:
    """``subset`` as ranges: of a table partitioned by date and region, one per region and run of consecutive
    dates (``2024-03-30|eu..2024-03-31|eu``), so a backfill runs each region's range as one run."""
    if not isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return tuple(subset.get_partition_key_ranges(partitions_def))
    regions = tuple(partitions_def.get_partitions_def_for_dimension(REGION).get_partition_keys())
    ranges = ranges_of_regions(Grain.DAILY, regions, ("UTC",) * len(regions), list(subset.get_partition_keys()))
    return tuple(dg.PartitionKeyRange(r.dagster_key(r.keys()[0]), r.dagster_key(r.keys()[-1])) for r in ranges)


@dataclass(frozen=True)
class PlannedAsset:
    """One asset of the plan: its partition ranges, or ``()`` for an unpartitioned asset."""

    key: dg.AssetKey
    ranges: tuple[dg.PartitionKeyRange, ...]
    partition_count: int

    @property
    def partitioned(self) -> bool:
        return bool(self.ranges)

    def describe(self) -> str:
        if not self.ranges:
            return "(unpartitioned)"
        return ", ".join(r.start if r.start == r.end else f"{r.start}..{r.end}" for r in self.ranges)


@dataclass(frozen=True)
class BackfillPlan:
    """The assets and partitions to recompute, in topological order: what one asset backfill targets."""

    root: dg.AssetKey
    root_range: dg.PartitionKeyRange | None
    """``None`` when the root is unpartitioned (a rebuild of a FULL table)."""
    assets: tuple[PlannedAsset, ...]
    left_out: tuple[LeftOut, ...] = ()
    """Partitions downstream of the range that cannot be computed (an input was never materialized)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags of the backfill, and so of every run it launches."""
    title: str | None = None
    description: str = "Planned by `mesh backfill` through the asset graph's partition mappings."
    notes: tuple[str, ...] = ()
    """How the plan differs from the range asked for (a table applied in order, extended to its latest)."""

    def as_dict(self) -> dict[str, list[str]]:
        """``{"food_delivery/orders": ["2021-06-04..2021-06-06"], ...}``: the plan as asset -> ranges."""
        return {
            a.key.to_user_string(): [r.start if r.start == r.end else f"{r.start}..{r.end}" for r in a.ranges]
            for a in self.assets
        }

    def runs(self) -> Iterator[tuple[dg.AssetKey, dg.PartitionKeyRange | None]]:
        """One (asset, range) per run in dependency order: what the daemon launches, for in-process use."""
        for asset in self.assets:
            if not asset.ranges:
                yield asset.key, None
            for rng in asset.ranges:
                yield asset.key, rng

    @property
    def partition_count(self) -> int:
        return sum(a.partition_count or 1 for a in self.assets)


def planned(graph: AssetGraph, key: dg.AssetKey, subset: PartitionsSubset | None) -> PlannedAsset:
    """``subset`` of ``key`` as the plan lists it: its partition ranges (none when unpartitioned)."""
    pdef = graph.get(key).partitions_def
    if subset is None or pdef is None:
        return PlannedAsset(key, (), 0)
    return PlannedAsset(key, _ranges(subset, pdef), len(subset))


def downstream_partitions(
    graph: AssetGraph, parent: dg.AssetKey, parent_subset: PartitionsSubset | None, child: dg.AssetKey
) -> PartitionsSubset | None:
    """The child's partitions that read ``parent_subset`` (``None`` = the unpartitioned child)."""
    child_def = graph.get(child).partitions_def
    if child_def is None:
        return None
    parent_def = graph.get(parent).partitions_def
    if parent_def is None or parent_subset is None:
        return child_def.subset_with_all_partitions()  # every partition reads the whole parent
    mapping = graph.get_partition_mapping(child, parent)
    return mapping.get_downstream_partitions_for_partitions(
        parent_subset, parent_def, downstream_partitions_def=child_def
    )


def plan_backfill(
    graph: AssetGraph,
    root: str | dg.AssetKey,
    start: str,
    end: str,
    *,
    downstream: bool = True,
    instance: dg.DagsterInstance | None = None,
    children: Callable[[dg.AssetKey], Iterable[dg.AssetKey]] | None = None,
    region: str | None = None,
) -> BackfillPlan:
    """The root's ``start``..``end`` (of a table partitioned by date and region: of ``region``, else of every
    region) and, with ``downstream``, every partition downstream of it.

    ``children`` gives the assets that read an asset (default: the asset graph's own edges); with a lineage
    graph's edges, the plan follows what runs actually read, and the asset graph still maps the partitions.

    With ``instance``, only partitions that can be computed are planned: each input partition they read is
    published on the instance or planned before them; the others are listed in ``left_out`` with the reason.
    """
    key = root if isinstance(root, dg.AssetKey) else parse_asset_key(root, graph)
    root_def = graph.get(key).partitions_def
    if root_def is None:
        raise BackfillError(f"{key.to_user_string()} is not partitioned; materialize it instead of backfilling")
    if not graph.get(key).is_executable:
        raise BackfillError(f"{key.to_user_string()} is an external table; Mesh does not compute it")
    subset, rng = root_subset(root_def, start, end, region)
    reached: dict[dg.AssetKey, PartitionsSubset | None] = {key: subset}
    if downstream:
        for current in graph.toposorted_asset_keys:
            if current not in reached:
                continue
            readers = children(current) if children is not None else graph.get(current).child_keys
            for child in sorted(readers):
                if not graph.has(child) or not graph.get(child).is_executable:
                    continue
                mapped = downstream_partitions(graph, current, reached[current], child)
                if mapped is not None and mapped.is_empty:
                    continue
                previous = reached.get(child)
                reached[child] = mapped if previous is None or mapped is None else previous | mapped
    left_out: list[LeftOut] = []
    notes: list[str] = []
    if instance is not None:
        reached, left_out, notes = in_order(graph, instance, reached)
        reached, unreadable = computable(graph, instance, reached)
        left_out += unreadable
    order = {k: i for i, k in enumerate(graph.toposorted_asset_keys)}
    assets = tuple(planned(graph, k, reached[k]) for k in sorted(reached, key=order.__getitem__))
    return BackfillPlan(key, rng, assets, tuple(left_out), notes=tuple(notes))


LAUNCHED_BY_TAG = "mesh/launched_by"
