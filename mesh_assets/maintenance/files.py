"""What a table's files look like now, from its Delta log (delta-rs, no Spark job): per partition the file
count, bytes and small files, the table's last compaction and last clean-up, and the bytes its directory holds;
the same as its asset's metadata (:meth:`TableFiles.metadata`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

import dagster as dg

from mesh_assets.settings import S3Settings
from mesh_assets.storage.lake import is_object_store, local_path, open_table

FILES_KEY = "mesh/files"
"""The metadata key of a table's live file count on its asset's maintenance observations."""
COMPACTION = "OPTIMIZE"
CLEAN_UPS = ("VACUUM END", "VACUUM START")


@dataclass
class PartitionFiles:
    """One partition's live files; ``literal`` is its value as SQL (``DATE'2021-06-01'``)."""

    literal: str | None = None
    files: int = 0
    bytes: int = 0
    small: int = 0


@dataclass
class TableFiles:
    """A table's live files (the latest snapshot's) and its maintenance history as the log still holds it."""

    version: int
    partitions: dict[str | None, PartitionFiles] = field(default_factory=dict)
    last_compaction: datetime | None = None
    last_clean_up: datetime | None = None
    stored_bytes: int | None = None
    """Every data file under the table's directory, live or not (None on an object store: not listed)."""

    @property
    def files(self) -> int:
        return sum(p.files for p in self.partitions.values())

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions.values())

    @property
    def small(self) -> int:
        return sum(p.small for p in self.partitions.values())

    def metadata(self) -> dict[str, dg.MetadataValue]:
        """What an operator sees on the table's asset (recorded as an observation, never as new data)."""

        def when(moment: datetime | None) -> dg.MetadataValue:
            return dg.MetadataValue.timestamp(moment) if moment else dg.MetadataValue.text("never")

        shown = {
            FILES_KEY: dg.MetadataValue.int(self.files),
            "mesh/small_files": dg.MetadataValue.int(self.small),
            "mesh/bytes": dg.MetadataValue.int(self.bytes),
            "mesh/last_compaction": when(self.last_compaction),
            "mesh/last_clean_up": when(self.last_clean_up),
            "delta_version": dg.MetadataValue.int(self.version),
        }
        if self.stored_bytes is not None:
            shown["mesh/stored_bytes"] = dg.MetadataValue.int(self.stored_bytes)
        return shown


def _value(value: object) -> tuple[str | None, str | None]:
    """A partition value as text and as a SQL literal (a date, a UTC timestamp, a string)."""
    if value is None:
        return None, None
    if isinstance(value, datetime):
        text = (value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value).isoformat(" ")
        return text, f"TIMESTAMP'{text}'"
    if isinstance(value, date):
        return value.isoformat(), f"DATE'{value.isoformat()}'"
    text = str(value)
    return text, "'" + text.replace("'", "''") + "'"


def _when(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def stored_bytes(location: str) -> int | None:
    """Bytes of every file under a local table's directory but its log; None on an object store."""
    if is_object_store(location):
        return None
    root, total = local_path(location), 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        total += sum(os.path.getsize(os.path.join(folder, n)) for n in names if not n.startswith("."))
    return total


def table_files(location: str, s3: S3Settings, small_file_bytes: int, column: str | None) -> TableFiles | None:
    """The table's files by value of ``column`` (its partition column; None, or a column Delta does not partition
    the table by: the whole table under ``None``); None when there is no Delta table at ``location``."""
    table = open_table(location, s3, files=True)
    if table is None:
        return None
    actions = table.get_add_actions(flatten=True)
    sizes = actions.column("size_bytes").to_pylist()
    by = f"partition.{column}"  # a keyed table (merge, history, changes) is not partitioned in Delta: one group
    values = actions.column(by).to_pylist() if by in actions.schema.names else [None] * len(sizes)
    found = TableFiles(table.version(), stored_bytes=stored_bytes(location))
    for value, size in zip(values, sizes, strict=True):
        text, literal = _value(value)
        part = found.partitions.setdefault(text, PartitionFiles(literal))
        part.files, part.bytes = part.files + 1, part.bytes + size
        part.small += size < small_file_bytes
    for entry in table.history():  # newest first
        operation = entry.get("operation")
        if operation == COMPACTION and found.last_compaction is None:
            found.last_compaction = _when(entry.get("timestamp"))
        if operation in CLEAN_UPS and found.last_clean_up is None:
            found.last_clean_up = _when(entry.get("timestamp"))
    return found
