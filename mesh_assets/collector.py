"""How a process that builds definitions treats Python's cyclic garbage collector.

Building a location's definitions allocates a few hundred objects per asset (Dagster's specs, ops, graphs,
metadata) that live as long as the process, and almost no cyclic garbage (47 objects for a location of 1,000
products). While it builds, the collector would walk them again and again as they pile up, and every later
full collection (the repository snapshot a code server makes, a run's steps) would walk them once more: 0.75
to 0.85 s of a 2.4 s load at 1,000 products, measured (bench/FINDINGS.md). So the collector is paused while
definitions build, the first definitions a process builds are frozen (``gc.freeze``: left out of later
collections) once built, and the heap is frozen at exit, where Python's finalization would otherwise end with
a collection over everything still held.

Only the first build is frozen: a process that builds again (a test session, the whole-mesh graph an
invalidation reads) collects its later definitions as usual, so what a freeze can keep alive is bounded by
one build's garbage, once.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache


@cache
def _freeze_first_definitions() -> None:
    gc.freeze()


@cache
def _exit_without_a_last_collection() -> None:
    atexit.register(gc.freeze)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Build with the collector paused (unless it already is, by the caller or an enclosing build); the first
    build of the process is frozen when it ends, and the process exits without a last collection."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
        _freeze_first_definitions()
        _exit_without_a_last_collection()
    finally:
        gc.enable()
