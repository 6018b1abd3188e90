"""Lineage-driven backfills and rebuilds: plan the partitions to recompute, launch them as one backfill."""

from mesh_assets.backfill.computable import LeftOut
from mesh_assets.backfill.launch import (
    BackfillProgress,
    Webserver,
    WebserverError,
    backfill_progress,
    launch_backfill,
    not_published,
)
from mesh_assets.backfill.plan import (
    BackfillError,
    BackfillPlan,
    PlannedAsset,
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
    "Webserver",
    "WebserverError",
    "backfill_progress",
    "launch_backfill",
    "not_published",
    "parse_asset_key",
    "plan_backfill",
    "plan_rebuild",
]
