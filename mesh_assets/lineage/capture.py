"""What a DataFrame actually reads: the file/Delta relations at the leaves of its query plan.

The plan is Spark's analyzed plan: temp views, SQL text and helper functions are all resolved away, so a
table read with ``spark.table(...)`` inside a product function shows up here even though the product never
declared it. The optimized plan names the same leaves, but optimizing a Delta read lists the table's files,
which the run's own query then does again. Works on a classic (JVM-backed) session; under Spark Connect
there is no JVM handle and capture returns ``None`` (unknown), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame

from mesh_assets.lineage.columns import plan_lineage, read_schemas, sql_lineage
from mesh_assets.lineage.plan import ColumnSources, leaf_paths, normalize, seq
from mesh_assets.model.errors import Refused
from mesh_assets.settings import UndeclaredReads

if TYPE_CHECKING:
    from mesh_assets.graph.resolve import Node
    from mesh_assets.storage.tables import TableRegistry


def read_locations(df: DataFrame) -> list[str] | None:
    """Normalized root paths of every table ``df`` reads, sorted; ``None`` when the plan is not reachable."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    try:
        leaves = seq(jdf.queryExecution().analyzed().collectLeaves())
    except Exception:  # capture never fails a run
        return None
    return sorted({normalize(p) for leaf in leaves for p in leaf_paths(leaf)})


def undeclared_reads(reads: list[str] | None, declared: list[str], own: str) -> list[str]:
    """Locations read that are neither a declared input nor the output itself."""
    allowed = {normalize(p) for p in [*declared, own]}
    return [p for p in reads or [] if normalize(p) not in allowed]


def table_name(location: str, warehouse: str) -> str:
    """``<domain>.<table>`` for a location inside the warehouse, else the location itself."""
    root, path = normalize(warehouse), normalize(location)
    rest = path[len(root) + 1 :] if path.startswith(root + "/") else ""
    parts = rest.split("/")
    return ".".join(parts) if len(parts) == 2 and all(parts) else location


@dataclass(frozen=True)
class Reads:
    """What a computation read, from Spark's plan: every location, and those it does not declare."""

    locations: list[str] | None
    undeclared: tuple[str, ...] = ()
    undeclared_names: tuple[str, ...] = ()
    columns: ColumnSources | None = None

    def as_fields(self) -> dict[str, Any]:
        return {
            "reads": self.locations,
            "undeclared_reads": self.undeclared,
            "undeclared_names": self.undeclared_names,
            "column_lineage": self.columns,
        }


class UndeclaredReadRefused(Refused):
    """A run read tables it does not declare, in a domain whose ``lineage.undeclared_reads`` is ``error``."""


def observed_reads(
    df: DataFrame, node: Node, registry: TableRegistry, log: Any, rule: UndeclaredReads = "warn"
) -> Reads:
    """The tables ``df`` reads. One it does not declare is a warning in the run's log, or with ``rule`` =
    ``error`` refuses the run before anything is written."""
    reads = read_locations(df)
    declared = [registry.location(r.table.domain, r.table.name) for r in node.reads]
    undeclared = tuple(undeclared_reads(reads, declared, registry.location(node.domain, node.table.name)))
    names = tuple(table_name(p, registry.warehouse) for p in undeclared)
    if undeclared and rule == "error":
        raise UndeclaredReadRefused(
            description=f"{node.table.ref} reads tables it does not declare as inputs: {', '.join(names)}; "
            f"domain {node.domain} has lineage.undeclared_reads: error, so nothing was written "
            "(declare them as inputs)",
            metadata={"undeclared_reads": list(names)},
        )
    if undeclared:
        log.warning(f"{node.table.ref} read tables it does not declare as inputs: {', '.join(names)}")
    return Reads(reads, undeclared, names, column_lineage(df, node, registry))


def column_lineage(df: DataFrame, node: Node, registry: TableRegistry) -> ColumnSources | None:
    """A SQL product's column lineage from its query (sqlglot), else from ``df``'s plan."""
    tables = {
        ".".join(r.input.ref(node.domain)): registry.location(r.table.domain, r.table.name) for r in node.reads
    }  # by the name the query writes (a pinned version's rows are another table's)
    return query_columns(df, node.sql, tables)


def query_columns(df: DataFrame, sql: str | None, tables: dict[str, str]) -> ColumnSources | None:
    """Column lineage of ``df``: from ``sql`` (the query it runs, reading ``tables`` by ``<domain>.<table>``)
    when sqlglot can follow it, else from ``df``'s analyzed plan; ``None`` when neither is readable."""
    if sql is not None and (schemas := read_schemas(df)) is not None:
        from_sql = sql_lineage(sql, tables, schemas)
        if from_sql is not None:
            return from_sql
    found = plan_lineage(df)
    return None if found is None else found[0]
