"""The SQL a spec may hold: exactly one read-only query (SELECT, WITH, UNION ...), never DML or DDL.

Products and ``sql`` checks hand their SQL to Spark, which runs an ``INSERT``, ``DELETE``, ``DROP`` or ``SET``
as readily as a ``SELECT``. A spec only reads; the platform does every write (one ``replaceWhere`` commit to
the product's own table), so a statement that is not a query is refused at validation and again at run time.
Running one changes only identifiers in its parse tree (a ``domain.table`` becomes a window's view) and binds
window bounds as typed literals: nothing a user wrote is pasted into SQL text.

sqlglot is imported by the functions that parse, not with the module: a code location reloading an unchanged
domain parses no SQL (the columns its queries return are kept with its specs, see :func:`remember`).
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from mesh_assets.model.grain import timestamp_text
from mesh_assets.model.names import check_identifier

if TYPE_CHECKING:
    from sqlglot import exp

_COLUMNS: dict[str, tuple[str, ...] | None] = {}
"""Query text -> the columns it returns, as :func:`query_columns` found them (or a kept domain remembered)."""


class NotAQuery(ValueError):
    """SQL that is not exactly one read-only query."""


def parse_query(sql: str) -> exp.Query:
    """The parse tree of ``sql`` if it is one query; :class:`NotAQuery` (or sqlglot's ParseError) otherwise."""
    import sqlglot
    from sqlglot import exp

    statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    if len(statements) != 1:
        raise NotAQuery(f"SQL must be a single query, found {len(statements)} statements")
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        raise NotAQuery(f"SQL must be a single read-only query (SELECT ...), not {tree.key.upper()}")
    return tree


def query_tables(tree: exp.Expression) -> set[tuple[str | None, str]]:
    """Tables a query reads, as (domain, table); CTE names are not tables."""
    from sqlglot import exp

    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    out = set()
    for table in tree.find_all(exp.Table):
        if not table.db and table.name in ctes:
            continue
        out.add((table.db or None, table.name))
    return out


@lru_cache(maxsize=4096)
def read_tables(sql: str) -> frozenset[tuple[str | None, str]]:
    """The tables a query reads, parsed once per text (discovery and validation ask about the same queries)."""
    return frozenset(query_tables(parse_query(sql)))


def query_columns(sql: str) -> tuple[str, ...] | None:
    """The columns a query returns, by name, when it names each one (no ``*``, no unnamed expression); None
    otherwise, or when it is not one query. Found once per text."""
    if sql in _COLUMNS:
        return _COLUMNS[sql]
    import sqlglot

    try:
        tree = parse_query(sql)
    except (NotAQuery, sqlglot.errors.ParseError):
        columns = None
    else:
        names = tree.named_selects
        columns = None if tree.is_star or not all(names) else tuple(names)
    _COLUMNS[sql] = columns
    return columns


def known_columns(queries: list[str]) -> dict[str, tuple[str, ...] | None]:
    """What :func:`query_columns` found for ``queries``, to keep with a domain's specs."""
    return {sql: query_columns(sql) for sql in queries}


def remember(columns: dict[str, tuple[str, ...] | None]) -> None:
    """Columns found before for these exact query texts (a kept domain's): not parsed again."""
    _COLUMNS.update(columns)


def rewrite_tables(sql: str, views: dict[tuple[str | None, str], str]) -> str:
    """Point every ``domain.table`` the query reads at its view (an identifier swap in the parse tree).

    Only a single read-only query gets this far (:class:`~mesh_assets.graph.queries.NotAQuery` otherwise).
    """
    from sqlglot import exp

    tree = parse_query(sql)
    for table in tree.find_all(exp.Table):
        key = (table.db or None, table.name)
        if key in views:
            alias = table.alias_or_name
            table.replace(exp.to_table(views[key]).as_(alias) if alias else exp.to_table(views[key]))
    return tree.sql(dialect="spark")


def view_name(domain: str, table: str) -> str:
    return f"mesh_{uuid.uuid4().hex[:10]}_{domain}__{table}"


def bind_parameters(sql: str, args: dict[str, date | datetime | str]) -> str:
    """Replace ``:name`` placeholders with typed literals in the parse tree.

    For Spark Connect: a Connect server with Delta's SQL extension leaves server-side bound parameters
    unbound. Only typed dates and timestamps (window bounds) and a region's name (a validated identifier) reach
    here, never user text.
    """
    from sqlglot import exp

    tree = parse_query(sql)
    for node in list(tree.find_all(exp.Placeholder)):
        if node.name in args:
            node.replace(_literal(args[node.name]))
    return tree.sql(dialect="spark")


def _literal(value: date | datetime | str) -> exp.Expression:
    from sqlglot import exp

    if isinstance(value, str):
        return exp.Literal.string(check_identifier(value))
    if isinstance(value, datetime):
        return exp.cast(exp.Literal.string(timestamp_text(value)), exp.DataType.Type.TIMESTAMP)
    if isinstance(value, date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.DATE)
    raise TypeError(f"only dates and timestamps are bound, got {type(value).__name__}")
