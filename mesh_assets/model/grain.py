"""How a table is partitioned in time: the one place that knows what a minute batch, an hour, a day, a week or a
month is.

A :class:`Grain` owns everything that differs between N-minute (``15min``), hourly, daily, weekly, monthly and
unpartitioned tables: the Dagster partition key's format and parse, the step from one partition to the next
(a function, :meth:`Grain.shift`: a month is not a fixed duration), the Spark type and key pattern of the
partition column, its SQL and Python literals, and the Dagster partitions definition. Nothing else branches
on the spec's ``partitioning`` string; it asks the grain. A week is an ISO week (Monday to Sunday) and its key
is its Monday; a month's key is its first day; both are stored as a ``date`` partition column holding that day.
Dagster is imported by the functions that build its objects, not by the module: a run's body, which may run
as a Spark application without Dagster, needs none.

Time is UTC: a key names a UTC period (its start), and values are timezone-aware UTC datetimes. PySpark turns a
naive datetime into an instant with the Python process's local zone (``time.mktime``), so under
``TZ=Europe/Madrid`` a naive ``2023-03-26 02:00`` would reach Spark as 01:00 UTC; an aware one is exact.
"""

from __future__ import annotations

import re
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


MINUTES = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)
"""The N of an N-minute grain: a divisor of 60, so its partitions tile each hour (and a day, a week, a month)."""
_MINUTE_KEY, _MINUTE_PATTERN = "%Y-%m-%d-%H:%M", "yyyy-MM-dd-HH:mm"
_TICK = timedelta(microseconds=1)


