"""Sending events: an OpenLineage client whose transport comes from ``settings.lineage``.

``file`` appends JSON lines to ``<home>/lineage/openlineage-<day>.jsonl``; ``http`` posts to a Marquez (or
any OpenLineage) endpoint at ``lineage.url``; ``console`` logs them; ``none`` sends nothing. When Mesh's
``lineage.transport`` is not set, the client's own configuration applies as everywhere else OpenLineage is
used (``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG`` / ``openlineage.yml``, ``OPENLINEAGE__TRANSPORT__*``),
and without one, the file transport. Emission never fails a product run: a transport error is a warning.
Over HTTP (Mesh's or the client's own configuration) each event gets one short attempt, and an event the
server does not take is kept on disk and delivered later (``mesh_assets/lineage/spool.py``).
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from pathlib import Path

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import RunEvent
from openlineage.client.transport.console import ConsoleConfig, ConsoleTransport
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.transport.http import HttpConfig, HttpTransport
from openlineage.client.transport.http_common import DEFAULT_RETRY_CONFIG
from openlineage.client.transport.noop import NoopConfig, NoopTransport

from mesh_assets.lineage.spool import NO_RETRY, Delivery, EventKept, SpooledTransport
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


def client_transport() -> dict | None:
    """The transport the client's own configuration names, or ``None`` when it names none.

    ``OPENLINEAGE_URL`` is the client's shorthand for an HTTP transport; ``OPENLINEAGE_DISABLED=true`` turns
    it off. The client reads ``openlineage.yml`` and ``OPENLINEAGE__*`` itself (its ``config`` property).
    """
    if os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return {"type": "noop"}
    configured = OpenLineageClient(transport=NoopTransport(NoopConfig())).config.transport
    if configured and configured.get("type"):
        return dict(configured)
    if os.environ.get("OPENLINEAGE_URL"):
        return {"type": "http", "url": os.environ["OPENLINEAGE_URL"]}
    return None


def server_url(settings: MeshSettings) -> str | None:
    """The lineage server events are sent to over HTTP (Mesh's setting, else the client's), if any."""
    cfg = settings.lineage
    if cfg.transport is not None:
        return cfg.url if cfg.transport == "http" else None
    own = client_transport() or {}
    return own.get("url") if own.get("type") == "http" else None


def spool_dir(settings: MeshSettings) -> Path:
    """Where events the lineage server did not take wait for delivery."""
    return settings.lineage_dir / "undelivered"


def spooled(transport: HttpTransport, settings: MeshSettings) -> SpooledTransport:
    """``transport`` tried once per event, with a short timeout, its undelivered events kept on disk.

    A retry policy or timeout the client's own configuration sets is kept; the client's defaults (five
    retries with backoff, 5 s) are replaced by one attempt within ``lineage.timeout_seconds``.
    """
    config = transport.config
    if config.retry == DEFAULT_RETRY_CONFIG:
        config.retry = dict(NO_RETRY)
    if config.timeout == HttpConfig(url=config.url).timeout:
        config.timeout = transport.timeout = settings.lineage.timeout_seconds
    return SpooledTransport(transport, spool_dir(settings))


def make_client(settings: MeshSettings) -> OpenLineageClient | None:
    """The client for the configured transport, or ``None`` when lineage is off."""
    cfg: LineageSettings = settings.lineage
    if cfg.transport is None and client_transport() is not None:
        client = OpenLineageClient()
        if isinstance(client.transport, HttpTransport):
            client.transport = spooled(client.transport, settings)
        return client
    transport = cfg.transport or "file"
    if transport == "none":
        return None
    if transport == "file":
        return OpenLineageClient(transport=DailyFileTransport(settings.lineage_dir))
    if transport == "console":
        return OpenLineageClient(transport=ConsoleTransport(ConsoleConfig()))
    if not cfg.url:
        raise ValueError("lineage.transport is http but lineage.url is not set (e.g. http://localhost:5000)")
    return OpenLineageClient(transport=spooled(HttpTransport(HttpConfig(url=cfg.url)), settings))


def deliver_waiting(settings: MeshSettings) -> tuple[str, Delivery] | None:
    """Deliver every event waiting for the lineage server: (its URL, what was done); ``None`` without one."""
    client = make_client(settings)
    transport = client.transport if client is not None else None
    if not isinstance(transport, SpooledTransport):
        return None
    return transport.url, transport.deliver()


def emit(client: OpenLineageClient | None, event: RunEvent, warn=log.warning) -> bool:
    if client is None:
        return False
    try:
        client.emit(event)
    except EventKept as exc:  # delayed, not lost: the message says where it waits and what delivers it
        warn(f"OpenLineage event delayed: {exc}")
        return False
    except Exception as exc:  # lineage is best effort; the data write is what matters
        warn(f"OpenLineage event not sent ({type(exc).__name__}: {exc})")
        return False
    return True
