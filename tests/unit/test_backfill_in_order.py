"""``mesh backfill`` and ``mesh invalidate`` of keyed tables: a merge table without ``sequence_by`` has its range
extended to its latest applied partition (one run replays them in order), a history table's past range is left
out naming ``mesh rebuild``, and an invalid partition makes the state applied after it suspect (no Spark:
publications are reported to a throwaway instance)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from planning import planning_instance
from rich.console import Console

from mesh_assets import mesh_definitions
from mesh_assets.assets.catalog import CatalogMesh
from mesh_assets.backfill import plan_backfill
from mesh_assets.backfill.invalidate import invalidation
from mesh_assets.cli import main
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph

DOMAINS = Path(__file__).resolve().parents[1] / "fixtures" / "kind_readers" / "domains"
DAYS = [f"2021-06-{d:02d}" for d in range(1, 6)]


@pytest.fixture
def instance(tmp_path, monkeypatch):
    mesh = mesh_definitions(DOMAINS)
    instance = planning_instance(monkeypatch, tmp_path, mesh)
    for table in ("raw_status", "order_status", "order_state", "order_history"):
        for day in DAYS:
            event = dg.AssetMaterialization(asset_key=dg.AssetKey(["kr", table]), partition=day)
            instance.report_runless_asset_event(event)
    return instance


def test_a_past_range_of_a_table_applied_in_order_is_planned_so_that_its_run_is_not_refused(instance):
    graph = mesh_definitions(DOMAINS).resolve_asset_graph()

    def plan(table: str):
        return plan_backfill(graph, f"kr/{table}", "2021-06-02", "2021-06-03", downstream=False, instance=instance)

    ordered, versioned, sequenced = plan("order_state"), plan("order_history"), plan("order_status")

    assert ordered.as_dict() == {"kr/order_state": ["2021-06-02..2021-06-05"]}  # replayed up to its latest
    assert ordered.notes == (
        "kr/order_state: extended to 2021-06-05, its latest applied partition: it applies partitions in order, so "
        "the run replays every partition after the range too",
    )
    assert versioned.as_dict() == {}
    assert [item.describe() for item in versioned.left_out] == [
        "kr/order_history 2021-06-02..2021-06-03 (2): keeps versions in order and its latest applied partition is "
        "2021-06-05: only that one may be applied again; `mesh rebuild kr/order_history` replays every partition "
        "in order"
    ]
    assert sequenced.as_dict() == {"kr/order_status": ["2021-06-02..2021-06-03"]}  # sequence_by orders its rows
    assert plan_backfill(graph, "kr/order_history", "2021-06-05", "2021-06-05", instance=instance).as_dict() == {
        "kr/order_history": ["2021-06-05"]  # its latest partition may be applied again
    }


def test_mesh_backfill_dry_run_says_what_it_extended(instance, monkeypatch, capsys):
    monkeypatch.setenv("MESH_DOMAINS_DIR", str(DOMAINS))
    monkeypatch.setattr(main, "console", Console(width=200, no_color=True, highlight=False))

    assert main.main(["backfill", "kr/order_state", "--start", "2021-06-02", "--end", "2021-06-02", "--dry-run"]) == 0

    out = capsys.readouterr().out
    assert "kr/order_state │ 2021-06-02..2021-06-05 │     4" in out
    assert "kr/order_state: extended to 2021-06-05, its latest applied partition" in out


def test_invalidating_a_keyed_tables_partition_makes_every_partition_applied_after_it_suspect(instance):
    """A merge table's state since day 2 holds what day 2 applied: its later partitions, and every partition that
    read its state, wait for the fix; the readers are named with the invalid partition as their source."""
    mesh = CatalogMesh.of(MeshGraph(load_all(DOMAINS)))
    reported = {(t, d) for t in ("status_counts",) for d in DAYS}
    for table, day in reported:
        event = dg.AssetMaterialization(asset_key=dg.AssetKey(["kr", table]), partition=day)
        instance.report_runless_asset_event(event)

    marked = invalidation(instance, mesh, "kr/order_status", "2021-06-02", None, "a bad feed")

    assert [(m.key.to_user_string(), m.partitions, m.suspect) for m in marked] == [
        ("kr/order_status", ("2021-06-02",), False),
        ("kr/order_status", ("2021-06-03", "2021-06-04", "2021-06-05"), True),
        ("kr/status_counts", tuple(DAYS), True),
    ]
    assert marked[1].sources == ("kr/order_status 2021-06-02",)
