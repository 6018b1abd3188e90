"""Partitions definitions and the mappings that express each input's window."""

from __future__ import annotations

from datetime import date
from functools import lru_cache

import dagster as dg

from mesh_assets.spec.catalog import TableInfo
from mesh_assets.spec.model import Input, Partitioning


def region_key(day: str, region: str) -> str:
    """Dagster's key of one (day, region) partition."""
    return str(dg.MultiPartitionKey({DATE: day, REGION: region}))


def complete_days(materialized: set[str], info: TableInfo) -> set[str]:
    """The published partition keys of ``info`` as consumers count them: a regional day only with every region."""
    if not info.regions:
        return materialized
    regions: dict[str, set[str]] = {}
    for key in materialized:
        day, region = key.split("|")
        regions.setdefault(day, set()).add(region)
    return {day for day, found in regions.items() if found >= set(info.regions)}


DATE, REGION = "date", "region"


@lru_cache(maxsize=256)
def partitions_def(
    partitioning: Partitioning, start: date, regions: tuple[str, ...] | None = None
) -> dg.PartitionsDefinition | None:
    """One shared definition per (kind, start, regions) so that identical tables compare equal and load fast."""
    if partitioning == "daily" and regions:
        return dg.MultiPartitionsDefinition(
            {DATE: partitions_def("daily", start), REGION: dg.StaticPartitionsDefinition(list(regions))}
        )
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
    if upstream.regions:
        return dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=DATE)
    if inp.window.kind == "last":
        return dg.TimeWindowPartitionMapping(
            start_offset=-inp.window.lookback, allow_nonexistent_upstream_partitions=True
        )
    return dg.TimeWindowPartitionMapping(allow_nonexistent_upstream_partitions=True)
