"""What the demo plans of the example's calendars over its days, and how its summary shows a regional table."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg
from rich.console import Console

from mesh_assets import executable_assets, mesh_definitions
from mesh_assets.cli.demo import summary_table
from mesh_examples.current import current_tables
from mesh_examples.run import AssetSummary, plan

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = dg.AssetKey(["central", "city_daily_sessions"])
WEEKLY = dg.AssetKey(["food_delivery", "weekly_city_orders"])
MONTHLY = dg.AssetKey(["food_delivery", "monthly_city_orders"])


def planned(days: int) -> dict[dg.AssetKey, tuple[str | None, ...]]:
    assets = executable_assets(mesh_definitions(ROOT / "domains"))
    return {p.key: p.partitions for p in plan(assets, date(2021, 6, 1), date(2021, 6, days))}


def test_the_demo_plans_each_region_s_dates_and_the_weeks_and_months_its_days_can_publish():
    fortnight, week = planned(14), planned(7)

    assert len(fortnight[SESSIONS]) == 42 and fortnight[SESSIONS][:3] == (
        "2021-06-01|eu",
        "2021-06-01|latam",
        "2021-06-01|apac",
    )
    assert fortnight[WEEKLY] == ("2021-06-07",)  # June 14-20 would wait for days the demo does not land
    assert week[WEEKLY] == ()  # June 1-7 holds no whole ISO week
    assert fortnight[MONTHLY] == week[MONTHLY] == ("2021-06-01",)  # 7 of 30 days: min_complete 0.2 accepts it
    assert planned(5)[MONTHLY] == ()  # 5 of 30 days: below the share, June would be refused


def test_the_summary_puts_a_line_per_region_under_a_regional_table():
    rows = {"2021-06-01|eu": 3, "2021-06-02|eu": 3, "2021-06-01|apac": 1, "2021-06-02|apac": 2}
    console = Console(width=80, record=True)
    console.print(summary_table([AssetSummary("central/city_daily_sessions", sorted(rows), rows)]))
    lines = [line.rstrip() for line in console.export_text().splitlines()]

    assert lines[0] == "Published by the demo (2021-06-01 .. 2021-06-02)"
    assert [line.split() for line in lines[4:]] == [
        ["central"],
        ["city_daily_sessions", "4", "9", "1-3"],
        ["apac", "2", "3", "1-2"],
        ["eu", "2", "6", "3"],
    ]


def test_a_table_with_nothing_to_publish_in_the_window_is_current_and_does_not_stop_the_demo():
    """A 7-day demo plans no ISO week: the weekly rollup has no partition to check, on a fresh instance too."""
    assets = executable_assets(mesh_definitions(ROOT / "domains"))
    week = {p.key: p.partitions for p in plan(assets, date(2021, 6, 1), date(2021, 6, 7))}
    only = {WEEKLY: week[WEEKLY]}

    with dg.instance_for_test() as instance:
        current = current_tables(assets, instance, None, only)  # nothing of the table is read: no Spark

    assert current[WEEKLY].records == {} and current[WEEKLY].rows() == {}
