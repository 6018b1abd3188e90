"""Changing a product safely: what a change adds, removes, breaks and makes stale (``mesh plan``), then the one
backfill that applies it (``mesh apply``)."""

from mesh_assets.change.diff import (
    Change,
    Consumer,
    ProductDiff,
    TableDiff,
    compare_models_with_instance,
    compare_products,
    compare_tables,
    compare_with_instance,
)
from mesh_assets.change.plan import ChangePlan, Recompute, plan_change
from mesh_assets.change.records import InstanceRecords
from mesh_assets.change.sides import BaseUnavailable, Side, git_entries, side_of

__all__ = [
    "BaseUnavailable",
    "Change",
    "ChangePlan",
    "Consumer",
    "InstanceRecords",
    "ProductDiff",
    "Recompute",
    "Side",
    "TableDiff",
    "compare_models_with_instance",
    "compare_products",
    "compare_tables",
    "compare_with_instance",
    "git_entries",
    "plan_change",
    "side_of",
]
