"""A run's failure texts for an output classified above ``l0``: counts, keys and column names, never row values.

A step's failure message becomes the run's error in the UI, the owners' alert and the OpenLineage FAIL event.
Spark's errors quote the value they failed on (``The value 'ann@example.org' of the type "STRING" cannot be
cast``), and so may a transformation's own, so for a classified output any error but Mesh's own refusals (which
name partitions, checks and columns) and a write's storage failure (a full disk, a conflict: files and writers)
is replaced by its class, and its chain is not kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from mesh_assets.checks.errors import withheld
from mesh_assets.graph.resolve import Table
from mesh_assets.storage.delta import CommitNotFound
from mesh_assets.storage.schema import SchemaChangeRefused
from mesh_assets.storage.writer import WriteFailed

OWN_REFUSALS = (dg.Failure, SchemaChangeRefused, CommitNotFound)
"""Mesh's refusals, whose texts are made of partition keys, counts, check and column names."""


@contextmanager
def private_failures(table: Table) -> Iterator[None]:
    """Errors of ``table``'s run as their class alone when the table is classified above ``l0``."""
    if table.shows_values:
        yield
        return
    try:
        yield
    except OWN_REFUSALS:
        raise
    except WriteFailed as exc:
        if exc.about_storage:  # a full disk or a conflict: its words name files and writers
            raise
        cause = withheld(exc.__cause__ or exc, table.ref, table.classification)
        raise dg.Failure(description=exc.with_cause(cause)) from None
    except Exception as exc:
        raise dg.Failure(description=f"{table.ref} failed: {withheld(exc, table.ref, table.classification)}") from None
