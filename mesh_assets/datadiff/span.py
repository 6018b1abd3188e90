"""The partitions a diff compares, in the table's own keys: ``--from``/``--to`` name partitions of its grain (any
day names the week or month holding it, a day names its hours or minutes), and a ``date|region`` key also names
its region; the span is the partition column's first and last values, so a range is compared whole."""

from __future__ import annotations

from mesh_assets.datadiff.compare import PartitionSpan
from mesh_assets.graph.resolve import Table
from mesh_assets.model.errors import Refused
from mesh_assets.model.grain import PartitionKeyError, timestamp_text


def partition_span(table: Table, start: str, end: str) -> PartitionSpan:
    """``start``..``end`` (partition keys of ``table``, or days) as its partition column's values; refused, naming
    the table, when a key is not one of its partitions or names a region it does not have."""
    grain = table.grain
    days, regions = [], set()
    for key in (start, end):
        day, _, region = key.partition("|")
        if region:
            if region not in table.regions:
                found = ", ".join(table.regions) or "none"
                raise Refused(f"{table.ref}: partition {key!r} names region {region!r}; its regions: {found}")
            regions.add(region)
        days.append(day)
    try:
        first, last = grain.span(days[0])[0], grain.span(days[1])[1]
    except PartitionKeyError as exc:
        raise Refused(f"{table.ref}: {exc}") from None
    if first > last:
        raise Refused(f"{table.ref}: --from {start} is after --to {end}")
    text = (lambda v: f"{v:%Y-%m-%d}") if grain.spark_type == "date" else timestamp_text
    column = table.region_column if table.regions else None
    return PartitionSpan(table.partition_column, text(first), text(last), column, tuple(sorted(regions)))
