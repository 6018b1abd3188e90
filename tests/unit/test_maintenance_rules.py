"""Maintenance's rules without Spark: the zorder field, retention per tier never under a week, which commits
count as data changes, and retired outputs' tables deleted only past their retention (and not in a dry run)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pydantic import ValidationError

from mesh_assets.cli.main import main
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.maintenance.compact import optimize_sql
from mesh_assets.maintenance.retired import retired_tables
from mesh_assets.maintenance.vacuum import held_retention, log_hours_for, retention_hours, retention_properties
from mesh_assets.model.product import Column, Output
from mesh_assets.settings import MaintenanceSettings, S3Settings, get_settings
from mesh_assets.storage.data_changes import data_changed_after
from mesh_assets.storage.tables import TableRegistry

MT = Path(__file__).resolve().parents[1] / "fixtures" / "maintenance" / "domains"


def test_zorder_names_data_columns_once_and_within_the_contract():
    assert Output(table="t", zorder=("id", "city")).zorder == ("id", "city")
    for bad, message in [
        ({"zorder": ("id", "id")}, "zorder names a column twice"),
        ({"zorder": ("p_date",)}, "zorder: p_date is the partition column"),
        ({"zorder": ("city",), "contract": (Column(name="id", type="bigint"),)}, "city not in the contract"),
    ]:
        with pytest.raises(ValidationError, match=message):
            Output(table="t", **bad)


def test_a_zorder_is_layout_not_code(tmp_path):
    """Declaring a Z-order changes no code version: nothing published goes stale for it."""
    from mesh_assets.graph.revisions import code_version
    from mesh_assets.model.product import SqlTransformation

    plain = SqlTransformation(output=Output(table="t"), sql="SELECT 1 AS id")
    ordered = SqlTransformation(output=Output(table="t", zorder=("id",)), sql="SELECT 1 AS id")
    assert code_version(plain, "SELECT 1 AS id") == code_version(ordered, "SELECT 1 AS id")


def test_retention_is_per_tier_and_never_under_a_week():
    settings = MaintenanceSettings(retention_hours={"t1": 720})
    assert retention_hours("t1", settings) == 720 and retention_hours("t3", settings) == 168
    assert retention_properties(720) == {
        "delta.deletedFileRetentionDuration": "interval 720 hours",
        "delta.logRetentionDuration": "interval 720 hours",
    }
    assert retention_properties(168)["delta.logRetentionDuration"] == "interval 720 hours"  # log: 30 days at least
    with pytest.raises(ValidationError, match=r"maintenance.retention_hours \(t2: 24\) is shorter than 168 hours"):
        MaintenanceSettings(retention_hours={"t2": 24})


def test_a_version_a_change_feed_reader_still_needs_stays_readable_a_week_past_its_age():
    assert held_retention(168, 241) == 504  # 10 days old: whole weeks covering it and the week to the next pass
    assert held_retention(168, 2) == 336  # a day's lag past a week would already be refused by Delta
    assert held_retention(2160, 241) == 2160  # the tier's retention covers it already
    assert log_hours_for(504) == 720 and log_hours_for(1000) == 1440  # the log: whole 30 days, 30 at least
    assert retention_properties(504, log_hours_for(504))["delta.logRetentionDuration"] == "interval 720 hours"


def test_optimize_names_the_partitions_and_the_zorder_columns():
    assert optimize_sql("/wh/d/t", "p_date", ["DATE'2021-06-01'", "DATE'2021-06-02'"], ("id",)) == (
        "OPTIMIZE delta.`/wh/d/t` WHERE `p_date` IN (DATE'2021-06-01', DATE'2021-06-02') ZORDER BY (`id`)"
    )
    assert optimize_sql("/wh/d/t", None, []) == "OPTIMIZE delta.`/wh/d/t`"


def write(location: str, ids: list[int], mode: str = "append") -> None:
    rows = pa.table({"id": ids, "p_date": ["2021-06-01"] * len(ids)})
    write_deltalake(location, rows, mode=mode, partition_by=["p_date"])


def test_only_commits_that_change_data_count(tmp_path):
    location = str(tmp_path / "t")
    write(location, [1])
    write(location, [2])
    assert not data_changed_after(location, 1, S3Settings())
    from deltalake import DeltaTable

    DeltaTable(location).optimize.compact()  # two files into one: an OPTIMIZE commit, version 2
    assert DeltaTable(location).version() == 2
    assert not data_changed_after(location, 1, S3Settings())
    write(location, [3])
    assert data_changed_after(location, 1, S3Settings()) and not data_changed_after(location, 3, S3Settings())


def backdate(location: str, days: int) -> datetime:
    """Make the table's only commit ``days`` old, as if written then."""
    commit = Path(location) / "_delta_log" / f"{0:020}.json"
    when = datetime.now(UTC) - timedelta(days=days)
    lines = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
    for action in lines:
        if "commitInfo" in action:
            action["commitInfo"]["timestamp"] = int(when.timestamp() * 1000)
    commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    return when


