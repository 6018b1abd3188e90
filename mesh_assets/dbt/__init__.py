"""dbt models as Mesh data products: same Spark session, same warehouse, same asset graph."""

from mesh_assets.dbt.assets import DbtRunConfig, build_dbt_assets, dbt_definitions, dbt_resource
from mesh_assets.dbt.catalog import dbt_tables
from mesh_assets.dbt.project import mesh_dbt_project, prepare
from mesh_assets.dbt.translator import MeshDbtTranslator

__all__ = [
    "DbtRunConfig",
    "MeshDbtTranslator",
    "build_dbt_assets",
    "dbt_definitions",
    "dbt_resource",
    "dbt_tables",
    "mesh_dbt_project",
    "prepare",
]
