"""Partitions definitions and the mappings that express each input's window."""

from __future__ import annotations

from datetime import date
from functools import lru_cache

import dagster as dg

from mesh_assets.spec.catalog import TableInfo
from mesh_assets.spec.model import Input, Partitioning


@lru_cache(maxsize=256)
def partitions_def(partitioning: Partitioning, start: date) -> dg.PartitionsDefinition | None:
    """One shared definition per (kind, start) so that identical tables compare equal and load fast."""
    if partitioning == "daily":
        return dg.DailyPartitionsDefinition(start_date=start.isoformat())
    if partitioning == "hourly":
        return dg.HourlyPartitionsDefinition(start_date=f"{start.isoformat()}-00:00")
    return None


def mapping_for(inp: Input, upstream: TableInfo, output_partitioning: Partitioning) -> dg.PartitionMapping | None:
    """How an output partition maps to the input partitions its window reads."""
    if upstream.partitioning == "none" or output_partitioning == "none":
        return None
    if inp.window.kind == "all":
        return dg.AllPartitionMapping()
    if inp.window.kind == "last":
        return dg.TimeWindowPartitionMapping(
            start_offset=-inp.window.lookback, allow_nonexistent_upstream_partitions=True
        )
    return dg.TimeWindowPartitionMapping(allow_nonexistent_upstream_partitions=True)