def test_a_retired_table_goes_only_past_its_retention_and_a_dry_run_deletes_nothing(tmp_path, monkeypatch, capsys):
    warehouse = tmp_path / "warehouse"
    registry = TableRegistry(str(warehouse))
    graph = MeshGraph(load_all(MT))
    outputs = list(graph.tables.values())
    old = registry.location("mt", "old_events")
    write(old, [1, 2])
    write(registry.location("mt", "events"), [1])  # an active output's table: never a candidate
    settings = MaintenanceSettings()

    [fresh] = retired_tables(graph, outputs, registry, settings)
    assert fresh.table.ref == "mt.old_events" and not fresh.deletable
    assert fresh.why == "written 0 h ago, within the retention"

    backdate(old, days=10)
    [due] = retired_tables(graph, outputs, registry, settings)
    assert due.deletable

    for name, value in {"MESH_DOMAINS_DIR": MT, "MESH_WAREHOUSE": warehouse, "MESH_DBT_PROJECT_DIR": tmp_path}.items():
        monkeypatch.setenv(name, str(value))
    get_settings.cache_clear()
    assert main(["maintain", "--retired", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "mt.old_events: retired, last written" in printed and "retention 168 h: delete" in printed
    assert "1 table(s) would be deleted; nothing deleted" in printed
    assert Path(old).exists()

    assert main(["maintain", "--retired"]) == 0
    assert f"deleted mt.old_events ({old})" in capsys.readouterr().out
    assert not Path(old).exists() and Path(registry.location("mt", "events")).exists()


def test_a_retired_output_leaves_the_code_location_and_maintenance(capsys, monkeypatch, tmp_path):
    """Its asset, checks and jobs' tables are gone from the location; the product's active outputs stay; `mesh
    maintain` names it and passes it by, and `mesh restore` refuses it."""
    import dagster as dg

    from mesh_assets.definitions import mesh_definitions

    defs = mesh_definitions(MT)
    keys = set(defs.resolve_asset_graph().get_all_asset_keys())
    assert dg.AssetKey(["mt", "events"]) in keys and dg.AssetKey(["mt", "old_events"]) not in keys
    assert dg.AssetKey(["mt", "raw_events"]) in keys  # what it read stays, for the products still reading it
    for name, value in {"MESH_DOMAINS_DIR": MT, "MESH_WAREHOUSE": tmp_path, "MESH_DBT_PROJECT_DIR": tmp_path}.items():
        monkeypatch.setenv(name, str(value))
    get_settings.cache_clear()
    assert main(["restore", "mt/old_events", "--to-version", "0"]) == 2
    assert "mt/old_events is retired: it has no asset to restore" in " ".join(capsys.readouterr().out.split())


def test_a_retired_table_a_product_still_reads_is_kept_past_its_retention(tmp_path):
    """A reader validation refuses (its domain's location does not load) still keeps the table it reads."""
    import shutil

    domains = tmp_path / "domains"
    shutil.copytree(MT, domains)
    (domains / "mt" / "late.py").write_text(
        "from mesh_assets import Input, Output, Product, chat\n"
        "late = Product('late', owner='mt@example.com', contacts=[chat('#mt')], start_date='2021-06-01')\n"
        "@late.transformation(Output(table='late_reader'), inputs={'old': Input(table='old_events')})\n"
        "def late_reader(old):\n"
        "    return old\n"
    )
    graph = MeshGraph(load_all(domains))
    registry = TableRegistry(str(tmp_path / "warehouse"))
    old = registry.location("mt", "old_events")
    write(old, [1])
    backdate(old, days=30)

    [kept] = retired_tables(graph, list(graph.tables.values()), registry, MaintenanceSettings())
    assert not kept.deletable and kept.why == "read by mt.late_reader"


def test_maintenance_waits_for_the_tables_pool_a_writer_holds(tmp_path):
    """A writer's step holds the table's pool: maintenance does not start on the table until it is freed, and
    frees the slot it took when done."""
    import dagster as dg

    from mesh_assets.maintenance.slots import TableBusy, table_slot

    (tmp_path / "dagster.yaml").write_text("concurrency:\n  pools:\n    default_limit: 1\n")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default("mesh/mt/events")
        assert storage.claim_concurrency_slot("mesh/mt/events", "writer", "mt__events").is_claimed
        busy = pytest.raises(TableBusy, match="pool mesh/mt/events stayed busy")
        with busy, table_slot(instance, "mesh/mt/events", "maintenance", "maintain[events]", wait_seconds=1):
            pytest.fail("maintenance started while the writer held the pool")
        storage.free_concurrency_slot_for_step("writer", "mt__events")
        with table_slot(instance, "mesh/mt/events", "maintenance", "maintain[events]", wait_seconds=1):
            assert storage.get_concurrency_info("mesh/mt/events").claimed_slots[0].run_id == "maintenance"
        assert not storage.get_concurrency_info("mesh/mt/events").claimed_slots


def test_a_restore_time_picks_the_newest_version_committed_by_then(tmp_path):
    import time

    from mesh_assets.maintenance.restore import RestoreRefused, version_at

    location = str(tmp_path / "t")
    write(location, [1])
    between = datetime.now(UTC)
    time.sleep(1.1)
    write(location, [2])
    assert version_at(location, S3Settings(), between.isoformat()) == 0
    assert version_at(location, S3Settings(), datetime.now(UTC).isoformat()) == 1
    with pytest.raises(RestoreRefused, match="no version of the table was committed at or before 2020-01-01"):
        version_at(location, S3Settings(), "2020-01-01T00:00")
    with pytest.raises(RestoreRefused, match="is not an ISO time"):
        version_at(location, S3Settings(), "yesterday")


def test_each_domain_has_maintenance_and_restore_jobs_and_a_schedule_stopped_unless_asked(monkeypatch):
    import dagster as dg

    from mesh_assets.definitions import mesh_definitions

    defs = mesh_definitions(MT)
    assert {"mt__maintain", "mt__restore"} <= {job.name for job in defs.jobs}
    [schedule] = defs.schedules
    assert schedule.name == "mt__maintenance" and schedule.cron_schedule == "0 3 * * *"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    monkeypatch.setenv("MESH_MAINTENANCE__SCHEDULED", "true")
    get_settings.cache_clear()
    [running] = mesh_definitions(MT).schedules
    assert running.default_status == dg.DefaultScheduleStatus.RUNNING


def test_a_restore_names_why_a_version_cannot_be_restored(tmp_path):
    from mesh_assets.maintenance.restore import RestoreRefused, target

    table = MeshGraph(load_all(MT)).get("mt", "events")
    location = str(tmp_path / "events")
    write(location, [1])
    with pytest.raises(RestoreRefused, match=r"mt.events has one version \(0\): there is no earlier one"):
        target(table, location, S3Settings(), 0)
    write(location, [2])
    with pytest.raises(RestoreRefused, match=r"mt.events is at version 1: restore to an earlier one \(0..0\)"):
        target(table, location, S3Settings(), 5)
    assert target(table, location, S3Settings(), 0).partitions == ("2021-06-01",)
