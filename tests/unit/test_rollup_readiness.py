"""Rollups from the instance's records (no Spark): a coarser partition waits for every finer partition of its
window to be published and checked, unless its input accepts a share of them (``min_complete``)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
from runless import report_checks

from mesh_assets.assets.mappings import window_mapping
from mesh_assets.automation.deadlines import late_inputs
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph, Table, TableKind
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.model.product import Input, Window
from mesh_assets.run.readiness import Partial, unready

QUARTER = Grain.minutes(15)
ROLLUPS = Path(__file__).resolve().parents[1] / "fixtures" / "rollups" / "domains"


def table(name: str, grain: Grain, **extra) -> Table:
    fields = dict(
        domain="up",
        name=name,
        product=name,
        owner="team:data",
        published=True,
        grain=grain,
        partition_column="p_ts",
        kind=TableKind.PRODUCT,
        start_date=date(2020, 12, 1),
        blocking_checks=(),
        source_file=None,
        line=None,
    )
    return Table(**{**fields, **extra})


def publish(instance: dg.DagsterInstance, info: Table, *partitions: str, **checks: bool) -> None:
    for partition in partitions:
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=info.key, partition=partition))
        if checks:
            report_checks(instance, info.key, partition, **checks)


def one(grain: Grain, key: str) -> PartitionRange:
    return PartitionRange.from_keys(grain, key, key)


def test_a_week_across_the_year_end_waits_for_all_seven_days_checked():
    instance = dg.DagsterInstance.ephemeral()
    days = table("days", Grain.DAILY, blocking_checks=("positive",))
    read = [(Input(table="up.days", window=Window(kind="same")), days)]
    week = one(Grain.WEEKLY, "2020-12-28")  # ISO week 53 of 2020: Monday 2020-12-28 to Sunday 2021-01-03
    publish(instance, days, "2020-12-28", "2020-12-29", "2020-12-30", "2020-12-31", "2021-01-01", positive=True)
    publish(instance, days, "2021-01-02", positive=False)

    assert unready(instance, read, week) == {
        "2020-12-28": ["up.days 2021-01-02 (check positive failed)", "up.days 2021-01-03 (not published)"]
    }

    publish(instance, days, "2021-01-03", positive=True)
    assert unready(instance, read, week) == {"2020-12-28": ["up.days 2021-01-02 (check positive failed)"]}
    # the next week is judged on its own days only
    publish(instance, days, *(f"2021-01-{d:02d}" for d in range(4, 11)), positive=True)
    assert list(unready(instance, read, PartitionRange.from_keys(Grain.WEEKLY, "2020-12-28", "2021-01-04"))) == [
        "2020-12-28"
    ]


def test_a_leap_february_waits_for_its_last_day():
    instance = dg.DagsterInstance.ephemeral()
    days = table("days", Grain.DAILY)
    read = [(Input(table="up.days", window=Window(kind="same")), days)]
    publish(instance, days, *(f"2024-02-{d:02d}" for d in range(1, 29)))

    assert unready(instance, read, one(Grain.MONTHLY, "2024-02-01")) == {
        "2024-02-01": ["up.days 2024-02-29 (not published)"]
    }
    publish(instance, days, "2024-02-29")
    assert unready(instance, read, one(Grain.MONTHLY, "2024-02-01")) == {}


def test_last_4_weeks_read_28_days():
    instance = dg.DagsterInstance.ephemeral()
    days = table("days", Grain.DAILY)
    read = [(Input(table="up.days", window=Window(kind="last", n=4)), days)]
    publish(instance, days, *(f"2024-01-{d:02d}" for d in range(16, 32)), *(f"2024-02-{d:02d}" for d in range(1, 12)))

    assert unready(instance, read, one(Grain.WEEKLY, "2024-02-05")) == {
        "2024-02-05": ["up.days 2024-01-15 (not published)"]
    }


def test_min_complete_accepts_a_partial_hour_and_names_what_it_lacks():
    instance = dg.DagsterInstance.ephemeral()
    quarters = table("quarters", QUARTER, blocking_checks=("valid",))
    read = [(Input(table="up.quarters", window=Window(kind="same"), min_complete=0.75), quarters)]
    hours = PartitionRange.from_keys(Grain.HOURLY, "2024-02-29-22:00", "2024-02-29-23:00")
    publish(instance, quarters, "2024-02-29-22:00", "2024-02-29-22:15", "2024-02-29-22:45", valid=True)
    publish(instance, quarters, "2024-02-29-23:00", "2024-02-29-23:15", valid=True)
    publish(instance, quarters, "2024-02-29-23:30", valid=False)
    partial: Partial = {}

    refused = unready(instance, read, hours, partial=partial)

    assert refused == {
        "2024-02-29-23:00": [
            "up.quarters (2 of 4 partitions ready; min_complete 0.75 needs 3)",
            "up.quarters 2024-02-29-23:30 (check valid failed)",
            "up.quarters 2024-02-29-23:45 (not published)",
        ]
    }
    assert partial == {"2024-02-29-22:00": {"up.quarters": ["2024-02-29-22:30"]}}


def test_without_min_complete_one_missing_quarter_holds_the_hour():
    instance = dg.DagsterInstance.ephemeral()
    quarters = table("quarters", QUARTER)
    read = [(Input(table="up.quarters", window=Window(kind="same")), quarters)]
    publish(instance, quarters, "2024-02-29-22:00", "2024-02-29-22:15", "2024-02-29-22:45")

    assert unready(instance, read, one(Grain.HOURLY, "2024-02-29-22:00"), now=datetime(2024, 3, 1, tzinfo=UTC)) == {
        "2024-02-29-22:00": ["up.quarters 2024-02-29-22:30 (not published)"]
    }


def test_dagster_maps_weeks_to_their_days_and_a_day_to_every_week_whose_window_reads_it():
    """What backfills (``--downstream``), invalidation, ``mesh plan`` and staleness follow between grains."""
    days, weeks = Grain.DAILY.partitions_def(date(2024, 1, 1)), Grain.WEEKLY.partitions_def(date(2024, 1, 1))
    mapping = window_mapping(table("days", Grain.DAILY), Window(kind="last", n=4), Grain.WEEKLY)
    assert mapping is not None and days is not None and weeks is not None
    week = weeks.empty_subset().with_partition_keys(["2024-02-05"])
    read = mapping.get_upstream_mapped_partitions_result_for_partitions(week, weeks, days).partitions_subset
    assert sorted(read.get_partition_keys())[::27] == ["2024-01-15", "2024-02-11"] and len(read) == 28
    day = days.empty_subset().with_partition_keys(["2024-01-20"])
    readers = mapping.get_downstream_partitions_for_partitions(day, days, weeks)
    assert sorted(readers.get_partition_keys()) == ["2024-01-15", "2024-01-22", "2024-01-29", "2024-02-05"]


def test_a_week_missing_a_day_is_late_its_deadline_after_the_week_ends():
    nodes = [n for n in MeshGraph(load_all(ROLLUPS), []).nodes_of("roll") if n.table.name == "weekly_sales"]
    instance = dg.DagsterInstance.ephemeral()
    publish(instance, nodes[0].reads[0].table, *(f"2026-11-0{d}" for d in range(2, 8)))

    assert late_inputs(instance, nodes, datetime(2026, 11, 9, 11, 59, tzinfo=UTC)) == []
    [flag] = late_inputs(instance, nodes, datetime(2026, 11, 9, 12, 0, tzinfo=UTC))
    assert (flag["partition"], flag["input"], flag["kind"], flag["missing"]) == (
        "2026-11-02",
        "roll.daily_sales",
        "timed_out",
        ["2026-11-08"],
    )


def test_the_partition_count_of_every_grain_is_what_dagster_lists():
    from mesh_assets.graph.partition_counts import partition_count

    now = datetime(2024, 3, 1, 0, 10, tzinfo=UTC)
    for grain in (QUARTER, Grain.HOURLY, Grain.DAILY, Grain.WEEKLY, Grain.MONTHLY):
        info = table("t", grain, start_date=date(2024, 1, 3))  # a Wednesday: weeks from the 8th, months from Feb
        definition = grain.partitions_def(date(2024, 1, 3))
        assert definition is not None
        assert partition_count(info, now) == len(definition.get_partition_keys(current_time=now)), grain
