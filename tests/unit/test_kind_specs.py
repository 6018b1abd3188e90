"""Table kinds without Spark: ``mesh validate`` names each bad kind by file, line and field, in YAML and Python
(tests/fixtures/governance/kinds), and keyed tables take their table's pool (tests/fixtures/kinds_merge)."""

from __future__ import annotations

import dagster as dg
import pytest
from bad_specs import FIXTURES
from rich.console import Console

from mesh_assets import executable_assets, mesh_definitions
from mesh_assets.assets.specs import table_pool
from mesh_assets.cli import main as cli
from mesh_assets.settings import get_settings


def test_bad_kinds_are_named_by_file_line_and_field(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    root = FIXTURES / "governance" / "kinds"
    monkeypatch.chdir(root)
    monkeypatch.setenv("MESH_PROJECT_ROOT", str(root))
    monkeypatch.setenv("MESH_DOMAINS_DIR", str(root / "domains"))
    monkeypatch.setattr(cli, "console", Console(width=250, no_color=True, highlight=False))
    get_settings.cache_clear()
    try:
        assert cli.main(["validate"]) == 1
    finally:
        get_settings.cache_clear()
    errors = [line.removeprefix("error ") for line in capsys.readouterr().out.splitlines() if line.startswith("error ")]
    within = "Value error, within_last needs a partitioned output: it limits the partitions a merge scans"
    assert errors == [
        "domains/sales/defs/states/defs.yaml:11: tables.0.kind.unique_key: Field required",
        "domains/sales/defs/states/defs.yaml:16: tables.1.kind: unknown kind 'upsert': one of 'partitions', 'full', "
        "'append', 'merge', 'history', 'changes'",
        f"domains/sales/defs/states/defs.yaml:22: tables.2.kind: {within}",
        "domains/sales/latest.py:7: kind.unique_key: Field required",
        f"domains/sales/states.py:7: kind: {within}",
    ]


def test_runs_of_a_keyed_table_queue_on_its_pool() -> None:
    """A ``merge`` or ``append`` table's step takes its table's pool, as every table's does, so two runs of it
    never meet in Delta (the queueing itself: tests/integration/test_concurrent_writers.py)."""
    defs = mesh_definitions(FIXTURES / "kinds_merge" / "domains")
    pools = {
        key.path[-1]: asset.node_def.pool
        for asset in executable_assets(defs)
        if isinstance(asset, dg.AssetsDefinition)
        for key in asset.keys
    }
    assert pools == {name: table_pool("km", name) for name in KEYED}


KEYED = ("order_state", "recent_state", "status_log", "status_current", "status_events")
