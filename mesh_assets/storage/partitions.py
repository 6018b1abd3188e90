"""Partition ranges as typed values: parsed from Dagster keys, validated, never pasted as raw text.

Time is UTC: a key names a UTC day or hour, and its values are timezone-aware UTC datetimes. PySpark turns a
naive datetime into an instant with the Python process's local zone (``time.mktime``), so under
``TZ=Europe/Madrid`` a naive ``2023-03-26 02:00`` would reach Spark as 01:00 UTC; an aware one is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

Kind = Literal["daily", "hourly"]
HOUR_FMT = "%Y-%m-%d-%H:%M"


class PartitionKeyError(ValueError):
    """A partition key that is not a real date (or hour)."""


def utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime; a naive value is read as a UTC wall-clock time, as keys are."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def midnight(day: date) -> datetime:
    """The start of ``day`` in UTC."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def timestamp_text(value: datetime) -> str:
    """``value`` as Spark reads a timestamp string, with its zone: ``2023-03-26 02:00:00+00:00``."""
    return utc(value).isoformat(sep=" ", timespec="seconds")


def parse_key(key: str, kind: Kind) -> datetime:
    """``2024-02-29`` (daily) or ``2024-02-29-13:00`` (hourly) -> aware UTC datetime; anything else is refused."""
    try:
        if kind == "daily":
            if len(key) != 10:
                raise ValueError
            return midnight(date.fromisoformat(key))
        return datetime.strptime(key, HOUR_FMT).replace(tzinfo=UTC)
    except (ValueError, TypeError):
        raise PartitionKeyError(f"invalid {kind} partition key {key!r}") from None


def format_key(value: datetime, kind: Kind) -> str:
    value = utc(value)
    return value.date().isoformat() if kind == "daily" else value.strftime(HOUR_FMT)


def step(kind: Kind) -> timedelta:
    return timedelta(days=1) if kind == "daily" else timedelta(hours=1)


@dataclass(frozen=True)
class PartitionRange:
    """An inclusive range of partitions of one kind, e.g. the days a single-run backfill covers.

    ``start`` and ``end`` are aware UTC datetimes (naive ones are taken as UTC wall-clock times).
    """

    kind: Kind
    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", utc(self.start))
        object.__setattr__(self, "end", utc(self.end))

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
        return PartitionRange("daily", midnight(self.start.date()), midnight(self.end.date()))

    def literal(self, value: datetime) -> date | datetime:
        """The Python value Spark compares the partition column with: a DATE for daily, an aware UTC
        TIMESTAMP for hourly (exact in any process zone)."""
        value = utc(value)
        return value.date() if self.kind == "daily" else value
