"""Regions with time zones: each region's day from its local midnight to the next, whatever the process's ``TZ``;
the partitions of one region's run and the input partitions it reads; how specs declare and read regions."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from pydantic import ValidationError
from zones import local_time_zone

from mesh_assets.model.grain import Grain, PartitionKeyError
from mesh_assets.model.partitions import PartitionRange, ranges_of_regions, read_region, window_range
from mesh_assets.model.product import ExternalTable, Output
from mesh_assets.model.regions import Region, local_date, local_day
from mesh_assets.model.windows import last, same

REGIONS = {"eu": "Europe/Madrid", "latam": "America/Sao_Paulo", "apac": "Asia/Singapore"}


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("day", "zone", "start", "hours"),
    [
        (date(2024, 3, 31), "Europe/Madrid", at(2024, 3, 30, 23), 23),  # clocks forward at 02:00 CET
        (date(2024, 10, 27), "Europe/Madrid", at(2024, 10, 26, 22), 25),  # clocks back at 03:00 CEST
        (date(2024, 7, 1), "Europe/Madrid", at(2024, 6, 30, 22), 24),
        (date(2024, 3, 31), "America/Sao_Paulo", at(2024, 3, 31, 3), 24),  # no DST since 2019
        (date(2018, 11, 4), "America/Sao_Paulo", at(2018, 11, 4, 3), 23),  # its last spring-forward: no 00:00
        (date(2019, 2, 16), "America/Sao_Paulo", at(2019, 2, 16, 2), 25),  # its last fall-back: 23:00 twice
        (date(2024, 3, 31), "Asia/Singapore", at(2024, 3, 30, 16), 24),
        (date(2024, 3, 31), "UTC", at(2024, 3, 31), 24),
    ],
)
def test_a_regions_day_runs_from_its_local_midnight_under_any_process_zone(day, zone, start, hours):
    with local_time_zone("America/New_York"):
        first, end = local_day(day, zone)
    assert (first, end - first) == (start, timedelta(hours=hours))
    assert first.tzinfo is UTC and end.tzinfo is UTC
    assert local_date(first, zone) == day and local_date(end, zone) == day + timedelta(days=1)


def test_regions_are_a_mapping_to_zones_or_a_list_of_utc_regions():
    out = Output(table="t", regions=REGIONS)
    assert out.regions == tuple(Region(name, zone) for name, zone in REGIONS.items())
    assert ExternalTable(table="x", regions=["eu", "us"]).regions == (Region("eu", "UTC"), Region("us", "UTC"))
    assert Output.model_validate(out.model_dump(mode="json", by_alias=True)).regions == out.regions  # catalogs


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"regions": {"eu": "Europe/Madird"}}, "unknown time zone 'Europe/Madird'"),
        ({"regions": ["eu", "eu"]}, "regions must name each region once"),
        ({"regions": []}, "at least one region"),
        ({"regions": {"EU": "UTC"}}, "region name 'EU'"),
        ({"regions": ["eu"], "partitioning": "hourly"}, "must also be partitioned daily"),
        ({"regions": ["eu"], "region_column": "p_date"}, "region_column p_date is the partition column"),
        ({"regions": ["eu"], "kind": {"name": "merge", "unique_key": ["id"]}}, "of kind partitions, not merge"),
    ],
)
def test_bad_regions_are_refused_by_name(fields, message):
    with pytest.raises(ValidationError, match=message):
        Output(table="t", **fields)


def test_a_runs_keys_become_one_range_of_consecutive_dates_per_region():
    keys = ["2024-03-31|eu", "2024-03-30|eu", "2024-04-02|eu", "2024-03-31|apac"]
    ranges = ranges_of_regions(Grain.DAILY, ("eu", "latam", "apac"), tuple(REGIONS.values()), keys)
    assert [(r.region, r.zone, r.describe()) for r in ranges] == [
        ("eu", "Europe/Madrid", "2024-03-30..2024-03-31"),
        ("eu", "Europe/Madrid", "2024-04-02"),
        ("apac", "Asia/Singapore", "2024-03-31"),
    ]
    assert ranges[0].dagster_keys() == ["2024-03-30|eu", "2024-03-31|eu"]
    with pytest.raises(PartitionKeyError, match="not one of eu, latam, apac"):
        ranges_of_regions(Grain.DAILY, ("eu", "latam", "apac"), tuple(REGIONS.values()), ["2024-03-31|us"])


def test_a_regional_day_reads_the_utc_hours_of_its_local_day():
    day = at(2024, 3, 31)
    eu = PartitionRange(Grain.DAILY, day, day, region="eu", zone="Europe/Madrid")
    hours = window_range(same(), Grain.HOURLY, eu)
    assert (hours.start, hours.end, len(hours.keys())) == (at(2024, 3, 30, 23), at(2024, 3, 31, 21), 23)
    autumn = PartitionRange(Grain.DAILY, at(2024, 10, 27), at(2024, 10, 27), region="eu", zone="Europe/Madrid")
    assert len(window_range(same(), Grain.HOURLY, autumn).keys()) == 25
    apac = PartitionRange(Grain.DAILY, day, day, region="apac", zone="Asia/Singapore")
    assert window_range(same(), Grain.DAILY, apac).keys() == ["2024-03-30", "2024-03-31"]  # the UTC days it spans
    week = window_range(last(2), Grain.HOURLY, eu)
    assert (week.start, week.end) == (at(2024, 3, 29, 23), at(2024, 3, 31, 21))


def test_a_regional_input_is_read_by_one_region_or_every_region():
    day = at(2024, 3, 31)
    eu = PartitionRange(Grain.DAILY, day, day, region="eu", zone="Europe/Madrid")
    assert read_region(None, ("eu", "latam"), eu) == "eu"  # same region on both sides
    assert read_region("latam", ("eu", "latam"), eu) == "latam"  # the one the input names
    assert read_region(None, ("eu", "latam"), PartitionRange(Grain.DAILY, day, day)) is None  # all of a date
    assert read_region(None, (), eu) is None
    same_region = window_range(last(2), Grain.DAILY, eu, "eu")
    assert same_region.dagster_keys() == ["2024-03-30|eu", "2024-03-31|eu"]
