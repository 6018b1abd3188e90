"""``mesh validate`` on bad table kinds: each error names the file, the line and the field, in YAML and Python
(fixture: tests/fixtures/governance/kinds)."""

from __future__ import annotations

import pytest
from bad_specs import FIXTURES
from rich.console import Console

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
