"""The partition count ``mesh validate`` warns on: what Dagster's UI lists for a table at a given time."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.partition_counts import MAX_PARTITIONS, partition_count, partition_count_warnings
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.model.grain import Grain

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "governance" / "partition_counts" / "domains"


@pytest.fixture(scope="module")
def graph() -> MeshGraph:
    return MeshGraph(load_all(FIXTURE))


def test_the_count_is_the_partitions_dagster_lists(graph: MeshGraph) -> None:
    hourly, daily = graph.get("clicks", "raw_clicks"), graph.get("clicks", "raw_sessions")
    assert hourly is not None and daily is not None
    now = datetime(2020, 1, 3, 5, 30, tzinfo=UTC)
    assert partition_count(hourly, now) == 53  # 2020-01-01-00:00 .. 2020-01-03-04:00; 05:00 is not over yet
    assert partition_count(daily, now) == 2
    dg_keys = Grain.HOURLY.partitions_def(date(2020, 1, 1)).get_partition_keys(current_time=now)
    assert partition_count(hourly, now) == len(dg_keys)


def test_a_table_at_the_threshold_passes_and_one_past_it_is_named_with_a_start_date_that_fits(
    graph: MeshGraph,
) -> None:
    at_limit = datetime(2022, 11, 7, 16, tzinfo=UTC)  # 2020-01-01 + 25,000 hours
    hourly = graph.get("clicks", "raw_clicks")
    assert hourly is not None and partition_count(hourly, at_limit) == MAX_PARTITIONS
    assert partition_count_warnings(graph.tables.values(), at_limit) == []
    [warning] = partition_count_warnings(graph.tables.values(), datetime(2022, 11, 7, 17, tzinfo=UTC))
    assert (warning.line, warning.field) == (9, "start_date")
    assert "clicks.raw_clicks has 25,001 hourly partitions since 2020-01-01" in warning.message
    assert "a start_date on or after 2020-01-02 stays under it" in warning.message


def test_a_table_whose_partitions_stop_counts_only_up_to_its_end_date(graph: MeshGraph) -> None:
    """A retired feed (a year of hours, ended in 2016) is never above the threshold, however late it is now: its
    count, like Dagster's list of its partitions, stops at its end date."""
    retired = graph.get("clicks", "raw_clicks_2015")
    assert retired is not None and retired.end_date == date(2016, 1, 1)
    now = datetime(2026, 11, 25, 10, tzinfo=UTC)
    assert partition_count(retired, now) == 365 * 24
    assert len(retired.partitions_def.get_partition_keys(current_time=now)) == 365 * 24
    assert retired.partitions_def.get_last_partition_key() == "2015-12-31-23:00"
    assert [w.message.split()[0] for w in partition_count_warnings(graph.tables.values(), now)] == ["clicks.raw_clicks"]
