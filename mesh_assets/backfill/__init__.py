"""Lineage-driven backfills: plan the downstream closure of a partition range, launch it as one backfill."""

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
]
