"""Readiness: an output partition is computed only from inputs that are published and passed their checks.

The rule holds whatever launched the run (automation, a manual run, the UI's backfill dialog, ``mesh
backfill``, a test): before computing partition P, every input partition P's window reads must be
published on the instance (materialized by Mesh or dbt, or observed for an external table; for a
date-by-region table, every region of the day) and every blocking check of it must have passed on its
current data, unless the input says ``ignore_quality``. A range run computes the ready partitions and
refuses the others by name. Spark is not needed here: the instance knows all of it.

A table read whole (``window: all``, an unpartitioned table) must also be fresh: no older than its input's
``freshness_hours`` (else its product's ``input_freshness_hours``, which a domain sets in ``domain.yaml``),
counted from the last time it was published (by Mesh or dbt) or observed (an external table), and, when the
input names a ``watermark`` column, that column's maximum must reach the end of the output partition computed.

An external table's partition is published when its observer reported it. A refusal for want of that report
says whether the partition has landed (the run looks at the table's Delta log, through ``landed``) and,
once, how to have it observed (:func:`observe_hint`): a partition that landed a minute ago is not missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import dagster as dg

from mesh_assets.compat import AssetCheckExecutionRecordStatus
from mesh_assets.graph.resolve import Node, Table
from mesh_assets.model.grain import midnight, region_key, utc
from mesh_assets.model.names import observer_name
from mesh_assets.model.partitions import PartitionRange, read_region, window_range
from mesh_assets.model.product import Input

if TYPE_CHECKING:
    from mesh_assets.settings import S3Settings
    from mesh_assets.storage.resource import MeshResource

Status = AssetCheckExecutionRecordStatus
CHECK_STATES = {Status.FAILED: "failed", Status.PLANNED: "pending"}
NOT_OBSERVED = "not observed yet by"
Landed = Callable[[Table], set[str] | None]
"""The partition keys an external table's files hold now (None: unknown), whether observed or not."""
Watermark = Callable[[Table, str], "date | datetime | None"]
Partial = dict[str | None, dict[str, list[str]]]
"""Output partitions computed from an incomplete window (``min_complete``): input table -> the keys missing."""
"""A table's maximum value of a column now (None: an empty table, or no such column)."""


def table_watermarks(location: Callable[[str, str], str], s3: S3Settings) -> Watermark:
    """A column's maximum in a table (``location`` of its domain and name), read from its Delta log's statistics
    (delta-rs, no Spark); asked only for inputs that declare a ``watermark``."""

    def watermark(table: Table, column: str) -> date | datetime | None:
        from mesh_assets.storage.watermark import column_max

        return column_max(location(table.domain, table.name), s3, column)

    return watermark


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
    """The upstream partition keys ``part``'s window reads (of a regional table: the region the input names, else
    the output's own region, else every region of the date, so an all-regions reader waits for all), from the
    upstream's first partition on; None when the whole table is read. A keyed table (``merge``, ``history``,
    ``changes``) read whole is read as its state: the output's partitions wait until it applied theirs."""
    region = read_region(inp.region, upstream.regions, part)
    needed = window_range(inp.window, upstream.grain, part, region)
    if needed is None and part is not None and upstream.grain.partitioned and upstream.table_kind.keyed:
        needed = part.as_grain(upstream.grain)  # a keyed table's state is read whole once it applied the partition
    if needed is None:
        return None
    first = upstream.start_date.isoformat()
    keys = [k for k in needed.keys() if k[:10] >= first]
    if upstream.regions:
        keys = [region_key(k, r) for k in keys for r in ((region,) if region else upstream.regions)]
    return keys


