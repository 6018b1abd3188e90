"""Regions with time zones: each region's day from its local midnight to the next, whatever the process's ``TZ``;
the partitions of one region's run and the input partitions it reads; how specs declare and read regions."""

from __future__ import annotations

import inspect
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from planning import planning_instance
from pydantic import ValidationError
from zones import local_time_zone

from mesh_assets import mesh_definitions
from mesh_assets.assets.outputs import build_output_asset
from mesh_assets.assets.specs import external_spec
from mesh_assets.automation.conditions import output_condition
from mesh_assets.automation.deadlines import late_inputs
from mesh_assets.backfill import BackfillError, plan_backfill, plan_rebuild
from mesh_assets.cli import main
from mesh_assets.graph.discovery import DomainSpecs, load_all
from mesh_assets.graph.queries import bind_parameters
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.model.grain import Grain, PartitionKeyError
from mesh_assets.model.partitions import PartitionRange, ranges_of_regions, read_region, window_range
from mesh_assets.model.product import DataProduct, ExternalTable, Input, Output, PySparkTransformation
from mesh_assets.model.regions import Region, local_date, local_day
from mesh_assets.model.windows import last, same

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "regions" / "domains"
REGIONS = {"eu": "Europe/Madrid", "latam": "America/Sao_Paulo", "apac": "Asia/Singapore"}


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("day", "zone", "start", "hours"),
    [
        (date(2024, 3, 31), "Europe/Madrid", at(2024, 3, 30, 23), 23),  # clocks forward at 02:00 CET
        (date(2024, 10, 27), "Europe/Madrid", at(2024, 10, 26, 22), 25),  # clocks back at 03:00 CEST
        (date(2024, 7, 1), "Europe/Madrid", at(2024, 6, 30, 22), 24),
        (date(2024, 3, 31), "America/Sao_Paulo", at(2024, 3, 31, 3), 24),  # no DST since 2019
        (date(2018, 11, 4), "America/Sao_Paulo", at(2018, 11, 4, 3), 23),  # its last spring-forward: no 00:00
        (date(2019, 2, 16), "America/Sao_Paulo", at(2019, 2, 16, 2), 25),  # its last fall-back: 23:00 twice
        (date(2024, 3, 31), "Asia/Singapore", at(2024, 3, 30, 16), 24),
        (date(2024, 3, 31), "UTC", at(2024, 3, 31), 24),
    ],
)
def test_a_regions_day_runs_from_its_local_midnight_under_any_process_zone(day, zone, start, hours):
    with local_time_zone("America/New_York"):
        first, end = local_day(day, zone)
    assert (first, end - first) == (start, timedelta(hours=hours))
    assert first.tzinfo is UTC and end.tzinfo is UTC
    assert local_date(first, zone) == day and local_date(end, zone) == day + timedelta(days=1)


def test_regions_are_a_mapping_to_zones_or_a_list_of_utc_regions():
    out = Output(table="t", regions=REGIONS)
    assert out.regions == tuple(Region(name, zone) for name, zone in REGIONS.items())
    assert ExternalTable(table="x", regions=["eu", "us"]).regions == (Region("eu", "UTC"), Region("us", "UTC"))
    assert Output.model_validate(out.model_dump(mode="json", by_alias=True)).regions == out.regions  # catalogs


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"regions": {"eu": "Europe/Madird"}}, "unknown time zone 'Europe/Madird'"),
        ({"regions": ["eu", "eu"]}, "regions must name each region once"),
        ({"regions": []}, "at least one region"),
        ({"regions": {"EU": "UTC"}}, "region name 'EU'"),
        ({"regions": ["eu"], "partitioning": "hourly"}, "must also be partitioned daily"),
        ({"regions": ["eu"], "region_column": "p_date"}, "region_column p_date is the partition column"),
        ({"regions": ["eu"], "kind": {"name": "merge", "unique_key": ["id"]}}, "of kind partitions, not merge"),
    ],
)
def test_bad_regions_are_refused_by_name(fields, message):
    with pytest.raises(ValidationError, match=message):
        Output(table="t", **fields)


def test_a_runs_keys_become_one_range_of_consecutive_dates_per_region():
    keys = ["2024-03-31|eu", "2024-03-30|eu", "2024-04-02|eu", "2024-03-31|apac"]
    ranges = ranges_of_regions(Grain.DAILY, ("eu", "latam", "apac"), tuple(REGIONS.values()), keys)
    assert [(r.region, r.zone, r.describe()) for r in ranges] == [
        ("eu", "Europe/Madrid", "2024-03-30..2024-03-31"),
        ("eu", "Europe/Madrid", "2024-04-02"),
        ("apac", "Asia/Singapore", "2024-03-31"),
    ]
    assert ranges[0].dagster_keys() == ["2024-03-30|eu", "2024-03-31|eu"]
    with pytest.raises(PartitionKeyError, match="not one of eu, latam, apac"):
        ranges_of_regions(Grain.DAILY, ("eu", "latam", "apac"), tuple(REGIONS.values()), ["2024-03-31|us"])


