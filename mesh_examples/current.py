"""What a demo run may leave as it is: sources that already hold what it lands, and tables already current.

The landed sources carry a mark in their Delta commits (the generator's and landing's code, the days, the seed);
when each source's latest commit carries this run's mark, landing again would write the same rows.

A table is current when each partition the demo plans has a materialization computed by the table's code
version now, none older than the latest change of anything it reads (a Mesh table's materialization, or a
source's reported by its observer) nor than a refusal of some of its partitions, its Delta table still holds
what Mesh's last write of it left (nobody wrote, restored or removed it since; compaction and clean-up change no
row), and nothing it reads is being recomputed. What is current is not recomputed, and its rows come from what
its materializations recorded, which is what the table holds, so a run with nothing changed starts no Spark job.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from graphlib import TopologicalSorter
from pathlib import Path

import dagster as dg

from mesh_assets import MeshResource
from mesh_assets.compat import CODE_VERSION_TAG
from mesh_assets.storage.data_changes import data_changed_after
from mesh_assets.storage.lake import open_table
from mesh_examples import generator, landing

MARK_CONF = "spark.databricks.delta.commitInfo.userMetadata"
"""Delta writes this session setting into each commit's ``userMetadata``: the landing's mark."""
PAGE = 1000


def landing_mark(window: list[date], seed: int = landing.SEED) -> str:
    """What identifies the demo's landed rows: the code that makes them, the days and the seed."""
    code = b"".join(Path(module.__file__ or "").read_bytes() for module in (generator, landing))
    digest = hashlib.sha256(code + f"{window[0]}..{window[-1]} seed {seed}".encode()).hexdigest()[:16]
    return f"mesh demo landing {digest}"


def already_landed(mesh: MeshResource, mark: str) -> bool:
    """Whether every source's latest commit is a landing with ``mark`` (a later commit of any writer: no)."""
    for domain, table in landing.LANDED:
        found = open_table(mesh.registry.location(domain, table), mesh.settings.s3)
        if found is None:
            return False
        history = found.history(1)
        if not history or history[0].get("userMetadata") != mark:
            return False
    return True


@dataclass(frozen=True)
class Published:
    """A table's latest materialization of each planned partition (``None``: the unpartitioned table's)."""

    records: dict[str | None, dg.EventLogRecord]

    def rows(self) -> dict[str, int]:
        """Rows per partition (``-``: the whole table) as the materializations recorded them."""
        out = {}
        for partition, record in self.records.items():
            event = record.asset_materialization
            rows = event.metadata.get("dagster/row_count") if event else None
            out[partition or "-"] = int(getattr(rows, "value", rows) or 0)
        return out


def published(instance: dg.DagsterInstance, key: dg.AssetKey, partitions: Iterable[str | None]) -> Published | None:
    """The latest materialization of each of ``partitions``; None when one has none."""
    wanted, found = set(partitions), {}
    cursor = None
    while wanted - set(found):
        page = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), PAGE, cursor)
        for record in page.records:
            event = record.asset_materialization
            if event is not None and event.partition in wanted and event.partition not in found:
                found[event.partition] = record
        if not page.has_more:
            break
        cursor = page.cursor
    return Published(found) if set(found) == wanted else None


def version_of(record: dg.EventLogRecord) -> str | None:
    """The code version that computed a materialization."""
    event = record.asset_materialization
    return event.tags.get(CODE_VERSION_TAG) if event else None


def latest_change(instance: dg.DagsterInstance, key: dg.AssetKey) -> int:
    """The storage id of ``key``'s latest materialization, or of the latest refusal of its partitions
    (an observation naming them); 0 when it has neither."""
    ids = [0]
    for fetch in (instance.fetch_materializations, instance.fetch_observations):
        records = fetch(dg.AssetRecordsFilter(asset_key=key), 1).records
        ids += [r.storage_id for r in records]
    return max(ids)


def delta_state_kept(mesh: MeshResource, instance: dg.DagsterInstance, key: dg.AssetKey) -> bool:
    """Whether ``key``'s Delta table holds the data Mesh's latest write of it recorded: at that version, or at a
    later one that only compacted, cleaned up or set properties (maintenance changes no row)."""
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), 1).records
    event = records[0].asset_materialization if records else None
    recorded = event.metadata.get("delta_version") if event else None
    if recorded is None:
        return False
    location = mesh.registry.location(*key.path)
    return not data_changed_after(location, int(getattr(recorded, "value", recorded)), mesh.settings.s3)


def current_tables(
    assets: list[dg.AssetsDefinition],
    instance: dg.DagsterInstance,
    mesh: MeshResource,
    planned: dict[dg.AssetKey, tuple[str | None, ...]],
) -> dict[dg.AssetKey, Published]:
    """The planned tables (key -> partitions) that are current, with their published partitions."""
    code = {key: version for a in assets for key, version in a.code_versions_by_key.items()}
    deps = {key: set(reads) for a in assets for key, reads in a.asset_deps.items() if key in planned}
    current: dict[dg.AssetKey, Published] = {}
    for key in TopologicalSorter({k: deps[k] & set(planned) for k in planned}).static_order():
        if any(d in planned and d not in current for d in deps[key]) or code.get(key) is None:
            continue
        found = published(instance, key, planned[key])
        if found is None or any(version_of(r) != code[key] for r in found.records.values()):
            continue
        if not found.records:  # nothing of it falls in the window (a 7-day demo holds no ISO week): nothing to run
            current[key] = found
            continue
        oldest = min(r.storage_id for r in found.records.values())
        refused = [r.storage_id for r in instance.fetch_observations(dg.AssetRecordsFilter(asset_key=key), 1).records]
        if any(latest_change(instance, d) > oldest for d in deps[key]) or any(i > oldest for i in refused):
            continue
        if delta_state_kept(mesh, instance, key):
            current[key] = found
    return current
