"""Automation conditions of Mesh outputs, evaluated in-process against an ephemeral instance (no Spark).

Upstream publications and check results are reported as runless events; time is simulated. Every case runs
twice: over the whole mesh in one graph (the demo, the tests), and over the consumer domain's code location as
its code server evaluates it (``use_user_code_server``), where the producer domain's tables are placeholders
with their partitions and without their checks.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path

import automation_worlds as worlds
import dagster as dg
import pytest
from dagster._core.definitions.automation_condition_sensor_definition import MAX_ENTITIES
from runless import report_checks

from mesh_assets.automation import sensors as sensors_module
from mesh_assets.definitions import build_definitions
from mesh_assets.engine.identity import IDENTITY_TAG
from mesh_assets.graph.discovery import DomainSpecs
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.model.checks import NotNull
from mesh_assets.model.product import DataProduct, ExternalTable, Input, Output, PySparkTransformation, Window

START = date(2024, 1, 1)
CLEAN = dg.AssetKey(["up", "clean"])
RAW_HOURLY = dg.AssetKey(["up", "raw_hourly"])
RAW_REGIONAL = dg.AssetKey(["up", "raw_regional"])
RAW_DAILY = dg.AssetKey(["up", "raw_daily"])
DIM = dg.AssetKey(["up", "dim"])
REGIONS = ("apac", "eu", "latam")
CHECK = dg.AssetCheckKey(CLEAN, "not_null_id")


def _fn(inputs: dict[str, Input]) -> Callable[..., None]:
    """A transformation that is never run, with the parameters its inputs name (as governance requires)."""

    def build(**_: object) -> None:
        return None

    build.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in inputs]
    )
    return build


def _product(domain: str, name: str, outputs: list[tuple[Output, dict[str, Input]]], **kw) -> DataProduct:
    return DataProduct(
        domain=domain,
        name=name,
        owner="team:data",
        contacts=[{"kind": "chat", "value": "#data"}],
        start_date=START,
        transformations=[PySparkTransformation(output=o, inputs=i, fn=_fn(i)) for o, i in outputs],
        **kw,
    )


def _same(table: str, **kw) -> Input:
    return Input(table=table, window=Window(kind="same"), **kw)


def domains() -> dict[str, DomainSpecs]:
    up = _product(
        "up",
        "up",
        [(Output(table="clean", published=True, checks=(NotNull(columns=("id",)),)), {})],
        external=(
            ExternalTable(table="raw_hourly", partitioning="hourly", partition_column="p_hour"),
            ExternalTable(table="raw_regional", regions=REGIONS),
            ExternalTable(table="raw_daily"),
            ExternalTable(table="dim", partitioning="none"),
        ),
    )
    down = _product(
        "down",
        "down",
        [
            (Output(table="report"), {"clean": _same("up.clean")}),
            (Output(table="relaxed"), {"clean": _same("up.clean", ignore_quality=True)}),
            (Output(table="rollup"), {"raw_hourly": _same("up.raw_hourly")}),
            (Output(table="regional_rollup"), {"raw_regional": _same("up.raw_regional")}),
            (Output(table="blend"), {"clean": _same("up.clean", ignore_quality=True), "daily": _same("up.raw_daily")}),
            (
                Output(table="blend_gated"),
                {"clean": _same("up.clean"), "daily": _same("up.raw_daily", ignore_quality=True)},
            ),
            (
                Output(table="enriched"),
                {"clean": _same("up.clean"), "dim": Input(table="up.dim", window=Window(kind="all"))},
            ),
        ],
    )
    latest = _product(
        "down", "latest", [(Output(table="latest_only"), {"clean": _same("up.clean")})], rerun_history=False
    )
    timed = _product("down", "timed", [(Output(table="timed"), {"clean": _same("up.clean")})], cron="0 6 * * *")
    return {
        "up": DomainSpecs("up", Path("."), [up]),
        "down": DomainSpecs("down", Path("."), [down, latest, timed]),
    }


def whole_mesh() -> dg.Definitions:
    return worlds.whole_mesh(domains())


def down_location() -> dg.Definitions:
    return worlds.down_location(domains())


BUILDS = {"whole mesh": whole_mesh, "down's code location": down_location}


class Ticker:
    """Evaluates the conditions tick by tick, carrying the cursor like the sensor does."""

    def __init__(self, build: Callable[[], dg.Definitions] = whole_mesh) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.defs = build()
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursor = None
        self.now = datetime(2024, 1, 10, 1, 0)

    def tick(self, at: datetime | None = None, advance: timedelta = timedelta(minutes=1)) -> dict[str, set[str | None]]:
        self.now = at or self.now + advance
        result = dg.evaluate_automation_conditions(
            defs=self.defs, instance=self.instance, cursor=self.cursor, evaluation_time=self.now
        )
        self.cursor = result.cursor
        self.results = {r.key: r for r in result.results}
        return {
            key.to_user_string(): set(result.get_requested_partitions(key))
            for key in self.defs.resolve_asset_graph().get_all_asset_keys()
            if result.get_num_requested(key)
        }

    def publish(self, key: dg.AssetKey, partition: str | None, check_passed: bool | None = True) -> None:
        self.instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))
        if key == CLEAN:
            self.check(partition, True, "valid")  # a publishing run passes its output's built-in check
        if key == CLEAN and check_passed is not None:
            self.check(partition, check_passed)

    def check(self, partition: str, passed: bool, name: str = CHECK.name) -> None:
        report_checks(self.instance, CLEAN, partition, **{name: passed})


@pytest.fixture(params=list(BUILDS))
def ticker(request: pytest.FixtureRequest) -> Ticker:
    t = Ticker(BUILDS[request.param])
    assert t.tick() == {}  # the first evaluation only initialises the cursor
    return t


def test_what_was_published_before_the_first_tick_is_not_requested_and_what_follows_is() -> None:
    """The README's "Automation sensors": a sensor started over inputs that already landed requests nothing for
    them (they are run with ``mesh backfill``); a partition published after its first tick is requested."""
    ticker = Ticker()
    ticker.publish(CLEAN, "2024-01-08")
    assert ticker.tick() == {}
    assert ticker.tick() == {}
    ticker.publish(CLEAN, "2024-01-09")
    assert ticker.tick()["down/report"] == {"2024-01-09"}


def test_new_upstream_partition_requests_exactly_the_matching_partitions(ticker: Ticker) -> None:
    ticker.publish(CLEAN, "2024-01-09")
    assert ticker.tick() == {
        "down/report": {"2024-01-09"},
        "down/relaxed": {"2024-01-09"},
        "down/latest_only": {"2024-01-09"},
    }


def test_nothing_is_requested_twice_for_the_same_upstream_state(ticker: Ticker) -> None:
    ticker.publish(CLEAN, "2024-01-09")
    assert "down/report" in ticker.tick()
    for _ in range(3):
        assert ticker.tick() == {}


def test_failed_blocking_check_requests_nothing_but_ignore_quality_consumers(ticker: Ticker) -> None:
    ticker.publish(CLEAN, "2024-01-09", check_passed=False)
    assert ticker.tick() == {"down/relaxed": {"2024-01-09"}}
    assert ticker.tick() == {}
    # the next day passes: the gated consumers follow, for that day only
    # (a second runless evaluation of one check partition hits a unique index in Dagster's SQLite storage,
    # so a failed partition's later pass is not simulated here)
    ticker.publish(CLEAN, "2024-01-10", check_passed=True)
    requested = ticker.tick(at=datetime(2024, 1, 11, 1, 0))
    assert requested["down/report"] == {"2024-01-10"}
    assert ticker.tick() == {}


def test_a_republished_partition_reruns_only_the_partitions_that_read_it(ticker: Ticker) -> None:
    """In a domain's own location this needs the producer's partitions: Dagster's placeholder for another
    location's table has none, and an update of it would re-request every partition of its readers."""
    for day in ("2024-01-08", "2024-01-09"):
        for hour in range(24):
            ticker.publish(RAW_HOURLY, f"{day}-{hour:02d}:00")
    assert ticker.tick() == {"down/rollup": {"2024-01-08", "2024-01-09"}}
    assert ticker.tick() == {}
    ticker.publish(RAW_HOURLY, "2024-01-08-05:00")  # a late correction of one hour
    assert ticker.tick() == {"down/rollup": {"2024-01-08"}}


