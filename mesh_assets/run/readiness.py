"""Readiness: an output partition is computed only from inputs that are published and passed their checks.

The rule holds whatever launched the run (automation, a manual run, the UI's backfill dialog, ``mesh
backfill``, a test): before computing partition P, every input partition P's window reads must be
published on the instance (materialized by Mesh or dbt, or observed for an external table; for a
date-by-region table, every region of the day) and every blocking check of it must have passed on its
current data, unless the input says ``ignore_quality``. A range run computes the ready partitions and
refuses the others by name. Spark is not needed here: the instance knows all of it.

An external table's partition is published when its observer reported it. A refusal for want of that report
says whether the partition has landed (the run looks at the table's Delta log, through ``landed``) and,
once, how to have it observed (:func:`observe_hint`): a partition that landed a minute ago is not missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import dagster as dg

from mesh_assets.compat import AssetCheckExecutionRecordStatus
from mesh_assets.graph.resolve import Node, Table
from mesh_assets.model.grain import region_key
from mesh_assets.model.names import observer_name
from mesh_assets.model.partitions import PartitionRange, window_range
from mesh_assets.model.product import Input

if TYPE_CHECKING:
    from mesh_assets.storage.resource import MeshResource

Status = AssetCheckExecutionRecordStatus
CHECK_STATES = {Status.FAILED: "failed", Status.PLANNED: "pending"}
NOT_OBSERVED = "not observed yet by"
Landed = Callable[[Table], set[str] | None]
"""The partition keys an external table's files hold now (None: unknown), whether observed or not."""


def landed_keys(mesh: MeshResource) -> Landed:
    """Which partitions an external table holds, from its Delta log: what a refusal for want of an observer's
    report tells the user. Unknown (None) when the log cannot be read: the refusal stands either way."""

    def landed(table: Table) -> set[str] | None:
        from mesh_assets.storage.delta import snapshot_keys  # on a refusal only: loading definitions skips it

        location = mesh.registry.location(table.domain, table.name)
        region = table.region_column if table.regions else None
        try:
            return snapshot_keys(location, mesh.settings.s3, table.grain, table.partition_column, region)
        except Exception:  # only a hint's source: the observer reports an unreadable log
            return None

    return landed


def observe_hint(problems: Iterable[str]) -> str | None:
    """How to have landed partitions observed, when ``problems`` name one; said once per refusal."""
    if not any(NOT_OBSERVED in p for p in problems):
        return None
    return (
        "a landed partition of an external table is read once its observer reported it: the Dagster daemon "
        "runs each domain's observer sensor every automation.observer_interval_seconds (when automation is "
        "disabled, turn the sensor on in the UI's Automation page); a process without the daemon calls "
        "observe_now(defs, instance, mesh)"
    )


def window_keys(inp: Input, upstream: Table, part: PartitionRange | None) -> list[str] | None:
    """The upstream partition keys ``part``'s window reads (every region of a regional day), from the
    upstream's first partition on; None when the whole table is read. A keyed table (``merge``, ``history``,
    ``changes``) read whole is read as its state: the output's partitions wait until it applied theirs."""
    needed = window_range(inp.window, upstream.grain, part)
    if needed is None and part is not None and upstream.grain.partitioned and upstream.table_kind.keyed:
        needed = part.as_grain(upstream.grain)  # a keyed table's state is read whole once it applied the partition
    if needed is None:
        return None
    first = upstream.start_date.isoformat()
    keys = [k for k in needed.keys() if k[:10] >= first]
    if upstream.regions:
        keys = [region_key(k, r) for k in keys for r in upstream.regions]
    return keys


def _check_problem(info: Any | None, check: str) -> str | None:
    """Why a blocking check does not count as passed on its partition's current data, or None if it does."""
    if info is None:
        return f"check {check} not run"
    if info.latest_execution_status == Status.SUCCEEDED:
        return None if info.is_current else f"check {check} not run on its current data"
    return f"check {check} {CHECK_STATES.get(info.latest_execution_status, 'not passed')}"


