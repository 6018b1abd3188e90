"""Column lineage: which input columns each output column is computed from.

A SQL product's query is read by sqlglot (the query as the owner wrote it, with ``<domain>.<table>`` names);
a PySpark product's by walking Spark's analyzed plan, where every attribute carries an expression id: a
leaf relation's columns are sources, an alias depends on the attributes its expression references, a union's
columns on the same position in each branch. Both give ``{output column: [(input location, column)]}``.
Lineage never fails a run: anything unreadable gives ``None`` (unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame

from mesh_assets.lineage.plan import ColumnSources, leaf_paths, normalize, seq

Sources = dict[int, set[tuple[str, str]]]


def _id(attribute: Any) -> int:
    return attribute.exprId().id()


def _walk(node: Any, sources: Sources, schemas: dict[str, dict[str, str]]) -> None:
    children = seq(node.children())
    for child in children:
        _walk(child, sources, schemas)
    output = seq(node.output())
    if not children:
        paths = [normalize(p) for p in leaf_paths(node)]
        for a in output:
            sources[_id(a)] = {(p, a.name()) for p in paths}
            for p in paths:
                schemas.setdefault(p, {})[a.name()] = a.dataType().simpleString()
        return
    if node.nodeName() == "Union":
        branches = [seq(c.output()) for c in children]
        for i, a in enumerate(output):
            sources[_id(a)] = set().union(*(sources.get(_id(b[i]), set()) for b in branches))
        return
    used: set[tuple[str, str]] = set()
    for e in seq(node.expressions()):
        refs = set().union(*(sources.get(_id(r), set()) for r in seq(e.references().toSeq())))
        used |= refs
        if e.nodeName() == "Alias":
            sources[_id(e)] = refs
    for a in output:  # attributes a node makes without an alias (generators, ...) depend on all it reads
        sources.setdefault(_id(a), used)


def read_schemas(df: DataFrame) -> dict[str, dict[str, str]] | None:
    """The columns (name -> type) of each location ``df`` reads, from its analyzed plan's leaves alone: what a
    SQL product's lineage needs of the plan (walking every node of a window's union costs a py4j round trip per
    node and column); ``None`` when the plan is not reachable."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    schemas: dict[str, dict[str, str]] = {}
    try:
        for leaf in seq(jdf.queryExecution().analyzed().collectLeaves()):
            for path in (normalize(p) for p in leaf_paths(leaf)):
                for a in seq(leaf.output()):
                    schemas.setdefault(path, {})[a.name()] = a.dataType().simpleString()
    except Exception:  # lineage never fails a run
        return None
    return schemas


def plan_lineage(df: DataFrame) -> tuple[ColumnSources, dict[str, dict[str, str]]] | None:
    """Column lineage from ``df``'s analyzed plan, and the columns (name -> type) of each location it reads."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    try:
        plan = jdf.queryExecution().analyzed()
        sources: Sources = {}
        schemas: dict[str, dict[str, str]] = {}
        _walk(plan, sources, schemas)
        columns = {a.name(): sorted(sources.get(_id(a), set())) for a in seq(plan.output())}
    except Exception:  # lineage never fails a run
        return None
    return columns, schemas


def sql_lineage(sql: str, tables: Mapping[str, str], schemas: Mapping[str, Mapping[str, str]]) -> ColumnSources | None:
    """Column lineage of a SQL product's query.

    ``tables`` maps each input's ``<domain>.<table>`` to its location; ``schemas`` gives a location's columns.
    sqlglot is imported here: a Python product's run (a submitted application's too) never pays for it.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.lineage import lineage
    from sqlglot.optimizer.qualify import qualify

    schema: dict[str, dict[str, dict[str, str]]] = {}
    for ref, location in tables.items():
        domain, table = ref.split(".", 1)
        schema.setdefault(domain, {})[table] = dict(schemas.get(normalize(location), {}))
    try:
        tree = sqlglot.parse_one(sql, dialect="spark")
        ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        if any(not t.db and t.name not in ctes for t in tree.find_all(exp.Table)):
            return None  # a table named without its domain: the plan knows what it resolved to
        query = qualify(tree, schema=schema, dialect="spark")
        out: ColumnSources = {}
        for select in query.selects:
            name = select.alias_or_name
            found = []
            for n in lineage(name, query, schema=schema, dialect="spark").walk():
                if isinstance(n.expression, exp.Table):
                    ref = f"{n.expression.db}.{n.expression.name}"
                    if ref in tables:
                        found.append((normalize(tables[ref]), n.name.split(".")[-1].strip('"`')))
            out[name] = sorted(set(found))
    except Exception:  # a query sqlglot cannot follow: the plan's lineage is used instead
        return None
    return out
