"""What consumers may not trust now, from the instance alone: published partitions whose latest check result on
their current data failed. The ``valid`` check tells invalidated partitions (``mesh invalidate``, with its
reason) from suspect ones (computed from an invalidated partition, naming it); any other failed check is a
partition its checks refused. Each comes with the command that clears it: publishing the partitions again,
whose run checks them anew (``mesh backfill``; ``mesh rebuild`` for an unpartitioned table).

A failure on data since re-published (the check not yet run on the new data) is not listed: it judged rows that
are gone. Stale partitions are the webserver's to tell (:mod:`mesh_assets.backfill.stale`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby

import dagster as dg

from mesh_assets.compat import AssetCheckExecutionRecordStatus
from mesh_assets.graph.resolve import Table, TableKind
from mesh_assets.model.checks import VALID

HISTORY = 1000
"""Check results read per check, newest first: enough for every partition's latest among recent runs."""


@dataclass(frozen=True)
class Unhealthy:
    """One published partition (``None``: an unpartitioned table) whose latest check result failed."""

    key: dg.AssetKey
    partition: str | None
    state: str
    """``invalid``, ``suspect`` or ``check failed``."""
    reason: str
    sources: tuple[str, ...] = ()
    """A suspect's invalid sources, ``<domain>/<table> <partition>``: what must be published again first."""


def _state(check: str, description: str | None) -> tuple[str, str]:
    text = (description or "").strip()
    if check == VALID and text.startswith("suspect: "):
        return "suspect", text.removeprefix("suspect: ")
    if check == VALID:
        return "invalid", text.removeprefix("invalidated: ") or "invalidated"
    return "check failed", f"{check}: {text}" if text else check


def check_keys(tables: Iterable[Table]) -> list[dg.AssetCheckKey]:
    """Every check of the tables Mesh or dbt publishes: their declared checks, ``valid`` and dbt's tests."""
    keys = set()
    for table in tables:
        if table.kind is TableKind.EXTERNAL:
            continue
        names = {c.check_name for c in table.checks} | set(table.blocking_checks)
        keys |= {dg.AssetCheckKey(table.key, name) for name in names}
    return sorted(keys, key=lambda k: (k.asset_key.path, k.name))


def unhealthy_partitions(instance: dg.DagsterInstance, keys: list[dg.AssetCheckKey]) -> list[Unhealthy]:
    """The partitions whose latest check result on their current data failed, by table and partition."""
    failed = [
        info
        for info in instance.event_log_storage.get_asset_check_partition_info(keys)
        if info.latest_execution_status == AssetCheckExecutionRecordStatus.FAILED and info.is_current
    ]
    out = []
    for check_key, infos in groupby(
        sorted(failed, key=lambda i: (i.check_key.asset_key.path, i.check_key.name)), key=lambda i: i.check_key
    ):
        wanted = {i.partition_key for i in infos}
        described: dict[str | None, tuple[str | None, tuple[str, ...]]] = {}
        for record in instance.event_log_storage.get_asset_check_execution_history(check_key, HISTORY):
            if record.partition in wanted and record.partition not in described and record.event is not None:
                evaluation = record.event.dagster_event.event_specific_data if record.event.dagster_event else None
                sources = getattr(evaluation, "metadata", {}).get("invalid_sources")
                described[record.partition] = (
                    getattr(evaluation, "description", None),
                    tuple(getattr(sources, "value", None) or ()),
                )
        for partition in sorted(wanted, key=lambda p: p or ""):
            description, sources = described.get(partition, (None, ()))
            state, reason = _state(check_key.name, description)
            out.append(Unhealthy(check_key.asset_key, partition, state, reason, sources))
    return sorted(out, key=lambda u: (u.key.path, u.partition or "", u.state))
