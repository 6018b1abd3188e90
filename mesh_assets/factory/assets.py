"""Specs -> Dagster assets, all in one standard shape.

Every output table becomes one asset keyed ``[domain, table]`` in the group of its product, with the
product's owner, standard tags and kinds, a concurrency pool of its own (one writer per table), a
single-run backfill policy (a range is one Spark job) and metadata pointing back at its source.

What only a run needs (Spark, the write path, lineage) is imported by the run, so that loading a code
location costs the definitions alone.
"""

from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import dagster as dg
from dagster import AssetExecutionContext
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

from mesh_assets.alerts.notify import Alert, AlertNotSent, run_url, send
from mesh_assets.checks.results import check_specs, evaluation
from mesh_assets.checks.spec import Freshness
from mesh_assets.engine.resource import MeshResource
from mesh_assets.factory.partitions import mapping_for, partitions_def
from mesh_assets.spec.catalog import Catalog
from mesh_assets.spec.discovery import sql_text
from mesh_assets.spec.model import DataProduct, ExternalTable, Output, PySparkTransformation, SqlTransformation

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from mesh_assets.factory.compute import RunOutcome

RESOURCE_KEY = "mesh"


def table_pool(domain: str, table: str) -> str:
    """Writers of one table share a pool, so Delta never sees two of them commit at once."""
    return f"mesh/{domain}/{table}"


def product_tags(product: DataProduct, published: bool) -> dict[str, str]:
    return {
        **product.tags,
        "domain": product.domain,
        "product": product.name,
        "tier": product.tier,
        "classification": product.classification,
        "published": str(published).lower(),
    }


def product_metadata(product: DataProduct, line: int | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "contacts": dg.MetadataValue.json([c.model_dump() for c in product.contacts]),
    }
    if product.source_file is not None:
        metadata["dagster/code_references"] = dg.CodeReferencesMetadataValue(
            code_references=[
                dg.LocalFileCodeReference(
                    file_path=str(product.source_file.resolve()), line_number=line or product.line
                )
            ]
        )
        metadata["source_file"] = str(product.source_file)
    return metadata


def table_schema(schema: "StructType") -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                f.name, f.dataType.simpleString(), constraints=dg.TableColumnConstraints(nullable=f.nullable)
            )
            for f in schema.fields
        ]
    )


def deps_for(product: DataProduct, t: PySparkTransformation | SqlTransformation, catalog: Catalog) -> list[dg.AssetDep]:
    deps = []
    for inp in t.inputs.values():
        domain, table = inp.ref(product.domain)
        upstream = catalog.get(domain, table)
        mapping = mapping_for(inp, upstream, t.output.partitioning) if upstream else None
        deps.append(dg.AssetDep(dg.AssetKey([domain, table]), partition_mapping=mapping))
    return deps


def freshness_policy(output: Output) -> dg.FreshnessPolicy | None:
    """Dagster's freshness policy from a declared ``freshness`` check (evaluated by Dagster, not at write)."""
    for c in output.checks:
        if isinstance(c, Freshness):
            warn = timedelta(hours=c.warn_lag_hours) if c.warn_lag_hours else None
            return dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=c.max_lag_hours), warn_window=warn)
    return None


def _targets(
    context: AssetExecutionContext, key: dg.AssetKey, partitions: list[str | None]
) -> dict[str | None, AssetCheckEvaluationTargetMaterializationData]:
    """The materializations just recorded, so check results count as current for them (UI, automation)."""
    keyed = [p for p in partitions if p is not None]
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=keyed or None), limit=max(1, len(partitions))
    ).records
    out: dict[str | None, AssetCheckEvaluationTargetMaterializationData] = {}
    for record in records:
        partition = record.partition_key
        if partition not in out and record.run_id == context.run.run_id:
            out[partition] = AssetCheckEvaluationTargetMaterializationData(
                storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
            )
    return out


def _alert(context: AssetExecutionContext, product: DataProduct, out: Output, message: str, **fields: Any) -> None:
    """Tell the product's chat channel; an unreachable webhook is logged, never fails the run further."""
    channel = next((c.value for c in product.contacts if c.kind == "chat"), "")
    alert = Alert(
        kind=fields.pop("kind"),
        domain=product.domain,
        product=product.name,
        table=out.table,
        owner=product.owner,
        channel=channel,
        message=message,
        run_id=context.run.run_id,
        run_url=run_url(context.run.run_id),
        **fields,
    )
    try:
        send(alert)
    except AlertNotSent as exc:
        context.log.warning(f"alert to {product.domain}'s channel failed: {exc}")


