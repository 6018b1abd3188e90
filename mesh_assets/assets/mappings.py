"""The partition mappings that express each input's window."""

from __future__ import annotations

import dagster as dg

from mesh_assets.graph.resolve import Read, Table
from mesh_assets.model.grain import DATE, REGION, Grain
from mesh_assets.model.windows import Window


def mapping_for(read: Read, output: Table) -> dg.PartitionMapping | None:
    """How an output partition maps to the input partitions its window reads."""
    return window_mapping(read.table, read.input.window, output.grain, read.input.region, output.regions)


def window_mapping(
    upstream: Table, window: Window, output: Grain, region: str | None = None, regions: tuple[str, ...] = ()
) -> dg.PartitionMapping | None:
    """How an output partition of ``output``'s grain (and ``regions``, a regional output's) maps to the partitions
    of ``upstream`` that ``window`` reads (``region``: the one region it names of a regional upstream): from a
    product's code (:func:`mapping_for`) or from its catalog entry, which holds the window as declared.

    A regional output reading a regional upstream by its own region maps date to date and region to region. Any
    other mapping into or out of a regional table maps by date (every region of a UTC day's date): Dagster cannot
    say "one region" or "a local day", so its view waits for a superset, and the run's readiness rule
    (:mod:`mesh_assets.run.readiness`, which automation applies to such inputs) decides exactly."""
    if not upstream.grain.partitioned or not output.partitioned:
        return None
    if window.whole:
        return dg.AllPartitionMapping()
    dates = _dates(window)
    if upstream.regions and regions and region is None and set(regions) <= set(upstream.regions):
        return dg.MultiPartitionMapping(
            {
                DATE: dg.DimensionPartitionMapping(DATE, dates),
                REGION: dg.DimensionPartitionMapping(REGION, dg.IdentityPartitionMapping()),
            }
        )
    if upstream.regions or regions:
        return dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=DATE)
    return dates


def _dates(window: Window) -> dg.TimeWindowPartitionMapping:
    """The window over a time dimension: the partition (``same``), the ``n`` ending on it, or the ``n`` before it."""
    if window.kind == "previous":
        return dg.TimeWindowPartitionMapping(
            start_offset=-window.n, end_offset=-1, allow_nonexistent_upstream_partitions=True
        )
    if window.kind == "last":
        return dg.TimeWindowPartitionMapping(start_offset=-window.lookback, allow_nonexistent_upstream_partitions=True)
    return dg.TimeWindowPartitionMapping(allow_nonexistent_upstream_partitions=True)
