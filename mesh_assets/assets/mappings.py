"""The partition mappings that express each input's window."""

from __future__ import annotations

import dagster as dg

from mesh_assets.graph.resolve import Read, Table
from mesh_assets.model.grain import DATE, Grain
from mesh_assets.model.windows import Window


def mapping_for(read: Read, output: Grain) -> dg.PartitionMapping | None:
    """How an output partition maps to the input partitions its window reads."""
    return window_mapping(read.table, read.input.window, output)


def window_mapping(upstream: Table, window: Window, output: Grain) -> dg.PartitionMapping | None:
    """How an output partition of ``output``'s grain maps to the partitions of ``upstream`` that ``window`` reads:
    from a product's code (:func:`mapping_for`) or from its catalog entry, which holds the window as declared."""
    if not upstream.grain.partitioned or not output.partitioned:
        return None
    if window.whole:
        return dg.AllPartitionMapping()
    if upstream.regions:
        return dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=DATE)
    if window.kind == "previous":
        return dg.TimeWindowPartitionMapping(
            start_offset=-window.n, end_offset=-1, allow_nonexistent_upstream_partitions=True
        )
    if window.kind == "last":
        return dg.TimeWindowPartitionMapping(start_offset=-window.lookback, allow_nonexistent_upstream_partitions=True)
    return dg.TimeWindowPartitionMapping(allow_nonexistent_upstream_partitions=True)
