"""Running a SQL product: table names become window-restricted views, window bounds are bound parameters."""

from __future__ import annotations

import uuid
from datetime import date, datetime

from sqlglot import exp

from mesh_assets.spec.queries import parse_query
from mesh_assets.storage.partitions import timestamp_text


def rewrite_tables(sql: str, views: dict[tuple[str | None, str], str]) -> str:
    """Point every ``domain.table`` the query reads at its view (an identifier swap in the parse tree).

    Only a single read-only query gets this far (:class:`~mesh_assets.spec.queries.NotAQuery` otherwise).
    """
    tree = parse_query(sql)
    for table in tree.find_all(exp.Table):
        key = (table.db or None, table.name)
        if key in views:
            alias = table.alias_or_name
            table.replace(exp.to_table(views[key]).as_(alias) if alias else exp.to_table(views[key]))
    return tree.sql(dialect="spark")


def view_name(domain: str, table: str) -> str:
    return f"mesh_{uuid.uuid4().hex[:10]}_{domain}__{table}"


def bind_parameters(sql: str, args: dict[str, date | datetime]) -> str:
    """Replace ``:name`` placeholders with typed literals in the parse tree.

    For Spark Connect: a Connect server with Delta's SQL extension leaves server-side bound parameters
    unbound. Only typed dates and timestamps (window bounds) reach here, never user text.
    """
    tree = parse_query(sql)
    for node in list(tree.find_all(exp.Placeholder)):
        if node.name in args:
            node.replace(_literal(args[node.name]))
    return tree.sql(dialect="spark")


def _literal(value: date | datetime) -> exp.Expression:
    if isinstance(value, datetime):
        return exp.cast(exp.Literal.string(timestamp_text(value)), exp.DataType.Type.TIMESTAMP)
    if isinstance(value, date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.DATE)
    raise TypeError(f"only dates and timestamps are bound, got {type(value).__name__}")
