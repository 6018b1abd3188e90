"""Operating Mesh: freshness of tables read whole, retries and pause.

A dimension older than its input allows, or whose watermark column has not reached the partition computed,
refuses the consumer's run (naming the table, its age or watermark and the limit) and holds back its
automation; a fresh one runs. A transient failure is retried by the product's policy, a refusal never. A paused
product's automation requests nothing, nor its consumers', until it is resumed."""

from __future__ import annotations

import time
import uuid
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.automation.pause import PAUSED_METADATA, set_paused
from mesh_assets.settings import get_settings

pytestmark = pytest.mark.spark

DOMAINS = Path(__file__).resolve().parents[1] / "fixtures" / "freshness" / "domains"
STRICT, NAMED = dg.AssetKey(["fresh", "orders_strict"]), dg.AssetKey(["fresh", "orders_named"])
SUMMARY = dg.AssetKey(["fresh", "named_summary"])


def failure(result) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


class Menus:
    """The ``fresh`` fixture domain in a throwaway warehouse: orders by day, a menu dimension read whole."""

    def __init__(self, spark, base: Path, monkeypatch: pytest.MonkeyPatch):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / f"wh-{uuid.uuid4().hex[:8]}"))
        monkeypatch.setenv("MESH_WAREHOUSE", self.mesh.warehouse)  # the deployment's: where automation looks
        get_settings.cache_clear()
        self.defs = mesh_definitions(DOMAINS)
        self.instance = dg.DagsterInstance.ephemeral()

    def land_orders(self, *days: str) -> None:
        rows = [(i, i % 2, date.fromisoformat(d)) for d in days for i in range(3)]
        frame = self.spark.createDataFrame(rows, "id bigint, menu_id bigint, p_date date")
        frame.write.format("delta").mode("append").partitionBy("p_date").save(self.location("orders"))

    def land_menu(self, updated_on: str) -> None:
        rows = [(0, "pizza", date.fromisoformat(updated_on)), (1, "sushi", date(2021, 6, 1))]
        frame = self.spark.createDataFrame(rows, "id bigint, name string, updated_on date")
        frame.write.format("delta").mode("overwrite").save(self.location("menu"))

    def observe(self) -> None:
        observe_now(self.defs, self.instance, self.mesh)

    def location(self, table: str) -> str:
        return self.mesh.registry.location("fresh", table)

    def run(self, key: dg.AssetKey, day: str):
        return dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[key],
            partition_key=day,
            raise_on_error=False,
        )

    def rows(self, table: str, day: str) -> int:
        return self.spark.read.format("delta").load(self.location(table)).where(f"p_date = '{day}'").count()


@pytest.fixture
def menus(spark, tmp_path, monkeypatch: pytest.MonkeyPatch) -> Menus:
    world = Menus(spark, tmp_path, monkeypatch)
    world.land_orders("2021-06-01", "2021-06-02")
    world.land_menu(updated_on="2021-06-01")
    world.observe()
    return world


def test_a_stale_dimension_refuses_the_run_naming_table_age_and_limit(menus):
    time.sleep(2.5)  # orders_strict allows the menu 0.0005 h (1.8 s)

    refused = menus.run(STRICT, "2021-06-01")

    assert not refused.success
    message = failure(refused)
    assert "partition 2021-06-01 not computed: fresh.menu (stale: last updated " in message
    assert "freshness_hours is 0.0005 h)" in message
    assert "2021-06-01" not in menus.instance.get_materialized_partitions(STRICT)
    assert not Path(menus.location("orders_strict")).exists()  # nothing was written

    menus.land_menu(updated_on="2021-06-01")  # the dimension is published again: fresh for a moment
    menus.observe()
    assert menus.run(STRICT, "2021-06-01").success
    assert menus.rows("orders_strict", "2021-06-01") == 3


