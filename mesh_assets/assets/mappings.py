"""The partition mappings that express each input's window."""

from __future__ import annotations

import dagster as dg

from mesh_assets.graph.resolve import Read
from mesh_assets.model.grain import DATE, Grain


def mapping_for(read: Read, output: Grain) -> dg.PartitionMapping | None:
    """How an output partition maps to the input partitions its window reads."""
    upstream, window = read.table, read.input.window
    if not upstream.grain.partitioned or not output.partitioned:
        return None
    if window.kind == "all":
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
