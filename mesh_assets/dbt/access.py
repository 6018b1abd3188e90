"""Another domain's tables as a dbt model may read them, as a product's inputs are read.

``mesh validate`` judges a model's ``source()`` and ``ref()`` reads against their producers' grants; its
compiled SQL may name tables directly too. Before Mesh runs the SQL, every table of another domain it reads is
judged again: one the model may not read (internal to its domain, or restricted and not granted) refuses the
model, naming the table and the grant to add, and nothing is computed; one whose ``pii`` columns are masked for
the model's domain (unless a grant clears them) is read through a view of its masked rows, swapped in for the
table's name in the query's parse tree, so the model never sees the values clear (the masks of
:mod:`mesh_assets.graph.access`, hashed or nulled as the producer declared).
"""

from __future__ import annotations

from typing import Protocol

import dagster as dg
from pyspark.sql import SparkSession

from mesh_assets.dbt.compiled import DbtModel
from mesh_assets.graph import access
from mesh_assets.graph.queries import parse_query, query_tables, rewrite_tables, view_name
from mesh_assets.graph.resolve import Table
from mesh_assets.run.enclosure import masked
from mesh_assets.storage.tables import TableNotFoundError, TableRegistry


class Tables(Protocol):
    """The mesh's tables by ``(domain, table)`` (:class:`mesh_assets.graph.resolve.MeshGraph`)."""

    def get(self, domain: str, table: str) -> Table | None: ...


def reader(model: DbtModel, tables: Tables) -> tuple[str, str]:
    """The domain and product a model reads as (its ``meta.product``, else its domain's name)."""
    domain = model.key.path[0]
    own = tables.get(domain, model.key.path[-1])
    return domain, own.product if own is not None else domain


def readable_sql(spark: SparkSession, registry: TableRegistry, model: DbtModel, tables: Tables) -> str:
    """``model``'s compiled SQL reading each other domain's table as the model may see it (see the module);
    a ``dg.Failure`` naming the table and the grant to add for one it may not read."""
    assert model.sql is not None
    domain, product = reader(model, tables)
    views: dict[tuple[str | None, str], str] = {}
    for db, name in sorted(query_tables(parse_query(model.sql)), key=lambda t: (t[0] or "", t[1])):
        table = tables.get(db, name) if db is not None and db != domain else None
        if table is None:
            continue
        if not table.published:
            raise dg.Failure(
                description=f"dbt model {model.ref} reads {table.ref}, which is internal to domain {table.domain}: "
                "only published tables may be read by other domains; nothing was published"
            )
        if (refusal := access.grant_refusal(domain, product, table)) is not None:
            raise dg.Failure(
                description=f"dbt model {model.ref} reads {table.ref}, which it may not: {refusal}; nothing was "
                "published",
                metadata={"withheld_reads": [table.ref]},
            )
        masks = access.masks(domain, product, table)
        if not masks:
            continue
        try:
            rows = spark.table(registry.register(spark, table.domain, table.name))
        except TableNotFoundError as exc:
            raise dg.Failure(description=f"dbt model {model.ref} reads {table.ref}, never published: {exc}") from None
        views[(db, name)] = view = view_name(table.domain, table.name)
        masked(rows, masks).createOrReplaceTempView(view)
    return rewrite_tables(model.sql, views) if views else model.sql
