"""Other tools' output to a log file: what dbt, Spark's JVM and Dagster print goes there, not on the screen."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

WARNINGS_LOG = "mesh.log"
"""Under ``<home>/logs``: the Python warnings of every command but the demo (whose log takes everything)."""


@contextlib.contextmanager
def warnings_to_log() -> Iterator[None]:
    """Python warnings raised meanwhile are appended to ``<home>/logs/mesh.log`` instead of printed.

    They are libraries' words to Mesh's developers (Dagster's ``BetaWarning`` with the line that raised it,
    a dependency's deprecation), never to its users: Mesh prints what a user should act on itself.
    """
    with _warnings_shown_by(_append_to_log):
        yield


@contextlib.contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """Python warnings raised meanwhile are written to ``sys.stderr`` as Python would: for the demo, whose
    stderr is its log file (or the screen, with ``--verbose``)."""
    with _warnings_shown_by(lambda text: sys.stderr.write(text)):
        yield


@contextlib.contextmanager
def _warnings_shown_by(write: Callable[[str], object]) -> Iterator[None]:
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, *_: object) -> None:
        with contextlib.suppress(Exception):  # a warning that cannot be shown is not worth failing the command
            write(warnings.formatwarning(message, category, filename, lineno))

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _append_to_log(text: str) -> None:
    from mesh_assets.settings import get_settings  # only once a warning is raised: `mesh --help` stays quick

    log = get_settings().home / "logs" / WARNINGS_LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as file:
        file.write(f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC')} {text}")


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[TextIO]:
    """Point this process's stdout and stderr (file descriptors 1 and 2) at ``log`` and yield the screen.

    At the descriptor level, so that child processes started meanwhile (Spark's JVM) and libraries that
    write to ``sys.stdout`` directly (dbt) land in the file too. The yielded stream is the original stdout.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "wb") as file:
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
    screen = os.fdopen(os.dup(saved[0]), "w", buffering=1, encoding="utf-8")
    try:
        yield screen
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        screen.close()
        for fd, original in zip((1, 2), saved, strict=True):
            os.dup2(original, fd)
            os.close(original)
