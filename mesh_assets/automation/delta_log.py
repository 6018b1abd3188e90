"""Incremental reading of a Delta table's ``_delta_log``: which partitions each new commit touched.

Files are read through :mod:`~mesh_assets.automation.log_files` (a local disk or an S3 bucket); the rest
parses commit JSON only. Cost grows with new commits: with none, reading the log costs one failed open
of the next version's file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mesh_assets.automation.log_files import LogFiles
from mesh_assets.model.grain import Grain, utc


def first_version(files: LogFiles, location: str) -> int | None:
    """The oldest commit still in the log (a first observation starts there); None if there is no table."""
    versions = files.versions(location)
    return versions[0] if versions else None


@dataclass
class Commit:
    version: int
    partitions: set[tuple[tuple[str, str | None], ...]] = field(default_factory=set)
    """Each touched partition as its sorted ``(column, value)`` pairs; ``()`` for an unpartitioned file."""
    touched: bool = False
    """Whether the commit added or removed data files (metadata-only commits touch nothing)."""


def parse_commit(version: int, text: str) -> Commit:
    """The partitions whose files one commit adds or removes."""
    commit = Commit(version)
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        for kind in ("add", "remove"):
            if kind in action:
                commit.touched = True
                values = action[kind].get("partitionValues") or {}
                commit.partitions.add(tuple(sorted(values.items())))
    return commit


def new_commits(files: LogFiles, location: str, after: int | None) -> list[Commit]:
    """Commits after version ``after`` (None: from the oldest still in the log)."""
    version = first_version(files, location) if after is None else after + 1
    commits: list[Commit] = []
    while version is not None:
        text = files.read_commit(location, version)
        if text is None:
            break
        commits.append(parse_commit(version, text))
        version += 1
    return commits


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
