"""Checks on an external table: the observer's check runs judge what the outside writer landed, and the
consumers of a partition wait for a passing result, also after the partition is re-landed."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import MeshResource, mesh_definitions
from mesh_assets.alerts.watch import alert_sensor_name
from mesh_assets.automation.observer import observer_name
from mesh_examples import generator
from mesh_examples.landing import land_raw_orders

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
RAW = dg.AssetKey(["food_delivery", "raw_orders"])
ORDERS = dg.AssetKey(["food_delivery", "orders"])
NOT_NULL = dg.AssetCheckKey(RAW, "not_null_id_placed_at_restaurant_id")
GOOD, BAD = date(2021, 6, 1), date(2021, 6, 2)


def _with_null_ids(rows: list[tuple], every: int) -> list[tuple]:
    return [(None, *row[1:]) if i % every == 0 else row for i, row in enumerate(rows)]


class External:
    def __init__(self, spark, base: Path):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / f"wh-{uuid.uuid4().hex[:8]}"))
        self.instance = dg.DagsterInstance.ephemeral()
        self.defs = mesh_definitions(ROOT / "domains", dbt=False)
        self.observer = self.defs.resolve_sensor_def(observer_name("food_delivery"))
        self.cursor: str | None = None
        self.automation_cursor = None

    def land(self, day: date, rows: list[tuple]) -> None:
        land_raw_orders(self.spark, self.mesh.registry, day, day, rows)

    def observe_and_check(self) -> dict[str | None, dict[str, dg.AssetCheckEvaluation]]:
        """One observer tick, then the check runs it requested, as the daemon would launch them."""
        with dg.build_sensor_context(
            instance=self.instance, cursor=self.cursor, resources={"mesh": self.mesh}
        ) as context:
            result = self.observer(context)
        self.cursor = result.cursor
        for event in result.asset_events:
            self.instance.report_runless_asset_event(event)
        found: dict[str | None, dict[str, dg.AssetCheckEvaluation]] = {}
        assert len(result.run_requests) <= 1  # one check run per table and tick
        for request in result.run_requests:
            run = self.defs.resolve_job_def(request.job_name).execute_in_process(
                run_config=request.run_config,
                instance=self.instance,
                resources={"mesh": self.mesh},
                tags=request.tags,
            )
            for evaluation in run.get_asset_check_evaluations():
                found.setdefault(evaluation.partition, {})[evaluation.check_name] = evaluation
        return found

    def requested_orders(self, at: datetime) -> set[str]:
        result = dg.evaluate_automation_conditions(
            defs=self.defs,
            instance=self.instance,
            asset_selection=dg.AssetSelection.assets(ORDERS),
            cursor=self.automation_cursor,
            evaluation_time=at,
        )
        self.automation_cursor = result.cursor
        return set(result.get_requested_partitions(ORDERS))


@pytest.fixture
def external(spark, tmp_path) -> External:
    return External(spark, tmp_path)


def test_landed_partitions_are_checked_and_gate_their_consumers(external: External) -> None:
    at = datetime(2021, 6, 3, 2)
    assert external.requested_orders(at) == set()  # the first evaluation only starts the cursor

    bad_rows = _with_null_ids(generator.raw_orders(BAD), every=10)
    external.land(GOOD, generator.raw_orders(GOOD))
    external.land(BAD, bad_rows)
    results = external.observe_and_check()

    assert set(results) == {GOOD.isoformat(), BAD.isoformat()}
    assert all(e.passed for e in results[GOOD.isoformat()].values())
    failed = results[BAD.isoformat()][NOT_NULL.name]
    assert not failed.passed and failed.partition == BAD.isoformat()
    assert failed.metadata["failing_rows"].value == sum(1 for row in bad_rows if row[0] is None)
    assert failed.target_materialization_data is not None  # it judged the observed commit
    assert results[BAD.isoformat()]["row_count"].passed

    assert external.requested_orders(at) == {GOOD.isoformat()}  # the bad day holds its consumer back

    external.land(BAD, generator.raw_orders(BAD))  # the writer fixes the day: a new commit
    results = external.observe_and_check()
    assert set(results) == {BAD.isoformat()}
    assert results[BAD.isoformat()][NOT_NULL.name].passed  # the same partition, checked again

    assert external.requested_orders(at) == {BAD.isoformat()}
    assert external.observe_and_check() == {}  # no new commit: no check run


def test_a_partition_whose_check_run_is_pending_is_not_requested(external: External) -> None:
    at = datetime(2021, 6, 3, 2)
    external.requested_orders(at)
    external.land(GOOD, generator.raw_orders(GOOD))
    external.instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=RAW, partition=GOOD.isoformat()))
    assert external.requested_orders(at) == set()


def test_a_landed_partition_failing_a_blocking_check_tells_its_owner_and_its_readers_owners(
    external: External, webhook
) -> None:
    """The check run succeeds (it judged); the domain's alert sensor tells, once, with the check run's link."""
    received, point = webhook
    for domain in ("analytics", "central", "courier", "food_delivery", "growth"):
        point(domain)
    external.land(BAD, _with_null_ids(generator.raw_orders(BAD), every=10))
    external.observe_and_check()
    sensor = external.defs.resolve_sensor_def(alert_sensor_name("food_delivery"))
    with dg.build_sensor_context(instance=external.instance) as context:
        cursor = sensor(context).cursor
    [check_run] = external.instance.get_run_records()

    told = {(a["mesh"]["domain"], a["mesh"]["table"]): a["mesh"] for a in received}
    owner = told.pop(("food_delivery", "raw_orders"))
    assert (owner["kind"], owner["partitions"]) == ("blocking check failed", [BAD.isoformat()])
    assert NOT_NULL.name in owner["checks"] and owner["run_url"].endswith(f"/runs/{check_run.dagster_run.run_id}")
    assert ("food_delivery", "orders") in told  # and every other table reading raw_orders
    assert {(a["kind"], a["source"]) for a in told.values()} == {("input check failed", "food_delivery.raw_orders")}
    count = len(received)
    with dg.build_sensor_context(instance=external.instance, cursor=cursor) as context:
        sensor(context)
    assert len(received) == count  # told once