def test_a_regional_day_reads_the_utc_hours_of_its_local_day():
    day = at(2024, 3, 31)
    eu = PartitionRange(Grain.DAILY, day, day, region="eu", zone="Europe/Madrid")
    hours = window_range(same(), Grain.HOURLY, eu)
    assert (hours.start, hours.end, len(hours.keys())) == (at(2024, 3, 30, 23), at(2024, 3, 31, 21), 23)
    autumn = PartitionRange(Grain.DAILY, at(2024, 10, 27), at(2024, 10, 27), region="eu", zone="Europe/Madrid")
    assert len(window_range(same(), Grain.HOURLY, autumn).keys()) == 25
    apac = PartitionRange(Grain.DAILY, day, day, region="apac", zone="Asia/Singapore")
    assert window_range(same(), Grain.DAILY, apac).keys() == ["2024-03-30", "2024-03-31"]  # the UTC days it spans
    week = window_range(last(2), Grain.HOURLY, eu)
    assert (week.start, week.end) == (at(2024, 3, 29, 23), at(2024, 3, 31, 21))


def test_a_regional_input_is_read_by_one_region_or_every_region():
    day = at(2024, 3, 31)
    eu = PartitionRange(Grain.DAILY, day, day, region="eu", zone="Europe/Madrid")
    assert read_region(None, ("eu", "latam"), eu) == "eu"  # same region on both sides
    assert read_region("latam", ("eu", "latam"), eu) == "latam"  # the one the input names
    assert read_region(None, ("eu", "latam"), PartitionRange(Grain.DAILY, day, day)) is None  # all of a date
    assert read_region(None, (), eu) is None
    same_region = window_range(last(2), Grain.DAILY, eu, "eu")
    assert same_region.dagster_keys() == ["2024-03-30|eu", "2024-03-31|eu"]


@pytest.fixture(scope="module")
def regional_mesh() -> dg.Definitions:
    return mesh_definitions(FIXTURE)