@dataclass(frozen=True)
class Grain:
    """``Grain.minutes(n)``, ``HOURLY``, ``DAILY``, ``WEEKLY``, ``MONTHLY`` or ``NONE`` (the whole table is one unit);
    compare grains with ``is`` (each is one instance, :meth:`minutes` included)."""

    name: str
    key_format: str | None
    """``strftime`` format of a Dagster partition key; None when unpartitioned."""
    spark_pattern: str | None
    """Spark ``date_format`` pattern that spells a partition value as its key."""
    spark_type: str | None
    """Spark type of the partition column: ``date`` or ``timestamp``."""
    length: timedelta | None
    """A partition's nominal length (a month counts 31 days): orders grains and sizes estimates only. A
    partition's start and end come from :meth:`shift`, never from adding it to a time."""
    unit: str | None = None
    """``minute``, ``hour``, ``day``, ``week`` or ``month``; None when unpartitioned."""
    count: int = 1
    """Units per partition (the N of an N-minute grain)."""

    DAILY: ClassVar[Grain]
    HOURLY: ClassVar[Grain]
    NONE: ClassVar[Grain]
    WEEKLY: ClassVar[Grain]
    MONTHLY: ClassVar[Grain]

    def __repr__(self) -> str:
        if self.unit == "minute":
            return f"Grain.minutes({self.count})"
        return f"Grain.{self.name.upper()}"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Unpickled as the same instance (grains compare with ``is``), as cached specs are."""
        return Grain.of, (self.name,)

    def __str__(self) -> str:
        return self.name

    @classmethod
    def of(cls, value: str | Grain) -> Grain:
        """The grain a spec names (``15min``, ``hourly``, ``daily``, ``weekly``, ``monthly``, ``none``); anything
        else is refused."""
        if isinstance(value, Grain):
            return value
        for grain in (cls.DAILY, cls.HOURLY, cls.WEEKLY, cls.MONTHLY, cls.NONE):
            if value == grain.name:
                return grain
        found = re.fullmatch(r"([0-9]{1,2})min", value) if isinstance(value, str) else None
        if found and int(found[1]) in MINUTES:
            return cls.minutes(int(found[1]))
        raise ValueError(
            "partitioning must be 'daily', 'hourly', 'weekly', 'monthly', 'none' or N minutes written "
            f"'<N>min' with N dividing an hour ({', '.join(str(n) for n in MINUTES)}), not {value!r}"
        )

    @classmethod
    def minutes(cls, n: int) -> Grain:
        """The N-minute grain (``15min``): one instance per N."""
        if n not in MINUTES:
            raise ValueError(f"an N-minute grain needs N dividing an hour ({', '.join(map(str, MINUTES))}), not {n}")
        return _minute_grain(n)

    @classmethod
    def of_partitions(cls, partitions_def: dg.PartitionsDefinition) -> Grain:
        """The grain of a Dagster time-partitions definition (in UTC); any other is refused."""
        import dagster as dg

        if isinstance(partitions_def, dg.HourlyPartitionsDefinition):
            return cls.HOURLY
        if isinstance(partitions_def, dg.DailyPartitionsDefinition):
            return cls.DAILY
        if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition) and partitions_def.timezone == "UTC":
            cron = partitions_def.cron_schedule
            for grain in (cls.HOURLY, cls.DAILY, cls.WEEKLY, cls.MONTHLY):
                if cron == grain.cron:
                    return grain
            found = re.fullmatch(r"\*/([0-9]+) \* \* \* \*", cron)
            if found and int(found[1]) in MINUTES:
                return cls.minutes(int(found[1]))
        raise ValueError(f"unsupported partitioning {type(partitions_def).__name__}")

    @property
    def partitioned(self) -> bool:
        return self.length is not None

    @property
    def step(self) -> timedelta | None:
        """The fixed length of every partition (None when unpartitioned), kept for code written before months:
        a monthly grain has none and raises ``ValueError``; step with :meth:`shift` instead."""
        if self.unit == "month":
            raise ValueError("monthly partitions have no fixed step: use Grain.shift/next/previous")
        return self.length

    @property
    def cron(self) -> str | None:
        """When a partition starts, as Dagster's cron schedule (UTC); None when unpartitioned."""
        return {
            "minute": f"*/{self.count} * * * *",
            "hour": "0 * * * *",
            "day": "0 0 * * *",
            "week": "0 0 * * 1",
            "month": "0 0 1 * *",
        }.get(self.unit or "")

    @property
    def grid(self) -> str:
        """Where its partitions start, for messages: ``on the hour``, ``on a Monday``."""
        return {
            "minute": f"on a {self.count}-minute boundary",
            "hour": "on the hour",
            "day": "on the day",
            "week": "on a Monday (ISO weeks)",
            "month": "on a month's first day",
        }.get(self.unit or "", "nowhere")

    def key(self, value: datetime) -> str:
        """The Dagster partition key of the partition starting at ``value`` (read as UTC)."""
        assert self.key_format is not None, "an unpartitioned table has no partition keys"
        return utc(value).strftime(self.key_format)

    def parse(self, key: str) -> datetime:
        """``2024-02-29`` (daily) or ``2024-02-29-13:00`` (hourly) -> aware UTC datetime; anything else,
        including a key of another format or one where no partition starts (a Wednesday for a weekly grain),
        is refused."""
        try:
            if self.key_format is None:
                raise ValueError
            value = datetime.strptime(key, self.key_format).replace(tzinfo=UTC)
            if value.strftime(self.key_format) != key:  # strptime accepts "2024-2-1" and trailing text
                raise ValueError
        except (ValueError, TypeError):
            raise PartitionKeyError(f"invalid {self.name} partition key {key!r}") from None
        if self.floor(value) != value:
            raise PartitionKeyError(f"invalid {self.name} partition key {key!r}: its partitions start {self.grid}")
        return value

    def span(self, key: str) -> tuple[datetime, datetime]:
        """The first and last partitions of this grain that ``key`` names: its own key names one; for a grain
        finer than a day, a day's key (``2024-02-29``) names that day's partitions; for a week or a month, any
        day's key names the week or month holding it."""
        if self.finer_than(Grain.DAILY):
            try:
                day = Grain.DAILY.parse(key)
            except PartitionKeyError:
                pass
            else:
                return day, self.last_within(day, Grain.DAILY)
        try:
            value = self.parse(key)
        except PartitionKeyError:
            if not Grain.DAILY.finer_than(self):
                raise
            value = self.floor(Grain.DAILY.parse(key))
        return value, value

    def last_within(self, start: datetime, outer: Grain) -> datetime:
        """The last partition of this grain inside the ``outer`` partition starting at ``start`` (a day's
        23:00 hour); the one holding ``start`` when this grain is as coarse as ``outer``."""
        assert self.partitioned and outer.partitioned
        if not self.finer_than(outer):
            return self.floor(start)
        return self.floor(outer.next(outer.floor(start)) - _TICK)

    def literal(self, value: datetime) -> date | datetime:
        """The Python value Spark compares the partition column with: a DATE for a day, week or month (its first
        day), an aware UTC TIMESTAMP for an hour or minutes (exact in any process zone)."""
        value = utc(value)
        return value.date() if self.spark_type == "date" else value

    def sql_literal(self, value: datetime) -> str:
        """The partition value as a SQL literal (only typed values reach here, never user text)."""
        if self.spark_type == "date":
            return f"DATE'{utc(value):%Y-%m-%d}'"
        return f"TIMESTAMP'{timestamp_text(value)}'"

    def floor(self, value: datetime) -> datetime:
        """The start of the partition ``value`` falls in."""
        value = utc(value).replace(second=0, microsecond=0)
        if self.unit == "minute":
            return value.replace(minute=value.minute - value.minute % self.count)
        value = value.replace(minute=0)
        if self.unit in (None, "hour"):
            return value
        value = value.replace(hour=0)
        if self.unit == "week":
            return value - timedelta(days=value.weekday())
        return value.replace(day=1) if self.unit == "month" else value

    def shift(self, value: datetime, n: int) -> datetime:
        """The start of the partition ``n`` partitions after (``n < 0``: before) the one holding ``value``."""
        assert self.length is not None, "an unpartitioned table has no partitions to step through"
        start = self.floor(value)
        if self.unit == "month":
            months = start.year * 12 + start.month - 1 + n
            return start.replace(year=months // 12, month=months % 12 + 1)
        return start + n * self.length

    def next(self, value: datetime) -> datetime:
        """The start of the partition after the one holding ``value`` (the end of that one, excluded)."""
        return self.shift(value, 1)

    def previous(self, value: datetime) -> datetime:
        """The start of the partition before the one holding ``value``."""
        return self.shift(value, -1)

    def count_between(self, start: datetime, end: datetime) -> int:
        """How many partitions start in ``[start, end)`` (both on this grain's grid); 0 when ``end <= start``."""
        assert self.length is not None
        if end <= start:
            return 0
        if self.unit == "month":
            return (end.year - start.year) * 12 + end.month - start.month
        return (end - start) // self.length

    def finer_than(self, other: Grain) -> bool:
        """Both are partitioned and this grain's partitions are shorter (an hour is finer than a day)."""
        return self.length is not None and other.length is not None and self.length < other.length

    def nests_in(self, outer: Grain) -> bool:
        """Every ``outer`` partition is a whole number of this grain's partitions (days nest in weeks and months,
        weeks do not nest in months), so a rollup of this grain into ``outer`` reads whole partitions."""
        if self is outer:
            return self.partitioned
        return self.finer_than(outer) and not (self.unit == "week" and outer.unit == "month")

    def partitions_def(
        self, start: date, regions: tuple[str, ...] | None = None, end: date | None = None
    ) -> dg.PartitionsDefinition | None:
        """Dagster's partitions definition from ``start`` up to ``end`` (excluded; None: the present), with a
        region dimension for ``regions``. A weekly or monthly definition's first partition is the first week
        (month) starting on or after ``start``, as Dagster counts them."""
        return _partitions_def(self.name, start, tuple(regions) if regions else None, end)


_DAY = timedelta(days=1)
Grain.DAILY = Grain("daily", "%Y-%m-%d", "yyyy-MM-dd", "date", _DAY, "day")
Grain.HOURLY = Grain("hourly", _MINUTE_KEY, _MINUTE_PATTERN, "timestamp", timedelta(hours=1), "hour")
Grain.WEEKLY = Grain("weekly", "%Y-%m-%d", "yyyy-MM-dd", "date", 7 * _DAY, "week")
Grain.MONTHLY = Grain("monthly", "%Y-%m-%d", "yyyy-MM-dd", "date", 31 * _DAY, "month")
Grain.NONE = Grain("none", None, None, None, None)


@lru_cache(maxsize=len(MINUTES))
def _minute_grain(n: int) -> Grain:
    return Grain(f"{n}min", _MINUTE_KEY, _MINUTE_PATTERN, "timestamp", timedelta(minutes=n), "minute", n)


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
    if grain is Grain.WEEKLY:
        return dg.WeeklyPartitionsDefinition(
            start_date=start.isoformat(), day_offset=1, end_date=end and end.isoformat()
        )
    if grain is Grain.MONTHLY:
        return dg.MonthlyPartitionsDefinition(start_date=start.isoformat(), end_date=end and end.isoformat())
    if grain.unit == "minute":
        return dg.TimeWindowPartitionsDefinition(
            cron_schedule=grain.cron,
            start=f"{start.isoformat()}-00:00",
            end=end and f"{end.isoformat()}-00:00",
            fmt=_MINUTE_KEY,
            timezone="UTC",
        )
    return None


def _grain(value: Any) -> Any:
    return Grain.of(value) if isinstance(value, str | Grain) else value


GrainField = Annotated[
    Grain,
    BeforeValidator(_grain),
    PlainSerializer(lambda grain: grain.name, return_type=str),
    WithJsonSchema(
        {"type": "string", "enum": ["daily", "hourly", "none", "weekly", "monthly", *(f"{n}min" for n in MINUTES)]}
    ),
]
"""A spec field holding a grain: written ``15min`` / ``hourly`` / ``daily`` / ``weekly`` / ``monthly`` /
``none``, validated into a :class:`Grain`."""
