"""The standard shape every Mesh asset has in Dagster: group, owner, tags, kinds, metadata, pool, freshness.

Every table becomes one asset keyed ``[domain, table]`` in the group of its product, with the product's owner,
standard tags and kinds, metadata pointing back at its source, and, for outputs, a concurrency pool of its
own (one writer per table).
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import dagster as dg

from mesh_assets.compat import STUB_ASSET_METADATA_KEY
from mesh_assets.graph.resolve import Table
from mesh_assets.graph.revisions import REVISION_KEY
from mesh_assets.model.checks import Freshness
from mesh_assets.model.product import DataProduct, Output

RESOURCE_KEY = "mesh"
MIN_COMPLETE_KEY = "mesh/min_complete"
"""A table's metadata: each input (``domain.table``) whose window it may read in part, with the share it needs."""


def table_pool(domain: str, table: str) -> str:
    """Writers of one table share a pool, so Delta never sees two of them commit at once."""
    return f"mesh/{domain}/{table}"


def product_tags(product: DataProduct, table: Table) -> dict[str, str]:
    """What the UI filters a table by: its product's, and its own status and major version."""
    return {
        **product.tags,
        "domain": product.domain,
        "product": product.name,
        "tier": product.tier.value,
        "classification": product.classification.value,
        "published": str(table.published).lower(),
        "status": table.status.value,
        "version": str(table.version),
    }


def table_metadata(product: DataProduct, table: Table) -> dict[str, Any]:
    """Contacts, the product's revision, the source file and line (Dagster's code references, an absolute path
    made without resolving links: a call per file system level, for each of a thousand tables), the partition
    column (and region column), and the share of each input's window that lets a partition run, where declared
    (``min_complete``), so the UI and tools see the policy without the spec."""
    metadata: dict[str, Any] = {
        "contacts": dg.MetadataValue.json([c.model_dump() for c in product.contacts]),
    }
    if table.revision is not None:
        metadata[REVISION_KEY] = table.revision
    if table.sunset is not None:
        metadata["sunset"] = table.sunset.isoformat()
    if product.source_file is not None:
        metadata["dagster/code_references"] = dg.CodeReferencesMetadataValue(
            code_references=[
                dg.LocalFileCodeReference(
                    file_path=os.path.abspath(product.source_file), line_number=table.line or product.line
                )
            ]
        )
        metadata["source_file"] = str(product.source_file)
    metadata["partition_column"] = table.partition_column if table.grain.partitioned else "-"
    if table.regions:
        metadata["region_column"] = table.region_column
    partial = {i.ref: i.min_complete for i in table.declared if i.min_complete is not None}
    if partial:
        metadata[MIN_COMPLETE_KEY] = dg.MetadataValue.json(partial)
    return metadata


def freshness_policy(output: Output) -> dg.FreshnessPolicy | None:
    """Dagster's freshness policy from a declared ``freshness`` check (evaluated by Dagster, not at write)."""
    for c in output.checks:
        if isinstance(c, Freshness):
            warn = timedelta(hours=c.warn_lag_hours) if c.warn_lag_hours else None
            return dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=c.max_lag_hours), warn_window=warn)
    return None


def external_spec(product: DataProduct, table: Table) -> dg.AssetSpec:
    """An external table: observed, never executed by Mesh."""
    return dg.AssetSpec(
        key=table.key,
        description=(table.spec.description if table.spec else "") or product.description or None,
        group_name=product.name,
        owners=[product.owner],
        tags={**product_tags(product, table), "external": "true"},
        kinds={"delta", "external"},
        metadata=table_metadata(product, table),
        partitions_def=table.partitions_def,
    )


def upstream_spec(table: Table) -> dg.AssetSpec:
    """Another code location's table, as the location reading it needs it for automation: its key and partitions
    (Dagster's own placeholder for an undefined upstream has none, so no partition of it would map to ours).
    Marked as that placeholder, so the workspace shows the producer's definition of the table, never this one."""
    return dg.AssetSpec(key=table.key, partitions_def=table.partitions_def, metadata={STUB_ASSET_METADATA_KEY: True})
