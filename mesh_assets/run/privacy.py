"""A run's failure texts for an output classified above ``l0``: names, counts and keys, never row values.

A step's failure message becomes the run's error in the UI, the owners' and consumers' alerts and the OpenLineage
FAIL event, which travel beyond the domain. Spark's errors quote the value they failed on (``The value
'ann@example.org' of the type "STRING" cannot be cast``), and so may a transformation's own, so for a classified
output any error but Mesh's own refusals (which name partitions, checks and columns) and a write's storage
failure (a full disk, a conflict: files and writers) is told without values (:func:`~mesh_assets.checks.errors.
withheld`: Spark's error with the names it gives, another error's class and line), and its chain is not kept.
The whole error, message and traceback, goes to the run's compute log, where the domain's operators read it.
"""

from __future__ import annotations

import sys

from mesh_assets.checks.errors import withheld
from mesh_assets.graph.resolve import Table
from mesh_assets.model.errors import Refused
from mesh_assets.storage.delta import CommitNotFound
from mesh_assets.storage.schema import SchemaChangeRefused
from mesh_assets.storage.writer import WriteFailed

OWN_REFUSALS = (Refused, SchemaChangeRefused, CommitNotFound)
"""Mesh's refusals, whose texts are made of partition keys, counts, check and column names."""


def described(exc: BaseException) -> bool:
    """Whether ``exc`` carries a description and metadata written for the run's error: a refusal of Mesh's or
    a ``dg.Failure``. Dagster is looked up, not imported: where a body runs without it (a submitted
    application), nothing raised is a ``dg.Failure``."""
    dagster = sys.modules.get("dagster")
    return isinstance(exc, Refused) or (dagster is not None and isinstance(exc, dagster.Failure))


def private_description(exc: BaseException, table: Table) -> str | None:
    """What a failure of ``table``'s run may say instead of ``exc``'s own text; None when that text is safe
    (an open table, a refusal of Mesh's own, a write failed by its storage). Its caller writes ``exc`` whole to
    the compute log (:func:`~mesh_assets.checks.errors.to_compute_log`), which the description names."""
    if table.shows_values or isinstance(exc, OWN_REFUSALS) or described(exc):
        return None
    if isinstance(exc, WriteFailed):
        if exc.about_storage:  # a full disk or a conflict: its words name files and writers
            return None
        return exc.with_cause(withheld(exc.__cause__ or exc, table.ref, table.classification))
    return f"{table.ref} failed: {withheld(exc, table.ref, table.classification)}"
