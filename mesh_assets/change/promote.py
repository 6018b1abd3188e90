"""Promotion: publish what an environment computed to production without computing it again.

A partition the environment computed is promoted when it was computed by the code production runs now (the same
code version) from the same input data: every input partition its window reads holds the same files in production
as when the environment was built, or, for an input the environment computed too, was itself promoted. Its files
are copied into the production table and committed in one Delta commit per table (the partitions replaced
atomically: readers see all of them or none), without Spark, and recorded on production's instance as a
materialization with the code version, data version (the new Delta version), row count and the environment's
check results. Everything else (a partition whose input moved, a table started from a clone of its own past, a
changed schema) is left to ``mesh apply`` to recompute.

A file's partition is read through the table's :class:`Layout`, so every grain (minutes, hours, days, weeks,
months) and a table partitioned by date and region promote the same way: a file belongs to the Dagster key its
partition values name (a week's is its Monday, a region's ``date|region``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import dagster as dg

from mesh_assets.change.records import InstanceRecords
from mesh_assets.checks.results import target_of
from mesh_assets.compat import CODE_VERSION_TAG, DATA_VERSION_TAG, AssetCheckExecutionRecordStatus, AssetGraph
from mesh_assets.model.grain import Grain, midnight, region_key, utc
from mesh_assets.settings import S3Settings
from mesh_assets.storage.environment import Environment
from mesh_assets.storage.lake import local_path, open_table
from mesh_assets.storage.tables import TableRegistry

PROMOTED_FROM = "mesh/promoted_from"


@dataclass(frozen=True)
class Layout:
    """How a partitioned table's files are laid out: by its grain's column, and by its region column when it is
    partitioned by date and region."""

    grain: Grain
    column: str
    region_column: str | None = None

    @property
    def columns(self) -> list[str]:
        return [self.column] if self.region_column is None else [self.column, self.region_column]

    def key(self, values: Mapping[str, object]) -> str | None:
        """The Dagster partition key a file's partition values name; None for a value on no partition's start."""
        value = values.get(self.column)
        if isinstance(value, datetime):
            moment = utc(value)
        elif isinstance(value, date):
            moment = midnight(value)
        elif isinstance(value, str):
            try:
                moment = utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
            except ValueError:
                return None
        else:
            return None
        if self.grain.floor(moment) != moment:
            return None
        key = self.grain.key(moment)
        if self.region_column is None:
            return key
        region = values.get(self.region_column)
        return None if region is None else region_key(key, str(region))


def whole_dates(ready: list[str]) -> tuple[list[str], list[str]]:
    """Of ``date|region`` keys, those one commit can replace (the dates ready in every region being promoted:
    a Delta overwrite filters dates and regions separately) and the rest."""
    pairs = [tuple(k.split("|", 1)) for k in ready]
    regions = {r for _, r in pairs}
    dates = {d for d, _ in pairs if all((d, r) in pairs for r in regions)}
    return [k for k, (d, _) in zip(ready, pairs, strict=True) if d in dates], [
        k for k, (d, _) in zip(ready, pairs, strict=True) if d not in dates
    ]


@dataclass
class Promotion:
    """Per table, the partitions promoted (with the production version that published them), and those left to
    recompute, with why."""

    promoted: dict[dg.AssetKey, tuple[list[str], int | None]] = field(default_factory=dict)
    left: dict[dg.AssetKey, dict[str, str]] = field(default_factory=dict)

    def keys(self, key: dg.AssetKey) -> set[str]:
        return set(self.promoted.get(key, ([], None))[0])


def _files(
    location: str, s3: S3Settings, version: int | None, layout: Layout | None, keys: set[str]
) -> set[str] | None:
    """The data files of ``keys`` in the table at ``version`` (every file of an unpartitioned table); None when
    there is no table."""
    table = open_table(location, s3, version=version, files=True)
    if table is None:
        return None
    actions = table.get_add_actions(flatten=True)
    paths = actions.column("path").to_pylist()
    if layout is None:
        return set(paths)
    return {p for p, values in zip(paths, _partitions(actions, layout), strict=True) if layout.key(values) in keys}


def _partitions(actions: Any, layout: Layout) -> list[dict[str, object]]:
    """Each add action's values of the layout's partition columns (``actions``: Delta's flattened add actions)."""
    found = {c: actions.column(f"partition.{c}").to_pylist() for c in layout.columns}
    return [dict(zip(found, row, strict=True)) for row in zip(*found.values(), strict=True)]


def _window(graph: AssetGraph, child: dg.AssetKey, parent: dg.AssetKey, key: str) -> set[str]:
    """The parent's partition keys that ``key`` of ``child`` reads."""
    child_def, parent_def = graph.get(child).partitions_def, graph.get(parent).partitions_def
    if child_def is None or parent_def is None:
        return set()
    mapping = graph.get_partition_mapping(child, parent)
    subset = child_def.empty_subset().with_partition_keys([key])
    found = mapping.get_upstream_mapped_partitions_result_for_partitions(subset, child_def, parent_def)
    return set(found.partitions_subset.get_partition_keys())


def _why_not(
    graph: AssetGraph,
    env: Environment,
    production: TableRegistry,
    done: Promotion,
    key: dg.AssetKey,
    partition: str,
    layouts: Mapping[dg.AssetKey, Layout],
) -> str | None:
    """Why ``partition`` of ``key`` may not be promoted (an input moved, an input not promoted); None if it may."""
    for parent in sorted(graph.get(key).parent_keys - {key}):
        ref = "/".join(parent.path)
        keys = _window(graph, key, parent, partition)
        if ref in env.tables:
            missing = keys - done.keys(parent)
            if missing:
                return f"its input {parent.to_user_string()} {min(missing)} is recomputed"
            continue
        if ref not in env.reads:
            continue
        location = production.location(*parent.path)
        then = _files(location, production.s3, env.reads[ref], layouts.get(parent), keys)
        now = _files(location, production.s3, None, layouts.get(parent), keys)
        if then != now:
            return f"its input {parent.to_user_string()} changed since the environment read it"
    return None


def _partition_values(path: str) -> dict[str, str]:
    """A file's partition values from its folders (``path`` as on disk: each value escaped as Hive escapes it)."""
    return {k: unquote(v) for part in path.split("/")[:-1] if "=" in part for k, v in [part.split("=", 1)]}


def _commit(env: Environment, production: TableRegistry, key: dg.AssetKey, keys: list[str], layout: Layout) -> int:
    """Copy the environment's files of ``keys`` into the production table and replace those partitions with them
    in one commit; returns the version it committed."""
    from deltalake import CommitProperties
    from deltalake.transaction import AddAction

    source, target = env.location(*key.path), local_path(production.location(*key.path))
    mine = open_table(source, production.s3, files=True)
    theirs = open_table(target, production.s3, files=True)
    assert mine is not None and theirs is not None
    found = mine.get_add_actions(flatten=True)
    names = ["path", "size_bytes", "modification_time", "num_records"]
    columns = {name: found.column(name).to_pylist() for name in names}
    rows = zip(_partitions(found, layout), zip(*columns.values(), strict=True), strict=True)
    adds = []
    for values, action in ((v, dict(zip(names, row, strict=True))) for v, row in rows):
        if layout.key(values) not in keys:
            continue
        # The log holds the path URI-encoded (an hour's `p_hour=2021-06-01 05%3A00%3A00` folder is
        # `...%2005%253A00%253A00` there); the file is at the decoded path, which delta-rs encodes again on commit.
        path = unquote(action["path"])
        (Path(target) / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(source) / path, Path(target) / path)
        stats = f'{{"numRecords":{action["num_records"]}}}' if action["num_records"] is not None else "{}"
        adds.append(
            AddAction(path, action["size_bytes"], _partition_values(path), action["modification_time"], True, stats)
        )
    filters = []
    for column in layout.columns:
        values = {v for a in adds for v in [a.partition_values.get(column)] if v is not None}
        filters.append((column, "in", sorted(values)))
    theirs.create_write_transaction(
        adds,
        mode="overwrite",
        schema=theirs.schema(),
        partition_by=theirs.metadata().partition_columns,
        partition_filters=filters,
        commit_properties=CommitProperties(custom_metadata={PROMOTED_FROM: env.name}),
    )
    committed = open_table(target, production.s3)
    assert committed is not None
    return next(c["version"] for c in committed.history(20) if c.get(PROMOTED_FROM) == env.name)


def _record(
    instance: dg.DagsterInstance,
    own: dg.DagsterInstance,
    graph: AssetGraph,
    env: Environment,
    key: dg.AssetKey,
    keys: list[str],
    version: int,
) -> None:
    """Production's record of the promoted partitions: one materialization each, then the environment's results
    of the table's checks on them, pointing at it."""
    records = InstanceRecords(own).of(key)
    checks = [c for c in graph.asset_check_keys if c.asset_key == key]
    infos = own.event_log_storage.get_asset_check_partition_info(checks, partition_keys=keys) if checks else []
    for partition in keys:
        published = records.partitions[partition]
        tags = {DATA_VERSION_TAG: f"delta-v{version}"}
        if published.code_version:
            tags[CODE_VERSION_TAG] = published.code_version
        metadata = {"delta_version": version, PROMOTED_FROM: env.name}
        if published.rows is not None:
            metadata["dagster/row_count"] = published.rows
        event = dg.AssetMaterialization(key, partition=partition, metadata=metadata, tags=tags)
        instance.report_runless_asset_event(event)
        target = target_of(instance, key, partition)
        for info in infos:
            if info.partition_key != partition:
                continue
            status = info.latest_execution_status
            if status not in (AssetCheckExecutionRecordStatus.SUCCEEDED, AssetCheckExecutionRecordStatus.FAILED):
                continue
            instance.report_runless_asset_event(
                dg.AssetCheckEvaluation(
                    key,
                    info.check_key.name,
                    passed=status == AssetCheckExecutionRecordStatus.SUCCEEDED,
                    metadata={PROMOTED_FROM: env.name},
                    target_materialization_data=target,
                    partition=partition,
                )
            )


def promote(
    env: Environment,
    graph: AssetGraph,
    own: dg.DagsterInstance,
    instance: dg.DagsterInstance,
    production: TableRegistry,
    layouts: Mapping[dg.AssetKey, Layout],
    dry_run: bool = False,
) -> Promotion:
    """Promote what ``env`` computed (recorded on ``own``) that production would compute the same way now."""
    done = Promotion()
    order = {k: i for i, k in enumerate(graph.toposorted_asset_keys)}
    for key in sorted((dg.AssetKey(t.split("/")) for t in env.tables), key=lambda k: order.get(k, -1)):
        left: dict[str, str] = {}
        computed = {p: r for p, r in InstanceRecords(own).of(key).partitions.items() if p is not None}
        layout = layouts.get(key)
        node = graph.get(key) if graph.has(key) else None
        if node is not None and layout is None:  # a whole table is one unit: nothing to copy a partition of
            done.left[key] = {"the whole table": "recomputed: it is not partitioned, so it has no partition to promote"}
            continue
        if node is None or "/".join(key.path) in env.cloned:
            done.left[key] = dict.fromkeys(computed, "recomputed: the table reads its own past or keeps a state")
            continue
        mine = open_table(env.location(*key.path), production.s3)
        theirs = open_table(production.location(*key.path), production.s3)
        if mine is None or theirs is None or mine.schema() != theirs.schema():
            done.left[key] = dict.fromkeys(computed, "recomputed: its schema differs from production's")
            continue
        ready = []
        for partition, record in sorted(computed.items()):
            if record.code_version != node.code_version:
                left[partition] = "recomputed: computed by other code than production's now"
            elif why := _why_not(graph, env, production, done, key, partition, layouts):
                left[partition] = f"recomputed: {why}"
            else:
                ready.append(partition)
        if layout.region_column is not None:
            ready, apart = whole_dates(ready)
            for partition in apart:
                left[partition] = "recomputed: a promotion replaces a date in every region it promotes at once"
        if ready:
            version = None if dry_run else _commit(env, production, key, ready, layout)
            if version is not None:
                _record(instance, own, graph, env, key, ready, version)
            done.promoted[key] = (ready, version)
        if left:
            done.left[key] = left
    return done
