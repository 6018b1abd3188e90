"""The SQL a spec may hold: exactly one read-only query (SELECT, WITH, UNION ...), never DML or DDL.

Products and ``sql`` checks hand their SQL to Spark, which runs an ``INSERT``, ``DELETE``, ``DROP`` or ``SET``
as readily as a ``SELECT``. A spec only reads; the platform does every write (one ``replaceWhere`` commit to
the product's own table), so a statement that is not a query is refused at validation and again at run time.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp


class NotAQuery(ValueError):
    """SQL that is not exactly one read-only query."""


def parse_query(sql: str) -> exp.Query:
    """The parse tree of ``sql`` if it is one query; :class:`NotAQuery` (or sqlglot's ParseError) otherwise."""
    statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    if len(statements) != 1:
        raise NotAQuery(f"SQL must be a single query, found {len(statements)} statements")
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        raise NotAQuery(f"SQL must be a single read-only query (SELECT ...), not {tree.key.upper()}")
    return tree


def query_tables(tree: exp.Expression) -> set[tuple[str | None, str]]:
    """Tables a query reads, as (domain, table); CTE names are not tables."""
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    out = set()
    for table in tree.find_all(exp.Table):
        if not table.db and table.name in ctes:
            continue
        out.add((table.db or None, table.name))
    return out
