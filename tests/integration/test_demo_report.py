"""The demo's report of a failure: the product, the partitions it did not publish, why, and the full log; the same on a
second run over the same data."""

from __future__ import annotations

import io
import re
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from rich.console import Console

from mesh_assets import MeshResource, mesh_definitions, observe_now
from mesh_assets.cli.demo import report
from mesh_examples.progress import DemoProgress
from mesh_examples.run import materialize_mesh, summarize

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "quality" / "domains"
SCHEMA = "id bigint, kind string, amount bigint, p_date date"


def demo_screen(defs: dg.Definitions, mesh: MeshResource, log: Path) -> tuple[int, str]:
    """One demo run over what the warehouse holds, on a fresh instance: its exit code and its screen."""
    screen = io.StringIO()
    console = Console(file=screen, width=80)
    with dg.DagsterInstance.ephemeral() as instance:
        observe_now(defs, instance, mesh)
        with DemoProgress(console, live=False) as progress:
            keys = materialize_mesh(defs, instance, mesh, date(2024, 1, 1), date(2024, 1, 2), progress)
        code = report(console, summarize(instance, keys, mesh), progress, log, verbose=False)
    return code, screen.getvalue()


def test_a_refused_partition_names_its_product_partition_and_the_log(spark, tmp_path: Path):
    mesh = MeshResource(warehouse=str(tmp_path / "warehouse"))
    good = [(1, "a", 10, date(2024, 1, 1)), (2, "b", 20, date(2024, 1, 1)), (3, "a", 30, date(2024, 1, 1))]
    duplicated = [(7, "a", 1, date(2024, 1, 2))] * 3  # the blocking unique check on id refuses the day
    raw = spark.createDataFrame(good + duplicated, SCHEMA)
    raw.write.format("delta").partitionBy("p_date").save(mesh.registry.location("qa", "raw_events"))
    defs = mesh_definitions(FIXTURE)
    log = tmp_path / "logs" / "demo.log"
    code, out = demo_screen(defs, mesh, log)
    text = " ".join(out.split())
    assert code == 1
    assert "\x1b" not in out
    assert "not published: qa/events: 1/2 partitions; missing qa/clean_events 2024-01-02" in text
    assert re.search(r"failed: qa\.clean_events: not published: [^\n]*2024-01-02", text), out
    assert out.splitlines()[-1] == f"Full log (dbt, Spark, Dagster): {log}"
    assert demo_screen(defs, mesh, log) == (code, out)  # no timings or run ids: a second run reads the same
