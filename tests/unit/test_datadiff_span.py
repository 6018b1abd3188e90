"""``mesh diff --from/--to`` in the table's own keys: a week's range starts on its Monday (any day names its
week), a day of an hourly table spans its hours, a regional key ``date|region`` compares that region alone, and a
key the table has no partition or region for is refused, naming the table."""

from __future__ import annotations

from datetime import date

import pytest

from mesh_assets.datadiff import PartitionSpan, partition_span
from mesh_assets.graph.resolve import Table, TableKind
from mesh_assets.model.errors import Refused
from mesh_assets.model.grain import Grain, region_key


def table(grain: Grain, column: str, **extra) -> Table:
    fields = dict(
        domain="roll",
        name="sales",
        product="sales",
        owner="team:data",
        published=True,
        grain=grain,
        partition_column=column,
        kind=TableKind.PRODUCT,
        start_date=date(2024, 1, 1),
        blocking_checks=(),
        source_file=None,
        line=None,
    )
    return Table(**{**fields, **extra})


def test_a_weekly_range_runs_from_its_first_weeks_monday_to_its_last_weeks() -> None:
    weekly = table(Grain.WEEKLY, "p_week")
    assert partition_span(weekly, "2024-03-25", "2024-04-01") == PartitionSpan("p_week", "2024-03-25", "2024-04-01")
    # a Wednesday names the week holding it: compared as 2024-03-27 the week of 2024-03-25 would be left out
    assert partition_span(weekly, "2024-03-27", "2024-04-03") == PartitionSpan("p_week", "2024-03-25", "2024-04-01")
    monthly = table(Grain.MONTHLY, "p_month")
    assert partition_span(monthly, "2024-03-15", "2024-03-15") == PartitionSpan("p_month", "2024-03-01", "2024-03-01")


def test_an_hourly_or_minute_range_is_in_timestamps_and_a_day_spans_its_partitions() -> None:
    hourly = table(Grain.HOURLY, "p_hour")
    assert partition_span(hourly, "2024-03-29", "2024-03-29") == PartitionSpan(
        "p_hour", "2024-03-29 00:00:00+00:00", "2024-03-29 23:00:00+00:00"
    )
    quarter = table(Grain.minutes(15), "p_ts")
    assert partition_span(quarter, "2024-03-29-05:15", "2024-03-29-05:45") == PartitionSpan(
        "p_ts", "2024-03-29 05:15:00+00:00", "2024-03-29 05:45:00+00:00"
    )


def test_a_regional_key_compares_its_date_in_its_region_alone() -> None:
    regional = table(Grain.DAILY, "p_date", regions=("eu", "latam", "apac"), zones=("Europe/Madrid",) * 3)
    start, end = region_key("2024-03-31", "eu"), region_key("2024-04-01", "eu")
    assert partition_span(regional, start, end) == PartitionSpan(
        "p_date", "2024-03-31", "2024-04-01", "region", ("eu",)
    )
    every = partition_span(regional, "2024-03-31", "2024-04-01")  # a day: every region of it
    assert every == PartitionSpan("p_date", "2024-03-31", "2024-04-01", "region", ())


@pytest.mark.parametrize(
    ("grain", "regions", "key", "message"),
    [
        (
            Grain.DAILY,
            ("eu",),
            "2024-03-31|us",
            "roll.sales: partition '2024-03-31|us' names region 'us'",
        ),
        (
            Grain.DAILY,
            (),
            "2024-03-31|eu",
            "roll.sales: partition '2024-03-31|eu' names region 'eu'",
        ),
        (Grain.HOURLY, (), "2024-03-29-05:30", "roll.sales: invalid hourly partition key '2024-03-29-05:30'"),
    ],
)
def test_a_key_that_is_not_the_tables_is_refused_naming_it(grain, regions, key, message) -> None:
    with pytest.raises(Refused) as refused:
        partition_span(table(grain, "p", regions=regions, zones=("UTC",) * len(regions)), key, key)
    assert str(refused.value).startswith(message)


def test_the_json_of_a_span_names_regions_only_for_a_regional_table() -> None:
    from mesh_assets.datadiff import TableDiff
    from mesh_assets.datadiff.compare import SchemaDiff

    def spanned(span: PartitionSpan) -> dict:
        return TableDiff("l", "r", (), span, 0, 0, 0, 0, 0, {}, SchemaDiff(), {}).to_json()["partitions"]

    assert spanned(PartitionSpan("p_date", "2024-03-31", "2024-03-31")) == {
        "column": "p_date",
        "start": "2024-03-31",
        "end": "2024-03-31",
    }
    regional = PartitionSpan("p_date", "2024-03-31", "2024-03-31", "region", ("eu",))
    assert spanned(regional)["regions"] == ["eu"] and spanned(regional)["region_column"] == "region"
