"""Rows computed twice instead of kept between audit and write: only when both computations are the same rows,
and then a commit landing on an input between the audit and the write never reaches readers."""

from __future__ import annotations

import logging
import uuid
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.lineage.capture import observed_reads
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.run import publish as publish_module
from mesh_assets.run.compute import compute, input_versions
from mesh_assets.run.staging import recomputable

pytestmark = pytest.mark.spark

DOMAINS = Path(__file__).resolve().parents[1] / "fixtures" / "staging" / "domains"
DAY = "2021-06-01"
SCHEMA = "id bigint, amount bigint, p_date date"


@pytest.fixture
def landed(spark, tmp_path):
    """The fixture mesh with one day of raw events landed and observed; a function landing more rows."""
    mesh = MeshResource(warehouse=str(tmp_path / f"wh-{uuid.uuid4().hex[:8]}"))
    defs = mesh_definitions(DOMAINS)
    instance = dg.DagsterInstance.ephemeral()

    def land(*ids: int) -> None:
        rows = [(i, 10 * i, date.fromisoformat(DAY)) for i in ids]
        location = mesh.registry.location("st", "raw_events")
        spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append").partitionBy("p_date").save(location)

    land(1, 2, 3)
    observe_now(defs, instance, mesh)
    return mesh, defs, instance, land


def test_only_rows_that_compute_the_same_twice_are_not_kept(spark, landed) -> None:
    mesh, _, _, _ = landed
    graph = MeshGraph(load_all(DOMAINS))
    part = PartitionRange.from_keys(Grain.DAILY, DAY, DAY)
    decided = {}
    for node in graph.nodes_of("st"):
        versions = input_versions(mesh.registry, node)
        rows = compute(spark, mesh.registry, node, part, [part], logging.getLogger("test"), "run", versions)
        reads = observed_reads(rows, node, mesh.registry, logging.getLogger("test"))
        pinned = [mesh.registry.location(*table) for table in versions]
        decided[node.table.name] = recomputable(rows, node, reads, pinned)
        assert not recomputable(rows, node, reads, [])  # an input read at no fixed version: kept
    assert decided == {
        "kept_rows": True,  # narrow, deterministic, checked in the one tally
        "totals": False,  # an aggregation: computing it again would aggregate again
        "sampled": False,  # rand(): another computation, other rows
        "stamped": False,  # current_timestamp() is fixed per query, not per run
        "unique_ids": False,  # a unique check reads the rows in a job of its own
        "jittered": False,  # a Python UDF: Spark takes it for deterministic, and cannot know
    }


def test_a_commit_landing_between_audit_and_write_is_not_published(spark, landed, monkeypatch) -> None:
    """The write computes the rows again, from the version of the input the audit judged: rows landed on the
    input meanwhile wait for the next run, so readers never see rows no check has seen."""
    mesh, defs, instance, land = landed
    audit, stage, kept = publish_module.audit, publish_module.stage, []

    def audit_then_land(*args, **kwargs):
        audited = audit(*args, **kwargs)
        land(4, 5)  # an outside writer commits to the input after the audit, before the write
        return audited

    def staged(rows, keep=True):
        kept.append(keep)
        return stage(rows, keep)

    monkeypatch.setattr(publish_module, "audit", audit_then_land)
    monkeypatch.setattr(publish_module, "stage", staged)
    result = dg.materialize(
        executable_assets(defs),
        instance=instance,
        resources={"mesh": mesh},
        selection=[dg.AssetKey(["st", "kept_rows"])],
        partition_key=DAY,
    )
    assert kept == [False]  # computed again for the write, not kept
    published = spark.read.format("delta").load(mesh.registry.location("st", "kept_rows"))
    assert sorted(r.id for r in published.collect()) == [1, 2, 3]
    [event] = [e.materialization for e in result.get_asset_materialization_events()]
    assert event.metadata["dagster/row_count"].value == 3