def _hours(value: float) -> str:
    """Hours as a reader reads them: ``26.5 h``, ``0.0003 h``."""
    return f"{value:.1f} h" if value >= 1 else f"{value:.2g} h"


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
        default_hours: float | None = None,
    ):
        self.upstream = upstream
        self.max_hours = inp.freshness_hours or default_hours
        self.watermark_column = inp.watermark
        self._watermark: tuple[date | datetime | None, str | None] | None = None
        self._landed = landed if upstream.external else None
        self._landed_keys: set[str] | None = None
        self.asset = upstream.key
        self.partitioned = upstream.grain.partitioned
        self.published = instance.get_materialized_partitions(self.asset) if self.partitioned else set()
        latest = instance.get_latest_materialization_event(self.asset)
        self.ever_published = bool(self.published) or latest is not None
        self.updated = datetime.fromtimestamp(latest.timestamp, UTC) if latest is not None else None
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
        keys = None if keys is None else [k for k in keys if k not in earlier]
        if keys == []:
            return []
        if not self.ever_published:
            return self._never_published(keys)
        if keys is None:
            return self._whole_table_problems()
        return [problem for key in keys for problem in self.key_problems(key)]

    def key_problems(self, key: str) -> list[str]:
        """Why the input partition ``key`` may not be read yet: not published, or a blocking check not passed."""
        ref = self.upstream.ref
        if key not in self.published:
            return [f"{ref} {key} ({self._unpublished(key)})"]
        return [
            f"{ref} {key} ({why})"
            for name in self.check_names
            if (why := _check_problem(self.checks.get((name, key)), name))
        ]

    def partial(self, keys: list[str], earlier: set[str], share: float) -> tuple[list[str], list[str]]:
        """A window read with ``min_complete``: (why it may not be read, the keys it is read without). It is read
        when at least ``share`` of ``keys`` are ready; else every unready key is named, and the count."""
        unready = {k: why for k in keys if k not in earlier and (why := self.key_problems(k))}
        needed = math.ceil(share * len(keys) - 1e-9)
        if len(keys) - len(unready) >= needed:
            return [], sorted(unready)
        problems = [p for why in unready.values() for p in why]
        ready = len(keys) - len(unready)
        share_text = f"{ready} of {len(keys)} partitions ready; min_complete {share} needs {needed}"
        problems.append(f"{self.upstream.ref} ({share_text})")
        return problems, []

    def stale(self, output: PartitionRange | None, now: datetime, watermark: Watermark | None) -> list[str]:
        """Why the table, read whole for ``output``, is too old: older than its freshness limit, or its
        watermark column behind the output partition's end."""
        out = []
        ref = self.upstream.ref
        if self.max_hours and self.updated is not None:
            age = (now - self.updated).total_seconds() / 3600
            if age > self.max_hours:
                out.append(
                    f"{ref} (stale: last updated {self.updated:%Y-%m-%dT%H:%M:%SZ}, {_hours(age)} ago; "
                    f"freshness_hours is {_hours(self.max_hours)})"
                )
        if self.watermark_column and output is not None and watermark is not None:
            out += self._behind(output, watermark)
        return out

    def _behind(self, output: PartitionRange, watermark: Watermark) -> list[str]:
        """Why the watermark column has not reached the end of ``output`` (a date: its last day)."""
        column, ref = self.watermark_column, self.upstream.ref
        assert column is not None
        if self._watermark is None:
            try:
                self._watermark = (watermark(self.upstream, column), None)
            except Exception as exc:  # an unreadable log or an unknown column refuses, saying why
                self._watermark = (None, f"{type(exc).__name__}: {exc}")
        value, error = self._watermark
        end = output.end_excluded()
        if error is not None:
            return [f"{ref} (watermark {column} unreadable: {error})"]
        if value is None:
            return [f"{ref} (watermark {column} has no value; it must reach {end:%Y-%m-%dT%H:%M:%SZ})"]
        if isinstance(value, datetime):
            reached, needed = utc(value), end
        else:
            reached, needed = midnight(value), end - timedelta(days=1)
        if reached >= needed:
            return []
        shown = f"{needed:%Y-%m-%d}" if not isinstance(value, datetime) else f"{needed:%Y-%m-%dT%H:%M:%SZ}"
        return [f"{ref} (behind: watermark {column} is at {value}, it must reach {shown} for this partition)"]

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
    watermark: Watermark | None = None,
    *,
    records: Callable[[Table], Any] | None = None,
    partial: Partial | None = None,
) -> dict[str | None, list[str]]:
    """Output partitions (``None`` when unpartitioned) of ``node`` that may not be computed, with reasons;
    ``earlier``: its own partitions this run already published (read by a ``previous`` window); ``records``: whose
    records stand for each input (an environment's, :mod:`mesh_assets.run.layers`), else ``instance``'s;
    ``partial`` receives the windows accepted incomplete by ``min_complete`` (see :func:`unready`)."""
    reads = [(read.input, read.table) for read in node.reads]
    return unready(
        instance,
        reads,
        part,
        earlier,
        landed,
        watermark=watermark,
        default_hours=node.product.input_freshness_hours,
        records=records,
        partial=partial,
    )


def unready(
    instance: dg.DagsterInstance,
    reads: Iterable[tuple[Input, Table]],
    part: PartitionRange | None,
    earlier: Iterable[str] = (),
    landed: Landed | None = None,
    *,
    watermark: Watermark | None = None,
    default_hours: float | None = None,
    now: datetime | None = None,
    records: Callable[[Table], Any] | None = None,
    partial: Partial | None = None,
) -> dict[str | None, list[str]]:
    """Output partitions (``None`` when unpartitioned) that may not be computed from ``reads``, with reasons.

    An input with ``min_complete`` lets a partition through when that share of its window is ready; the keys
    it goes without are added to ``partial`` (output key -> input table -> keys) when given, for the run to
    record on the partition's materialization.

    A table read whole is judged by its age (``freshness_hours``, else ``default_hours``) at ``now`` (default:
    the present) and, with a ``watermark`` column, by that column's maximum (read through ``watermark``).

    Each output partition is judged by its own window, so a range run refuses only the partitions that would
    read unpublished or unchecked data. ``landed`` tells which partitions an external table holds, so that a
    run's refusal says "landed, not observed yet" or "not landed" where it would say "not published".
    """
    outputs: list[PartitionRange | None] = [None] if part is None else [part.single(v) for v in part.values()]
    done = set(earlier)
    now = utc(now) if now is not None else datetime.now(UTC)
    refused: dict[str | None, list[str]] = {}
    for inp, upstream in reads:
        windows = {p.grain.key(p.start) if p else None: (p, window_keys(inp, upstream, p)) for p in outputs}
        every = None if any(k is None for _, k in windows.values()) else {k for _, ks in windows.values() for k in ks}
        known = _Input(records(upstream) if records else instance, inp, upstream, every, landed, default_hours)
        for output_key, (output, keys) in windows.items():
            earlier_keys = done if inp.window.skips_current else set()
            if inp.min_complete is not None and keys:
                problems, missing = known.partial(keys, earlier_keys, inp.min_complete)
                if missing and partial is not None:
                    partial.setdefault(output_key, {})[upstream.ref] = missing
            else:
                problems = known.problems(keys, earlier_keys)
            if keys is None and not problems and known.ever_published:
                problems = known.stale(output, now, watermark)
            if problems:
                refused.setdefault(output_key, []).extend(problems)
    return {k: sorted(set(v)) for k, v in refused.items()}
