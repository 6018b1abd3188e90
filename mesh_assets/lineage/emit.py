"""Sending events: an OpenLineage client whose transport comes from ``settings.lineage``.

``file`` (default) appends JSON lines to ``<home>/lineage/openlineage-<day>.jsonl``; ``http`` posts to a
Marquez (or any OpenLineage) endpoint at ``lineage.url``; ``console`` logs them; ``none`` sends nothing.
Emission never fails a product run: a transport error is logged as a warning.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import RunEvent
from openlineage.client.transport.console import ConsoleConfig, ConsoleTransport
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.transport.http import HttpConfig, HttpTransport

from mesh_assets.settings import LineageSettings, MeshSettings

log = logging.getLogger(__name__)


class DailyFileTransport(FileTransport):
    """The client's file transport, appending one JSON line per event to the day's file in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        super().__init__(FileConfig(log_file_path=str(folder / "openlineage.jsonl"), append=True))

    def emit(self, event: RunEvent) -> None:  # type: ignore[override]
        self.folder.mkdir(parents=True, exist_ok=True)
        self.config.log_file_path = str(self.folder / f"openlineage-{datetime.now(UTC):%Y-%m-%d}.jsonl")
        super().emit(event)


def make_client(settings: MeshSettings) -> OpenLineageClient | None:
    """The client for the configured transport, or ``None`` when lineage is off."""
    cfg: LineageSettings = settings.lineage
    if cfg.transport == "none":
        return None
    if cfg.transport == "file":
        return OpenLineageClient(transport=DailyFileTransport(settings.lineage_dir))
    if cfg.transport == "console":
        return OpenLineageClient(transport=ConsoleTransport(ConsoleConfig()))
    if not cfg.url:
        raise ValueError("lineage.transport is http but lineage.url is not set (e.g. http://localhost:5000)")
    return OpenLineageClient(transport=HttpTransport(HttpConfig(url=cfg.url)))


def emit(client: OpenLineageClient | None, event: RunEvent, warn=log.warning) -> bool:
    if client is None:
        return False
    try:
        client.emit(event)
    except Exception as exc:  # lineage is best effort; the data write is what matters
        warn(f"OpenLineage event not sent ({type(exc).__name__}: {exc})")
        return False
    return True
