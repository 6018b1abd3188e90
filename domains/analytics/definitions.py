"""The analytics domain: its dbt models (dbt_project/models/analytics) as Mesh data products."""

from mesh_assets import domain_definitions

defs = domain_definitions(__file__)
