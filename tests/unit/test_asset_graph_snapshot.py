"""Snapshot of the whole asset graph of the real ``domains/`` folder, every domain's dbt models included.

Any change to keys, deps, groups, owners, kinds, tags, partitioning, partition mappings, automation or checks
shows up as a diff of ``snapshots/asset_graph.json``. After an intended change, regenerate it with::

    MESH_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/unit/test_asset_graph_snapshot.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from mesh_assets import mesh_definitions

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "asset_graph.json"


def _partitions(partitions_def: dg.PartitionsDefinition | None) -> dict[str, Any] | None:
    if partitions_def is None:
        return None
    out: dict[str, Any] = {"type": type(partitions_def).__name__}
    if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
        out["start"] = partitions_def.start.isoformat()
        out["cron_schedule"] = partitions_def.cron_schedule
        out["timezone"] = partitions_def.timezone
        if partitions_def.end is not None:
            out["end"] = partitions_def.end.isoformat()
    return out


def _mapping(mapping: dg.PartitionMapping) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(mapping).__name__}
    if isinstance(mapping, dg.TimeWindowPartitionMapping):
        out["start_offset"] = mapping.start_offset
        out["end_offset"] = mapping.end_offset
        out["allow_nonexistent_upstream_partitions"] = mapping.allow_nonexistent_upstream_partitions
    return out


def _automation(condition: dg.AutomationCondition | None) -> str | None:
    if condition is None:
        return None
    return condition.get_label() or condition.name


def graph_snapshot(defs: dg.Definitions) -> dict[str, Any]:
    graph = defs.resolve_asset_graph()
    out: dict[str, Any] = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        out[key.to_user_string()] = {
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "group": node.group_name,
            "owners": sorted(node.owners),
            "kinds": sorted(node.kinds),
            "tags": dict(sorted(node.tags.items())),
            "execution_type": node.execution_type.value,
            "pools": sorted(node.pools or ()),
            "partitions": _partitions(node.partitions_def),
            "partition_mappings": {
                k.to_user_string(): _mapping(m)
                for k, m in sorted(node.partition_mappings.items(), key=lambda item: item[0].to_user_string())
            },
            "automation_condition": _automation(node.automation_condition),
            "checks": sorted(c.to_user_string() for c in node.check_keys),
        }
    return out


def test_asset_graph_matches_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    defs = mesh_definitions(Path("domains"), dbt=True)  # each domain's code location builds its own dbt models
    actual = json.dumps(graph_snapshot(defs), indent=2, sort_keys=True) + "\n"
    if os.environ.get("MESH_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(actual)
        return
    assert SNAPSHOT.exists(), "no snapshot yet: run with MESH_UPDATE_SNAPSHOTS=1"
    assert actual == SNAPSHOT.read_text(), (
        "the asset graph changed; if intended, regenerate with "
        "MESH_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/unit/test_asset_graph_snapshot.py"
    )


@pytest.mark.parametrize("location", sorted(p.parent.name for p in (ROOT / "domains").glob("*/definitions.py")))
def test_every_code_location_loads_as_the_daemon_loads_it(location: str) -> None:
    """What a code server does on start: every job, op and sensor resolves without a name clash."""
    import runpy

    module = runpy.run_path(str(ROOT / "domains" / location / "definitions.py"))
    dg.Definitions.validate_loadable(module["defs"])
