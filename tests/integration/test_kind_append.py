"""Kind ``append`` on real Spark, Delta and Dagster: events inserted once, never rewritten; a re-run inserts nothing
it inserted before and commits nothing. Declared in Python (``km.status_log``, known by ``order_id, updated_at``)
and in YAML (``km.status_events``, known by every column). Fixture: tests/fixtures/kinds_merge."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from order_status import Orders, failure_message, kill_mid_write, metadata

from mesh_assets.assets.specs import table_pool

pytestmark = pytest.mark.spark

D1, D2 = "2021-06-01", "2021-06-02"
DAY1 = [(1, "placed", "2021-06-01 10:00"), (2, "placed", "2021-06-01 10:05")]
DAY2 = [(1, "delivered", "2021-06-02 12:00"), (2, "cancelled", "2021-06-02 08:00")]


@pytest.fixture
def orders(spark, tmp_path) -> Orders:
    return Orders(spark, tmp_path / "warehouse")


@pytest.mark.parametrize("table", ["status_log", "status_events"])
def test_events_are_inserted_once_late_ones_added_and_none_rewritten(orders, table):
    orders.land(D1, DAY1)
    orders.land(D2, DAY2)
    orders.run(table, D1)
    assert orders.rows(table) == set(DAY1)
    orders.run(table, D2)
    assert orders.rows(table) == set(DAY1 + DAY2)
    version = orders.version(table)

    again = orders.run(table, D1, D2)  # the range again: nothing new, no commit
    assert orders.version(table) == version and metadata(again)["unchanged"] is True
    assert orders.spark.read.format("delta").load(orders.location(table)).count() == 4

    late = (3, "placed", "2021-06-01 23:59")  # a late event of day 1, landed with day 1 again; order 2's placed
    orders.land(D1, [DAY1[0], late])  # event was removed upstream: an event once appended is never deleted
    added = orders.run(table, D1)
    assert metadata(added)["rows_inserted"] == 1
    assert orders.rows(table) == set(DAY1 + DAY2 + [late])
    assert orders.version(table) == version + 1


def test_duplicate_events_and_a_failing_check_write_nothing(orders):
    orders.land(D1, DAY1)
    orders.run("status_log", D1)
    version, rows = orders.version("status_log"), orders.rows("status_log")

    orders.land(D2, [(1, "delivered", "2021-06-02 12:00"), (1, "cancelled", "2021-06-02 12:00")])
    refused = orders.run("status_log", D2, ok=False)
    message = failure_message(refused)
    assert "unique_key" in message and "order_id" in message, message
    assert orders.version("status_log") == version and orders.rows("status_log") == rows

    orders.land(D2, [(1, None, "2021-06-02 12:00")])
    failed = orders.run("status_log", D2, ok=False)
    assert "not_null" in failure_message(failed), failure_message(failed)
    assert orders.version("status_log") == version and orders.rows("status_log") == rows


def test_an_append_killed_mid_write_leaves_the_previous_version_and_a_rerun_inserts_once(orders, tmp_path):
    ids = range(300)
    orders.land(D1, [(i, "placed", "2021-06-01 10:00") for i in ids])
    orders.run("status_log", D1)
    version, rows = orders.version("status_log"), orders.rows("status_log")

    day2 = [(i, "delivered", "2021-06-02 12:00") for i in ids]
    orders.land(D2, day2)
    kill_mid_write(orders, "status_log", D2, tmp_path / "home")

    assert orders.version("status_log") == version and orders.rows("status_log") == rows
    assert not (Path(orders.location("status_log")) / "_delta_log" / f"{version + 1:020d}.json").exists()

    orders.run("status_log", D2)
    assert orders.rows("status_log") == rows | set(day2)
    assert orders.spark.read.format("delta").load(orders.location("status_log")).count() == 600


@pytest.mark.parametrize("table", ["status_log", "status_events", "order_state", "status_current"])
def test_two_runs_of_a_keyed_or_append_table_queue_on_its_pool(orders, table):
    """Each table's step holds its own pool (one slot), so two runs of it never commit at once: the queueing
    tests/integration/test_concurrent_writers.py::test_runs_of_one_table_queue_on_its_pool shows."""
    graph = orders.defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey(["km", table])).pools == {table_pool("km", table)}
