"""Other tools' output to a log file: what dbt, Spark's JVM and Dagster print goes there, not on the screen."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


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
