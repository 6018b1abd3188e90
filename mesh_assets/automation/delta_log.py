"""What changed in a Delta table since the observer last looked: partitions and the versions that changed them.

Three cases, cheapest first:

- The commits after the cursor are in the log: each one's ``add``/``remove`` actions name the partitions it
  changed. Only actions with ``dataChange: true`` count: OPTIMIZE, compaction, ZORDER and VACUUM rewrite or
  delete files without changing the data, and a consumer must not recompute for them. delta-rs reads
  snapshots, not one commit's actions with their ``dataChange`` flag, so a commit file is read as the Delta
  protocol writes it (JSON lines).
- The commit after the cursor is gone (Delta's log clean-up deletes commits older than
  ``logRetentionDuration`` once a newer checkpoint holds them): the newest snapshot (checkpoint plus later
  commits, read by delta-rs) reports the partitions of every file written after the cursor's commit.
- No cursor (a first observation): the snapshot reports every partition it holds.

An idle table costs a failed open of the next commit file and a stat of the cursor's own commit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from mesh_assets.automation.log_files import LogFiles
from mesh_assets.model.grain import Grain, utc

Partition = tuple[tuple[str, str | None], ...]
"""One partition as its sorted ``(column, value)`` pairs; ``()`` for the whole of an unpartitioned table."""


@dataclass(frozen=True)
class Seen:
    """How far the observer has read a table's log: a version and when it was committed (epoch ms)."""

    version: int
    committed_ms: int | None = None


@dataclass
class Changes:
    """The partitions whose data changed after a cursor, each with the versions that changed it."""

    seen: Seen
    partitions: dict[Partition, set[int]] = field(default_factory=dict)


def parse_commit(text: str) -> tuple[set[Partition], int | None]:
    """The partitions whose data one commit changed, and its commit time (epoch ms) when it says."""
    partitions: set[Partition] = set()
    committed = None
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "commitInfo" in action:
            info = action["commitInfo"]
            committed = info.get("inCommitTimestamp", info.get("timestamp"))
        for kind in ("add", "remove"):
            if kind in action and action[kind].get("dataChange", True):
                partitions.add(tuple(sorted((action[kind].get("partitionValues") or {}).items())))
    return partitions, committed


def _text(value: Any) -> str | None:
    """A snapshot's typed partition value as the log's text (dates and timestamps in ISO form)."""
    if value is None:
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def from_snapshot(files: LogFiles, location: str, since_ms: int | None) -> Changes | None:
    """Partitions of the files the latest snapshot holds (written after ``since_ms``, when given)."""
    table = files.snapshot(location)
    if table is None:
        return None
    version = table.version()
    info = table.history(1)[0]
    changes = Changes(Seen(version, info.get("inCommitTimestamp", info.get("timestamp"))))
    actions = table.get_add_actions(flatten=True)
    columns = table.metadata().partition_columns
    values = {c: actions.column(f"partition.{c}").to_pylist() for c in columns}
    for row, modified in enumerate(actions.column("modification_time").to_pylist()):
        if since_ms is None or modified > since_ms:
            partition = tuple(sorted((c, _text(values[c][row])) for c in columns))
            changes.partitions.setdefault(partition, set()).add(version)
    return changes


def changes_since(files: LogFiles, location: str, seen: Seen | None) -> Changes | None:
    """What changed after ``seen`` (None: everything the table holds); None when nothing was committed."""
    if seen is None:
        return from_snapshot(files, location, None)
    changes = Changes(seen)
    version = seen.version + 1
    while (text := files.read_commit(location, version)) is not None:
        partitions, committed = parse_commit(text)
        for partition in partitions:
            changes.partitions.setdefault(partition, set()).add(version)
        changes.seen = Seen(version, committed)
        version += 1
    if changes.seen != seen:
        return changes
    if files.has_commit(location, seen.version):
        return None  # nothing new; and the log is cleaned up oldest first, so nothing after the cursor is gone
    checkpoint = files.last_checkpoint(location)
    if checkpoint is None or checkpoint <= seen.version:
        return None
    # The next commit exists no more, yet a newer checkpoint does: the log was cleaned up past the cursor.
    return from_snapshot(files, location, seen.committed_ms)


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
        raise ValueError(f"is not on the {'hour' if grain is Grain.HOURLY else 'day'} (UTC)")
    if moment > (now or datetime.now(UTC)):
        raise ValueError("is in the future")
    return grain.key(moment)
