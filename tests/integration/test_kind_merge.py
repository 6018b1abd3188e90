"""Kind ``merge`` on real Spark, Delta and Dagster: an upsert by ``unique_key`` in one ``MERGE`` per run, declared
in Python (``km.order_state``: ``sequence_by`` and ``delete``; ``km.recent_state``: ``within_last``) and in YAML
(``km.status_current``: no ``sequence_by``, the later day wins). Fixture: tests/fixtures/kinds_merge."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from order_status import Orders, failure_message, kill_mid_write, metadata

pytestmark = pytest.mark.spark

D1, D2, D3, D4 = (f"2021-06-0{d}" for d in range(1, 5))


@pytest.fixture
def orders(spark, tmp_path) -> Orders:
    return Orders(spark, tmp_path / "warehouse")


def test_upserts_deletes_and_never_lets_an_older_update_win(orders):
    """Rows equal to the table's are left alone by the ``MERGE``'s own condition: not counted as updated, and a
    re-run of the same input commits nothing."""
    orders.land(
        D1, [(1, "placed", "2021-06-01 10:00"), (2, "placed", "2021-06-01 10:05"), (3, "placed", "2021-06-01 11:00")]
    )
    first = orders.run("order_state", D1)
    assert orders.rows("order_state") == {
        (1, "placed", "2021-06-01 10:00"),
        (2, "placed", "2021-06-01 10:05"),
        (3, "placed", "2021-06-01 11:00"),
    }
    assert metadata(first)["rows_inserted"] == 3

    orders.land(
        D2,
        [
            (1, "delivered", "2021-06-02 12:00"),  # an update
            (2, "picked_up", "2021-06-01 09:00"),  # late and older than the table's row: ignored
            (3, "cancelled", "2021-06-02 08:00"),  # the delete condition: the order leaves the table
            (4, "picked_up", "2021-06-02 12:45"),  # a new order, its two updates out of order in the day
            (4, "placed", "2021-06-02 12:30"),
            (5, "cancelled", "2021-06-02 09:00"),  # a delete of a key never seen: nothing inserted
        ],
    )
    second = orders.run("order_state", D2)
    assert orders.rows("order_state") == {
        (1, "delivered", "2021-06-02 12:00"),
        (2, "placed", "2021-06-01 10:05"),
        (4, "picked_up", "2021-06-02 12:45"),
    }
    changes = {k: metadata(second)[f"rows_{k}"] for k in ("inserted", "updated", "deleted")}
    assert changes == {"inserted": 1, "updated": 1, "deleted": 1}
    assert orders.last_commit("order_state")["operation"] == "MERGE"

    version = orders.version("order_state")
    again = orders.run("order_state", D2)  # the same input again: nothing differs, nothing is committed
    assert orders.version("order_state") == version
    assert metadata(again)["unchanged"] is True
    assert metadata(again)["delta_version"] == version


def test_duplicate_keys_and_a_failing_check_leave_the_table_at_its_version(orders):
    orders.land(D1, [(1, "placed", "2021-06-01 10:00")])
    orders.run("order_state", D1)
    version, rows = orders.version("order_state"), orders.rows("order_state")

    orders.land(D2, [(1, "delivered", "2021-06-02 12:00"), (1, "cancelled", "2021-06-02 12:00")])
    refused = orders.run("order_state", D2, ok=False)  # two updates of one order at one time: no order between
    message = failure_message(refused)
    assert "unique_key" in message and "order_id" in message and "updated_at" in message, message
    assert orders.version("order_state") == version and orders.rows("order_state") == rows

    orders.land(D2, [(1, "lost", "2021-06-02 12:00")])  # a status the blocking check does not accept
    failed = orders.run("order_state", D2, ok=False)
    assert "accepted_values" in failure_message(failed) or "status" in failure_message(failed)
    assert orders.version("order_state") == version and orders.rows("order_state") == rows


def test_an_added_column_with_a_delete_condition_is_added_to_the_table(orders):
    """With ``delete`` the ``MERGE`` lists its columns: a column the source gained is still added (autoMerge)."""
    orders.land(D1, [(1, "placed", "2021-06-01 10:00"), (2, "placed", "2021-06-01 10:05")])
    orders.run("order_state", D1)
    orders.land(
        D2,
        [(1, "delivered", "2021-06-02 12:00"), (3, "placed", "2021-06-02 12:00"), (2, "cancelled", "2021-06-02 13:00")],
        courier="c-7",
    )
    orders.run("order_state", D2)
    assert orders.rows("order_state", "courier") == {
        (1, "delivered", "2021-06-02 12:00", "c-7"),
        (3, "placed", "2021-06-02 12:00", "c-7"),
    }


def test_without_sequence_by_the_later_day_wins_and_duplicates_are_refused_by_name(orders):
    """YAML (``status_current``): no order within a day, so two updates of one order in a day are refused; across a
    range the later day wins whatever its times say."""
    orders.land(D1, [(1, "placed", "2021-06-01 23:00"), (2, "placed", "2021-06-01 10:00")])
    orders.land(D2, [(1, "delivered", "2021-06-01 22:00")])  # its time is earlier, its day later
    orders.run("status_current", D1, D2)
    assert orders.rows("status_current") == {(1, "delivered", "2021-06-01 22:00"), (2, "placed", "2021-06-01 10:00")}
    version = orders.version("status_current")
    assert orders.last_commit("status_current")["operation"] != "MERGE"  # the first write creates the table

    orders.land(D3, [(2, "picked_up", "2021-06-03 10:00"), (2, "delivered", "2021-06-03 11:00")])
    refused = orders.run("status_current", D3, ok=False)
    message = failure_message(refused)
    assert "unique_key" in message and "order_id" in message, message
    assert orders.version("status_current") == version


def test_a_past_day_without_sequence_by_is_replayed_forward_or_refused(orders):
    """``status_current`` applies days in order: day 1 alone after day 2 would put its older status back."""
    orders.land(D1, [(1, "placed", "2021-06-01 10:00")])
    orders.land(D2, [(1, "delivered", "2021-06-02 10:00")])
    orders.run("status_current", D1)
    orders.run("status_current", D2)
    version = orders.version("status_current")

    refused = orders.run("status_current", D1, ok=False)
    message = failure_message(refused)
    assert "mesh backfill km/status_current --start 2021-06-01 --end 2021-06-02" in message, message
    assert "Nothing was computed" in message
    assert orders.version("status_current") == version

    orders.land(D1, [(1, "placed", "2021-06-01 10:00"), (2, "placed", "2021-06-01 11:00")])  # day 1 re-landed
    orders.run("status_current", D1, D2)  # the backfill the refusal names: day 1 then day 2, one commit
    assert orders.rows("status_current") == {(1, "delivered", "2021-06-02 10:00"), (2, "placed", "2021-06-01 11:00")}
    assert orders.version("status_current") == version + 1


def test_within_last_refuses_rows_of_older_days_and_merges_only_recent_ones(orders):
    """``recent_state`` is partitioned by the day an order was placed, ``within_last: 1``: a run of day D touches
    days D-1 and D only."""
    orders.land(D1, [(1, "placed", "2021-06-01 10:00", D1)])
    orders.land(D2, [(2, "placed", "2021-06-02 10:00", D2)])
    orders.land(D3, [(3, "placed", "2021-06-03 10:00", D3)])
    orders.run("recent_state", D1, D3)
    version = orders.version("recent_state")

    orders.land(D4, [(3, "delivered", "2021-06-04 09:00", D3), (1, "delivered", "2021-06-04 09:30", D1)])
    refused = orders.run("recent_state", D4, ok=False)  # order 1 was placed on day 1, outside days 3..4
    message = failure_message(refused)
    assert "2021-06-01" in message and "nothing was written" in message, message
    assert orders.version("recent_state") == version

    orders.land(D4, [(3, "delivered", "2021-06-04 09:00", D3), (4, "placed", "2021-06-04 09:30", D4)])
    orders.run("recent_state", D4)
    assert orders.rows("recent_state", "p_date") == {
        (1, "placed", "2021-06-01 10:00", orders_day(D1)),
        (2, "placed", "2021-06-02 10:00", orders_day(D2)),
        (3, "delivered", "2021-06-04 09:00", orders_day(D3)),
        (4, "placed", "2021-06-04 09:30", orders_day(D4)),
    }
    merged = orders.last_commit("recent_state")
    assert merged["operation"] == "MERGE"  # matched on the run's days and the one before: Delta prunes the others
    assert "(p_date#" in merged["operationParameters"]["predicate"], merged["operationParameters"]
    assert ">= 2021-06-03" in merged["operationParameters"]["predicate"], merged["operationParameters"]


def orders_day(day: str) -> date:
    return date.fromisoformat(day)


def test_a_merge_killed_mid_write_leaves_the_previous_version_and_a_rerun_converges(orders, tmp_path):
    ids = range(300)
    orders.land(D1, [(i, "placed", "2021-06-01 10:00") for i in ids])
    orders.run("order_state", D1)
    version, rows = orders.version("order_state"), orders.rows("order_state")

    orders.land(D2, [(i, "delivered", "2021-06-02 12:00") for i in ids])
    kill_mid_write(orders, "order_state", D2, tmp_path / "home")

    assert orders.version("order_state") == version and orders.rows("order_state") == rows
    location = Path(orders.location("order_state"))
    assert not (location / "_delta_log" / f"{version + 1:020d}.json").exists()

    orders.run("order_state", D2)
    assert orders.rows("order_state") == {(i, "delivered", "2021-06-02 12:00") for i in ids}


def test_with_sequence_by_a_range_gives_what_its_days_one_by_one_give(orders):
    """A late update landed on a later day loses to a newer one of an earlier day, in one range run as in two."""
    orders.land(D1, [(1, "delivered", "2021-06-01 12:00"), (2, "placed", "2021-06-01 10:00")])
    orders.land(D2, [(1, "placed", "2021-06-01 11:00"), (2, "delivered", "2021-06-02 09:00")])
    orders.run("order_state", D1, D2)
    assert orders.rows("order_state") == {(1, "delivered", "2021-06-01 12:00"), (2, "delivered", "2021-06-02 09:00")}
