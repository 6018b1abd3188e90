"""Compaction: a partition whose small files passed the threshold is rewritten into few large files with Delta's
``OPTIMIZE`` (Z-ordered by the output's ``zorder`` columns when it declares some), one commit for every partition
compacted in a pass. Its files carry ``dataChange: false``: the observer reports nothing for it, no
materialization is recorded, so nothing downstream goes stale or runs, and every older version stays readable
(the replaced files are only removed from the snapshot; clean-up deletes them after the retention).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession

from mesh_assets.maintenance.files import TableFiles
from mesh_assets.storage.delta import path_identifier


@dataclass(frozen=True)
class Compacted:
    """What one pass compacted: the partitions (``None``: the unpartitioned table) and the files it replaced."""

    partitions: tuple[str | None, ...]
    files_removed: int = 0
    files_added: int = 0


def due(files: TableFiles, small_files: int) -> list[str | None]:
    """The partitions holding at least ``small_files`` small files, in order."""
    return sorted((p for p, f in files.partitions.items() if f.small >= small_files), key=lambda p: p or "")


def optimize_sql(location: str, column: str | None, literals: list[str], zorder: tuple[str, ...] = ()) -> str:
    """``OPTIMIZE`` of the partitions whose values are ``literals`` (the whole table without a ``column``)."""
    sql = f"OPTIMIZE {path_identifier(location)}"
    if column is not None:
        sql += f" WHERE `{column}` IN ({', '.join(literals)})"
    if zorder:
        sql += " ZORDER BY (" + ", ".join(f"`{c}`" for c in zorder) + ")"
    return sql


def compact(
    spark: SparkSession,
    location: str,
    files: TableFiles,
    column: str | None,
    small_files: int,
    zorder: tuple[str, ...] = (),
) -> Compacted:
    """Compact the partitions of ``files`` that are due, in one commit; nothing when none is."""
    partitions = due(files, small_files)
    if not partitions:
        return Compacted(())
    literals = [lit for p in partitions if (lit := files.partitions[p].literal) is not None]
    metrics = spark.sql(optimize_sql(location, column if literals else None, literals, zorder)).collect()
    found = metrics[0]["metrics"] if metrics else None
    removed = int(found["numFilesRemoved"]) if found is not None else 0
    added = int(found["numFilesAdded"]) if found is not None else 0
    return Compacted(tuple(partitions), removed, added)
