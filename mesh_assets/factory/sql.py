"""Running a SQL product: table names become window-restricted views, window bounds are bound parameters."""

from __future__ import annotations

import uuid

from sqlglot import exp

from mesh_assets.spec.queries import parse_query


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
