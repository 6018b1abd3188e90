"""``mesh backfill`` of tables whose partitions apply in order: a merge table without ``sequence_by`` has its range
extended to its latest applied partition (one run replays them in order), a history table's past range is left
out naming ``mesh rebuild`` (no Spark: publications are reported to a throwaway instance)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from planning import planning_instance
from rich.console import Console

from mesh_assets import mesh_definitions
from mesh_assets.backfill import plan_backfill
from mesh_assets.cli import main

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
