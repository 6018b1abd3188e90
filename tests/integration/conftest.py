"""A landed, materialized example world that integration tests read from or copy."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from deployment import Deployment, deployment
from last_use import until_last_use

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_examples.generator import days
from mesh_examples.landing import land_app_events, land_central, land_food_delivery, land_growth

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
START = date(2021, 6, 1)
DIMENSIONS = [["food_delivery", "menus"], ["food_delivery", "menu_items"], ["food_delivery", "categories"]]


@dataclass
class World:
    """A warehouse with landed sources, an instance, and helpers to materialize into them."""

    mesh: MeshResource
    instance: dg.DagsterInstance
    defs: dg.Definitions
    days: tuple[date, ...] = ()
    cursors: dict[str, str | None] = field(default_factory=dict)

    def observe(self) -> None:
        """Report what was landed since the last call and run the checks of landed partitions (the observers)."""
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def materialize(
        self,
        keys: list[list[str]],
        partition: str | None = None,
        *,
        start: str | None = None,
        end: str | None = None,
        raise_on_error: bool = True,
    ):
        tags = {}
        if start:
            tags = {"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end or start}
        return dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(k) for k in keys],
            partition_key=partition,
            tags=tags,
            raise_on_error=raise_on_error,
        )

    def table(self, domain: str, table: str):
        spark = self.mesh.spark
        return spark.read.format("delta").load(self.mesh.registry.location(domain, table))


def new_world(spark, base: Path, day_count: int = 14, on_disk: bool = False, app_events: bool = True) -> World:
    """Land the example's sources for ``day_count`` days, observe them and materialize the dimensions.

    ``app_events=False`` leaves ``central.raw_app_events`` unlanded: its 15-minute batches (about 100 a day,
    each observed and checked) are most of a world's set-up, and only tests of the regional products read them.
    """
    mesh = MeshResource(warehouse=str(base / f"wh-{uuid.uuid4().hex[:8]}"))
    landed = tuple(days(START, day_count))
    land_food_delivery(spark, mesh.registry, landed)
    land_central(spark, mesh.registry, landed)
    if app_events:
        land_app_events(spark, mesh.registry, landed)
    land_growth(spark, mesh.registry, landed)
    instance = dg.DagsterInstance.ephemeral()
    if on_disk:
        (base / "dagster").mkdir()
        instance = dg.DagsterInstance.from_config(str(base / "dagster"))
    world = World(mesh, instance, mesh_definitions(ROOT / "domains"), landed)
    world.observe()
    world.materialize(DIMENSIONS)
    return world


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory, request: pytest.FixtureRequest) -> Iterator[World]:
    """A fresh world per test module: modules may change its data without affecting others.

    A module may set ``WORLD_DAYS`` to land fewer days than 14: each landed day costs Delta commits; and
    ``WORLD_ON_DISK`` to keep the instance in ``<world>/dagster``, where the ``mesh`` CLI can read it; and
    ``WORLD_APP_EVENTS = False`` when none of its tests reads the regions' 15-minute app events.
    """
    base = tmp_path_factory.mktemp("world")
    module = request.module
    yield new_world(
        spark,
        base,
        getattr(module, "WORLD_DAYS", 14),
        getattr(module, "WORLD_ON_DISK", False),
        getattr(module, "WORLD_APP_EVENTS", True),
    )


@pytest.fixture(scope="session")
def shared_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """The session's one webserver, daemon and code servers (``tests/deployment.py``), started by the first test
    file that asks for them and stopped after the last test that uses them."""
    with until_last_use("shared_deployment") as servers:
        yield servers.enter_context(deployment(tmp_path_factory.mktemp("deployment")))
