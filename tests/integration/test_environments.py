"""Environments: a change built with ``mesh apply --env NAME`` computes the changed tables and their readers
under the environment's own root and instance, reading unchanged tables in place from production, and leaves
production's tables (Delta versions) and instance (events) as they were; ``mesh env drop`` deletes the
environment alone."""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from production import Production, edit, land_sales, production_home

from mesh_assets import mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.cli.environments import table_location
from mesh_assets.cli.main import main
from mesh_assets.storage.lake import open_table

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "environments" / "domains"
DAYS = ["2021-06-01", "2021-06-02", "2021-06-03", "2021-06-04"]
AMOUNTS = {"2021-06-01": [1, 2], "2021-06-02": [3], "2021-06-03": [4, 5], "2021-06-04": [6]}
TABLES = [("tr", "raw_sales"), ("tr", "daily_sales"), ("tr", "two_day_sales"), ("tr", "running_sales")]
TABLES += [("rep", "daily_report"), ("tr", "amount_history")]
KEYS = [dg.AssetKey(["tr", "daily_sales"]), dg.AssetKey(["tr", "two_day_sales"])]
KEYS += [dg.AssetKey(["tr", "running_sales"]), dg.AssetKey(["rep", "daily_report"])]
KEYS += [dg.AssetKey(["tr", "amount_history"])]


@pytest.fixture(scope="module")
def production(spark, tmp_path_factory) -> Iterator[Production]:
    """Four landed days of sales, every table materialized for them on an on-disk instance: production."""
    base = tmp_path_factory.mktemp("production")
    domains = base / "domains"
    shutil.copytree(FIXTURE, domains)
    with production_home(base, domains, TABLES) as production:
        land_sales(spark, production.mesh.registry.location("tr", "raw_sales"), AMOUNTS)
        defs = mesh_definitions(domains)
        observe_now(defs, production.instance, production.mesh, {})
        production.materialize(defs, KEYS, DAYS[0], DAYS[-1])
        yield production


def test_a_sql_change_is_built_into_an_environment_and_production_is_untouched(production: Production, capsys):
    sql = production.domains / "rep" / "defs" / "report" / "daily_report.sql"
    versions, events = production.versions(), production.events()
    edit(sql, "amount AS amount", "amount + 100 AS amount")
    try:
        assert main(["apply", "--env", "sqlchange", "--from", "2021-06-03", "--to", "2021-06-04"]) == 0
    finally:
        edit(sql, "amount + 100 AS amount", "amount AS amount")

    location = table_location("sqlchange", "rep", "daily_report")
    assert location.startswith(str(production.home / "envs" / "sqlchange" / "warehouse"))
    assert production.read(location, "amount") == {"2021-06-03": 109, "2021-06-04": 106}
    # the unchanged upstream is read in place, in production: nothing of it was copied
    assert table_location("sqlchange", "tr", "daily_sales") == production.mesh.registry.location("tr", "daily_sales")
    assert not (production.home / "envs" / "sqlchange" / "warehouse" / "tr").exists()
    assert production.versions() == versions
    assert production.events() == events
    assert production.read(production.mesh.registry.location("rep", "daily_report"), "amount")["2021-06-03"] == 9
    own = dg.DagsterInstance.from_config(str(production.home / "envs" / "sqlchange" / "dagster"))
    assert own.get_materialized_partitions(dg.AssetKey(["rep", "daily_report"])) == {"2021-06-03", "2021-06-04"}
    assert own.get_materialized_partitions(dg.AssetKey(["tr", "daily_sales"])) == set()

    # `mesh diff --env`: the environment's rows against production's, per key, as the CI recipe runs it
    capsys.readouterr()
    diff = ["diff", "rep/daily_report", "--env", "sqlchange", "--from", "2021-06-03", "--to", "2021-06-04"]
    assert main([*diff, "--key", "p_date", "--json"]) == 1  # they differ
    found = json.loads(capsys.readouterr().out)
    assert (found["left_rows"], found["right_rows"], found["only_left"], found["only_right"]) == (2, 2, 0, 0)
    assert (found["changed"], found["column_changes"]["amount"]) == (2, 2)
    assert main(["diff", "--env", "sqlchange", "--json"]) == 1  # every table it built, over the range it was built for
    [whole] = json.loads(capsys.readouterr().out)
    assert (whole["key"], whole["only_left"], whole["only_right"]) == ([], 2, 2)  # no key: whole rows compared
    assert whole["partitions"] == {"column": "p_date", "start": "2021-06-03", "end": "2021-06-04"}
    assert main(["diff", "tr/daily_sales", "--env", "sqlchange"]) == 2  # not computed there: refused
    assert "does not compute tr/daily_sales" in capsys.readouterr().out


