"""Minute, weekly and monthly grains: keys, parse, steps and windows in UTC, with no fixed length for a month."""

from __future__ import annotations

import pickle
from datetime import UTC, date, datetime

import dagster as dg
import pytest
from zones import local_time_zone

from mesh_assets.model.grain import Grain, PartitionKeyError
from mesh_assets.model.partitions import PartitionRange, window_range
from mesh_assets.model.product import Output
from mesh_assets.model.windows import last, previous, same

QUARTER = Grain.minutes(15)


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_a_spec_names_each_grain_and_refuses_minutes_that_do_not_divide_an_hour():
    assert Grain.of("15min") is QUARTER is Grain.minutes(15)
    assert Grain.of("weekly") is Grain.WEEKLY and Grain.of("monthly") is Grain.MONTHLY
    assert Output(table="t", partitioning="5min").partitioning is Grain.minutes(5)
    assert pickle.loads(pickle.dumps(QUARTER)) is QUARTER
    for wrong in ("7min", "15m", "quarterly", "60min"):
        with pytest.raises(ValueError, match="partitioning must be 'daily', 'hourly', 'weekly', 'monthly'"):
            Grain.of(wrong)


def test_minute_keys_are_dagster_s_and_off_grid_keys_are_refused():
    assert QUARTER.key(at(2024, 2, 29, 23, 45)) == "2024-02-29-23:45"
    assert QUARTER.parse("2024-02-29-23:45") == at(2024, 2, 29, 23, 45)
    assert QUARTER.next(at(2024, 2, 29, 23, 45)) == at(2024, 3, 1)
    assert QUARTER.floor(at(2024, 2, 29, 23, 59, 59)) == at(2024, 2, 29, 23, 45)
    with pytest.raises(PartitionKeyError, match="'2024-02-29-23:50': its partitions start on a 15-minute boundary"):
        QUARTER.parse("2024-02-29-23:50")
    assert QUARTER.sql_literal(at(2024, 2, 29, 23, 45)) == "TIMESTAMP'2024-02-29 23:45:00+00:00'"


def test_iso_weeks_start_on_monday_across_the_year_end_and_week_53():
    # 2020 has an ISO week 53: Monday 2020-12-28 to Sunday 2021-01-03.
    assert Grain.WEEKLY.floor(at(2021, 1, 3, 23, 59)) == at(2020, 12, 28)
    assert Grain.WEEKLY.next(at(2020, 12, 28)) == at(2021, 1, 4)
    assert at(2020, 12, 28).isocalendar()[:2] == (2020, 53)
    assert Grain.WEEKLY.parse("2020-12-28") == at(2020, 12, 28)
    with pytest.raises(PartitionKeyError, match="start on a Monday"):
        Grain.WEEKLY.parse("2021-01-01")
    assert Grain.WEEKLY.span("2021-01-01") == (at(2020, 12, 28), at(2020, 12, 28))  # a day names its week
    assert Grain.WEEKLY.literal(at(2020, 12, 28)) == date(2020, 12, 28)


def test_months_step_by_calendar_including_a_leap_february():
    assert Grain.MONTHLY.next(at(2024, 1, 1)) == at(2024, 2, 1)
    assert Grain.MONTHLY.next(at(2024, 2, 1)) == at(2024, 3, 1)
    assert Grain.MONTHLY.shift(at(2024, 1, 1), -1) == at(2023, 12, 1)
    assert Grain.MONTHLY.shift(at(2023, 11, 1), 3) == at(2024, 2, 1)
    assert Grain.MONTHLY.floor(at(2024, 2, 29, 23, 59)) == at(2024, 2, 1)
    february = PartitionRange(Grain.MONTHLY, at(2024, 2, 1), at(2024, 2, 1)).as_grain(Grain.DAILY)
    assert (february.keys()[0], february.keys()[-1], len(february.keys())) == ("2024-02-01", "2024-02-29", 29)
    assert len(PartitionRange(Grain.MONTHLY, at(2023, 2, 1), at(2023, 2, 1)).as_grain(Grain.DAILY).keys()) == 28
    assert PartitionRange(Grain.MONTHLY, at(2023, 11, 1), at(2024, 2, 1)).keys() == [
        "2023-11-01",
        "2023-12-01",
        "2024-01-01",
        "2024-02-01",
    ]
    with pytest.raises(PartitionKeyError, match="start on a month's first day"):
        Grain.MONTHLY.parse("2024-02-29")


