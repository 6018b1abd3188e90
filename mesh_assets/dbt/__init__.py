"""dbt models as Mesh data products: same Spark session, same warehouse, same asset graph.

The names below are imported on first use: every code location reads the dbt catalog
(:mod:`mesh_assets.dbt.catalog`), and only those of domains that own dbt models pay for importing dbt and
dagster-dbt.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesh_assets.dbt.assets import DbtRunConfig, build_dbt_assets, dbt_resource
    from mesh_assets.dbt.catalog import dbt_tables
    from mesh_assets.dbt.project import mesh_dbt_project, prepare
    from mesh_assets.dbt.translator import MeshDbtTranslator

_MODULES = {
    "DbtRunConfig": "assets",
    "build_dbt_assets": "assets",
    "dbt_resource": "assets",
    "dbt_tables": "catalog",
    "mesh_dbt_project": "project",
    "prepare": "project",
    "MeshDbtTranslator": "translator",
}

__all__ = [
    "DbtRunConfig",
    "MeshDbtTranslator",
    "build_dbt_assets",
    "dbt_resource",
    "dbt_tables",
    "mesh_dbt_project",
    "prepare",
]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_MODULES[name]}"), name)
