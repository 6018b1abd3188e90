"""Lineage captured from Spark's plans: a product reading a table it does not declare is reported, or refused
where its domain sets ``lineage.undeclared_reads: error``."""

from __future__ import annotations

import uuid
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.cli import commands
from mesh_assets.lineage.graph import graph_from_events, read_events, undeclared_reads
from mesh_assets.settings import get_settings

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "lineage" / "domains"
DAY = "2024-01-02"


def test_undeclared_read_is_warned_recorded_and_listed_or_refused(spark, tmp_path, capsys, monkeypatch):
    mesh = MeshResource(warehouse=str(tmp_path / f"wh-{uuid.uuid4().hex[:8]}"))
    d = date.fromisoformat(DAY)
    spark.createDataFrame([(1, "a", d), (2, "b", d)], "id bigint, kind string, p_date date").write.format(
        "delta"
    ).partitionBy("p_date").save(mesh.registry.location("lx", "raw_events"))
    spark.createDataFrame([("a", 1.5), ("b", 2.0)], "kind string, price double").write.format("delta").save(
        mesh.registry.location("lx", "secret_prices")
    )
    mesh.registry.register(spark, "lx", "secret_prices")  # as if another product's run had read it here
    instance = dg.DagsterInstance.ephemeral()
    defs = mesh_definitions(FIXTURE)
    observe_now(defs, instance, mesh)

    def run() -> dg.ExecuteInProcessResult:
        return dg.materialize(
            executable_assets(defs),
            instance=instance,
            resources={"mesh": mesh},
            selection=[dg.AssetKey(["lx", "priced_events"])],
            partition_key=DAY,
            raise_on_error=False,
        )

    result = run()
    assert result.success

    warnings = [
        e.message
        for e in instance.all_logs(result.run_id)
        if e.level == 30 and "does not declare" in (e.message or "")  # logging.WARNING
    ]
    assert warnings and "lx.secret_prices" in warnings[0]
    mat = instance.get_latest_materialization_event(dg.AssetKey(["lx", "priced_events"]))
    assert mat.asset_materialization.metadata["undeclared_reads"].value == ["lx.secret_prices"]

    events = [e for e in read_events(get_settings().lineage_dir) if e["job"]["name"] == "lx.priced_events"]
    assert [e["eventType"] for e in events][-2:] == ["START", "COMPLETE"]
    complete = events[-1]
    read_names = {i["name"] for i in complete["inputs"]}
    assert mesh.registry.location("lx", "secret_prices") in read_names  # what Spark actually read
    assert mesh.registry.location("lx", "raw_events") in read_names
    assert complete["run"]["facets"]["mesh_undeclaredReads"]["tables"] == ["lx.secret_prices"]
    assert complete["run"]["facets"]["mesh_partitions"]["keys"] == [DAY]
    assert complete["run"]["facets"]["parent"]["run"]["runId"] == result.run_id
    assert complete["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 2
    found = undeclared_reads(read_events(get_settings().lineage_dir))
    assert found[0].job == "lx.priced_events" and found[0].tables == ("lx.secret_prices",)

    graph = graph_from_events(read_events(get_settings().lineage_dir))
    job = graph.nodes["job:lx:lx.priced_events"]
    assert f"dataset:file:{mesh.registry.location('lx', 'secret_prices')}" in job.ins

    commands.report_undeclared_reads(commands.Console(width=200), 10)
    assert "lx.secret_prices" in capsys.readouterr().out

    # The domain makes undeclared reads an error: the same run is refused and the table keeps its version.
    output = mesh.registry.location("lx", "priced_events")
    version = DeltaTable.forPath(spark, output).history(1).collect()[0]["version"]
    monkeypatch.setenv("MESH_LINEAGE__DOMAINS__LX__UNDECLARED_READS", "error")
    get_settings.cache_clear()
    try:
        refused = run()
    finally:
        monkeypatch.delenv("MESH_LINEAGE__DOMAINS__LX__UNDECLARED_READS")
        get_settings.cache_clear()
    assert not refused.success
    [failure] = [e for e in refused.all_events if e.is_step_failure]
    message = failure.step_failure_data.user_failure_data.description
    assert "lx.priced_events reads tables it does not declare as inputs: lx.secret_prices" in message
    assert "lineage.undeclared_reads: error" in message
    assert DeltaTable.forPath(spark, output).history(1).collect()[0]["version"] == version
