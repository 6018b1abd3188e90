"""``mesh plan`` prepares dbt's manifest again when a model's SQL was edited since it was prepared: the models whose
file differs from the manifest's SQL are found without dbt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mesh_assets.dbt.project import edited_models


def _project(tmp_path: Path, written: str, prepared: str) -> Path:
    (tmp_path / "models" / "rep").mkdir(parents=True)
    (tmp_path / "models" / "rep" / "m.sql").write_text(written)
    (tmp_path / "target").mkdir()
    node = {"resource_type": "model", "original_file_path": "models/rep/m.sql", "raw_code": prepared}
    test = {"resource_type": "test", "original_file_path": "models/rep/m.yml", "raw_code": "x"}
    manifest = tmp_path / "target" / "manifest.json"
    manifest.write_text(json.dumps({"nodes": {"model.p.m": node, "test.p.t": test}}))
    return manifest


def test_an_edited_model_is_found_and_an_unchanged_one_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MESH_DBT_PROJECT_DIR", str(tmp_path))
    manifest = _project(tmp_path, "SELECT 1 AS a\n", "SELECT 1 AS a")  # dbt keeps the file without its last newline
    assert edited_models(manifest) == []
    (tmp_path / "models" / "rep" / "m.sql").write_text("SELECT 2 AS a\n")
    assert edited_models(manifest) == ["models/rep/m.sql"]
    (tmp_path / "models" / "rep" / "m.sql").unlink()
    assert edited_models(manifest) == ["models/rep/m.sql"]  # removed: the manifest is stale too


def test_no_manifest_means_nothing_to_compare(tmp_path: Path):
    assert edited_models(tmp_path / "target" / "manifest.json") == []