def test_mesh_backfill_plans_one_region_s_dates_and_what_reads_them(regional_mesh, monkeypatch, tmp_path, capsys):
    instance = planning_instance(monkeypatch, tmp_path, regional_mesh)
    for hour in range(4 * 24):  # the hourly input of 2024-03-29..04-01 UTC landed
        key = f"{datetime(2024, 3, 29, tzinfo=UTC) + timedelta(hours=hour):%Y-%m-%d-%H:%M}"
        instance.report_runless_asset_event(
            dg.AssetMaterialization(dg.AssetKey(["central", "raw_events"]), partition=key)
        )
    args = ["backfill", "central.region_hours", "--start", "2024-03-30", "--end", "2024-03-31", "--downstream"]

    assert main.main([*args, "--region", "eu", "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Backfill plan: 2 partition(s) of 1 asset(s)" in out  # eu's two dates; latam's and apac's untouched
    graph = regional_mesh.resolve_asset_graph()
    plan = plan_backfill(graph, "central.region_hours", "2024-03-30", "2024-03-31", region="eu", instance=instance)
    assert plan.as_dict() == {"central/region_hours": ["2024-03-30|eu..2024-03-31|eu"]}
    waiting = {left.key.to_user_string(): left.reason for left in plan.left_out}
    assert (
        waiting["central/hours_per_date"]
        == "central/region_hours 2024-03-30|apac..2024-03-31|latam (4) never materialized"
    )

    plan = plan_backfill(graph, "central.region_hours", "2024-03-30", "2024-03-31", downstream=True)
    assert plan.as_dict() == {
        "central/region_hours": [f"2024-03-30|{region}..2024-03-31|{region}" for region in ("eu", "latam", "apac")],
        "central/eu_hours": ["2024-03-30..2024-03-31"],
        "central/hours_per_date": ["2024-03-30..2024-03-31"],
    }

    assert main.main([*args, "--region", "us", "--dry-run"]) == 2
    assert "--region us: not a region of the table (eu, latam, apac)" in capsys.readouterr().out
    assert (
        main.main(["backfill", "central.eu_hours", "--start", "2024-03-30", "--end", "2024-03-30", "--region", "eu"])
        == 2
    )
    assert "--region eu: the table is not partitioned by region" in capsys.readouterr().out


def test_a_regions_input_is_late_an_hour_after_its_local_day_ends():
    nodes = MeshGraph(load_all(FIXTURE), []).nodes_of("central")
    instance = dg.DagsterInstance.ephemeral()  # nothing of raw_events published
    with local_time_zone("Asia/Tokyo"):
        flags = late_inputs(instance, nodes, datetime(2024, 3, 31, 23, 30, tzinfo=UTC))
    late = {f["partition"]: f["missing"] for f in flags if f["table"] == "region_hours"}
    # eu's 2024-03-31 ended at 22:00 UTC and apac's at 16:00 UTC; latam's ends at 03:00 UTC on 04-01
    assert {p for p in late if p.startswith("2024-03-31")} == {"2024-03-31|eu", "2024-03-31|apac"}
    assert (late["2024-03-31|eu"][0], late["2024-03-31|eu"][-1], len(late["2024-03-31|eu"])) == (
        "2024-03-30-23:00",
        "2024-03-31-21:00",
        23,
    )
    assert "2024-03-30|latam" in late


def _automated_mesh() -> dg.Definitions:
    """``up``'s hourly UTC events and daily regional feed; ``down``'s regional day over the hours and its reader of
    one region of the feed, with their automation conditions."""

    def product(domain: str, outputs: list[tuple[Output, dict[str, Input]]], **kw: object) -> DataProduct:
        transformations = []
        for output, inputs in outputs:
            build = lambda **_: None  # noqa: E731
            build.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
                [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in inputs]
            )
            transformations.append(PySparkTransformation(output=output, inputs=inputs, fn=build))
        return DataProduct(
            domain=domain,
            name=domain,
            owner="team:data",
            contacts=[{"kind": "chat", "value": "#data"}],
            start_date=date(2024, 1, 1),
            transformations=transformations,
            **kw,
        )

    up = product(
        "up",
        [],
        external=(
            ExternalTable(table="raw_hourly", partitioning="hourly", partition_column="p_hour", published=True),
            ExternalTable(table="raw_regional", regions=["apac", "eu", "latam"], published=True),
        ),
    )
    down = product(
        "down",
        [
            (Output(table="by_region", regions=REGIONS), {"raw_hourly": Input(table="up.raw_hourly")}),
            (Output(table="eu_only"), {"raw_regional": Input(table="up.raw_regional", region="eu")}),
        ],
    )
    graph = MeshGraph({"up": DomainSpecs("up", Path("."), [up]), "down": DomainSpecs("down", Path("."), [down])})
    assets: list = [external_spec(graph.products_of("up")[0], t) for t in graph.tables.values() if t.external]
    assets += [build_output_asset(node, output_condition(node)) for node in graph.nodes.values()]
    return dg.Definitions(assets=assets, resources={"mesh": dg.ResourceDefinition.none_resource()})


def test_automation_requests_a_regions_day_once_its_local_hours_and_one_regions_reader_once_its_region():
    defs, instance = _automated_mesh(), dg.DagsterInstance.ephemeral()
    cursor, requested = None, {}

    def tick(at: datetime) -> dict[str, set[str]]:
        nonlocal cursor
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor, evaluation_time=at)
        cursor = result.cursor
        return {
            r.key.to_user_string(): set(result.get_requested_partitions(r.key))
            for r in result.results
            if result.get_num_requested(r.key)
        }

    tick(datetime(2024, 1, 9))
    for hour in range(24):  # apac's 2024-01-08: 2024-01-07 16:00 to 2024-01-08 16:00 UTC
        at = datetime(2024, 1, 7, 16, tzinfo=UTC) + timedelta(hours=hour)
        instance.report_runless_asset_event(
            dg.AssetMaterialization(dg.AssetKey(["up", "raw_hourly"]), partition=f"{at:%Y-%m-%d-%H:%M}")
        )
    instance.report_runless_asset_event(
        dg.AssetMaterialization(dg.AssetKey(["up", "raw_regional"]), partition="2024-01-08|eu")
    )

    requested = tick(datetime(2024, 1, 9, 0, 1))

    assert requested == {"down/by_region": {"2024-01-08|apac"}, "down/eu_only": {"2024-01-08"}}


def test_a_regional_table_is_not_rebuilt_one_region_at_a_time(regional_mesh):
    with pytest.raises(BackfillError, match="central/region_hours is partitioned by date and region: a rebuild"):
        plan_rebuild(regional_mesh.resolve_asset_graph(), "central.region_hours")


def test_a_spark_connect_query_binds_the_region_as_a_string_literal():
    bound = bind_parameters("SELECT * FROM t WHERE city_region = :region", {"region": "eu"})
    assert bound == "SELECT * FROM t WHERE city_region = 'eu'"
    with pytest.raises(ValueError, match="invalid identifier"):
        bind_parameters("SELECT :region", {"region": "eu' OR 1=1 --"})
