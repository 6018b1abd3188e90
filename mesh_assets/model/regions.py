"""Regions and their local days: a date-by-region table's day in one region runs from that region's midnight to
its next midnight, in the region's own time zone.

A spec names regions with their zones (``{eu: Europe/Madrid, apac: Asia/Singapore}``) or as a plain list, whose
days are UTC days. A region's day is 24 hours except on its daylight-saving changes (Europe/Madrid's
2024-03-31 is 23 hours, 2024-10-27 25): the bounds come from :mod:`zoneinfo` for the date and zone alone, never
from the process's ``TZ``, and are returned as aware UTC datetimes, which is how the data is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

from mesh_assets.model.names import IDENTIFIER

UTC_ZONE = "UTC"
NO_REGIONAL_REBUILD = (
    "{ref} is partitioned by date and region: a rebuild would rewrite the whole table one region at a time, "
    "dropping the others; publish the schema change as a new version of the table (version: 2) instead"
)
"""Why a table partitioned by region is not rebuilt (``mesh rebuild``, a run tagged ``mesh/rebuild``)."""


@dataclass(frozen=True)
class Region:
    """One region of a table: its name (a partition value) and the IANA time zone its days are counted in."""

    name: str
    zone: str = UTC_ZONE


@lru_cache(maxsize=64)
def zone_info(zone: str) -> ZoneInfo:
    """The zone named ``zone``; an unknown name is refused."""
    try:
        return ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {zone!r} (an IANA name such as Europe/Madrid)") from None


def local_day(day: date, zone: str) -> tuple[datetime, datetime]:
    """``[start, end)`` of ``day`` in ``zone`` as aware UTC datetimes: its local midnight and the next one."""
    info = zone_info(zone)
    start = datetime.combine(day, time(), tzinfo=info)
    end = datetime.combine(day + timedelta(days=1), time(), tzinfo=info)
    return start.astimezone(UTC), end.astimezone(UTC)


def local_date(moment: datetime, zone: str) -> date:
    """The date in ``zone`` of the instant ``moment`` (a naive value is a UTC time)."""
    value = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
    return value.astimezone(zone_info(zone)).date()


def parse_regions(value: Any) -> tuple[Region, ...] | None:
    """``[eu, apac]`` (UTC days) or ``{eu: Europe/Madrid, ...}`` as regions, each name once, each zone known."""
    if value is None:
        return None
    if isinstance(value, dict):
        pairs = [(name, zone) for name, zone in value.items()]
    elif isinstance(value, list | tuple):
        pairs = [(item.name, item.zone) if isinstance(item, Region) else (item, UTC_ZONE) for item in value]
    else:
        raise ValueError("regions must be a list of names or a mapping of names to time zones")
    if not pairs:
        raise ValueError("regions must name at least one region")
    regions = []
    for name, zone in pairs:
        if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
            raise ValueError(f"region name {name!r}: use lower-case letters, digits and '_', starting with a letter")
        if not isinstance(zone, str):
            raise ValueError(f"region {name}: time zone must be a name such as Europe/Madrid, not {zone!r}")
        zone_info(zone)
        regions.append(Region(name, zone))
    if len({r.name for r in regions}) != len(regions):
        raise ValueError("regions must name each region once")
    return tuple(regions)


def _serialize(regions: tuple[Region, ...] | None) -> dict[str, str] | None:
    return None if regions is None else {r.name: r.zone for r in regions}


RegionsField = Annotated[
    tuple[Region, ...] | None,
    BeforeValidator(parse_regions),
    PlainSerializer(_serialize),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "array", "items": {"type": "string"}},
                {"type": "object", "additionalProperties": {"type": "string"}},
                {"type": "null"},
            ]
        }
    ),
]
"""A spec field holding regions: a list of names (UTC days) or a mapping of names to IANA time zones."""
