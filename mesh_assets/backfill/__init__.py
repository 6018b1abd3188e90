"""Lineage-driven backfills and rebuilds: plan the partitions to recompute, launch them as one backfill."""

from mesh_assets.backfill.computable import LeftOut
from mesh_assets.backfill.plan import (
    BackfillError,
    BackfillPlan,
    BackfillProgress,
    PlannedAsset,
    backfill_progress,
    failed_partitions,
    launch_backfill,
    parse_asset_key,
    plan_backfill,
)
from mesh_assets.backfill.rebuild import plan_rebuild

__all__ = [
    "BackfillError",
    "BackfillPlan",
    "BackfillProgress",
    "LeftOut",
    "PlannedAsset",
    "backfill_progress",
    "failed_partitions",
    "launch_backfill",
    "parse_asset_key",
    "plan_backfill",
    "plan_rebuild",
]
