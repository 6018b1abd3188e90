"""A product's output table as a Dagster asset: its spec, checks, single-run backfills, one writer at a time.

What only a run needs (Spark, the write path, lineage) is imported by the run, so that loading a code
location costs the definitions alone.
"""

import dagster as dg

from mesh_assets.assets.mappings import mapping_for
from mesh_assets.assets.specs import RESOURCE_KEY, freshness_policy, product_tags, table_metadata, table_pool
from mesh_assets.checks.results import check_specs
from mesh_assets.graph.resolve import Node
from mesh_assets.model.checks import VALID
from mesh_assets.model.kinds import REPLAY, Replay
from mesh_assets.model.product import PySparkTransformation, Retries
from mesh_assets.storage.resource import MeshResource


def output_spec(node: Node, automation_condition: dg.AutomationCondition | None) -> dg.AssetSpec:
    product, out, table = node.product, node.output, node.table
    metadata = table_metadata(product, table)
    if node.sql is not None:
        metadata["sql"] = dg.MetadataValue.md(f"```sql\n{node.sql.strip()}\n```")
    metadata["kind"] = out.table_kind.describe()
    if out.table_kind.replay is not Replay.ANY:  # how a backfill may recompute its past (backfill/in_order.py)
        metadata[REPLAY] = out.table_kind.replay.value
    return dg.AssetSpec(
        table.key,
        description=out.description or product.description or None,
        group_name=product.name,
        owners=[product.owner],
        tags=product_tags(product, table),
        kinds={"spark", "delta", "python" if isinstance(node.transformation, PySparkTransformation) else "sql"},
        metadata=metadata,
        deps=[dg.AssetDep(read.table.key, partition_mapping=mapping_for(read, table)) for read in node.reads],
        partitions_def=table.partitions_def,
        automation_condition=automation_condition,
        freshness_policy=freshness_policy(out),
        code_version=table.code_version,
    )


def retry_policy(retries: Retries | None) -> dg.RetryPolicy | None:
    """Dagster's policy for a product's transient failures; Mesh's refusals fail with ``allow_retries=False``,
    so a run refused for its inputs, a blocking check or bad rows is never retried."""
    if retries is None or retries.count == 0:
        return None
    backoff = {"linear": dg.Backoff.LINEAR, "exponential": dg.Backoff.EXPONENTIAL}.get(retries.backoff)
    return dg.RetryPolicy(max_retries=retries.count, delay=retries.delay_seconds or None, backoff=backoff)


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
        retry_policy=retry_policy(node.product.retries),
        required_resource_keys={RESOURCE_KEY},
        can_subset=True,
    )
    def _asset(context):  # unannotated: Dagster resolves the hints of every op it builds (0.04 s per 1,000)
        mesh: MeshResource = getattr(context.resources, RESOURCE_KEY)
        if not context.selected_asset_keys:  # the output's checks alone (a check-only run)
            from mesh_assets.run.recheck import recheck, tagged

            selected = {k.name for k in context.selected_asset_check_keys}
            recheck(context, mesh, node, *tagged(context, node), selected=selected)
            return
        from mesh_assets.run.pipeline import execute

        yield from execute(context, mesh, node, consumers)

    return _asset


def rechecks_job_name(domain: str) -> str:
    return f"{domain}__checks"


def build_rechecks_job(domain: str, nodes: list[Node]) -> dg.JobDefinition | None:
    """``<domain>__checks``: re-runs the checks of one of ``domain``'s outputs (``valid`` aside) on its published
    partitions, recomputing nothing (config: ``table``, ``start``, ``end``); None without any such check.

    One op job per domain, as the invalidation job is: an asset job per output is resolved and snapshotted over
    the whole asset graph each time a location loads, which made loading quadratic in the number of outputs.
    """
    checked = {n.table.name: n for n in nodes if any(c.check_name != VALID for c in n.table.checks)}
    if not checked:
        return None
    optional = {"start": dg.Field(str, is_required=False), "end": dg.Field(str, is_required=False)}

    config = {"table": str, **optional}

    @dg.op(name=f"{domain}__run_checks", config_schema=config, required_resource_keys={RESOURCE_KEY})
    def _run_checks(context) -> None:  # unannotated: Dagster cannot read a postponed annotation here
        from mesh_assets.run.recheck import recheck

        config = context.op_config
        node = checked.get(config["table"])
        if node is None:
            tables = ", ".join(sorted(checked))
            raise dg.Failure(description=f"{domain} has no output {config['table']!r} with checks to run: {tables}")
        recheck(context, getattr(context.resources, RESOURCE_KEY), node, config.get("start"), config.get("end"))

    @dg.job(
        name=rechecks_job_name(domain),
        description=f"Re-runs the checks of a {domain} output on its published partitions, without recomputing them.",
    )
    def _job() -> None:
        _run_checks()

    return _job
