"""What ``mesh backfill`` plans from without Spark: a throwaway instance on which the example's sources (and some
of its products) are reported published, and the CLI pointed at it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import definitions
from mesh_assets.cli import commands


def published(instance: dg.DagsterInstance, table: str, days: int) -> None:
    """Report ``food_delivery.<table>`` published for the first ``days`` days of June 2021."""
    for day in range(1, days + 1):
        key = dg.AssetKey(["food_delivery", table])
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=f"2021-06-{day:02d}"))


def planning_instance(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mesh: dg.Definitions | Callable[[], dg.Definitions]
) -> dg.DagsterInstance:
    """The instance ``mesh backfill`` (and ``mesh plan``) reads what is published from; it plans over ``mesh``
    (or what ``mesh()`` builds when the command asks, for a mesh that changes during the test)."""
    home = tmp_path / "dagster"
    home.mkdir()
    monkeypatch.setattr(commands, "persistent_instance", lambda: dg.DagsterInstance.local_temp(str(home)))
    monkeypatch.setattr(definitions, "mesh_definitions", mesh if callable(mesh) else lambda: mesh)
    return dg.DagsterInstance.local_temp(str(home))


def landed(instance: dg.DagsterInstance) -> None:
    """Raw orders of 06-01..12 and the dimensions landed; orders published for 06-01..09 only."""
    published(instance, "raw_orders", 12)
    for dimension in ("menus", "menu_items", "categories"):
        instance.report_runless_asset_event(dg.AssetMaterialization(dg.AssetKey(["food_delivery", dimension])))
    published(instance, "orders", 9)  # the 7-day windows ending 06-10..12 cannot be computed
