"""Maintenance of Mesh's own tables with real Spark and Delta: compaction keeps rows and old versions, runs nothing
downstream and changes no staleness; clean-up never deletes what a run pinned to an old version reads; restore
brings a bad publish back in one commit, marks what read it suspect, and a backfill clears it; a version cleaned
up is refused."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import dagster as dg
import pytest
from trust import DAILY, DOMAINS, LEDGER, TWO_DAY, Sales

from mesh_assets.automation.delta_log import Seen, changes_since
from mesh_assets.automation.log_files import LogFiles
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.cli.main import main
from mesh_assets.compat import DATA_VERSION_TAG
from mesh_assets.compat import AssetCheckExecutionRecordStatus as Status
from mesh_assets.maintenance.files import table_files
from mesh_assets.maintenance.vacuum import vacuum
from mesh_assets.model.checks import VALID
from mesh_assets.settings import S3Settings, get_settings
from mesh_assets.storage.data_changes import data_changed_after
from mesh_assets.storage.lake import open_table
from mesh_examples.current import delta_state_kept

pytestmark = pytest.mark.spark

AT = datetime(2021, 6, 3, 1)
SMALL = 1 << 30  # every test file is small


@pytest.fixture
def sales(spark, tmp_path, monkeypatch) -> Sales:
    """The trust world on a persistent instance the `mesh` commands use too; files are small below 1 GiB and a
    partition is compacted from 3 of them."""
    home = tmp_path / "dagster"
    home.mkdir()
    env = {
        "DAGSTER_HOME": home,
        "MESH_DOMAINS_DIR": DOMAINS,
        "MESH_DBT_PROJECT_DIR": tmp_path,
        "MESH_WAREHOUSE": tmp_path / "warehouse",
        "MESH_MAINTENANCE__SMALL_FILES": 3,
        "MESH_MAINTENANCE__SMALL_FILE_BYTES": SMALL,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, str(value))
    get_settings.cache_clear()
    world = Sales(spark, tmp_path / "warehouse", dg.DagsterInstance.from_config(str(home)))
    yield world
    world.instance.dispose()
    get_settings.cache_clear()


def location(sales: Sales, key: dg.AssetKey) -> str:
    return sales.mesh.registry.location(*key.path)


def version(sales: Sales, key: dg.AssetKey) -> int:
    return open_table(location(sales, key), S3Settings()).version()


def scatter(sales: Sales, key: dg.AssetKey, day: str, files: int = 4) -> None:
    """Rewrite one partition as ``files`` small files without changing its rows (``dataChange: false``), as many
    small writes leave it."""
    where = f"p_date = DATE'{day}'"
    rows = sales.spark.read.format("delta").load(location(sales, key)).where(where).localCheckpoint()
    rows.repartition(files).write.format("delta").mode("overwrite").option("replaceWhere", where).option(
        "dataChange", "false"
    ).save(location(sales, key))


def requested(sales: Sales, cursor: object, keys: list[dg.AssetKey]) -> tuple[dict, object]:
    result = dg.evaluate_automation_conditions(
        defs=sales.defs, instance=sales.instance, cursor=cursor, evaluation_time=AT
    )
    wanted = {key: set(result.get_requested_partitions(key)) for key in keys}
    return {k: v for k, v in wanted.items() if v}, result.cursor


def latest_id(sales: Sales, key: dg.AssetKey) -> int:
    return sales.instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), 1).records[0].storage_id


def validity(sales: Sales, key: dg.AssetKey) -> dict[str, tuple[str, str | None]]:
    history = sales.instance.event_log_storage.get_asset_check_execution_history(dg.AssetCheckKey(key, VALID), 100)
    out: dict[str, tuple[str, str | None]] = {}
    for record in history:  # newest first
        evaluation = record.event.dagster_event.event_specific_data
        if record.partition not in out and record.status != Status.PLANNED:
            out[record.partition] = ("passed", None) if evaluation.passed else ("failed", evaluation.description)
    return out


MT = Path(__file__).resolve().parents[1] / "fixtures" / "maintenance" / "domains"
EVENTS = dg.AssetKey(["mt", "events"])
COUNTS = dg.AssetKey(["mt", "event_counts"])


def land_events(sales: Sales, day: str, ids: range) -> None:
    """Land ``day`` of ``mt.raw_events`` and observe it."""
    d = date.fromisoformat(day)
    frame = sales.spark.createDataFrame([(i, d) for i in ids], "id bigint, p_date date")
    frame.write.format("delta").mode("overwrite").partitionBy("p_date").option(
        "replaceWhere", f"p_date = DATE'{day}'"
    ).save(sales.mesh.registry.location("mt", "raw_events"))
    sales.cursors = observe_now(sales.defs, sales.instance, sales.mesh, sales.cursors)


def test_compaction_keeps_rows_and_old_versions_and_runs_nothing_downstream(sales, monkeypatch, capsys):
    monkeypatch.setenv("MESH_DOMAINS_DIR", str(MT))
    get_settings.cache_clear()
    sales = Sales(sales.spark, Path(sales.mesh.warehouse), sales.instance, MT)
    for day in ("2021-06-01", "2021-06-02"):
        land_events(sales, day, range(40))
    sales.materialize([EVENTS, COUNTS], "2021-06-01", "2021-06-02")
    written = version(sales, EVENTS)
    for day in ("2021-06-01", "2021-06-02"):
        scatter(sales, EVENTS, day)
    scattered = version(sales, EVENTS)
    before = table_files(location(sales, EVENTS), S3Settings(), SMALL, "p_date")
    assert {p: f.files for p, f in before.partitions.items()} == {"2021-06-01": 4, "2021-06-02": 4}
    _, cursor = requested(sales, None, [EVENTS, COUNTS])
    published = latest_id(sales, EVENTS)

    assert main(["maintain", "mt/events", "--no-vacuum"]) == 0

    printed = capsys.readouterr().out
    assert "mt.events: compacted 2 partition(s), 8 file(s) into 2" in printed
    after = table_files(location(sales, EVENTS), S3Settings(), SMALL, "p_date")
    assert {p: f.files for p, f in after.partitions.items()} == {"2021-06-01": 1, "2021-06-02": 1}
    assert after.version == scattered + 1 and after.last_compaction is not None
    ids = sales.spark.read.format("delta").load(location(sales, EVENTS)).groupBy("p_date").count().collect()
    assert {r["p_date"].isoformat(): r["count"] for r in ids} == {"2021-06-01": 40, "2021-06-02": 40}
    old = sales.spark.read.format("delta").option("versionAsOf", written).load(location(sales, EVENTS))
    assert old.count() == 80
    [optimize] = [h for h in open_table(location(sales, EVENTS), S3Settings()).history(1)]
    assert optimize["operation"] == "OPTIMIZE" and '"id"' in optimize["operationParameters"]["zOrderBy"]
    # maintenance, not data: the log says no data changed, no materialization, nothing requested downstream
    assert changes_since(LogFiles(S3Settings()), location(sales, EVENTS), Seen(scattered)).partitions == {}
    assert latest_id(sales, EVENTS) == published
    assert requested(sales, cursor, [EVENTS, COUNTS])[0] == {}
    assert not data_changed_after(location(sales, EVENTS), scattered, S3Settings())  # what current-ness reads
    [run] = sales.instance.get_runs(filters=dg.RunsFilter(tags={"mesh/launched_by": "mesh maintain"}))
    assert run.status == dg.DagsterRunStatus.SUCCESS and run.job_name == "mt__maintain"

    [seen] = sales.instance.fetch_observations(dg.AssetRecordsFilter(asset_key=EVENTS), 1).records
    shown = {k: v.value for k, v in seen.asset_observation.metadata.items()}  # on the asset, as an observation
    assert shown["mesh/files"] == 2 and shown["mesh/small_files"] == 2 and shown["mesh/bytes"] == after.bytes
    assert shown["mesh/last_compaction"] == after.last_compaction.timestamp()
    assert shown["mesh/last_clean_up"] == "never" and shown["delta_version"] == after.version
    assert main(["tables", "mt/events"]) == 0  # what operators see
    [row] = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("mt.events")]
    compacted_at = after.last_compaction.strftime("%Y-%m-%d %H:%M").split()
    assert row == ["mt.events", "2", "2", str(after.bytes), *compacted_at, "never"]


def test_clean_up_skips_a_table_a_running_run_reads_and_keeps_a_pinned_version_readable(sales, capsys):
    sales.land("2021-06-01", [1, 2])
    sales.materialize([DAILY], "2021-06-01")
    pinned = version(sales, DAILY)
    reader = sales.spark.read.format("delta").option("versionAsOf", pinned).load(location(sales, DAILY))
    sales.land("2021-06-01", [5])
    sales.materialize([DAILY], "2021-06-01")  # replaces the pinned version's file
    running = dg.DagsterRun(
        job_name="__ASSET_JOB", run_id="pinned-reader", status=dg.DagsterRunStatus.STARTED,
        asset_selection=frozenset({TWO_DAY}),
    )  # fmt: skip
    sales.instance.add_run(running)  # a run of the two-day totals, reading daily_sales at ``pinned``
    stored = table_files(location(sales, DAILY), S3Settings(), SMALL, "p_date").stored_bytes

    assert main(["maintain", "tr/daily_sales", "--no-compact"]) == 0

    assert "clean-up skipped: read by running run(s) pinned-reader" in capsys.readouterr().out
    assert [r["amount"] for r in reader.collect()] == [3]
    sales.instance.report_run_canceled(sales.instance.get_run_by_id("pinned-reader"))

    assert main(["maintain", "tr/daily_sales", "--no-compact"]) == 0  # the run ended: cleaned, 7 days kept

    assert "cleaned up (retention 168 h, 0 bytes freed)" in capsys.readouterr().out
    assert [r["amount"] for r in reader.collect()] == [3]  # replaced minutes ago: kept for the retention
    found = open_table(location(sales, DAILY), S3Settings())
    assert found.metadata().configuration["delta.deletedFileRetentionDuration"] == "interval 168 hours"
    assert found.metadata().configuration["delta.logRetentionDuration"] == "interval 720 hours"
    after = table_files(location(sales, DAILY), S3Settings(), SMALL, "p_date")
    assert after.stored_bytes == stored and after.last_clean_up is not None
    [seen] = sales.instance.fetch_observations(dg.AssetRecordsFilter(asset_key=DAILY), 1).records
    metadata = seen.asset_observation.metadata
    assert metadata["mesh/last_clean_up"].value == after.last_clean_up.timestamp()
    assert metadata["mesh/stored_bytes"].value == stored and metadata["mesh/files"].value == after.files
    assert delta_state_kept(sales.mesh, sales.instance, DAILY)


def test_a_run_pinned_to_an_old_version_completes_correctly_while_clean_up_runs(sales, monkeypatch):
    """A run of the two-day totals pins daily_sales when it starts; before it reads, another writer replaces the
    pinned day's file and VACUUM runs: the pass skips the table for the running run, and a VACUUM that does run
    keeps the replaced file for the retention, so the run reads its pinned rows and publishes them."""
    import mesh_assets.run.body as body
    from mesh_assets.maintenance.vacuum import vacuum_unless_read

    sales.land("2021-06-01", [1, 2])
    sales.land("2021-06-02", [10])
    sales.materialize([DAILY], "2021-06-01", "2021-06-02")
    pinned, where = version(sales, DAILY), "p_date = DATE'2021-06-02'"
    compute, seen = body.compute, {}

    def replaced_and_cleaned_before_reading(spark, registry, node, part, runnable, log, run_id, versions, *args):
        assert versions[("tr", "daily_sales")] == pinned  # the run's pinned input versions
        rows = spark.read.format("delta").load(location(sales, DAILY)).where(where).localCheckpoint()
        rows.withColumn("amount", rows["amount"] * 0 + 99).write.format("delta").mode("overwrite").option(
            "replaceWhere", where
        ).save(location(sales, DAILY))
        keys = [DAILY, TWO_DAY]
        seen["pass"] = vacuum_unless_read(spark, sales.instance, location(sales, DAILY), 168, S3Settings(), keys)
        seen["vacuum"] = vacuum(spark, location(sales, DAILY), 168, S3Settings())
        return compute(spark, registry, node, part, runnable, log, run_id, versions, *args)

    monkeypatch.setattr(body, "compute", replaced_and_cleaned_before_reading)
    assert sales.materialize([TWO_DAY], "2021-06-02").success

    assert seen["pass"].skipped.startswith("read by running run(s) ")
    assert seen["vacuum"].skipped is None and version(sales, DAILY) > pinned
    assert sales.amounts(TWO_DAY) == {"2021-06-02": 13}  # 1 + 2 + 10, as pinned; not the 99 written meanwhile
    assert sales.amounts(DAILY)["2021-06-02"] == 99


def test_restore_brings_a_bad_publish_back_marks_readers_suspect_and_a_backfill_clears_them(sales, capsys):
    sales.land("2021-06-01", [1, 2])
    sales.land("2021-06-02", [10])
    sales.materialize([DAILY, TWO_DAY, LEDGER], "2021-06-01", "2021-06-02")
    good = version(sales, DAILY)
    sales.land("2021-06-02", [10, 90])  # a bad re-landing, published and read downstream
    sales.materialize([DAILY, TWO_DAY, LEDGER], "2021-06-02")
    assert sales.amounts(DAILY) == {"2021-06-01": 3, "2021-06-02": 100}

    assert main(["restore", "tr/daily_sales", "--to-version", str(good)]) == 0

    printed = capsys.readouterr().out
    restored = version(sales, DAILY)
    assert restored == good + 2  # one commit
    assert f"tr.daily_sales: restored to version {good} as version {restored}; partitions: 2021-06-02" in printed
    assert "tr/two_day_sales 2021-06-02: suspect" in printed
    assert "ledger/ledger_entries 2021-06-02: suspect" in printed
    assert sales.amounts(DAILY) == {"2021-06-01": 3, "2021-06-02": 10}
    [record] = sales.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=DAILY, asset_partitions=["2021-06-02"]), 1
    ).records
    event = record.asset_materialization
    assert event.tags[DATA_VERSION_TAG] == f"delta-v{restored}"
    assert event.metadata["restored_to_version"].value == good
    assert event.metadata["dagster/row_count"].value == 1
    assert validity(sales, DAILY)["2021-06-02"] == ("passed", None)
    for key in (TWO_DAY, LEDGER):
        state, description = validity(sales, key)["2021-06-02"]
        assert state == "failed" and description.startswith("suspect: computed from invalid tr/daily_sales 2021-06-02")

    for key in (TWO_DAY, LEDGER):  # the downstream backfill of the restored day
        assert sales.materialize([key], "2021-06-02").success
    for key in (TWO_DAY, LEDGER):
        assert validity(sales, key)["2021-06-02"] == ("passed", None)
    assert sales.amounts(LEDGER) == {"2021-06-01": 3, "2021-06-02": 13}

    vacuum(sales.spark, location(sales, DAILY), 0, S3Settings())  # what a clean-up past the retention leaves
    cleaned = version(sales, DAILY)
    assert main(["restore", "tr/daily_sales", "--to-version", str(good + 1)]) == 2
    refused = " ".join(capsys.readouterr().out.split())
    assert f"tr.daily_sales version {good + 1} was cleaned up" in refused and "nothing restored" in refused
    assert version(sales, DAILY) == cleaned  # nothing restored


KR = Path(__file__).resolve().parents[1] / "fixtures" / "kind_readers" / "domains"
STATUS = dg.AssetKey(["kr", "order_status"])
STATUS_COUNTS = dg.AssetKey(["kr", "status_counts"])


def test_restore_of_a_merge_table_withdraws_the_later_runs_and_marks_their_readers_suspect(sales, monkeypatch, capsys):
    """A merge table's files are not laid out by day: the partitions a restore takes back are those the withdrawn
    commits published, each recorded with the restore's data version, and what read them is suspect."""
    from test_kind_readers import Orders

    monkeypatch.setenv("MESH_DOMAINS_DIR", str(KR))
    get_settings.cache_clear()
    orders = Orders(sales.spark, Path(sales.mesh.warehouse).parent)
    orders.instance = sales.instance
    orders.land("2021-06-01", [(1, "placed", 1), (2, "placed", 1)])
    for key in (STATUS, STATUS_COUNTS):
        assert orders.materialize(key, "2021-06-01").success
    good = version(orders, STATUS)
    orders.land("2021-06-02", [(1, "lost", 2)])  # a bad update, applied and read downstream
    for key in (STATUS, STATUS_COUNTS):
        assert orders.materialize(key, "2021-06-02").success
    assert orders.counts() == {"lost": 1, "placed": 1}
    one_day = dg.AssetRecordsFilter(asset_key=STATUS, asset_partitions=["2021-06-01"])
    [day_one] = sales.instance.fetch_materializations(one_day, 1).records

    assert main(["restore", "kr/order_status", "--to-version", str(good)]) == 0

    printed = capsys.readouterr().out
    restored = version(orders, STATUS)
    assert restored == good + 2
    assert f"kr.order_status: restored to version {good} as version {restored}; partitions: 2021-06-02" in printed
    assert "kr/status_counts 2021-06-02: suspect" in printed
    rows = sales.spark.read.format("delta").load(location(orders, STATUS)).collect()
    assert {(r["order_id"], r["status"]) for r in rows} == {(1, "placed"), (2, "placed")}
    [record] = sales.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=STATUS, asset_partitions=["2021-06-02"]), 1
    ).records
    event = record.asset_materialization
    assert event.tags[DATA_VERSION_TAG] == f"delta-v{restored}"
    assert event.metadata["restored_to_version"].value == good and event.metadata["table_rows"].value == 2
    [first] = sales.instance.fetch_materializations(one_day, 1).records
    assert first.storage_id == day_one.storage_id  # the day the kept version applied is not published again
    state, description = validity(orders, STATUS_COUNTS)["2021-06-02"]
    assert state == "failed" and description.startswith("suspect: computed from invalid kr/order_status 2021-06-02")
    assert validity(orders, STATUS_COUNTS)["2021-06-01"] == ("passed", None)  # computed before the bad run

    assert orders.materialize(STATUS_COUNTS, "2021-06-02").success  # the downstream backfill
    assert validity(orders, STATUS_COUNTS)["2021-06-02"] == ("passed", None)
    assert orders.counts() == {"placed": 2}
