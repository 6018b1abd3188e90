"""Partition ranges as typed values: parsed from Dagster keys, validated, never pasted as raw text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from mesh_assets.model.grain import Grain, PartitionKeyError, utc
from mesh_assets.model.windows import Window


@dataclass(frozen=True)
class PartitionRange:
    """An inclusive range of partitions of one grain, e.g. the days a single-run backfill covers.

    ``start`` and ``end`` are aware UTC datetimes (naive ones are taken as UTC wall-clock times).
    """

    grain: Grain
    start: datetime
    end: datetime

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
        return PartitionRange(self.grain, value, value)

    def widen(self, lookback: int) -> PartitionRange:
        """The range extended ``lookback`` partitions into the past (a ``last N`` window)."""
        return PartitionRange(self.grain, self.grain.shift(self.start, -lookback), self.end)

    def before(self, count: int) -> PartitionRange:
        """The ``count`` partitions before each partition of the range, together (a ``previous`` window):
        ``start - count`` .. ``end - 1``."""
        return PartitionRange(self.grain, self.grain.shift(self.start, -count), self.grain.previous(self.end))

    def as_grain(self, grain: Grain) -> PartitionRange:
        """The same time span in partitions of ``grain`` (a day's 24 hours, a week's 7 days, or an hour's day)."""
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


def window_range(window: Window, grain: Grain, part: PartitionRange | None) -> PartitionRange | None:
    """The partitions of an input of ``grain`` that the output range ``part`` reads through ``window``; None
    for the whole table."""
    if part is None or not grain.partitioned or window.whole:
        return None
    if window.skips_current:
        return part.before(window.n).as_grain(grain)
    return part.widen(window.lookback).as_grain(grain)