def test_republished_history_reruns_unless_latest_window_only(ticker: Ticker) -> None:
    ticker.publish(CLEAN, "2024-01-02")
    requested = ticker.tick()
    assert requested["down/report"] == {"2024-01-02"}
    assert "down/latest_only" not in requested


def test_cron_is_the_earliest_start(ticker: Ticker) -> None:
    ticker.publish(CLEAN, "2024-01-09")
    assert "down/timed" not in ticker.tick(at=datetime(2024, 1, 10, 2, 0))
    assert "down/timed" not in ticker.tick(at=datetime(2024, 1, 10, 5, 59))
    assert ticker.tick(at=datetime(2024, 1, 10, 6, 1)).get("down/timed") == {"2024-01-09"}
    assert ticker.tick(at=datetime(2024, 1, 10, 6, 2)) == {}


def test_a_day_needs_all_its_hours_and_a_republished_hour_reruns_it(ticker: Ticker) -> None:
    hours = [f"2024-01-08-{h:02d}:00" for h in range(24)]
    for hour in hours[:23]:
        ticker.publish(RAW_HOURLY, hour)
        assert "down/rollup" not in ticker.tick()
    ticker.publish(RAW_HOURLY, hours[23])
    assert ticker.tick() == {"down/rollup": {"2024-01-08"}}
    assert ticker.tick() == {}
    ticker.publish(RAW_HOURLY, hours[5])  # a late correction of one hour
    assert ticker.tick() == {"down/rollup": {"2024-01-08"}}
    assert ticker.tick() == {}


