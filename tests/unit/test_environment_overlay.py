"""An environment is an overlay on the settings: its own tables and instance under ``<home>/envs/<name>``, every
other table read where production keeps it, nothing of production's automation, alerts or lineage; and dropping
one deletes its own folder only."""

from __future__ import annotations

from pathlib import Path

import pytest

from mesh_assets.cli.environments import table_location, write_workspace
from mesh_assets.cli.main import main
from mesh_assets.settings import MeshSettings, get_settings
from mesh_assets.storage.environment import Environment, EnvironmentRefused, drop, listed
from mesh_assets.storage.tables import TableRegistry


def environment(home: Path, name: str = "dev") -> Environment:
    env = Environment(
        name=name,
        root=str(home / "envs" / name),
        production_warehouse=str(home / "warehouse"),
        production_dagster_home=str(home / "dagster"),
        tables=("shop/orders",),
        start="2021-06-03",
        end="2021-06-04",
    )
    env.save()
    return env


def test_an_environment_keeps_its_instance_apart_and_starts_nothing(tmp_path: Path):
    settings = MeshSettings(home=tmp_path, environment="dev")
    assert settings.dagster_home == tmp_path / "envs" / "dev" / "dagster"
    assert settings.lineage_dir == tmp_path / "envs" / "dev" / "lineage"
    assert not settings.automation.enabled and not settings.alerts.enabled and not settings.maintenance.scheduled
    assert settings.lineage.transport == "none"
    assert MeshSettings(home=tmp_path).dagster_home == tmp_path / "dagster"


def test_an_environment_name_is_a_folder_name_not_a_path(tmp_path: Path):
    with pytest.raises(ValueError, match="environment"):
        MeshSettings(home=tmp_path, environment="../prod")


def test_the_tables_an_environment_computes_live_under_it_the_others_where_production_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    env = environment(tmp_path)
    registry = TableRegistry(str(tmp_path / "warehouse"), environment=env)
    assert registry.location("shop", "orders") == str(tmp_path / "envs" / "dev" / "warehouse" / "shop" / "orders")
    assert registry.location("shop", "customers") == str(tmp_path / "warehouse" / "shop" / "customers")
    monkeypatch.setenv("MESH_HOME", str(tmp_path))
    get_settings.cache_clear()
    assert table_location("dev", "shop", "orders") == registry.location("shop", "orders")
    assert table_location("dev", "finance", "ledger") == str(tmp_path / "warehouse" / "finance" / "ledger")
    assert [e.name for e in listed(tmp_path)] == ["dev"]


def test_drop_deletes_the_environment_folder_and_refuses_anything_else(tmp_path: Path):
    environment(tmp_path, "dev")
    environment(tmp_path, "other")
    (tmp_path / "dagster").mkdir()
    (tmp_path / "envs" / "loose").mkdir()  # not an environment: no manifest
    (tmp_path / "envs" / "link").symlink_to(tmp_path / "envs" / "other")
    for name in ("../dagster", "..", "loose", "link", "/tmp", "missing"):
        with pytest.raises(EnvironmentRefused, match="nothing was deleted"):
            drop(tmp_path, name)
    assert drop(tmp_path, "dev") == tmp_path / "envs" / "dev"
    assert not (tmp_path / "envs" / "dev").exists()
    assert (tmp_path / "envs" / "other" / "environment.json").is_file() and (tmp_path / "dagster").is_dir()


def test_mesh_env_list_and_drop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    monkeypatch.setenv("MESH_HOME", str(tmp_path))
    get_settings.cache_clear()
    environment(tmp_path, "dev")
    assert main(["env", "list"]) == 0
    assert "dev: 2021-06-03..2021-06-04 against instance: shop.orders" in capsys.readouterr().out
    assert main(["env", "drop", "../dagster"]) == 2
    assert main(["env", "drop", "dev"]) == 0
    assert main(["env", "list"]) == 0
    assert "No environments." in capsys.readouterr().out


def test_the_ui_workspace_names_each_location_after_the_environment(tmp_path: Path):
    domains = tmp_path / "domains"
    for name in ("shop", "finance"):
        (domains / name).mkdir(parents=True)
        (domains / name / "definitions.py").write_text("")
    (domains / "notes").mkdir()  # no definitions.py: no code location
    env = environment(tmp_path, "dev")
    text = write_workspace(env, domains).read_text()
    assert "location_name: env-dev-finance" in text and "location_name: env-dev-shop" in text
    assert "notes" not in text
