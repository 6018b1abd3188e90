"""What changed in a Delta table since the observer last looked: partitions, the versions that changed them, rows.

Three cases, cheapest first (:class:`Read`):

- ``COMMITS``: the commits after the cursor are in the log. Each one's ``add``/``remove`` actions name the
  partitions it changed. Only actions with ``dataChange: true`` count: OPTIMIZE, compaction, ZORDER and VACUUM
  rewrite or delete files without changing the data, and a consumer must not recompute for them. delta-rs reads
  snapshots, not one commit's actions with their ``dataChange`` flag, so a commit file is read as the Delta
  protocol writes it (JSON lines). The actions' ``numRecords`` give each changed partition's change in rows.
- ``SNAPSHOT``: no cursor (a first observation); the latest snapshot (checkpoint plus later commits, read by
  delta-rs) reports every partition it holds, with its rows.
- ``CLEANED_UP``: the commit after the cursor is gone (Delta's log clean-up deletes commits older than
  ``logRetentionDuration`` once a newer checkpoint holds them), so no commit says what changed. The latest
  snapshot's partitions, rows and file times are returned for comparing with what the cursor knew
  (:mod:`~mesh_assets.automation.observer`); a checkpoint keeps no ``dataChange`` flags.

An idle table costs a failed open of the next commit file and a stat of the cursor's own commit.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from mesh_assets.automation.log_files import LogFiles
from mesh_assets.model.grain import Grain, utc

Partition = tuple[tuple[str, str | None], ...]
"""One partition as its sorted ``(column, value)`` pairs; ``()`` for the whole of an unpartitioned table."""


class Read(enum.Enum):
    """How the changes were read: from the commits, from a first snapshot, or from a snapshot after clean-up."""

    COMMITS = "commits"
    SNAPSHOT = "snapshot"
    CLEANED_UP = "cleaned_up"


@dataclass(frozen=True)
class Seen:
    """How far the observer has read a table's log: a version, when it was committed (epoch ms), and the
    newest data file time read up to it (epoch ms, the storage's clock, which the snapshot's file times share)."""

    version: int
    committed_ms: int | None = None
    files_ms: int | None = None


@dataclass
class Changes:
    """The partitions whose data changed after a cursor, each with the versions that changed it.

    ``rows`` is, per partition, its row count (snapshots) or its change in rows (commits); None where a file
    gave no ``numRecords``. After a clean-up, ``partitions`` is everything the snapshot holds and ``newer`` the
    partitions with a file written after the cursor's newest file.
    """

    seen: Seen
    read: Read = Read.COMMITS
    partitions: dict[Partition, set[int]] = field(default_factory=dict)
    rows: dict[Partition, int | None] = field(default_factory=dict)
    newer: set[Partition] = field(default_factory=set)


def _add_rows(rows: dict[Partition, int | None], partition: Partition, count: int | None) -> None:
    """Add ``count`` to ``partition``'s rows; one unknown count makes the sum unknown."""
    before = rows.get(partition, 0)
    rows[partition] = None if before is None or count is None else before + count


def _records(action: dict[str, Any]) -> int | None:
    """The live rows of one ``add``/``remove`` action; None without stats or with a deletion vector."""
    if action.get("deletionVector") or not action.get("stats"):
        return None
    return json.loads(action["stats"]).get("numRecords")


def parse_commit(text: str, changes: Changes, version: int) -> None:
    """Add one commit's changed partitions, rows, commit time and newest file time to ``changes``."""
    committed, files_ms = None, changes.seen.files_ms
    rows: dict[Partition, int | None] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "commitInfo" in action:
            info = action["commitInfo"]
            committed = info.get("inCommitTimestamp", info.get("timestamp"))
        for kind, sign in (("add", 1), ("remove", -1)):
            if kind not in action:
                continue
            act = action[kind]
            partition = tuple(sorted((act.get("partitionValues") or {}).items()))
            records = _records(act)
            _add_rows(rows, partition, None if records is None else sign * records)
            if act.get("dataChange", True):
                changes.partitions.setdefault(partition, set()).add(version)
            if kind == "add" and act.get("modificationTime") is not None:
                files_ms = max(files_ms or 0, act["modificationTime"])
    for partition, count in rows.items():  # a rewrite's rows cancel out; only changed partitions are kept
        if partition in changes.partitions:
            _add_rows(changes.rows, partition, count)
    changes.seen = Seen(version, committed, files_ms)


def _text(value: Any) -> str | None:
    """A snapshot's typed partition value as the log's text (dates and timestamps in ISO form)."""
    if value is None:
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def from_snapshot(files: LogFiles, location: str, seen: Seen | None) -> Changes | None:
    """Every partition the latest snapshot holds, with its rows; ``newer`` those with files written after
    ``seen``'s newest file (its commit time for a cursor that kept none)."""
    table = files.snapshot(location)
    if table is None:
        return None
    version = table.version()
    info = table.history(1)[0]
    actions = table.get_add_actions(flatten=True)
    columns = table.metadata().partition_columns
    values = {c: actions.column(f"partition.{c}").to_pylist() for c in columns}
    modified = actions.column("modification_time").to_pylist()
    vectors = "deletionVectors" in (table.protocol().reader_features or [])
    records = [None] * len(modified) if vectors else actions.column("num_records").to_pylist()
    since = None if seen is None else (seen.files_ms if seen.files_ms is not None else seen.committed_ms)
    committed = info.get("inCommitTimestamp", info.get("timestamp"))
    changes = Changes(
        Seen(version, committed, max(modified, default=None)), Read.SNAPSHOT if seen is None else Read.CLEANED_UP
    )
    for row, when in enumerate(modified):
        partition = tuple(sorted((c, _text(values[c][row])) for c in columns))
        changes.partitions.setdefault(partition, set()).add(version)
        _add_rows(changes.rows, partition, records[row])
        if since is not None and when > since:
            changes.newer.add(partition)
    return changes


def changes_since(files: LogFiles, location: str, seen: Seen | None) -> Changes | None:
    """What changed after ``seen`` (None: everything the table holds); None when nothing was committed."""
    if seen is None:
        return from_snapshot(files, location, None)
    changes = Changes(seen)
    version = seen.version + 1
    while (text := files.read_commit(location, version)) is not None:
        parse_commit(text, changes, version)
        version += 1
    if changes.seen != seen:
        return changes
    if files.has_commit(location, seen.version):
        return None  # nothing new; and the log is cleaned up oldest first, so nothing after the cursor is gone
    checkpoint = files.last_checkpoint(location)
    if checkpoint is None or checkpoint <= seen.version:
        return None
    # The next commit exists no more, yet a newer checkpoint does: the log was cleaned up past the cursor.
    return from_snapshot(files, location, seen)


def partition_key(value: str | None, grain: Grain, now: datetime | None = None) -> str | None:
    """Dagster's partition key for a Delta partition value: ``YYYY-MM-DD`` or hourly ``YYYY-MM-DD-HH:MM``, in UTC.

    The whole value must be an ISO date or timestamp on the table's grid (a UTC day or hour) and not after
    ``now`` (default: the current time); ValueError says which it is not, so nothing but a partition that can
    exist reaches a key. A value without a zone is UTC: Mesh's sessions write in UTC.
    """
    if value is None:
        return None
    try:
        moment = utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        raise ValueError(f"is not a {grain} partition") from None
    if moment != grain.floor(moment):
        raise ValueError(f"is not {grain.grid} (UTC)")
    if moment > (now or datetime.now(UTC)):
        raise ValueError("is in the future")
    return grain.key(moment)
