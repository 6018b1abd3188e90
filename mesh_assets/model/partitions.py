"""Partition ranges as typed values: parsed from Dagster keys, validated, never pasted as raw text.

A range of a table partitioned by date and region is one region's dates: its keys are the dates (what the
partition column holds, the region's local dates), ``region`` the value of its region column and ``zone`` where
its days start, so an input partitioned in UTC is read over the region's local days
(:meth:`PartitionRange.as_grain`). Dagster's keys (``2024-03-31|eu``) are its :meth:`PartitionRange.dagster_keys`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from mesh_assets.model.grain import Grain, PartitionKeyError, region_key, utc
from mesh_assets.model.regions import local_day
from mesh_assets.model.windows import Window


@dataclass(frozen=True)
class PartitionRange:
    """An inclusive range of partitions of one grain, e.g. the days a single-run backfill covers.

    ``start`` and ``end`` are aware UTC datetimes (naive ones are taken as UTC wall-clock times).
    """

    grain: Grain
    start: datetime
    end: datetime
    region: str | None = None
    """The region whose dates these are (a table partitioned by date and region), else None."""
    zone: str | None = None
    """The region's time zone: its dates run from local midnight to local midnight."""

    def __post_init__(self) -> None:
        if not self.grain.partitioned:
            raise ValueError("an unpartitioned table has no partition range")
        object.__setattr__(self, "start", utc(self.start))
        object.__setattr__(self, "end", utc(self.end))

    @classmethod
    def from_keys(cls, grain: Grain, start: str, end: str) -> PartitionRange:
        first, last = grain.parse(start), grain.parse(end)
        if last < first:
            raise PartitionKeyError(f"partition range ends ({end}) before it starts ({start})")
        return cls(grain, first, last)

    def keys(self) -> list[str]:
        return [self.grain.key(v) for v in self.values()]

    def dagster_keys(self) -> list[str]:
        """Dagster's partition keys of the range: ``2024-03-31|eu`` for a region's, else :meth:`keys`."""
        keys = self.keys()
        return keys if self.region is None else [region_key(k, self.region) for k in keys]

    def dagster_key(self, key: str) -> str:
        """Dagster's key of one of :meth:`keys`."""
        return key if self.region is None else region_key(key, self.region)

    def bounds(self, value: datetime) -> tuple[datetime, datetime]:
        """``[start, end)`` in UTC of the partition ``value`` names: a region's local day, else the grain's step."""
        if self.zone is not None:
            return local_day(utc(value).date(), self.zone)
        return utc(value), self.grain.next(utc(value))

    def values(self) -> list[datetime]:
        out, current = [], self.start
        while current <= self.end:
            out.append(current)
            current = self.grain.next(current)
        return out

    def describe(self) -> str:
        """``2021-06-01`` or ``2021-06-01..2021-06-07``."""
        first, last = self.grain.key(self.start), self.grain.key(self.end)
        return first if first == last else f"{first}..{last}"

    def single(self, value: datetime) -> PartitionRange:
        return replace(self, start=value, end=value)

    def widen(self, lookback: int) -> PartitionRange:
        """The range extended ``lookback`` partitions into the past (a ``last N`` window)."""
        return replace(self, start=self.grain.shift(self.start, -lookback))

    def before(self, count: int) -> PartitionRange:
        """The ``count`` partitions before each partition of the range, together (a ``previous`` window):
        ``start - count`` .. ``end - 1``."""
        return replace(self, start=self.grain.shift(self.start, -count), end=self.grain.previous(self.end))

    def as_grain(self, grain: Grain) -> PartitionRange:
        """The same time span in partitions of ``grain`` (a day's 24 hours, a week's 7 days, or an hour's day); a
        region's local days in UTC partitions: the hours from its first local midnight to its last (23 or 25 a day
        across a daylight-saving change), or the UTC days they touch."""
        if self.zone is not None:
            first, last = self.bounds(self.start)[0], self.bounds(self.end)[1] - timedelta(microseconds=1)
            return PartitionRange(grain, grain.floor(first), grain.floor(last))
        if grain is self.grain:
            return self
        if grain.finer_than(self.grain):
            return PartitionRange(grain, grain.floor(self.start), grain.last_within(self.end, self.grain))
        return PartitionRange(grain, grain.floor(self.start), grain.floor(self.end))

    def end_excluded(self) -> datetime:
        """Where the range's last partition ends: the start of the partition after it."""
        return self.grain.next(self.end)

    def literal(self, value: datetime) -> date | datetime:
        """The Python value Spark compares the partition column with (see :meth:`Grain.literal`)."""
        return self.grain.literal(value)


def window_range(
    window: Window, grain: Grain, part: PartitionRange | None, region: str | None = None
) -> PartitionRange | None:
    """The partitions of an input of ``grain`` that the output range ``part`` reads through ``window``; None
    for the whole table. ``region``: the input's region read (a regional input read by region), whose dates
    are the output's dates; a regional output's dates read from a UTC-partitioned input are its local days."""
    if part is None or not grain.partitioned or window.whole:
        return None
    spanned = part.before(window.n) if window.skips_current else part.widen(window.lookback)
    if region is not None:
        return PartitionRange(grain, spanned.start, spanned.end, region=region)
    return spanned.as_grain(grain)


def read_region(named: str | None, regions: tuple[str, ...], part: PartitionRange | None) -> str | None:
    """The one region an input of a table with ``regions`` reads for ``part``: the one it ``named``, else the
    output's own region when the table has it; None when it reads every region of a date (or has none)."""
    if not regions:
        return None
    if named is not None:
        return named
    return part.region if part is not None and part.region in regions else None


def ranges_of_regions(
    grain: Grain, regions: tuple[str, ...], zones: tuple[str, ...], keys: list[str]
) -> list[PartitionRange]:
    """Dagster's keys of a table partitioned by date and region (``2024-03-31|eu``) as ranges of one region's
    consecutive dates each, regions in ``regions``' order; a key of another region, or not a date, is refused."""
    dates: dict[str, list[datetime]] = {region: [] for region in regions}
    for key in keys:
        day, _, region = key.partition("|")
        if region not in dates:
            raise PartitionKeyError(f"invalid partition key {key!r}: its region is not one of {', '.join(regions)}")
        dates[region].append(grain.parse(day))
    ranges = []
    for region, zone in zip(regions, zones, strict=True):
        values = sorted(set(dates[region]))
        while values:
            run = 1
            while run < len(values) and values[run] == grain.next(values[run - 1]):
                run += 1
            ranges.append(PartitionRange(grain, values[0], values[run - 1], region=region, zone=zone))
            values = values[run:]
    return ranges
