"""Readiness for every input kind, from what the instance knows (no Spark): a date-by-region external table,
a dbt model with its tests as blocking checks, an hourly input of a daily output, a whole-table read."""

from __future__ import annotations

from datetime import date

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationTargetMaterializationData

from mesh_assets.graph.resolve import Table, TableKind
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.model.product import Input, Window
from mesh_assets.run.readiness import unready

DAYS = PartitionRange.from_keys(Grain.DAILY, "2021-06-01", "2021-06-02")
REGIONS = ("apac", "eu")


def table(domain: str, name: str, grain: Grain = Grain.DAILY, **extra) -> Table:
    fields = dict(
        domain=domain,
        name=name,
        product=name,
        owner="team:data",
        published=True,
        grain=grain,
        partition_column="p_date",
        kind=TableKind.PRODUCT,
        start_date=date(2021, 6, 1),
        blocking_checks=(),
        source_file=None,
        line=None,
    )
    return Table(**{**fields, **extra})


def publish(instance: dg.DagsterInstance, info: Table, *partitions: str | None) -> None:
    for partition in partitions:
        key = info.key
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))


def judge(instance: dg.DagsterInstance, info: Table, check: str, partition: str, passed: bool) -> None:
    key = info.key
    record = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1
    ).records[0]
    target = AssetCheckEvaluationTargetMaterializationData(
        storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
    )
    instance.report_runless_asset_event(
        dg.AssetCheckEvaluation(
            asset_key=key, check_name=check, passed=passed, partition=partition, target_materialization_data=target
        )
    )


def same(info: Table) -> Input:
    return Input(table=info.ref, window=Window(kind="same"))


def test_a_regional_day_is_ready_only_with_every_region():
    instance = dg.DagsterInstance.ephemeral()
    regional = table("up", "raw_regional", kind=TableKind.EXTERNAL, regions=REGIONS)
    publish(instance, regional, "2021-06-01|apac", "2021-06-01|eu", "2021-06-02|apac")

    refused = unready(instance, [(same(regional), regional)], DAYS)

    assert refused == {"2021-06-02": ["up.raw_regional 2021-06-02|eu (not published)"]}


def test_a_dbt_model_input_waits_for_its_blocking_tests_on_its_current_data():
    instance = dg.DagsterInstance.ephemeral()
    kpis = table("analytics", "city_daily_kpis", blocking_checks=("not_null_city_daily_kpis_city",))
    publish(instance, kpis, "2021-06-01", "2021-06-02")
    judge(instance, kpis, "not_null_city_daily_kpis_city", "2021-06-01", passed=True)
    judge(instance, kpis, "not_null_city_daily_kpis_city", "2021-06-02", passed=False)

    assert unready(instance, [(same(kpis), kpis)], DAYS) == {
        "2021-06-02": ["analytics.city_daily_kpis 2021-06-02 (check not_null_city_daily_kpis_city failed)"]
    }
    publish(instance, kpis, "2021-06-01")  # re-published: the passed test judged the previous data
    assert unready(instance, [(same(kpis), kpis)], DAYS)["2021-06-01"] == [
        "analytics.city_daily_kpis 2021-06-01 (check not_null_city_daily_kpis_city not run on its current data)"
    ]
    lenient = Input(table=kpis.ref, window=Window(kind="same"), ignore_quality=True)
    assert unready(instance, [(lenient, kpis)], DAYS) == {}


def test_an_hourly_input_of_a_daily_output_needs_the_days_24_hours():
    instance = dg.DagsterInstance.ephemeral()
    hourly = table("up", "raw_hourly", Grain.HOURLY, kind=TableKind.EXTERNAL, partition_column="p_hour")
    publish(instance, hourly, *[f"2021-06-01-{h:02d}:00" for h in range(24)])
    publish(instance, hourly, *[f"2021-06-02-{h:02d}:00" for h in range(23)])

    assert unready(instance, [(same(hourly), hourly)], DAYS) == {
        "2021-06-02": ["up.raw_hourly 2021-06-02-23:00 (not published)"]
    }


def test_a_window_reaching_before_the_first_partition_reads_what_exists():
    instance = dg.DagsterInstance.ephemeral()
    orders = table("food_delivery", "orders")
    publish(instance, orders, "2021-06-01")
    week = Input(table=orders.ref, window=Window(kind="last", n=7))

    refused = unready(instance, [(week, orders)], DAYS)

    assert "2021-06-01" not in refused  # its window holds only 06-01: the days before the table began are none
    assert refused["2021-06-02"] == ["food_delivery.orders 2021-06-02 (not published)"]


def test_a_whole_table_read_needs_the_table_published_once():
    instance = dg.DagsterInstance.ephemeral()
    menus = table("food_delivery", "menus", Grain.NONE, kind=TableKind.EXTERNAL)
    whole = Input(table=menus.ref, window=Window(kind="all"))
    assert unready(instance, [(whole, menus)], DAYS) == {
        "2021-06-01": ["food_delivery.menus (never published)"],
        "2021-06-02": ["food_delivery.menus (never published)"],
    }
    publish(instance, menus, None)
    assert unready(instance, [(whole, menus)], DAYS) == {}


def test_a_whole_read_is_refused_past_its_maximum_age_and_the_products_default_applies():
    """A dimension read whole is judged by the age of its last publication: an input's ``freshness_hours``, else
    the product's ``input_freshness_hours`` (``default_hours``); a partition read by key is not."""
    from datetime import UTC, datetime, timedelta

    instance = dg.DagsterInstance.ephemeral()
    menu = table("sales", "menu", Grain.NONE)
    publish(instance, menu, None)
    later = datetime.now(UTC) + timedelta(hours=30)
    whole = Input(table="sales.menu", window=Window(kind="all"))

    assert unready(instance, [(whole, menu)], DAYS, now=later) == {}  # no limit, no refusal
    refused = unready(instance, [(whole, menu)], DAYS, now=later, default_hours=26)
    assert set(refused) == {"2021-06-01", "2021-06-02"}
    assert refused["2021-06-01"][0].startswith("sales.menu (stale: last updated ")
    assert refused["2021-06-01"][0].endswith("30.0 h ago; freshness_hours is 26.0 h)")
    own = Input(table="sales.menu", window=Window(kind="all"), freshness_hours=48)  # the input's own limit wins
    assert unready(instance, [(own, menu)], DAYS, now=later, default_hours=26) == {}
