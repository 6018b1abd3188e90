"""Stale partitions, as the Dagster UI shows them: asked of the webserver's GraphQL API, partition by partition.

Dagster compares what each published partition was computed from (the data version of every input partition
it read and the code version that computed it) with what is current. A partition is stale when an input
partition it read was re-published with a new data version ("upstream data changed") or when its product's
code changed since ("code version changed"). Only published partitions are asked about: a missing partition is
not stale, it is missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import dagster as dg

from mesh_assets.backfill.launch import Webserver

STALE_QUERY = """
query MeshStale($keys: [AssetKeyInput!], $partitions: [String!]) {
  assetNodes(assetKeys: $keys) {
    assetKey { path }
    isPartitioned
    staleStatusByPartition(partitions: $partitions)
    staleCausesByPartition(partitions: $partitions) {
      key { path } partitionKey category reason dependency { path } dependencyPartitionKey
    }
  }
}
"""
UNPARTITIONED_QUERY = """
query MeshStaleWhole($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) {
    assetKey { path }
    staleStatus
    staleCauses { key { path } partitionKey category reason dependency { path } dependencyPartitionKey }
  }
}
"""
REASONS = {"DATA": "upstream data changed", "CODE": "code version changed", "DEPENDENCIES": "inputs changed"}


@dataclass(frozen=True)
class StalePartition:
    """One published partition that is out of date, and why (the root causes, as the UI lists them)."""

    key: dg.AssetKey
    partition: str | None
    reasons: tuple[str, ...]

    def describe(self) -> str:
        where = f"{self.key.to_user_string()} {self.partition or ''}".rstrip()
        return f"{where}: {'; '.join(self.reasons)}"


def _reason(cause: dict) -> str:
    """``upstream data changed: tr/daily_sales 2021-06-02 has a new data version``."""
    source = "/".join(cause["key"]["path"])
    if cause.get("partitionKey"):
        source += f" {cause['partitionKey']}"
    return f"{REASONS.get(cause['category'], cause['category'].lower())}: {source} {cause['reason']}"


def stale_partitions(
    webserver: Webserver, instance: dg.DagsterInstance, keys: Iterable[dg.AssetKey]
) -> list[StalePartition]:
    """The stale published partitions of ``keys``, in key and partition order."""
    out: list[StalePartition] = []
    for key in sorted(keys, key=lambda k: k.path):
        variables = {"keys": [{"path": list(key.path)}]}
        published = sorted(instance.get_materialized_partitions(key))
        if published:
            [node] = webserver.graphql(STALE_QUERY, {**variables, "partitions": published})["assetNodes"]
            statuses = zip(published, node["staleStatusByPartition"], node["staleCausesByPartition"], strict=True)
            out += [
                StalePartition(key, p, tuple(_reason(c) for c in causes))
                for p, status, causes in statuses
                if status == "STALE"
            ]
        elif instance.get_latest_materialization_event(key) is not None:
            [node] = webserver.graphql(UNPARTITIONED_QUERY, variables)["assetNodes"]
            if node["staleStatus"] == "STALE":
                out.append(StalePartition(key, None, tuple(_reason(c) for c in node["staleCauses"])))
    return out
