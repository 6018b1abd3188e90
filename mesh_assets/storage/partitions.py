"""Partition ranges as typed values: parsed from Dagster keys, validated, never pasted as raw text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal

Kind = Literal["daily", "hourly"]
HOUR_FMT = "%Y-%m-%d-%H:%M"


class PartitionKeyError(ValueError):
    """A partition key that is not a real date (or hour)."""


def parse_key(key: str, kind: Kind) -> datetime:
    """``2024-02-29`` (daily) or ``2024-02-29-13:00`` (hourly) -> datetime; anything else is refused."""
    try:
        if kind == "daily":
            if len(key) != 10:
                raise ValueError
            return datetime.combine(date.fromisoformat(key), datetime.min.time())
        return datetime.strptime(key, HOUR_FMT)
    except (ValueError, TypeError):
        raise PartitionKeyError(f"invalid {kind} partition key {key!r}") from None


def format_key(value: datetime, kind: Kind) -> str:
    return value.date().isoformat() if kind == "daily" else value.strftime(HOUR_FMT)


def step(kind: Kind) -> timedelta:
    return timedelta(days=1) if kind == "daily" else timedelta(hours=1)


@dataclass(frozen=True)
class PartitionRange:
    """An inclusive range of partitions of one kind, e.g. the days a single-run backfill covers."""

    kind: Kind
    start: datetime
    end: datetime

    @classmethod
    def from_keys(cls, kind: Kind, start: str, end: str) -> PartitionRange:
        first, last = parse_key(start, kind), parse_key(end, kind)
        if last < first:
            raise PartitionKeyError(f"partition range ends ({end}) before it starts ({start})")
        return cls(kind, first, last)

    def keys(self) -> list[str]:
        return [format_key(v, self.kind) for v in self.values()]

    def values(self) -> list[datetime]:
        out, current = [], self.start
        while current <= self.end:
            out.append(current)
            current += step(self.kind)
        return out

    def single(self, value: datetime) -> PartitionRange:
        return PartitionRange(self.kind, value, value)

    def widen(self, lookback: int) -> PartitionRange:
        """The range extended ``lookback`` partitions into the past (a ``last N`` window)."""
        return PartitionRange(self.kind, self.start - lookback * step(self.kind), self.end)

    def as_kind(self, kind: Kind) -> PartitionRange:
        """The same time span in partitions of ``kind`` (a day's 24 hours, or an hour's day)."""
        if kind == self.kind:
            return self
        if kind == "hourly":
            return PartitionRange("hourly", self.start, self.end + timedelta(hours=23))
        return PartitionRange(
            "daily",
            datetime.combine(self.start.date(), datetime.min.time()),
            datetime.combine(self.end.date(), datetime.min.time()),
        )

    def literal(self, value: datetime) -> date | datetime:
        """The Python value Spark compares the partition column with (DATE for daily, TIMESTAMP for hourly)."""
        return value.date() if self.kind == "daily" else value