def test_the_latest_hours_do_not_request_an_unfinished_day(ticker: Ticker) -> None:
    ticker.publish(RAW_HOURLY, "2024-01-10-00:00")
    assert ticker.tick() == {}


def test_a_partition_waits_until_its_input_checks_have_run(ticker: Ticker) -> None:
    ticker.publish(CLEAN, "2024-01-09", check_passed=None)  # published, its blocking check not yet run
    assert ticker.tick() == {"down/relaxed": {"2024-01-09"}}
    ticker.check("2024-01-09", passed=True)
    assert ticker.tick()["down/report"] == {"2024-01-09"}


def test_a_day_of_a_regional_table_needs_every_region_and_a_late_region_reruns_it(ticker: Ticker) -> None:
    day = "2024-01-08"
    for region in REGIONS[:2]:  # each region lands at its own midnight
        ticker.publish(RAW_REGIONAL, str(dg.MultiPartitionKey({"date": day, "region": region})))
        assert "down/regional_rollup" not in ticker.tick()
    ticker.publish(RAW_REGIONAL, str(dg.MultiPartitionKey({"date": day, "region": REGIONS[2]})))
    assert ticker.tick() == {"down/regional_rollup": {day}}
    assert ticker.tick() == {}
    ticker.publish(RAW_REGIONAL, str(dg.MultiPartitionKey({"date": day, "region": "eu"})))  # eu re-lands
    assert ticker.tick() == {"down/regional_rollup": {day}}


def test_a_failed_check_holds_back_only_consumers_that_do_not_ignore_that_input(ticker: Ticker) -> None:
    ticker.publish(RAW_DAILY, "2024-01-09")
    ticker.publish(CLEAN, "2024-01-09", check_passed=False)
    requested = ticker.tick()
    assert requested["down/blend"] == {"2024-01-09"}
    assert "down/blend_gated" not in requested


def test_a_whole_input_re_triggers_only_the_latest_window(ticker: Ticker) -> None:
    for day in ("2024-01-05", "2024-01-09"):
        ticker.publish(CLEAN, day)
    ticker.publish(DIM, None)
    assert ticker.tick()["down/enriched"] == {"2024-01-05", "2024-01-09"}
    assert ticker.tick() == {}
    ticker.publish(DIM, None)  # a dimension update
    assert ticker.tick() == {"down/enriched": {"2024-01-09"}}


def test_a_tick_with_nothing_new_runs_the_hold_back_tests_on_no_partition(ticker: Ticker) -> None:
    """The trigger comes first in the AND, so an idle tick does not pay for the input tests (cost, not semantics)."""
    assert ticker.tick() == {}
    evaluation = ticker.results[dg.AssetKey(["down", "report"])].serializable_evaluation
    [ready] = [e for e in evaluation.child_evaluations if e.condition_snapshot.label == "inputs_ready"]
    assert ready.candidate_subset.size == 0


