"""Injection through every value a user controls: each attempt is refused, or its value is only data.

Partition values reach Spark as typed literals or bound parameters and identifiers only after validation
(``docs/reliability.md`` lists where). Each test here tries one way in against a canary: a Delta table
registered in the session's catalog as ``canary.victim``, like any product table. After every test the
canary still has its rows and its version, and a refused run left no table behind.
"""

from __future__ import annotations

import re
import uuid
from datetime import date
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import pytest
from delta.tables import DeltaTable
from pydantic import ValidationError
from pyspark.sql import functions as F

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.checks.contract import schema_drift
from mesh_assets.checks.evaluate import evaluate
from mesh_assets.dbt.assets import window_vars
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.queries import NotAQuery
from mesh_assets.graph.resolve import Node, tables_of
from mesh_assets.model.checks import AcceptedValues, NotNull, SqlAssertion, Unique
from mesh_assets.model.errors import SpecValidationError
from mesh_assets.model.grain import Grain, PartitionKeyError
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.model.product import Column, DataProduct, Output, SqlTransformation, Window
from mesh_assets.run.compute import transform
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ROOT / "tests" / "fixtures" / "reliability" / "domains"
INJECTION = "x'); DROP TABLE canary.victim; --"
"""The same string as the fixture's accepted value: it must work as data and nowhere as SQL."""
KEYS = ["2021-06-01'; DROP TABLE canary.victim; --", "../x", "2021-06-01' OR '1'='1", "2024-02-30"]
SCHEMA = "id bigint, payload string, p_date date"
DAY = "2021-06-03"


class Site:
    """A warehouse with the ``rel`` fixture domain and a canary table, registered in the shared session."""

    def __init__(self, spark, base: Path):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / f"wh-{uuid.uuid4().hex[:8]}"))
        self.registry = self.mesh.registry
        self.defs = mesh_definitions(DOMAINS)
        self.assets = executable_assets(self.defs)
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursors: dict[str, str | None] = {}
        canary = self.registry.location("canary", "victim")
        spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id bigint, name string").write.format("delta").save(
            canary
        )
        self.registry.register(spark, "canary", "victim")
        self.canary_version = self.version(canary)

    def version(self, location: str) -> int:
        return DeltaTable.forPath(self.spark, location).history(1).collect()[0]["version"]

    def assert_canary_intact(self) -> None:
        assert self.spark.catalog.tableExists("canary.victim")
        assert sorted(tuple(r) for r in self.spark.table("canary.victim").collect()) == [(1, "a"), (2, "b"), (3, "c")]
        assert self.version(self.registry.location("canary", "victim")) == self.canary_version

    def land(self, day: str, payloads: list[str]) -> None:
        rng = PartitionRange.from_keys(Grain.DAILY, day, day)
        rows = [(i, p, date.fromisoformat(day)) for i, p in enumerate(payloads)]
        self.spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("overwrite").partitionBy("p_date").option(
            "replaceWhere", replace_predicate("p_date", rng)
        ).save(self.registry.location("rel", "raw_events"))
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def run(self, table: str, partition: str | None = None, **kwargs):
        return dg.materialize(
            self.assets,
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(["rel", table])],
            partition_key=partition,
            raise_on_error=False,
            **kwargs,
        )

    def rows(self, table: str, day: str) -> list[tuple]:
        df = self.spark.read.format("delta").load(self.registry.location("rel", table))
        return sorted(tuple(r) for r in df.where(F.col("p_date") == date.fromisoformat(day)).drop("p_date").collect())

    def exists(self, table: str) -> bool:
        return Path(self.registry.location("rel", table)).exists()


@pytest.fixture(scope="module")
def site(spark, tmp_path_factory) -> Site:
    site = Site(spark, tmp_path_factory.mktemp("sql-safety"))
    site.land(DAY, ["ok", INJECTION])
    return site


@pytest.fixture(autouse=True)
def canary(site):
    yield
    site.assert_canary_intact()


def failure_message(result) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return failure.event_specific_data.error.message


@pytest.mark.parametrize("key", KEYS)
def test_partition_key_of_a_materialization(site, key):
    with pytest.raises(dg.DagsterUnknownPartitionError, match=re.escape(f"partition with key `{key}`")):
        site.run("events", key)
    assert not site.exists("events")


@pytest.mark.parametrize("table", ["events", "windowed_events"])
@pytest.mark.parametrize("position", ["start", "end"])
def test_partition_range_tags_of_a_run(site, table, position):
    # the range tags are free text on a run (the UI, the API and backfills set them): Dagster refuses a
    # bound that is not a partition before the run exists, and Mesh parses the bounds again into dates
    bounds = {"start": DAY, "end": DAY, position: KEYS[0]}
    tags = {f"dagster/asset_partition_range_{k}": v for k, v in bounds.items()}
    with pytest.raises(ValueError, match=re.escape("DROP TABLE canary.victim")):
        site.run(table, tags=tags)
    assert not site.exists(table)


