"""A second demo run with nothing changed publishes nothing and starts no Spark job, and prints the same summary;
a table written outside Mesh since, or whose code changed, is computed again with the tables that read it."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import MeshResource, mesh_definitions, observe_now
from mesh_examples.run import publish, summarize

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "quality" / "domains"
SCHEMA = "id bigint, kind string, amount bigint, p_date date"
FIRST, LAST = date(2024, 1, 1), date(2024, 1, 2)


def spark_jobs(spark) -> set[int]:
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def materialized(instance: dg.DagsterInstance, defs: dg.Definitions) -> dict[str, int]:
    """How many materializations each table of ``defs`` has."""
    keys = [k for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) and a.is_executable for k in a.keys]
    return {k.to_user_string(): len(instance.fetch_materializations(k, limit=1000).records) for k in keys}


def test_a_second_run_with_nothing_changed_publishes_nothing_and_summarizes_the_same(spark, tmp_path: Path):
    mesh = MeshResource(warehouse=str(tmp_path / "warehouse"))
    rows = [(i, "ab"[i % 2], 10 * i, d) for i, d in enumerate([FIRST, FIRST, FIRST, LAST, LAST, LAST])]
    spark.createDataFrame(rows, SCHEMA).write.format("delta").partitionBy("p_date").save(
        mesh.registry.location("qa", "raw_events")
    )
    defs = mesh_definitions(FIXTURE)
    with dg.DagsterInstance.ephemeral() as instance:
        observe_now(defs, instance, mesh)
        first = publish(defs, instance, mesh, FIRST, LAST)
        runs, published = len(instance.get_runs()), materialized(instance, defs)
        assert published["qa/clean_events"] == 2 and first

        counted = summarize(instance, [dg.AssetKey.from_user_string(t.asset) for t in first], mesh)
        assert first == counted, "the rows the materializations recorded are the rows the tables hold"

        jobs = spark_jobs(spark)
        assert jobs, "Spark reports the jobs it ran"
        second = publish(defs, instance, mesh, FIRST, LAST)

        assert spark_jobs(spark) == jobs, "no Spark job: neither a run nor a count"
        assert len(instance.get_runs()) == runs and materialized(instance, defs) == published
        assert second == first

        # A write outside Mesh: that table and what reads it are computed again, the rest is left as it is.
        spark.createDataFrame([(9, "a", 1, FIRST)], SCHEMA).write.format("delta").mode("append").save(
            mesh.registry.location("qa", "clean_events")
        )
        publish(defs, instance, mesh, FIRST, LAST)
        again = materialized(instance, defs)
        assert again["qa/clean_events"] == 4
        assert all(again[k] > published[k] for k in published if k != "qa/clean_events")

        # A product's code changed: its table is computed again, nothing else.
        changed = tmp_path / "domains"
        shutil.copytree(FIXTURE, changed)
        totals = changed / "qa" / "totals.py"
        lenient = "def daily_totals_lenient(events: DataFrame) -> DataFrame:\n    return _total(events)"
        assert lenient in totals.read_text()
        totals.write_text(totals.read_text().replace(lenient, lenient.replace("(events)", "(events.where('id >= 0'))")))
        new_defs = mesh_definitions(changed)
        publish(new_defs, instance, mesh, FIRST, LAST)
        last = materialized(instance, new_defs)
        assert {k for k in last if last[k] != again[k]} == {"qa/daily_totals_lenient"}
