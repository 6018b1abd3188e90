"""Lineage-driven backfills and rebuilds: plan the partitions to recompute, launch them as one backfill.

Names are imported on first use (PEP 562): ``mesh stale`` asks :class:`Webserver` whether the webserver answers
before anything here imports Dagster.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mesh_assets.backfill.computable import LeftOut
    from mesh_assets.backfill.launch import (
        BackfillProgress,
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
    from mesh_assets.backfill.webserver import Webserver, WebserverError

_PUBLIC = {
    "BackfillError": "mesh_assets.backfill.plan",
    "BackfillPlan": "mesh_assets.backfill.plan",
    "BackfillProgress": "mesh_assets.backfill.launch",
    "LeftOut": "mesh_assets.backfill.computable",
    "PlannedAsset": "mesh_assets.backfill.plan",
    "Webserver": "mesh_assets.backfill.webserver",
    "WebserverError": "mesh_assets.backfill.webserver",
    "backfill_progress": "mesh_assets.backfill.launch",
    "launch_backfill": "mesh_assets.backfill.launch",
    "not_published": "mesh_assets.backfill.launch",
    "parse_asset_key": "mesh_assets.backfill.plan",
    "plan_backfill": "mesh_assets.backfill.plan",
    "plan_rebuild": "mesh_assets.backfill.rebuild",
}
"""Where each name is defined."""

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


def __getattr__(name: str) -> object:
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value