def test_values_in_the_data_and_in_accepted_values_are_data(site):
    result = site.run("guarded_events", DAY)
    assert result.success, failure_message(result)
    assert site.rows("guarded_events", DAY) == [(0, "ok"), (1, INJECTION)]
    check = next(e for e in result.get_asset_check_evaluations() if e.check_name == "accepted_values_payload")
    assert check.passed


def test_sql_product_binds_the_window_as_parameters(site):
    result = site.run("windowed_events", DAY)
    assert result.success, failure_message(result)
    assert site.rows("windowed_events", DAY) == [(0, "ok"), (1, INJECTION)]


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM canary.victim",
        "DROP TABLE canary.victim",
        "SELECT 1 AS id; DROP TABLE canary.victim",
        "INSERT OVERWRITE canary.victim SELECT 9, 'z'",
    ],
)
def test_sql_that_skipped_validation_is_refused_at_run_time(site, sql):
    output = Output(table="rogue", checks=(SqlAssertion(sql=sql),))
    product = DataProduct(
        domain="rel",
        name="rogue",
        owner="rel@example.com",
        contacts=[{"kind": "chat", "value": "#rel"}],
        transformations=(SqlTransformation(output=output, sql=sql),),
    )
    [table] = tables_of(product)
    node = Node(product, product.transformations[0], table, reads=(), sql=sql)
    part = PartitionRange.from_keys(Grain.DAILY, DAY, DAY)
    log = SimpleNamespace(warning=print)
    with pytest.raises(NotAQuery):
        transform(site.spark, site.registry, node, part, log, "run", versions={})

    staged = site.spark.createDataFrame([(1, date(2021, 6, 3))], "id bigint, p_date date")
    with pytest.raises(NotAQuery):
        evaluate(site.spark, table, staged, part)


@pytest.mark.parametrize(
    "domain, table",
    [("canary", "victim`; DROP TABLE canary.victim; --"), ("canary`.`victim", "x"), ("../canary", "victim")],
)
def test_table_and_domain_names_at_run_time(site, domain, table):
    with pytest.raises(ValueError, match="invalid identifier"):
        site.registry.register(site.spark, domain, table)
    with pytest.raises(ValueError, match="invalid identifier"):
        site.registry.location(domain, table)


def test_table_and_domain_names_in_specs(tmp_path):
    folder = tmp_path / "domains" / "canary; DROP TABLE victim"
    folder.mkdir(parents=True)
    (folder / "p.yaml").write_text("name: p\nowner: a@example.com\ncontacts: [{kind: chat, value: '#a'}]\n")
    rel = tmp_path / "domains" / "rel"
    rel.mkdir()
    (rel / "p.yaml").write_text(
        "name: p\nowner: a@example.com\ncontacts: [{kind: chat, value: '#a'}]\n"
        'tables:\n  - table: "victim; DROP TABLE canary.victim"\n    sql: SELECT 1 AS id\n'
    )
    with pytest.raises(SpecValidationError) as raised:
        build_definitions(load_all(tmp_path / "domains"), extra=[])
    messages = [e.message for e in raised.value.errors]
    assert "invalid domain name 'canary; DROP TABLE victim'" in messages
    assert any("invalid identifier 'victim; DROP TABLE canary.victim'" in m for m in messages)


@pytest.mark.parametrize(
    "build",
    [
        lambda: NotNull(columns=["id`) OR 1=1 --"]),
        lambda: Unique(keys=["id", "id`; DROP TABLE canary.victim"]),
        lambda: AcceptedValues(column=INJECTION, values=["a"]),
        lambda: Output(table="x", partition_column="p_date` = p_date OR 1=1 --"),
        lambda: Column(name=INJECTION, type="string"),
        lambda: Window.model_validate("last_7; DROP TABLE canary.victim"),
        lambda: Window.model_validate({"last": "7; DROP TABLE canary.victim"}),
    ],
    ids=["not_null column", "unique key", "accepted_values column", "partition column", "contract", "window", "last"],
)
def test_check_columns_partition_columns_and_windows(build):
    with pytest.raises(ValidationError):
        build()


def test_contract_types_are_only_compared(site):
    output = Output(table="x", contract=(Column(name="id", type=INJECTION),))
    df = site.spark.createDataFrame([(1, date(2021, 6, 3))], "id bigint, p_date date")
    assert schema_drift(output.contract, output.partition_column, df) == [
        f"column id is bigint, contract says {INJECTION}"
    ]


@pytest.mark.parametrize("key", KEYS)
def test_partition_keys_hours_and_dbt_windows(key):
    with pytest.raises(PartitionKeyError):
        Grain.DAILY.parse(key)
    with pytest.raises(PartitionKeyError):
        Grain.HOURLY.parse(key)
    with pytest.raises(ValueError):
        window_vars(SimpleNamespace(partition_key_range=dg.PartitionKeyRange(key, DAY)))


def test_run_config(site):
    with pytest.raises(dg.DagsterInvalidConfigError):
        site.run("events", DAY, run_config={"ops": {"rel__events": {"config": {"sql": INJECTION}}}})