@pytest.mark.parametrize("zone", ["Europe/Madrid", "Asia/Tokyo"])
def test_steps_are_utc_whatever_the_process_zone(zone: str):
    with local_time_zone(zone):  # 2023-03-26 is 23 hours long in Madrid; in UTC it has 96 quarter hours
        day = PartitionRange(Grain.DAILY, at(2023, 3, 26), at(2023, 3, 26))
        assert len(day.as_grain(QUARTER).keys()) == 96
        assert Grain.WEEKLY.next(at(2023, 3, 20)) == at(2023, 3, 27)
        assert Grain.MONTHLY.floor(datetime(2023, 3, 31, 23, 30)) == at(2023, 3, 1)  # naive: a UTC wall time
        assert Grain.WEEKLY.parse("2023-03-27") == at(2023, 3, 27)


def test_windows_count_in_the_output_s_own_grain():
    week = PartitionRange(Grain.WEEKLY, at(2024, 2, 5), at(2024, 2, 5))
    four_weeks = window_range(last(4), Grain.DAILY, week)
    assert four_weeks is not None and (four_weeks.start, four_weeks.end) == (at(2024, 1, 15), at(2024, 2, 11))
    month = PartitionRange(Grain.MONTHLY, at(2024, 3, 1), at(2024, 3, 1))
    before = window_range(previous(1), Grain.DAILY, month)
    assert before is not None and (before.start, before.end) == (at(2024, 2, 1), at(2024, 2, 29))
    hour = PartitionRange(Grain.HOURLY, at(2024, 2, 29, 23), at(2024, 2, 29, 23))
    quarters = window_range(same(), QUARTER, hour)
    assert quarters is not None and quarters.keys() == [f"2024-02-29-23:{m:02d}" for m in (0, 15, 30, 45)]


def test_only_nesting_grains_roll_up():
    assert QUARTER.nests_in(Grain.HOURLY) and Grain.HOURLY.nests_in(Grain.DAILY)
    assert Grain.DAILY.nests_in(Grain.WEEKLY) and Grain.DAILY.nests_in(Grain.MONTHLY)
    assert not Grain.WEEKLY.nests_in(Grain.MONTHLY)
    assert not Grain.DAILY.nests_in(Grain.HOURLY)


@pytest.mark.parametrize(
    ("grain", "expected"),
    [
        (QUARTER, ["2024-01-01-00:00", "2024-01-01-00:15"]),
        (Grain.WEEKLY, ["2024-01-08", "2024-01-15"]),  # the first Monday on or after the start date
        (Grain.MONTHLY, ["2024-02-01", "2024-03-01"]),
    ],
)
def test_dagster_partitions_match_the_grain(grain: Grain, expected: list[str]):
    definition = grain.partitions_def(date(2024, 1, 1) if grain is QUARTER else date(2024, 1, 3))
    assert isinstance(definition, dg.TimeWindowPartitionsDefinition)
    assert definition.get_partition_keys(current_time=datetime(2024, 6, 1, tzinfo=UTC))[:2] == expected
    assert Grain.of_partitions(definition) is grain
    assert all(grain.parse(k) == grain.floor(grain.parse(k)) for k in expected)


def test_a_backfill_range_of_days_names_the_weeks_and_the_quarter_hours_holding_them():
    from mesh_assets.backfill.plan import partition_bounds

    weekly = Grain.WEEKLY.partitions_def(date(2024, 1, 1))
    assert weekly is not None
    assert partition_bounds(weekly, "2024-01-03", "2024-02-29") == dg.PartitionKeyRange("2024-01-01", "2024-02-26")
    quarters = QUARTER.partitions_def(date(2024, 1, 1))
    assert quarters is not None
    assert partition_bounds(quarters, "2024-02-29", "2024-02-29") == dg.PartitionKeyRange(
        "2024-02-29-00:00", "2024-02-29-23:45"
    )


def test_the_fixed_step_of_older_code_is_refused_for_months():
    assert Grain.HOURLY.step == QUARTER.step * 4 and Grain.NONE.step is None
    with pytest.raises(ValueError, match=r"monthly partitions have no fixed step: use Grain\.shift"):
        _ = Grain.MONTHLY.step