def build_output_asset(
    product: DataProduct,
    t: PySparkTransformation | SqlTransformation,
    catalog: Catalog,
    automation_condition: dg.AutomationCondition | None = None,
) -> dg.AssetsDefinition:
    out = t.output
    key = dg.AssetKey([product.domain, out.table])
    part_def = partitions_def(out.partitioning, product.start_date)
    metadata = product_metadata(product, t.line)
    sql = sql_text(t, product).strip() if isinstance(t, SqlTransformation) else None
    if sql is not None:
        metadata["sql"] = dg.MetadataValue.md(f"```sql\n{sql}\n```")
    metadata["partition_column"] = out.partition_column if out.partitioning != "none" else "-"
    metadata["write_mode"] = out.write_mode
    spec = dg.AssetSpec(
        key,
        description=out.description or product.description or None,
        group_name=product.name,
        owners=[product.owner],
        tags=product_tags(product, out.published),
        kinds={"spark", "delta", "python" if isinstance(t, PySparkTransformation) else "sql"},
        metadata=metadata,
        deps=deps_for(product, t, catalog),
        partitions_def=part_def,
        automation_condition=automation_condition,
        freshness_policy=freshness_policy(out),
    )

    @dg.multi_asset(
        name=f"{product.domain}__{out.table}",
        specs=[spec],
        check_specs=check_specs(key, out, part_def),
        partitions_def=part_def,
        backfill_policy=dg.BackfillPolicy.single_run() if part_def is not None else None,
        pool=table_pool(product.domain, out.table),
        required_resource_keys={RESOURCE_KEY},
        can_subset=True,
    )
    def _asset(context: AssetExecutionContext) -> Iterator[Any]:
        from mesh_assets.factory.compute import run_output
        from mesh_assets.lineage.run import product_lineage

        mesh: MeshResource = getattr(context.resources, RESOURCE_KEY)
        try:
            with product_lineage(context, mesh, product, t, catalog, sql) as lineage:
                outcome = run_output(context, mesh, product, t, catalog)
                lineage.record(outcome)
                yield from _publish(context, key, product, out, outcome)
        except PartitionsRefused as exc:
            _alert(
                context,
                product,
                out,
                str(exc),
                kind="blocking check failed" if exc.checks else "inputs not ready",
                partitions=exc.partitions,
                checks=exc.checks,
            )
            raise
        except Exception as exc:
            _alert(context, product, out, str(exc)[:2000], kind="run failed", partitions=_partition_keys(context))
            raise

    return _asset


class PartitionsRefused(dg.Failure):
    """Some partitions were refused (a blocking check failed, or an input was not ready); the rest of the
    run's partitions were published."""

    def __init__(self, description: str, partitions: list[str], checks: list[str]):
        super().__init__(description=description, metadata={"failed_partitions": partitions, "checks": checks})
        self.partitions, self.checks = partitions, checks


def _partition_keys(context: AssetExecutionContext) -> list[str]:
    return list(context.partition_keys) if context.has_partition_key_range or context.has_partition_key else []


def _publish(
    context: AssetExecutionContext, key: dg.AssetKey, product: DataProduct, out: Output, outcome: "RunOutcome"
) -> Iterator[Any]:
    """The run's events: the materialization (or the refusal), then check results pointing at it."""
    result = outcome.result
    common: dict[str, Any] = {}
    if result is not None:
        common = {
            "dagster/column_schema": table_schema(result.schema),
            "delta_version": result.version,
            "location": result.location,
        }
    if outcome.undeclared_names:
        common["undeclared_reads"] = dg.MetadataValue.json(list(outcome.undeclared_names))
    if outcome.failed or outcome.blocked:
        problems = [o.describe() for failed in outcome.failed.values() for o in failed]
        problems += [
            f"{f'partition {p}' if p else 'table'} not computed: {', '.join(why)}"
            for p, why in sorted(outcome.blocked.items(), key=lambda item: item[0] or "")
        ]
        refused = sorted(p or "-" for p in {*outcome.failed, *outcome.blocked})
        published = list(result.partition_rows.items()) if result else []
        for partition, rows in published:
            yield dg.AssetMaterialization(
                asset_key=key, partition=partition, metadata={**common, "dagster/row_count": rows}
            )
        targets = _targets(context, key, [p for p, _ in published]) if published else {}
        for check_outcome in outcome.outcomes:
            context.log_event(evaluation(key, check_outcome, targets.get(check_outcome.partition)))
        # Yielding (not only logging) flushes the check evaluations before the step fails.
        yield dg.AssetObservation(
            asset_key=key, metadata={"refused_partitions": refused, "problems": dg.MetadataValue.json(problems)}
        )
        raise PartitionsRefused(
            f"{product.domain}.{out.table}: not published: " + "; ".join(problems),
            refused,
            sorted({o.name for failed in outcome.failed.values() for o in failed}),
        )
    assert result is not None
    for partition, rows in result.partition_rows.items():
        context.add_asset_metadata({"dagster/row_count": rows}, asset_key=key, partition_key=partition)
    if outcome.part is None:
        common["dagster/row_count"] = result.rows
    elif len(result.partition_rows) > 1:
        common["run_row_count"] = result.rows
    yield dg.MaterializeResult(asset_key=key, metadata=common)
    targets = _targets(context, key, list(result.partition_rows) or [None])
    for check_outcome in outcome.outcomes:
        context.log_event(evaluation(key, check_outcome, targets.get(check_outcome.partition)))


def build_external_spec(product: DataProduct, ext: ExternalTable) -> dg.AssetSpec:
    return dg.AssetSpec(
        key=dg.AssetKey([product.domain, ext.table]),
        description=ext.description or product.description or None,
        group_name=product.name,
        owners=[product.owner],
        tags={**product_tags(product, ext.published), "external": "true"},
        kinds={"delta", "external"},
        metadata={
            **product_metadata(product, ext.line),
            "partition_column": ext.partition_column if ext.partitioning != "none" else "-",
        },
        partitions_def=partitions_def(ext.partitioning, product.start_date, ext.regions),
    )