def test_the_domain_sensor_runs_in_its_code_server_over_its_own_location() -> None:
    """What the code server runs on each tick: the domain's sensor, over the location's graph, in which the other
    domain's table has its partitions but not its checks (those stay defined once, in their own location)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        defs = down_location()
    graph = defs.resolve_asset_graph()
    clean = graph.get(CLEAN)
    assert not clean.is_executable and clean.partitions_def is not None and not clean.check_keys
    sensor = defs.get_sensor_def("down__automation")
    assert isinstance(sensor, dg.AutomationConditionSensorDefinition)
    assert sensor.sensor_type.value == "AUTOMATION"  # use_user_code_server: evaluated by the code server
    assert sensor.run_tags[IDENTITY_TAG] == "down"  # the runs it requests name their domain

    ticker = Ticker(down_location)
    repository = defs.get_repository_def()

    def evaluate(cursor: str | None) -> tuple[set[tuple[str, str]], str | None]:
        with dg.build_sensor_context(instance=ticker.instance, cursor=cursor, repository_def=repository) as context:
            result = sensor(context)
        requested = set()
        for request in result.run_requests:  # runs, or one backfill where an asset has several partitions
            if request.asset_graph_subset is not None:
                pairs = request.asset_graph_subset.iterate_asset_partitions()
                requested |= {(p.asset_key.to_user_string(), p.partition_key) for p in pairs}
            else:
                requested |= {(k.to_user_string(), request.partition_key) for k in request.asset_selection or ()}
        return requested, result.cursor

    _, cursor = evaluate(None)
    ticker.publish(CLEAN, "2024-01-08", check_passed=False)
    ticker.publish(CLEAN, "2024-01-09")
    requested, cursor = evaluate(cursor)
    assert ("down/report", "2024-01-09") in requested and ("down/relaxed", "2024-01-08") in requested
    assert ("down/report", "2024-01-08") not in requested  # its input's blocking check failed


def test_a_domain_past_dagsters_limit_gets_a_second_sensor_and_each_requests_its_own_assets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Dagster evaluates at most 500 assets per sensor evaluated in a code server, so a domain with more gets
    ``<domain>__automation_2`` and so on; with the limit at 2 here (500 outputs cost a minute), a domain of 3
    outputs gets ``big__automation`` (2) and ``big__automation_2`` (1), and each tick requests only its own."""
    assert sensors_module.MAX_TARGETS == MAX_ENTITIES
    monkeypatch.setattr(sensors_module, "MAX_TARGETS", 2)
    every = domains()
    up = list(MeshGraph({"up": every["up"]}).tables.values())
    big = _product("big", "big", [(Output(table=f"t{i}"), {"clean": _same("up.clean")}) for i in range(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        defs = build_definitions({"big": DomainSpecs("big", Path("."), [big])}, only={"big"}, extra=up)
    graph = defs.resolve_asset_graph()
    sensors = {s.name: s for s in defs.sensors if s.name.startswith("big__automation")}
    assert {name: s.asset_selection.resolve(graph) for name, s in sensors.items()} == {
        "big__automation": {dg.AssetKey(["big", "t0"]), dg.AssetKey(["big", "t1"])},
        "big__automation_2": {dg.AssetKey(["big", "t2"])},
    }

    instance = dg.DagsterInstance.ephemeral()
    repository = defs.get_repository_def()
    cursors: dict[str, str | None] = {}

    def tick(name: str) -> set[tuple[str, str]]:
        with dg.build_sensor_context(instance=instance, cursor=cursors.get(name), repository_def=repository) as ctx:
            result = sensors[name](ctx)
        cursors[name] = result.cursor
        requested = set()
        for request in result.run_requests:
            if request.asset_graph_subset is not None:
                pairs = request.asset_graph_subset.iterate_asset_partitions()
                requested |= {(p.asset_key.to_user_string(), p.partition_key) for p in pairs}
            else:
                requested |= {(k.to_user_string(), request.partition_key) for k in request.asset_selection or ()}
        return requested

    assert tick("big__automation") == tick("big__automation_2") == set()  # the first tick sets the cursor
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=CLEAN, partition="2024-01-09"))
    report_checks(instance, CLEAN, "2024-01-09", valid=True, not_null_id=True)
    assert tick("big__automation_2") == {("big/t2", "2024-01-09")}
    assert tick("big__automation") == {("big/t0", "2024-01-09"), ("big/t1", "2024-01-09")}