class _Input:
    """What the instance knows about one input: its published partitions and its blocking checks' results."""

    def __init__(
        self,
        instance: dg.DagsterInstance,
        inp: Input,
        upstream: Table,
        keys: Iterable[str] | None,
        landed: Landed | None = None,
    ):
        self.upstream = upstream
        self._landed = landed if upstream.external else None
        self._landed_keys: set[str] | None = None
        self.asset = upstream.key
        self.partitioned = upstream.grain.partitioned
        self.published = instance.get_materialized_partitions(self.asset) if self.partitioned else set()
        self.ever_published = bool(self.published) or instance.get_latest_materialization_event(self.asset) is not None
        checks = [] if inp.ignore_quality else list(upstream.blocking_checks)
        self.checks: dict[tuple[str, str | None], Any] = {}
        if checks:
            infos = instance.event_log_storage.get_asset_check_partition_info(
                [dg.AssetCheckKey(self.asset, name) for name in checks],
                partition_keys=sorted(set(keys)) if keys is not None else None,
            )
            self.checks = {(i.check_key.name, i.partition_key): i for i in infos}
        self.check_names = checks

    def problems(self, keys: list[str] | None, earlier: set[str]) -> list[str]:
        """Why the input partitions ``keys`` (None: the whole table) may not be read yet; ``earlier`` are
        partitions this run itself published before (a product's own past, computed in order)."""
        ref = self.upstream.ref
        keys = None if keys is None else [k for k in keys if k not in earlier]
        if keys == []:
            return []
        if not self.ever_published:
            return self._never_published(keys)
        if keys is None:
            return self._whole_table_problems()
        out = []
        for key in keys:
            if key not in self.published:
                out.append(f"{ref} {key} ({self._unpublished(key)})")
                continue
            out += [
                f"{ref} {key} ({why})"
                for name in self.check_names
                if (why := _check_problem(self.checks.get((name, key)), name))
            ]
        return out

    def landed(self) -> set[str] | None:
        """The keys the external upstream's files hold, read once; None when not known (or not external)."""
        if self._landed is not None:
            self._landed_keys, self._landed = self._landed(self.upstream), None
        return self._landed_keys

    def _unpublished(self, key: str) -> str:
        """Why ``key`` of the upstream is not published; for an external table whose files are known, whether it
        landed (and awaits its observer) or not."""
        landed = self.landed()
        if landed is None:
            return "not published"
        return f"landed, {NOT_OBSERVED} {observer_name(self.upstream.domain)}" if key in landed else "not landed"

    def _never_published(self, keys: list[str] | None) -> list[str]:
        """An upstream nothing was published of: for an external table, the keys that landed unobserved."""
        ref, landed = self.upstream.ref, self.landed()
        if landed is None:
            return [f"{ref} (never published)"]
        if not landed or (keys is not None and not landed.intersection(keys)):
            return [f"{ref} (not landed)"]
        if keys is None:
            return [f"{ref} (landed, {NOT_OBSERVED} {observer_name(self.upstream.domain)})"]
        return [f"{ref} {key} ({self._unpublished(key)})" for key in keys]

    def _whole_table_problems(self) -> list[str]:
        """A whole read waits for a failed check of any partition, and for an unpartitioned table's checks."""
        if not self.partitioned:
            return [
                f"{self.upstream.ref} ({why})"
                for name in self.check_names
                if (why := _check_problem(self.checks.get((name, None)), name))
            ]
        return [
            f"{self.upstream.ref} {key} (check {name} failed)"
            for (name, key), info in sorted(self.checks.items(), key=lambda item: (item[0][0], item[0][1] or ""))
            if info.latest_execution_status == Status.FAILED and info.is_current
        ]


def unready_partitions(
    instance: dg.DagsterInstance,
    node: Node,
    part: PartitionRange | None,
    earlier: Iterable[str] = (),
    landed: Landed | None = None,
) -> dict[str | None, list[str]]:
    """Output partitions (``None`` when unpartitioned) of ``node`` that may not be computed, with reasons;
    ``earlier``: its own partitions this run already published (read by a ``previous`` window)."""
    return unready(instance, [(read.input, read.table) for read in node.reads], part, earlier, landed)


def unready(
    instance: dg.DagsterInstance,
    reads: Iterable[tuple[Input, Table]],
    part: PartitionRange | None,
    earlier: Iterable[str] = (),
    landed: Landed | None = None,
) -> dict[str | None, list[str]]:
    """Output partitions (``None`` when unpartitioned) that may not be computed from ``reads``, with reasons.

    Each output partition is judged by its own window, so a range run refuses only the partitions that would
    read unpublished or unchecked data. ``landed`` tells which partitions an external table holds, so that a
    run's refusal says "landed, not observed yet" or "not landed" where it would say "not published".
    """
    outputs: list[PartitionRange | None] = [None] if part is None else [part.single(v) for v in part.values()]
    done = set(earlier)
    refused: dict[str | None, list[str]] = {}
    for inp, upstream in reads:
        windows = {p.grain.key(p.start) if p else None: window_keys(inp, upstream, p) for p in outputs}
        every = None if any(k is None for k in windows.values()) else {k for keys in windows.values() for k in keys}
        known = _Input(instance, inp, upstream, every, landed)
        for output_key, keys in windows.items():
            if problems := known.problems(keys, done if inp.window.skips_current else set()):
                refused.setdefault(output_key, []).extend(problems)
    return {k: sorted(set(v)) for k, v in refused.items()}
