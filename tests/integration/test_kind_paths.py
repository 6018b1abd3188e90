"""Keyed kinds through the paths every table takes: OpenLineage events of a PySpark merge, and time under a
process zone that is not UTC (Europe/Madrid, UTC+2 in June) for a merge's window and a history's validity.

Fixtures: tests/fixtures/kinds_merge (``km``) and tests/fixtures/history (``hist``).
"""

from __future__ import annotations

from datetime import date

import pytest
from lineage_runs import validate
from order_status import Orders, failure_message, metadata
from test_kind_history import HISTORY, Couriers
from zones import local_time_zone

from mesh_assets.lineage.graph import read_events
from mesh_assets.settings import get_settings

pytestmark = pytest.mark.spark

D1, D2, D3, D4 = (f"2021-06-0{d}" for d in range(1, 5))
MADRID = "Europe/Madrid"


@pytest.fixture
def orders(spark, tmp_path) -> Orders:
    return Orders(spark, tmp_path / "warehouse")


def test_a_pyspark_merge_emits_start_and_complete_naming_its_datasets_kind_and_changes(orders):
    orders.land(D1, [(1, "placed", "2021-06-01 10:00"), (2, "placed", "2021-06-01 10:05")])
    orders.run("order_state", D1)
    orders.land(D2, [(1, "delivered", "2021-06-02 12:00"), (3, "placed", "2021-06-02 12:30")])
    second = orders.run("order_state", D2)

    events = [
        e
        for e in read_events(get_settings().lineage_dir)
        if e["run"]["facets"]["parent"]["run"]["runId"] == second.run_id
    ]
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    complete = events[-1]
    assert {e["job"]["name"] for e in events} == {"km.order_state"}
    raw, table = orders.location("raw_status"), orders.location("order_state")
    for event in events:
        assert [i["name"] for i in event["inputs"]] == [raw]
        assert [o["name"] for o in event["outputs"]] == [table]
    [output] = complete["outputs"]
    assert output["facets"]["version"]["datasetVersion"] == str(orders.version("order_state"))
    kind = {k: v for k, v in output["facets"]["mesh_tableKind"].items() if not k.startswith("_")}
    assert kind == {"name": "merge", "description": "merge on order_id by updated_at"}
    changed = {k: v for k, v in output["outputFacets"]["mesh_rowsChanged"].items() if not k.startswith("_")}
    assert changed == {"inserted": 1, "updated": 1, "deleted": 0, "committed": True}
    for event in events:
        validate(event)  # the spec's, and Mesh's own facets by the schema docs/lineage-facets.json gives
    assert metadata(second)["rows_inserted"] == 1

    again = orders.run("order_state", D2)  # nothing differs: no commit, and the COMPLETE says so
    [complete] = [
        e
        for e in read_events(get_settings().lineage_dir)
        if e["eventType"] == "COMPLETE" and e["run"]["facets"]["parent"]["run"]["runId"] == again.run_id
    ]
    [output] = complete["outputs"]
    assert output["outputFacets"]["mesh_rowsChanged"]["committed"] is False
    assert output["facets"]["version"]["datasetVersion"] == str(orders.version("order_state"))


def test_a_merge_window_under_madrid_time_is_the_utc_days_before_the_run(orders):
    """``recent_state`` (``within_last: 1``): a run of day 4 matches days 3 and 4, as under UTC, whatever the
    process's zone (midnight UTC is 02:00 in Madrid: a local conversion would reach back to day 2 or 3's end)."""
    with local_time_zone(MADRID):
        orders.land(D2, [(2, "placed", "2021-06-02 23:30", D2)])  # 01:30 on day 3 in Madrid
        orders.land(D3, [(3, "placed", "2021-06-03 00:30", D3)])
        orders.run("recent_state", D2, D3)
        version = orders.version("recent_state")

        orders.land(D4, [(3, "delivered", "2021-06-04 00:15", D3), (2, "delivered", "2021-06-04 00:20", D2)])
        refused = orders.run("recent_state", D4, ok=False)  # order 2 was placed on day 2, outside days 3..4
        message = failure_message(refused)
        assert "2021-06-02" in message and "nothing was written" in message, message
        assert orders.version("recent_state") == version

        orders.land(D4, [(3, "delivered", "2021-06-04 00:15", D3), (4, "placed", "2021-06-04 23:59", D4)])
        orders.run("recent_state", D4)
        rows = orders.rows("recent_state", "p_date")
        merged = orders.last_commit("recent_state")
    assert rows == {
        (2, "placed", "2021-06-02 23:30", date(2021, 6, 2)),
        (3, "delivered", "2021-06-04 00:15", date(2021, 6, 3)),
        (4, "placed", "2021-06-04 23:59", date(2021, 6, 4)),
    }
    assert merged["operation"] == "MERGE"
    assert ">= 2021-06-03" in merged["operationParameters"]["predicate"], merged["operationParameters"]


def test_history_under_madrid_time_opens_and_closes_versions_at_utc_instants(spark, tmp_path):
    """Updates a few minutes either side of midnight UTC (after midnight in Madrid) and a delete: versions
    open at the source's ``updated_at`` and a deleted key closes at its partition's start, both in UTC."""
    couriers = Couriers(spark, tmp_path)
    with local_time_zone(MADRID):
        couriers.land(D1, [(1, "north", "2021-05-31 23:50:00"), (2, "south", "2021-06-01 00:10:00")])
        couriers.land(D2, [(1, "west", "2021-06-01 23:55:00")])  # 2 deleted on day 2
        assert couriers.run(HISTORY, D1, D2).success
        versions = couriers.versions(HISTORY)
    assert versions == [
        (1, "north", "2021-05-31 23:50:00", "2021-06-01 23:55:00", False, D1),
        (1, "west", "2021-06-01 23:55:00", None, True, D2),
        (2, "south", "2021-06-01 00:10:00", "2021-06-02 00:00:00", False, D1),
    ]