def test_a_watermark_behind_the_partition_refuses_and_one_that_reached_it_runs(menus):
    assert menus.run(NAMED, "2021-06-01").success  # updated_on reached 2021-06-01
    assert menus.rows("orders_named", "2021-06-01") == 3

    behind = menus.run(NAMED, "2021-06-02")

    assert not behind.success
    assert (
        "partition 2021-06-02 not computed: fresh.menu (behind: watermark updated_on is at 2021-06-01, "
        "it must reach 2021-06-02 for this partition)" in failure(behind)
    )
    assert "2021-06-02" not in menus.instance.get_materialized_partitions(NAMED)

    menus.land_menu(updated_on="2021-06-02")
    menus.observe()
    assert menus.run(NAMED, "2021-06-02").success
    assert menus.rows("orders_named", "2021-06-02") == 3


def test_automation_holds_back_a_consumer_of_a_stale_or_behind_dimension_until_it_is_fresh(menus):
    first = dg.evaluate_automation_conditions(defs=menus.defs, instance=menus.instance)
    menus.land_orders("2021-06-01", "2021-06-02")  # both days land again: their consumers are due
    menus.observe()
    time.sleep(2.5)

    held = dg.evaluate_automation_conditions(defs=menus.defs, instance=menus.instance, cursor=first.cursor)

    assert held.get_requested_partitions(STRICT) == set()  # the menu is older than orders_strict allows: it waits
    assert held.get_requested_partitions(NAMED) == {"2021-06-01"}  # 2021-06-02 waits for the menu's watermark

    menus.land_menu(updated_on="2021-06-02")
    menus.observe()
    later = dg.evaluate_automation_conditions(defs=menus.defs, instance=menus.instance, cursor=held.cursor)

    assert "2021-06-02" in later.get_requested_partitions(NAMED)  # requested once the watermark reached the day


def events_of(result, kind: str) -> list:
    return [e for e in result.all_events if e.event_type_value == kind]


def test_a_transient_failure_is_retried_and_a_refusal_is_not(menus, tmp_path, monkeypatch: pytest.MonkeyPatch):
    flaky = dg.AssetKey(["fresh", "flaky_orders"])
    monkeypatch.setenv("MESH_TEST_FLAKY", str(tmp_path))  # each day fails once, then succeeds

    retried = menus.run(flaky, "2021-06-01")

    assert retried.success
    assert len(events_of(retried, "STEP_UP_FOR_RETRY")) == 1  # the policy (retries: count 2) ran it again
    assert (tmp_path / "2021-06-01").exists()  # the first attempt failed with its transient error
    assert menus.rows("flaky_orders", "2021-06-01") == 3

    refused = menus.run(flaky, "2021-06-03")  # orders of 2021-06-03 never landed: not ready

    assert not refused.success
    assert "fresh.orders 2021-06-03 (not landed)" in failure(refused)
    assert events_of(refused, "STEP_UP_FOR_RETRY") == []  # a refusal is final: no retry
    assert not (tmp_path / "2021-06-03").exists()  # the product's code never ran


def test_a_paused_product_and_its_consumers_wait_and_catch_up_once_resumed(menus):
    menus.land_menu(updated_on="2021-06-02")  # every day's watermark reached: only the pause holds
    menus.observe()
    first = dg.evaluate_automation_conditions(defs=menus.defs, instance=menus.instance)
    set_paused(menus.instance, "fresh", "menus", [STRICT, NAMED], "source migration")
    menus.land_orders("2021-06-01", "2021-06-02")
    menus.observe()
    assert menus.run(NAMED, "2021-06-01").success  # pausing holds automation, not a run launched by hand

    held = dg.evaluate_automation_conditions(defs=menus.defs, instance=menus.instance, cursor=first.cursor)

    assert held.get_requested_partitions(NAMED) == set()  # 2021-06-02 is due, but its product is paused
    assert held.get_requested_partitions(SUMMARY) == set()  # so are its consumers: 2021-06-01 was published
    shown = menus.instance.fetch_observations(dg.AssetRecordsFilter(asset_key=NAMED), limit=1).records
    assert "source migration" in shown[0].asset_observation.metadata[PAUSED_METADATA].value  # in the UI

    set_paused(menus.instance, "fresh", "menus", [STRICT, NAMED], None)
    resumed = dg.evaluate_automation_conditions(defs=menus.defs, instance=menus.instance, cursor=held.cursor)

    assert resumed.get_requested_partitions(NAMED) == {"2021-06-02"}  # what became due while paused
    assert resumed.get_requested_partitions(SUMMARY) == {"2021-06-01"}
