"""Events a lineage server did not take, kept on disk and delivered later, in order, so that a run never waits
for lineage and an outage loses nothing.

The HTTP transport Mesh builds tries once with a short timeout (``lineage.timeout_seconds``), never the
client's default retries (five, with backoff: about 9 s per event with the server down). An event it cannot
deliver is written as one JSON file under ``<home>/lineage/undelivered/`` (named by the time it was kept, so
the files sort in the order the events happened), and the rest of that run's events go straight there
without trying again. Before each event it sends, the transport first delivers what is waiting (up to
``BATCH`` files, oldest first, under a file lock so that two processes never send one file twice), so the
next run's events deliver the backlog when the server is back; ``mesh lineage --flush`` delivers all of it.
A file is removed once the server accepted it: a process killed between the server's answer and the removal
sends that one event again.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openlineage.client.serde import Serde
from openlineage.client.transport.http import HttpTransport
from openlineage.client.transport.transport import Config, Transport

BATCH = 100
"""Waiting events one emit delivers before its own: a long outage's backlog never holds a run for long."""

NO_RETRY: dict[str, Any] = {"total": None, "connect": 0, "read": 0, "status": 0, "other": 0, "redirect": 5}
"""One attempt per event (redirects still followed): a server that does not answer costs one timeout."""


class EventKept(RuntimeError):
    """The server did not take an event; it was kept on disk for later delivery (the message says where)."""


@dataclass(frozen=True)
class Delivery:
    """What one delivery of the waiting events did."""

    delivered: int
    waiting: int
    error: str | None = None


def _reason(exc: BaseException) -> str:
    text = str(exc).split("(Caused by")[0].strip()  # urllib3's text repeats the connection object
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class SpooledTransport(Transport):
    """``inner`` (an HTTP transport) with the events it cannot deliver kept in ``folder`` and sent later."""

    kind = "mesh_spooled"
    config_class = Config

    def __init__(self, inner: HttpTransport, folder: Path, batch: int = BATCH) -> None:
        self.inner, self.folder, self.batch = inner, folder, batch
        self.failed: str | None = None
        """Why the server did not take an event in this process: later events are kept without trying."""

    @property
    def url(self) -> str:
        return self.inner.url

    def waiting(self) -> list[Path]:
        """The kept events, oldest first."""
        return sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []

    def emit(self, event: Any) -> Any:
        if self.failed is None and self.deliver(self.batch, wait=False).waiting == 0:
            try:
                return self.inner.emit(event)
            except Exception as exc:  # the event is kept below; the run goes on
                self.failed = _reason(exc)
        path = self.keep(event)
        raise EventKept(
            f"lineage server {self.url} did not take the event ({self.failed or 'earlier events still waiting'}); "
            f"kept in {path}, {len(self.waiting())} event(s) waiting: the next run's events deliver them, "
            "or `mesh lineage --flush`"
        )

    def keep(self, event: Any) -> Path:
        """Write ``event`` as the newest waiting file (written aside, then renamed: never half a file)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        part = path.with_suffix(".part")
        part.write_text(event if isinstance(event, str) else Serde.to_json(event))
        part.rename(path)
        return path

    def deliver(self, limit: int | None = None, *, wait: bool = True) -> Delivery:
        """Send waiting events oldest first (at most ``limit``), stopping at the first the server does not take.
        Without ``wait``, a delivery already under way in another process is left to finish it."""
        if not self.waiting():
            return Delivery(0, 0)
        with self._lock(wait) as held:
            if not held:
                return Delivery(0, len(self.waiting()), "another process is delivering them")
            sent = 0
            for path in self.waiting()[:limit]:
                try:
                    event = json.loads(path.read_text())
                except (OSError, ValueError):  # a file that is not an event: set aside, named, never resent
                    path.rename(path.with_suffix(".unreadable"))
                    continue
                try:
                    self.inner.emit(event)
                except Exception as exc:
                    self.failed = _reason(exc)
                    return Delivery(sent, len(self.waiting()), self.failed)
                path.unlink()
                sent += 1
            return Delivery(sent, len(self.waiting()))

    @contextmanager
    def _lock(self, wait: bool) -> Iterator[bool]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def close(self, timeout: float = -1) -> bool:
        return self.inner.close(timeout)
