"""Shared fixtures: one SparkSession and one isolated Mesh home for the whole test session."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest
from receiver import json_receiver

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def mesh_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test writes under a throwaway MESH_HOME; jars still come from the checkout's cache."""
    home = tmp_path_factory.mktemp("mesh-home")
    os.environ["MESH_HOME"] = str(home)
    os.environ["MESH_PROJECT_ROOT"] = str(ROOT)
    os.environ["DAGSTER_HOME"] = str(home / "dagster")
    (home / "dagster").mkdir()
    from mesh_assets.settings import get_settings

    get_settings.cache_clear()
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    yield home


@pytest.fixture(scope="session")
def spark(mesh_home: Path):
    """The one SparkSession of the test session (JVM start-up is paid once)."""
    from mesh_assets import get_spark
    from mesh_assets.engine.session import stop_spark

    session = get_spark()
    yield session
    stop_spark()


@pytest.fixture
def webhook(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[dict], Callable[[str], None]]]:
    """A chat-webhook receiver on 127.0.0.1; ``point(domain)`` routes that domain's alerts to it."""
    received: list[dict] = []
    server = json_receiver(lambda _path, body: received.append(body))

    def point(domain: str) -> None:
        monkeypatch.setenv(f"MESH_ALERT_WEBHOOK_{domain.upper()}", f"http://127.0.0.1:{server.server_port}/hook")

    yield received, point
    server.shutdown()
