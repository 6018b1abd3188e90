"""The unit tier's one server: a Dagster webserver serving the example's ``food_delivery`` location, started the
first time a test launches a backfill through it, and ``mesh`` pointed at it or at no webserver at all."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
from last_use import until_last_use
from services import processes
from webserver import dagster_webserver, workspace

from mesh_assets.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Served:
    """The webserver's URL and the instance it stores backfills on."""

    url: str
    instance: dg.DagsterInstance

    def backfill_ids(self) -> set[str]:
        return {b.backfill_id for b in self.instance.get_backfills()}


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("webserver")
    home = base / "dagster"
    home.mkdir()
    locations = {"food_delivery": ROOT / "domains" / "food_delivery" / "definitions.py"}
    env = {**os.environ, "DAGSTER_HOME": str(home), "MESH_AUTOMATION__ENABLED": "false"}
    with until_last_use("served") as servers:
        instance = servers.enter_context(dg.DagsterInstance.from_config(str(home)))  # storage before the webserver
        webserver = dagster_webserver(workspace(base / "workspace.yaml", locations, ROOT), env, base / "webserver.log")
        yield Served(servers.enter_context(webserver), instance)


@contextmanager
def pointed_at(monkeypatch: pytest.MonkeyPatch, url: str) -> Iterator[None]:
    """The ``dagster.url`` setting is ``url`` for the block."""
    monkeypatch.setenv("MESH_DAGSTER__URL", url)
    get_settings.cache_clear()
    try:
        yield
    finally:
        get_settings.cache_clear()


@pytest.fixture
def cli_webserver(served: Served, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """``mesh backfill`` and ``mesh rebuild`` launch through :func:`served`."""
    with pointed_at(monkeypatch, served.url):
        yield served


@pytest.fixture
def no_webserver(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``mesh`` pointed at a loopback port nothing listens on: any launch attempt fails, naming the URL."""
    url = f"http://127.0.0.1:{processes.free_port()}"
    with pointed_at(monkeypatch, url):
        yield url
