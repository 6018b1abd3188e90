"""Where the dbt project lives and how its manifest is prepared (once, at setup; never at every load)."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mesh_assets.dbt.set_aside import parse_setting_aside, parsed_project
from mesh_assets.settings import project_root, scoped_environ

if TYPE_CHECKING:
    from dagster_dbt import DbtProject

#: dbt reads the warehouse root from this variable (``+location_root`` in dbt_project.yml).
WAREHOUSE_ENV = "MESH_DBT_WAREHOUSE"
#: The profile target. Only ``session`` (in-process, on Mesh's SparkSession) is accepted: see :func:`dbt_target`.
TARGET_ENV = "MESH_DBT_TARGET"
SESSION = "session"


class DbtTargetRefused(ValueError):
    """A dbt target on which Mesh could not test a model's rows before they are published."""


def project_dir() -> Path:
    return Path(os.environ.get("MESH_DBT_PROJECT_DIR", project_root() / "dbt_project")).resolve()


def dbt_target() -> str:
    """``session``, the only target Mesh runs dbt on: there Mesh stages each model, runs its blocking tests on
    the staged rows and publishes only the days that passed. On any other target (a Spark Thrift Server) dbt
    writes each model itself and tests it after the write, so a failing test could not keep its rows from
    consumers; such a target is refused when the dbt project loads, not discovered after a bad publish."""
    target = os.environ.get(TARGET_ENV, SESSION)
    if target != SESSION:
        raise DbtTargetRefused(
            f"{TARGET_ENV}={target} is refused: on that target dbt writes each model itself and runs its tests "
            "after the write, so rows failing a blocking test would be published. Mesh runs dbt in its own Spark "
            f"session ({TARGET_ENV}={SESSION}, the default): each model is staged, tested and published only for "
            "the days that passed. For a cluster, point Mesh's Spark at it (docs/deployment.md)."
        )
    return target


@lru_cache(maxsize=4)
def _project(folder: str, target: str) -> DbtProject:
    from dagster_dbt import DbtProject

    return DbtProject(project_dir=folder, profiles_dir=folder, target=target)


def mesh_dbt_project() -> DbtProject:
    """The dbt project (profiles.yml inside it); its manifest is ``dbt_project/target/manifest.json``. When the
    last parse set model files aside, the project without them (:mod:`~mesh_assets.dbt.set_aside`)."""
    return _project(str(parsed_project(project_dir())), dbt_target())


def dbt_env(warehouse: str) -> dict[str, str]:
    """What dbt needs from Mesh: the warehouse root its tables must land under."""
    return {WAREHOUSE_ENV: warehouse.rstrip("/")}


def prepare(warehouse: str) -> Path:
    """Parse the project in-process and write ``target/manifest.json`` (no Spark, no downloads); a model file
    dbt cannot parse is set aside, with its error, rather than fail every domain's models."""
    from dbt.cli.main import dbtRunner

    target = dbt_target()

    def parse(folder: Path) -> Exception | None:
        args = ["parse", "--project-dir", str(folder), "--profiles-dir", str(folder), "--target", target, "--quiet"]
        with scoped_environ(dbt_env(warehouse)):
            result = dbtRunner().invoke(args)
        return None if result.success else result.exception or RuntimeError("dbt parse failed")

    parse_setting_aside(project_dir(), parse)
    _project.cache_clear()
    return manifest_path()


def edited_models(path: Path | None = None) -> list[str]:
    """The model files (relative to the project) whose SQL differs from the prepared manifest's: edited since it
    was prepared; none when there is no manifest to compare with."""
    path = path or manifest_path()
    if not path.exists():
        return []
    root, edited = project_dir(), []
    for node in json.loads(path.read_text())["nodes"].values():
        if node.get("resource_type") not in {"model", "snapshot"} or "raw_code" not in node:
            continue
        file = root / node["original_file_path"]
        if not file.is_file() or file.read_text().strip() != str(node["raw_code"]).strip():
            edited.append(node["original_file_path"])
    return sorted(edited)


def manifest_path() -> Path:
    """Where :func:`mesh_dbt_project`'s manifest is (dagster-dbt's default target path), without importing it."""
    return project_dir() / "target" / "manifest.json"


def load_manifest(path: Path | None = None) -> dict[str, Any]:
    """The prepared manifest; run ``python -m mesh_assets.dbt.prepare`` (``make setup``) first."""
    path = path or manifest_path()
    if not path.exists():
        raise FileNotFoundError(
            f"dbt manifest {path} not found: run `python -m mesh_assets.dbt.prepare` (part of `make setup`)"
        )
    return json.loads(path.read_text())
