"""What every write shares, whatever its table's kind: staging, the result, and a failure that says why.

A write that fails (full disk, a concurrent commit to the same partitions, a killed job) commits nothing:
:class:`WriteFailed` names the table, the partitions, the underlying cause and the version readers still see.
How each kind commits is :mod:`mesh_assets.storage.strategies`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from delta import exceptions as delta_errors
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from mesh_assets.model.names import check_identifier
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.settings import S3Settings
from mesh_assets.storage.delta import version_or_none

CONFLICTS = (
    delta_errors.ConcurrentAppendException,
    delta_errors.ConcurrentDeleteDeleteException,
    delta_errors.ConcurrentDeleteReadException,
    delta_errors.ConcurrentTransactionException,
    delta_errors.ConcurrentWriteException,
    delta_errors.DeltaConcurrentModificationException,
    delta_errors.MetadataChangedException,
    delta_errors.ProtocolChangedException,
)
"""Delta's commit conflicts: another transaction committed first to what this one read."""
CREATED_FIRST = (delta_errors.MetadataChangedException, delta_errors.ProtocolChangedException)
"""How Delta fails the second of two first writes of a table, whatever partitions each wrote."""


class WriteFailed(RuntimeError):
    """A Delta write that committed nothing; the message says why and which version readers still see.

    ``about_storage``: the cause is the storage's (the OS, the object store, a conflict in Delta's log), whose
    words name files and writers; otherwise it is the rows' (Spark failing to compute them), whose words may
    quote a value.
    """

    def __init__(self, what: str, cause: str, state: str, about_storage: bool):
        super().__init__(f"writing {what} failed: {cause}; {state}")
        self.what, self.state, self.about_storage = what, state, about_storage

    def with_cause(self, cause: str) -> str:
        """The message with another cause: a classified table's write names the error's class, not its text."""
        return f"writing {self.what} failed: {cause}; {self.state}"


@dataclass(frozen=True)
class WriteResult:
    location: str
    version: int | None
    rows: int
    partition_rows: dict[str, int]
    schema: StructType
    written_again_after: str | None = None
    """The conflict this write recovered from (another writer created the table first), when it did."""
    changes: Mapping[str, int] = field(default_factory=dict)
    """Rows ``inserted``, ``updated`` and ``deleted`` by a keyed kind's ``MERGE``; empty for a replace."""
    committed: bool = True
    """False when nothing changed and no commit was made (``version`` is the table's, as it was)."""


def replace_predicate(
    column: str,
    partitions: PartitionRange,
    only: Sequence[datetime] | None = None,
    alias: str | None = None,
    region_column: str | None = None,
) -> str:
    """The ``replaceWhere`` predicate (Delta accepts only a SQL string here) for a range or a subset of it; with
    ``alias``, of that table's column (a ``MERGE`` condition's ``t``); with ``region_column``, of the range's
    region alone (a validated identifier: never user text)."""
    dates = _dates_predicate(column, partitions, only, alias)
    if region_column is None or partitions.region is None:
        return dates
    return f"({dates}) AND `{check_identifier(region_column)}` = '{check_identifier(partitions.region)}'"


def _dates_predicate(
    column: str, partitions: PartitionRange, only: Sequence[datetime] | None, alias: str | None
) -> str:
    col = check_identifier(column) + "`"
    if alias is not None:
        col = f"{check_identifier(alias)}`.`{col}"
    values = sorted(only) if only is not None else partitions.values()
    grain = partitions.grain
    contiguous = all(grain.next(a) == b for a, b in itertools.pairwise(values))
    if contiguous and values:
        return f"`{col} >= {grain.sql_literal(values[0])} AND `{col} <= {grain.sql_literal(values[-1])}"
    return f"`{col} IN ({', '.join(grain.sql_literal(v) for v in values)})"


def _innermost(exc: BaseException) -> Any:
    """The innermost JVM cause of a Spark error (the OS's or Delta's); None for a Python error."""
    cause = getattr(exc, "java_exception", None)
    for _ in range(32):
        inner = cause.getCause() if cause is not None else None
        if inner is None:
            break
        cause = inner
    return cause


def failure_cause(exc: BaseException) -> str:
    """Why a write failed, in the words of its innermost cause (the OS or Delta), not Spark's wrappers."""
    if isinstance(exc, CONFLICTS):
        return f"another write committed to the same partitions first ({type(exc).__name__}); re-run to publish"
    cause = _innermost(exc)
    if cause is None:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return str(cause.toString())


def _denied(exc: BaseException) -> bool:
    """Whether the storage refused the write's keys somewhere in its chain of causes (s3a's 403, a file system's
    permission), however deep Spark wrapped it: the object store's own exception, innermost, is not an I/O one."""
    cause = getattr(exc, "java_exception", None)
    for _ in range(32):
        if cause is None:
            return False
        if cause.getClass().getName() == "java.nio.file.AccessDeniedException":
            return True
        cause = cause.getCause()
    return False


def _about_storage(exc: BaseException) -> bool:
    """Whether a write failed for its storage: a conflict, or an I/O error (``java.io.IOException`` and its
    kind: a full disk, a denied bucket), rather than for rows Spark could not compute."""
    if isinstance(exc, CONFLICTS) or _denied(exc):
        return True
    cause = _innermost(exc)
    kind = cause.getClass() if cause is not None else None
    while kind is not None:
        if kind.getName() == "java.io.IOException":
            return True
        kind = kind.getSuperclass()
    return False


def write_failed(
    s3: S3Settings,
    exc: Exception,
    name: str,
    location: str,
    keys: Sequence[str],
    before: int | None,
    cause: str | None = None,
) -> WriteFailed:
    listed = ", ".join(keys) if len(keys) <= 5 else f"{keys[0]}..{keys[-1]} ({len(keys)} partitions)"
    what = f"{name} partition{'s' if len(keys) > 1 else ''} {listed}" if keys else name
    try:
        after = version_or_none(location, s3)
    except Exception:
        after = before
    if after is None:
        state = "the table was not created"
    elif after == before:
        state = f"the table is unchanged at version {after}"
    else:
        state = f"nothing of this write was committed; the table is at version {after}, committed by another writer"
    return WriteFailed(what, cause or failure_cause(exc), state, cause is not None or _about_storage(exc))


def stage(df: DataFrame, keep: bool = True) -> DataFrame:
    """Mark ``df`` to be computed once into executor storage (``keep``): invisible to readers, re-used by
    checks and the write. Its first action fills the cache; Mesh makes that the audit's tally, so staging costs
    no job. Blocks are kept as Spark's columnar batches in the heap's storage fraction, and those that do not fit
    spill to local disk, so a long range never has to fit in memory. ``_DESER``: PySpark's plain
    ``MEMORY_AND_DISK`` serializes the already encoded batches once more (a copy of every row) before keeping
    them. Without ``keep`` the rows are computed again by each reader (see :mod:`mesh_assets.run.staging`)."""
    return df.persist(StorageLevel.MEMORY_AND_DISK_DESER) if keep else df


def partition_counts(staged: DataFrame, column: str, partitions: PartitionRange) -> dict[str, int]:
    """Rows per partition key, every key of ``partitions`` included (a job; pass known counts to skip it)."""
    counts = {k: 0 for k in partitions.keys()}
    for row in staged.groupBy(F.date_format(column, partitions.grain.spark_pattern).alias("k")).count().collect():
        counts[row["k"]] = row["count"]
    return counts
