"""A product's output table as a Dagster asset: its spec, checks, single-run backfills, one writer at a time.

What only a run needs (Spark, the write path, lineage) is imported by the run, so that loading a code
location costs the definitions alone.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg
from dagster import AssetExecutionContext

from mesh_assets.assets.mappings import mapping_for
from mesh_assets.assets.specs import RESOURCE_KEY, freshness_policy, product_tags, table_metadata, table_pool
from mesh_assets.checks.external import checks_job_name
from mesh_assets.checks.results import check_specs
from mesh_assets.graph.resolve import Node
from mesh_assets.model.checks import VALID
from mesh_assets.model.product import PySparkTransformation
from mesh_assets.storage.resource import MeshResource


def output_spec(node: Node, automation_condition: dg.AutomationCondition | None) -> dg.AssetSpec:
    product, out, table = node.product, node.output, node.table
    metadata = table_metadata(product, table)
    if node.sql is not None:
        metadata["sql"] = dg.MetadataValue.md(f"```sql\n{node.sql.strip()}\n```")
    metadata["write_mode"] = out.write_mode
    return dg.AssetSpec(
        table.key,
        description=out.description or product.description or None,
        group_name=product.name,
        owners=[product.owner],
        tags=product_tags(product, table),
        kinds={"spark", "delta", "python" if isinstance(node.transformation, PySparkTransformation) else "sql"},
        metadata=metadata,
        deps=[dg.AssetDep(read.table.key, partition_mapping=mapping_for(read, table.grain)) for read in node.reads],
        partitions_def=table.partitions_def,
        automation_condition=automation_condition,
        freshness_policy=freshness_policy(out),
        code_version=table.code_version,
    )


def build_output_asset(
    node: Node, automation_condition: dg.AutomationCondition | None = None, consumers: tuple[str, ...] = ()
) -> dg.AssetsDefinition:
    """``node`` as a multi-asset of one spec; ``consumers`` are the tables that read it (named when a schema
    change would break them)."""
    table = node.table
    part_def = table.partitions_def

    @dg.multi_asset(
        name=f"{table.domain}__{table.name}",
        specs=[output_spec(node, automation_condition)],
        check_specs=check_specs(table),
        partitions_def=part_def,
        backfill_policy=dg.BackfillPolicy.single_run() if part_def is not None else None,
        pool=table_pool(table.domain, table.name),
        required_resource_keys={RESOURCE_KEY},
        can_subset=True,
    )
    def _asset(context: AssetExecutionContext) -> Iterator[Any]:
        mesh: MeshResource = getattr(context.resources, RESOURCE_KEY)
        if not context.selected_asset_keys:  # the output's checks alone (its checks job)
            from mesh_assets.run.recheck import recheck

            yield from recheck(context, mesh, node)
            return
        from mesh_assets.run.pipeline import execute

        yield from execute(context, mesh, node, consumers)

    return _asset


def build_rechecks_job(node: Node) -> Any | None:
    """A job running ``node``'s checks (``valid`` aside) on published partitions, recomputing nothing; None
    without any such check. The run's ``mesh/check_partitions`` tag names the partitions (see run/recheck.py)."""
    keys = [s.key for s in check_specs(node.table) if s.name != VALID]
    if not keys:
        return None
    return dg.define_asset_job(
        checks_job_name(node.table.domain, node.table.name),
        selection=dg.AssetSelection.checks(*keys),
        description=f"Re-runs the checks of {node.table.ref} on its published partitions, without recomputing them "
        "(tag the run mesh/check_partitions=<first>..<last>).",
    )