def test_days_counts_back_from_the_latest_day_production_published(production: Production):
    """``--days 2`` without ``--to``: the last two days production published (its partitions run to today)."""
    sql = production.domains / "rep" / "defs" / "report" / "daily_report.sql"
    edit(sql, "amount AS amount", "amount + 100 AS amount")
    try:
        assert main(["apply", "--env", "lastdays", "--days", "2"]) == 0
    finally:
        edit(sql, "amount + 100 AS amount", "amount AS amount")

    manifest = json.loads((production.home / "envs" / "lastdays" / "environment.json").read_text())
    assert (manifest["start"], manifest["end"]) == ("2021-06-03", "2021-06-04")
    location = table_location("lastdays", "rep", "daily_report")
    assert production.read(location, "amount") == {"2021-06-03": 109, "2021-06-04": 106}


def test_a_pyspark_change_reaches_its_readers_and_its_own_past_starts_from_a_clone(production: Production, capsys):
    sales = production.domains / "tr" / "sales.py"
    versions, events = production.versions(), production.events()
    edit(sales, 'raw.agg(F.sum("amount").alias("amount"))', 'raw.agg((F.sum("amount") * 10).alias("amount"))')
    try:
        assert main(["apply", "--env", "pychange", "--from", "2021-06-03", "--to", "2021-06-04"]) == 0
    finally:
        edit(sales, 'raw.agg((F.sum("amount") * 10).alias("amount"))', 'raw.agg(F.sum("amount").alias("amount"))')

    def env(domain: str, table: str, column: str = "amount") -> dict[str, int]:
        return production.read(table_location("pychange", domain, table), column)

    assert env("tr", "daily_sales") == {"2021-06-02": 30, "2021-06-03": 90, "2021-06-04": 60}  # day 2: two_day's
    assert env("tr", "two_day_sales") == {"2021-06-03": 120, "2021-06-04": 150}
    assert env("rep", "daily_report") == {"2021-06-03": 90, "2021-06-04": 60}
    # running totals start from production's past (a shallow clone: 3 and 6 on days 1 and 2), then the new code
    assert env("tr", "running_sales", "total") == {
        "2021-06-01": 3,
        "2021-06-02": 6,
        "2021-06-03": 96,
        "2021-06-04": 156,
    }
    cloned = production.home / "envs" / "pychange" / "warehouse" / "tr" / "running_sales"
    assert not list(cloned.glob("p_date=2021-06-01*"))  # the clone's past partitions are production's files
    assert production.versions() == versions
    assert production.events() == events
    assert production.read(production.mesh.registry.location("tr", "running_sales"), "total")["2021-06-04"] == 21

    # production's clean-up leaves the cloned table's files alone while the environment exists
    capsys.readouterr()
    assert main(["maintain", "tr/running_sales", "tr/daily_sales", "--no-compact"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "clean-up skipped: shallow clone in environment(s) pychange reads its files" in said
    assert said.count("clean-up skipped") == 1  # daily_sales is computed in the environment, not cloned


def test_drop_deletes_the_environment_alone(production: Production):
    assert main(["apply", "--env", "dropme", "--from", "2021-06-04", "--to", "2021-06-04"]) == 0  # nothing changed
    sql = production.domains / "rep" / "defs" / "report" / "daily_report.sql"
    edit(sql, "amount AS amount", "amount - 1 AS amount")
    try:
        assert main(["apply", "--env", "dropme", "--from", "2021-06-04", "--to", "2021-06-04"]) == 0
    finally:
        edit(sql, "amount - 1 AS amount", "amount AS amount")
    versions, events = production.versions(), production.events()
    folder = production.home / "envs" / "dropme"
    assert folder.is_dir()

    assert main(["env", "drop", "../dagster"]) == 2  # outside the environments: refused, nothing deleted
    assert (production.home / "dagster").is_dir()
    assert main(["env", "drop", "dropme"]) == 0

    assert not folder.exists()
    assert production.versions() == versions
    assert production.events() == events
    daily = production.read(production.mesh.registry.location("tr", "daily_sales"), "amount")
    assert daily == {"2021-06-01": 3, "2021-06-02": 3, "2021-06-03": 9, "2021-06-04": 6}


def test_a_history_change_starts_from_production_as_it_was_before_the_range(production: Production):
    """A history table applies its partitions in order: the environment's clone is production's version from before
    the range's first partition (days 1 and 2 applied), not its latest (day 4 applied), so the range is applied
    again over the state it followed from."""
    code = production.domains / "tr" / "amounts.py"
    versions, events = production.versions(), production.events()
    edit(code, 'raw.select("id", "amount")', 'raw.select("id", (raw["amount"] * 10).alias("amount"))')
    try:
        assert main(["apply", "--env", "hist", "--from", "2021-06-03", "--to", "2021-06-04"]) == 0
    finally:
        edit(code, 'raw.select("id", (raw["amount"] * 10).alias("amount"))', 'raw.select("id", "amount")')

    rows = production.mesh.spark.read.format("delta").load(table_location("hist", "tr", "amount_history")).collect()

    def day(moment) -> str | None:
        return moment.date().isoformat() if moment is not None else None

    assert {(r["id"], r["amount"], day(r["valid_from"]), day(r["valid_to"])) for r in rows} == {
        (0, 1, "2021-06-01", "2021-06-02"),  # production's versions of days 1 and 2
        (1, 2, "2021-06-01", "2021-06-02"),
        (0, 3, "2021-06-02", "2021-06-03"),  # closed by the environment's day 3
        (0, 40, "2021-06-03", "2021-06-04"),
        (1, 50, "2021-06-03", "2021-06-04"),
        (0, 60, "2021-06-04", None),
    }
    manifest = json.loads((production.home / "envs" / "hist" / "environment.json").read_text())
    production_history = open_table(
        production.mesh.registry.location("tr", "amount_history"), production.mesh.settings.s3
    )
    applied = [json.loads(c.get("userMetadata") or "{}").get("history_partition") for c in production_history.history()]
    [day_two] = [c["version"] for c in production_history.history() if "2021-06-02" in (c.get("userMetadata") or "")]
    assert "2021-06-04" in applied and manifest["clone_versions"] == {"tr/amount_history": day_two}
    assert production.versions() == versions
    assert production.events() == events


def test_promotion_publishes_what_the_environment_computed_and_leaves_a_moved_input_to_recompute(
    production: Production, monkeypatch: pytest.MonkeyPatch
):
    """Runs last: it changes production, as a promotion does."""
    from rich.console import Console

    from mesh_assets.cli.change import make_plan
    from mesh_assets.cli.environments import promote_from
    from mesh_assets.compat import DATA_VERSION_TAG, AssetCheckExecutionRecordStatus
    from mesh_assets.model.grain import Grain
    from mesh_assets.model.partitions import PartitionRange
    from mesh_assets.storage.writer import replace_predicate

    sales = production.domains / "tr" / "sales.py"
    edit(sales, 'raw.agg(F.sum("amount").alias("amount"))', 'raw.agg((F.sum("amount") * 10).alias("amount"))')
    assert main(["apply", "--env", "promo", "--from", "2021-06-03", "--to", "2021-06-04"]) == 0
    spark = production.mesh.spark
    moved = spark.createDataFrame([(0, 7, date(2021, 6, 4))], "id bigint, amount bigint, p_date date")
    where = replace_predicate("p_date", PartitionRange.from_keys(Grain.DAILY, "2021-06-04", "2021-06-04"))
    moved.write.format("delta").mode("overwrite").option("replaceWhere", where).save(
        production.mesh.registry.location("tr", "raw_sales")
    )  # day 4 re-landed in production after the environment read it

    def no_spark(*args, **kwargs):
        raise AssertionError("promotion started Spark")

    monkeypatch.setattr("mesh_assets.engine.session.get_spark", no_spark)
    args = argparse.Namespace(from_env="promo", base=None, dry_run=False)
    assert promote_from(args, Console(width=200), production.instance) is None
    monkeypatch.undo()

    daily = production.read(production.mesh.registry.location("tr", "daily_sales"), "amount")
    assert daily == {"2021-06-01": 3, "2021-06-02": 30, "2021-06-03": 90, "2021-06-04": 6}  # day 4's input moved
    assert production.read(production.mesh.registry.location("tr", "two_day_sales"), "amount")["2021-06-03"] == 120
    assert production.read(production.mesh.registry.location("rep", "daily_report"), "amount") == {
        "2021-06-01": 3,
        "2021-06-02": 3,
        "2021-06-03": 90,
        "2021-06-04": 6,
    }
    key = dg.AssetKey(["tr", "daily_sales"])
    record = production.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=["2021-06-03"]), limit=1
    ).records[0]
    version = open_table(production.mesh.registry.location("tr", "daily_sales"), production.mesh.settings.s3).version()
    assert record.asset_materialization.tags[DATA_VERSION_TAG] == f"delta-v{version}"  # one commit for days 2 and 3
    (check,) = production.instance.event_log_storage.get_asset_check_partition_info(
        [dg.AssetCheckKey(key, "not_null_amount")], partition_keys=["2021-06-03"]
    )
    assert check.latest_execution_status == AssetCheckExecutionRecordStatus.SUCCEEDED and check.is_current

    plan = make_plan(None, production.instance)  # what mesh apply launches next: only what was not promoted
    edit(sales, 'raw.agg((F.sum("amount") * 10).alias("amount"))', 'raw.agg(F.sum("amount").alias("amount"))')
    left = {
        r.asset.key.to_user_string(): {k for span in r.asset.ranges for k in (span.start, span.end)}
        for r in plan.recompute
    }
    assert left["tr/daily_sales"] == {"2021-06-01", "2021-06-04"}
