"""How a process that builds definitions treats Python's cyclic garbage collector.

Building a location's definitions allocates a few hundred objects per asset (Dagster's specs, ops, graphs,
metadata) that live as long as the process, and almost no cyclic garbage (47 objects for a location of 1,000
products). While it builds, the collector would walk them again and again as they pile up, and every later
full collection (the repository snapshot a code server makes, a run's steps) would walk them once more: 0.75
to 0.85 s of a 2.4 s load at 1,000 products, measured (bench/FINDINGS.md). So the collector is paused while
definitions build, the first definitions a process builds are frozen (``gc.freeze``: left out of later
collections) once built, and the heap is frozen at exit, where Python's finalization would otherwise end with
a collection over everything still held. Importing Mesh's public names after Dagster's is treated the same
way: paused, and the modules frozen after the first import (:func:`importing`).

Only the first build is frozen: a process that builds again (a test session, the whole-mesh graph an
invalidation reads) collects its later definitions as usual, so what a freeze can keep alive is bounded by
one build's garbage, once.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cache


@cache
def _freeze_first_definitions() -> None:
    gc.freeze()


@cache
def _exit_without_a_last_collection() -> None:
    atexit.register(gc.freeze)


@contextmanager
def _paused(*after: Callable[[], None]) -> Iterator[None]:
    """The collector paused for the block, then ``after`` run once it succeeded; a caller's pause is kept and
    nothing runs then (the enclosing block decides)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
        for step in after:
            step()
    finally:
        gc.enable()


def collector_paused() -> AbstractContextManager[None]:
    """Build with the collector paused (unless it already is, by the caller or an enclosing build); the first
    build of the process is frozen when it ends, and the process exits without a last collection."""
    return _paused(_freeze_first_definitions, _exit_without_a_last_collection)


def importing() -> AbstractContextManager[None]:
    """Import Mesh's public names with the collector paused, and freeze the heap after the first import.

    After Dagster's import the heap holds a few hundred thousand long-lived objects (its modules), and the
    allocations of the composition root's import set off a full collection over them: 0.11 s of that import
    against 0.05 s with the collector paused. Paused alone, the collection came at the next import instead;
    modules live as long as the process, so they are frozen once, as the first definitions are."""
    return _paused(_freeze_imports)


@cache
def _freeze_imports() -> None:
    gc.freeze()
