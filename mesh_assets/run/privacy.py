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


def private_description(exc: BaseException, table: Table) -> str | None:
    """What a failure of ``table``'s run may say instead of ``exc``'s own text; None when that text is safe
    (an open table, a refusal of Mesh's own, a write failed by its storage)."""
    if table.shows_values or isinstance(exc, OWN_REFUSALS):
        return None
    if isinstance(exc, WriteFailed):
        if exc.about_storage:  # a full disk or a conflict: its words name files and writers
            return None
        return exc.with_cause(withheld(exc.__cause__ or exc, table.ref, table.classification))
    return f"{table.ref} failed: {withheld(exc, table.ref, table.classification)}"


@contextmanager
def private_failures(table: Table) -> Iterator[None]:
    """Errors of ``table``'s run as their class alone when the table is classified above ``l0``."""
    try:
        yield
    except Exception as exc:
        if (description := private_description(exc, table)) is None:
            raise
        raise dg.Failure(description=description) from None
