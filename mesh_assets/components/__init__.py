"""Dagster component types for the mesh: what ``dg`` lists, scaffolds and checks in a domain's ``defs/``."""

from mesh_assets.components.product import DataProduct

__all__ = ["DataProduct"]
