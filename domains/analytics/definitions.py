"""The analytics domain: dbt models (dbt_project/models/analytics) as Mesh data products."""

from mesh_assets import dbt_definitions

defs = dbt_definitions()
