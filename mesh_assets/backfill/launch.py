"""Launching a plan the way the UI does: the webserver's GraphQL mutation ``launchPartitionBackfill``.

The webserver builds ONE asset backfill from the plan's per-asset partition ranges (``partitionsByAssets``)
against the code locations it serves, and stores it on its instance: the object the *Materialize* dialog
creates, listed and cancellable on the Backfills page. The daemon executes it, each asset's range as one run
(partitioned assets use a single-run backfill policy). Mesh reaches it through the GraphQL API Dagster
documents (https://docs.dagster.io/api/graphql), never its internal classes, and follows it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg

from mesh_assets.backfill.plan import LAUNCHED_BY_TAG, BackfillPlan, PlannedAsset
from mesh_assets.backfill.webserver import Webserver, WebserverError
from mesh_assets.compat import AssetGraph

SERVED = """
query MeshServedAssets($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) { assetKey { path } isMaterializable }
}
"""
LAUNCH = """
mutation MeshLaunchBackfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}
"""
PROGRESS = """
query MeshBackfillProgress($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill {
      status
      assetBackfillData {
        assetBackfillStatuses {
          ... on AssetPartitionsStatusCounts {
            assetKey { path }
            numPartitionsTargeted numPartitionsInProgress numPartitionsMaterialized numPartitionsFailed
          }
          ... on UnpartitionedAssetStatus { assetKey { path } inProgress materialized failed }
        }
      }
    }
    ... on Error { message }
  }
}
"""
TERMINAL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}
MAX_TITLE = 100
"""Dagster refuses a longer backfill title."""


def _selector(asset: PlannedAsset) -> dict[str, Any]:
    ranges = [{"start": r.start, "end": r.end} for r in asset.ranges]
    return {"assetKey": {"path": list(asset.key.path)}, "partitions": {"ranges": ranges} if ranges else None}


def title_of(plan: BackfillPlan) -> str:
    """The plan's title, or ``<root> <range> [and downstream]``; as long as Dagster accepts."""
    root = plan.root.to_user_string()
    span = f"{root} {plan.root_range.start}..{plan.root_range.end}" if plan.root_range else root
    title = plan.title or (f"{span} and downstream" if len(plan.assets) > 1 else span)
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 3] + "..."


def launch_backfill(webserver: Webserver, plan: BackfillPlan, *, tags: Mapping[str, str] | None = None) -> str:
    """Launch ``plan`` as one asset backfill through ``webserver``; the backfill's id.

    Every asset of the plan must be materializable in a code location the webserver serves: the webserver
    resolves the backfill against its own workspace, so an asset it does not know is refused here, by name.
    """
    keys = [{"path": list(a.key.path)} for a in plan.assets]
    nodes = webserver.graphql(SERVED, {"keys": keys})["assetNodes"]
    served = {tuple(n["assetKey"]["path"]) for n in nodes if n["isMaterializable"]}
    missing = [a.key.to_user_string() for a in plan.assets if tuple(a.key.path) not in served]
    if missing:
        raise WebserverError(
            f"the Dagster webserver at {webserver.url} does not serve {', '.join(missing)}: its workspace needs the "
            "code locations that define them"
        )
    root = plan.root.to_user_string()
    all_tags = {LAUNCHED_BY_TAG: "mesh backfill", "mesh/root": root, **plan.tags, **(tags or {})}
    params = {
        "partitionsByAssets": [_selector(a) for a in plan.assets],
        "tags": [{"key": k, "value": v} for k, v in all_tags.items()],
        "title": title_of(plan),
        "description": plan.description,
    }
    result = webserver.graphql(LAUNCH, {"params": params})["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise WebserverError(
            f"the Dagster webserver refused the backfill ({result['__typename']}): {result['message']}"
        )
    return result["backfillId"]


@dataclass(frozen=True)
class BackfillProgress:
    """A backfill's status and partition counts as the webserver reports them (unpartitioned assets count 1)."""

    status: str
    done: int
    failed: int
    """Partitions that failed, and those downstream of a failure that will not run."""
    in_progress: int
    total: int
    failed_by_asset: Mapping[str, int]

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


def backfill_progress(webserver: Webserver, backfill_id: str) -> BackfillProgress:
    """The backfill's status and counts as the daemon last recorded them."""
    found = webserver.graphql(PROGRESS, {"id": backfill_id})["partitionBackfillOrError"]
    if found["__typename"] != "PartitionBackfill":
        raise WebserverError(
            f"no backfill {backfill_id} at {webserver.url}: {found.get('message', found['__typename'])}"
        )
    counts: dict[str, tuple[int, int, int, int]] = {}  # done, failed, in progress, targeted
    for asset in (found["assetBackfillData"] or {}).get("assetBackfillStatuses", []):
        name = dg.AssetKey(asset["assetKey"]["path"]).to_user_string()
        if "numPartitionsTargeted" in asset:
            counts[name] = (
                asset["numPartitionsMaterialized"],
                asset["numPartitionsFailed"],
                asset["numPartitionsInProgress"],
                asset["numPartitionsTargeted"],
            )
        else:
            counts[name] = (int(asset["materialized"]), int(asset["failed"]), int(asset["inProgress"]), 1)
    done, failed, in_progress, total = (sum(row[i] for row in counts.values()) for i in range(4))
    return BackfillProgress(
        found["status"], done, failed, in_progress, total, {name: row[1] for name, row in counts.items() if row[1]}
    )


def not_published(
    instance: dg.DagsterInstance, graph: AssetGraph, plan: BackfillPlan, progress: BackfillProgress
) -> dict[str, list[str]]:
    """``{"<domain>/<table>": [partition, ...]}`` the backfill did not publish: the planned partitions whose
    latest run failed (refused), then how many more did not run, being downstream of a failure. A long list
    is shortened to its first and last key."""
    out: dict[str, list[str]] = {}
    for asset in plan.assets:
        name = asset.key.to_user_string()
        count = progress.failed_by_asset.get(name, 0)
        pdef = graph.get(asset.key).partitions_def
        if not count:
            continue
        if pdef is None or not asset.ranges:
            out[name] = ["-"]
            continue
        keys = [k for r in asset.ranges for k in pdef.get_partition_keys_in_range(r)]
        statuses = instance.get_status_by_partition(asset.key, keys, pdef) or {}
        failed = sorted(k for k, s in statuses.items() if s == dg.AssetPartitionStatus.FAILED)
        listed = failed if len(failed) <= 5 else [f"{failed[0]}..{failed[-1]} ({len(failed)} partitions)"]
        rest = count - len(failed)
        out[name] = listed + ([f"{rest} more downstream of a failure"] if rest > 0 else [])
    return out
