"""How a table is partitioned in time: the one place that knows what a day or an hour is.

A :class:`Grain` owns everything that differs between daily, hourly and unpartitioned tables: the Dagster
partition key's format and parse, the step between partitions, the Spark type and key pattern of the
partition column, its SQL and Python literals, and the Dagster partitions definition. Nothing else branches
on the spec's ``partitioning`` string; it asks the grain. Dagster is imported by the functions that build its
objects, not by the module: a run's body, which may run as a Spark application without Dagster, needs none.

Time is UTC: a key names a UTC day or hour, and values are timezone-aware UTC datetimes. PySpark turns a
naive datetime into an instant with the Python process's local zone (``time.mktime``), so under
``TZ=Europe/Madrid`` a naive ``2023-03-26 02:00`` would reach Spark as 01:00 UTC; an aware one is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

if TYPE_CHECKING:
    import dagster as dg

DATE, REGION = "date", "region"
"""The dimensions of a date-by-region table's Dagster partitions."""


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


def region_key(day: str, region: str) -> str:
    """Dagster's key of one (day, region) partition."""
    import dagster as dg

    return str(dg.MultiPartitionKey({DATE: day, REGION: region}))


@dataclass(frozen=True)
class Grain:
    """``DAILY``, ``HOURLY`` or ``NONE`` (the whole table is one unit); compare grains with ``is``."""

    name: str
    key_format: str | None
    """``strftime`` format of a Dagster partition key; None when unpartitioned."""
    spark_pattern: str | None
    """Spark ``date_format`` pattern that spells a partition value as its key."""
    spark_type: str | None
    """Spark type of the partition column: ``date`` or ``timestamp``."""
    step: timedelta | None

    DAILY: ClassVar[Grain]
    HOURLY: ClassVar[Grain]
    NONE: ClassVar[Grain]

    def __repr__(self) -> str:
        return f"Grain.{self.name.upper()}"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Unpickled as the same instance (grains compare with ``is``), as cached specs are."""
        return Grain.of, (self.name,)

    def __str__(self) -> str:
        return self.name

    @classmethod
    def of(cls, value: str | Grain) -> Grain:
        """The grain a spec names (``daily``, ``hourly``, ``none``); anything else is refused."""
        if isinstance(value, Grain):
            return value
        for grain in (cls.DAILY, cls.HOURLY, cls.NONE):
            if value == grain.name:
                return grain
        raise ValueError(f"partitioning must be 'daily', 'hourly' or 'none', not {value!r}")

    @classmethod
    def of_partitions(cls, partitions_def: dg.PartitionsDefinition) -> Grain:
        """The grain of a Dagster time-partitions definition (hourly or daily); any other is refused."""
        import dagster as dg

        if isinstance(partitions_def, dg.HourlyPartitionsDefinition):
            return cls.HOURLY
        if isinstance(partitions_def, dg.DailyPartitionsDefinition):
            return cls.DAILY
        raise ValueError(f"unsupported partitioning {type(partitions_def).__name__}")

    @property
    def partitioned(self) -> bool:
        return self.step is not None

    def key(self, value: datetime) -> str:
        """The Dagster partition key of the partition starting at ``value`` (read as UTC)."""
        assert self.key_format is not None, "an unpartitioned table has no partition keys"
        return utc(value).strftime(self.key_format)

    def parse(self, key: str) -> datetime:
        """``2024-02-29`` (daily) or ``2024-02-29-13:00`` (hourly) -> aware UTC datetime; anything else,
        including a key of the other grain, is refused."""
        try:
            if self.key_format is None:
                raise ValueError
            value = datetime.strptime(key, self.key_format).replace(tzinfo=UTC)
            if value.strftime(self.key_format) != key:  # strptime accepts "2024-2-1" and trailing text
                raise ValueError
            return value
        except (ValueError, TypeError):
            raise PartitionKeyError(f"invalid {self.name} partition key {key!r}") from None

    def span(self, key: str) -> tuple[datetime, datetime]:
        """The first and last partitions of this grain that ``key`` names: its own key names one, and for an
        hourly grain a day's key (``2024-02-29``) names that day's 24 hours."""
        if self is Grain.HOURLY:
            try:
                day = Grain.DAILY.parse(key)
            except PartitionKeyError:
                pass
            else:
                return day, self.last_within(day, Grain.DAILY)
        value = self.parse(key)
        return value, value

    def last_within(self, start: datetime, outer: Grain) -> datetime:
        """The last partition of this grain inside the ``outer`` partition starting at ``start`` (a day's
        23:00 hour); ``start`` itself when this grain is as coarse as ``outer``."""
        assert self.step is not None and outer.step is not None
        return utc(start) + max(outer.step - self.step, timedelta())

    def literal(self, value: datetime) -> date | datetime:
        """The Python value Spark compares the partition column with: a DATE for daily, an aware UTC
        TIMESTAMP for hourly (exact in any process zone)."""
        value = utc(value)
        return value.date() if self is Grain.DAILY else value

    def sql_literal(self, value: datetime) -> str:
        """The partition value as a SQL literal (only typed values reach here, never user text)."""
        if self is Grain.DAILY:
            return f"DATE'{utc(value):%Y-%m-%d}'"
        return f"TIMESTAMP'{timestamp_text(value)}'"

    def floor(self, value: datetime) -> datetime:
        """The start of the partition ``value`` falls in."""
        value = utc(value).replace(minute=0, second=0, microsecond=0)
        return value.replace(hour=0) if self is Grain.DAILY else value

    def partitions_def(
        self, start: date, regions: tuple[str, ...] | None = None, end: date | None = None
    ) -> dg.PartitionsDefinition | None:
        """Dagster's partitions definition from ``start`` up to ``end`` (excluded; None: the present), with a
        region dimension for ``regions``."""
        return _partitions_def(self.name, start, tuple(regions) if regions else None, end)


Grain.DAILY = Grain("daily", "%Y-%m-%d", "yyyy-MM-dd", "date", timedelta(days=1))
Grain.HOURLY = Grain("hourly", "%Y-%m-%d-%H:%M", "yyyy-MM-dd-HH:mm", "timestamp", timedelta(hours=1))
Grain.NONE = Grain("none", None, None, None, None)


@lru_cache(maxsize=256)
def _partitions_def(
    name: str, start: date, regions: tuple[str, ...] | None, end: date | None
) -> dg.PartitionsDefinition | None:
    """One shared definition per (grain, start, regions, end), so identical tables compare equal and load fast."""
    import dagster as dg

    grain = Grain.of(name)
    if grain is Grain.DAILY and regions:
        return dg.MultiPartitionsDefinition(
            {DATE: _partitions_def(name, start, None, end), REGION: dg.StaticPartitionsDefinition(list(regions))}
        )
    if grain is Grain.DAILY:
        return dg.DailyPartitionsDefinition(start_date=start.isoformat(), end_date=end and end.isoformat())
    if grain is Grain.HOURLY:
        return dg.HourlyPartitionsDefinition(
            start_date=f"{start.isoformat()}-00:00", end_date=end and f"{end.isoformat()}-00:00"
        )
    return None


def _grain(value: Any) -> Any:
    return Grain.of(value) if isinstance(value, str | Grain) else value


GrainField = Annotated[
    Grain,
    BeforeValidator(_grain),
    PlainSerializer(lambda grain: grain.name, return_type=str),
    WithJsonSchema({"type": "string", "enum": ["daily", "hourly", "none"]}),
]
"""A spec field holding a grain: written ``daily`` / ``hourly`` / ``none``, validated into a :class:`Grain`."""
