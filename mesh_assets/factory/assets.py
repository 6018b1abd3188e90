"""Specs -> Dagster assets, all in one standard shape.

Every output table becomes one asset keyed ``[domain, table]`` in the group of its product, with the
product's owner, standard tags and kinds, a concurrency pool of its own (one writer per table), a
single-run backfill policy (a range is one Spark job) and metadata pointing back at its source.
"""


from typing import Any

import dagster as dg
from dagster import AssetExecutionContext
from pyspark.sql.types import StructType

from mesh_assets.engine.resource import MeshResource
from mesh_assets.factory.compute import run_output
from mesh_assets.factory.partitions import mapping_for, partitions_def
from mesh_assets.spec.catalog import Catalog
from mesh_assets.spec.discovery import sql_text
from mesh_assets.spec.model import DataProduct, ExternalTable, PySparkTransformation, SqlTransformation

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
            code_references=[dg.LocalFileCodeReference(file_path=str(product.source_file.resolve()), line_number=line or product.line)]
        )
        metadata["source_file"] = str(product.source_file)
    return metadata


def table_schema(schema: StructType) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(f.name, f.dataType.simpleString(), constraints=dg.TableColumnConstraints(nullable=f.nullable))
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


def build_output_asset(
    product: DataProduct,
    t: PySparkTransformation | SqlTransformation,
    catalog: Catalog,
    automation_condition: dg.AutomationCondition | None = None,
) -> dg.AssetsDefinition:
    out = t.output
    metadata = product_metadata(product, t.line)
    if isinstance(t, SqlTransformation):
        metadata["sql"] = dg.MetadataValue.md(f"```sql\n{sql_text(t, product).strip()}\n```")
    metadata["partition_column"] = out.partition_column if out.partitioning != "none" else "-"
    metadata["write_mode"] = out.write_mode

    @dg.asset(
        key=dg.AssetKey([product.domain, out.table]),
        description=out.description or product.description or None,
        group_name=product.name,
        owners=[product.owner],
        tags=product_tags(product, out.published),
        kinds={"spark", "delta", "python" if isinstance(t, PySparkTransformation) else "sql"},
        metadata=metadata,
        deps=deps_for(product, t, catalog),
        partitions_def=partitions_def(out.partitioning, product.start_date),
        backfill_policy=dg.BackfillPolicy.single_run() if out.partitioning != "none" else None,
        pool=table_pool(product.domain, out.table),
        automation_condition=automation_condition,
        required_resource_keys={RESOURCE_KEY},
    )
    def _asset(context: AssetExecutionContext) -> dg.MaterializeResult:
        mesh: MeshResource = getattr(context.resources, RESOURCE_KEY)
        result, part = run_output(context, mesh, product, t, catalog)
        for key, rows in result.partition_rows.items():
            context.add_asset_metadata({"dagster/row_count": rows}, partition_key=key)
        metadata = {
            "dagster/column_schema": table_schema(result.schema),
            "delta_version": result.version,
            "location": result.location,
        }
        if part is None:
            metadata["dagster/row_count"] = result.rows
        elif len(result.partition_rows) > 1:
            metadata["run_row_count"] = result.rows
        return dg.MaterializeResult(metadata=metadata)

    return _asset


def build_external_spec(product: DataProduct, ext: ExternalTable) -> dg.AssetSpec:
    return dg.AssetSpec(
        key=dg.AssetKey([product.domain, ext.table]),
        description=ext.description or product.description or None,
        group_name=product.name,
        owners=[product.owner],
        tags={**product_tags(product, ext.published), "external": "true"},
        kinds={"delta", "external"},
        metadata={**product_metadata(product, ext.line),
                  "partition_column": ext.partition_column if ext.partitioning != "none" else "-"},
        partitions_def=partitions_def(ext.partitioning, product.start_date),
    )
