"""Time zones in tests: run a block as if the process were started with ``TZ=<zone>``, and compare rows
collected from Spark with the generator's UTC datetimes.

Python's local-time conversions (``time.mktime``, ``datetime.now()``, ``fromtimestamp``) follow ``TZ`` after
``time.tzset()``, and PySpark converts datetimes with them both ways; Spark itself computes in its session's
zone (UTC), which a change of ``TZ`` in the process does not touch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime


@contextmanager
def local_time_zone(zone: str) -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


def in_utc(row: Iterable) -> tuple:
    """A collected row with its timestamps as aware UTC datetimes (PySpark returns them naive, in local time)."""
    return tuple(v.astimezone(UTC) if isinstance(v, datetime) else v for v in row)
