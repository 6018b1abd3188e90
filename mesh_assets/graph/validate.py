"""Governance: the rules every product must pass before any asset exists.

Errors are collected, never raised one at a time, so ``mesh validate`` shows a domain team everything
that is wrong in one go.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

import sqlglot

from mesh_assets.graph.discovery import DomainSpecs
from mesh_assets.graph.queries import NotAQuery, parse_query, query_tables
from mesh_assets.graph.resolve import MeshGraph, Table, sql_text
from mesh_assets.model.checks import SqlAssertion
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.grain import Grain
from mesh_assets.model.product import DataProduct, PySparkTransformation, SqlTransformation


def sql_tables(sql: str) -> set[tuple[str | None, str]]:
    """Tables a query reads, as (domain, table); SQL that is not one read-only query raises NotAQuery."""
    return query_tables(parse_query(sql))


def _sql_problem(sql: str) -> tuple[str | None, set[tuple[str | None, str]]]:
    """(why ``sql`` is refused, or None; the tables it reads)."""
    try:
        return None, sql_tables(sql)
    except sqlglot.errors.ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        where = f"line {detail.get('line', '?')}, col {detail.get('col', '?')}"
        return f"SQL does not parse ({where}): {detail.get('description', exc)}", set()
    except NotAQuery as exc:
        return str(exc), set()


def _err(product: DataProduct, line: int | None, field: str, message: str) -> SpecError:
    return SpecError(relative(product.source_file), line or product.line, field, message)


def _check_inputs(product: DataProduct, graph: MeshGraph) -> list[SpecError]:
    errors = []
    for i, t in enumerate(product.transformations):
        out = t.output
        for name, inp in t.inputs.items():
            field = f"tables.{i}.inputs.{name}"
            domain, table = inp.ref(product.domain)
            info = graph.get(domain, table)
            if info is None:
                errors.append(_err(product, t.line, field, f"unknown table {domain}.{table}"))
                continue
            if domain != product.domain and not info.published:
                errors.append(
                    _err(
                        product,
                        t.line,
                        field,
                        f"{domain}.{table} is internal to domain {domain}; only published tables "
                        "may be read by other domains",
                    )
                )
            if not info.grain.partitioned and inp.window.kind != "all":
                errors.append(
                    _err(product, t.line, f"{field}.window", f"{domain}.{table} is not partitioned; use window 'all'")
                )
            if not out.partitioning.partitioned and inp.window.kind != "all" and info.grain.partitioned:
                errors.append(
                    _err(
                        product,
                        t.line,
                        f"{field}.window",
                        f"output {out.table} is not partitioned, so it reads whole tables; use window 'all'",
                    )
                )
            deadline = "freshness_hours" if inp.freshness_hours else "timeout_hours" if inp.timeout_hours else None
            unpartitioned = None if info.grain.partitioned else f"{domain}.{table}"
            if not out.partitioning.partitioned:
                unpartitioned = f"output {out.table}"
            if deadline and unpartitioned:
                errors.append(
                    _err(
                        product,
                        t.line,
                        f"{field}.{deadline}",
                        f"{unpartitioned} is not partitioned: freshness_hours and timeout_hours apply to "
                        "partitioned inputs of partitioned outputs",
                    )
                )
            if info.regions and (inp.window.kind == "last" or out.partitioning is Grain.HOURLY):
                errors.append(
                    _err(
                        product,
                        t.line,
                        f"{field}.window",
                        f"{domain}.{table} is partitioned by date and region; a daily output reads it by 'same' "
                        "(a day's regions) or 'all'",
                    )
                )
            if out.partitioning is Grain.DAILY and info.grain is Grain.HOURLY and inp.window.kind == "last":
                errors.append(
                    _err(
                        product,
                        t.line,
                        f"{field}.window",
                        "a daily output reads an hourly input by 'same' (its 24 hours) or 'all'",
                    )
                )
    return errors


def _check_transformation_code(product: DataProduct, graph: MeshGraph) -> list[SpecError]:
    errors = []
    for i, t in enumerate(product.transformations):
        if isinstance(t, SqlTransformation):
            field = f"tables.{i}.{'sql' if t.sql is not None else 'sql_file'}"
            node = graph.nodes.get((product.domain, t.output.table))
            sql = node.sql if node is not None and node.transformation is t else sql_text(t, product)
            problem, read = _sql_problem(sql or "")
            if problem:
                errors.append(_err(product, t.line, field, problem))
                continue
            declared = {inp.ref(product.domain) for inp in t.inputs.values()}
            for domain, table in sorted(read, key=str):
                if domain is None:
                    errors.append(
                        _err(product, t.line, field, f"table {table!r} must be qualified as <domain>.{table}")
                    )
                elif (domain, table) not in declared:
                    errors.append(
                        _err(product, t.line, field, f"SQL reads {domain}.{table}, which is not a declared input")
                    )
        elif isinstance(t, PySparkTransformation):
            params = inspect.signature(t.fn).parameters
            expected = set(t.inputs)
            given = set(params) - {"context"}
            if expected != given:
                errors.append(
                    _err(
                        product,
                        t.line,
                        f"tables.{i}.inputs",
                        f"function {t.fn.__name__}() takes {sorted(given)} but inputs are {sorted(expected)}",
                    )
                )
    return errors


def _check_sql_checks(product: DataProduct) -> list[SpecError]:
    """A ``sql`` check is one read-only query over ``staged`` (the rows about to be published), nothing else."""
    errors = []
    for i, t in enumerate(product.transformations):
        for j, check in enumerate(t.output.checks):
            if not isinstance(check, SqlAssertion):
                continue
            field = f"tables.{i}.checks.{j}.sql"
            problem, read = _sql_problem(check.sql)
            others = sorted(f"{d}.{n}" if d else n for d, n in read if (d, n) != (None, "staged"))
            if problem is None and others:
                problem = f"a sql check reads only 'staged', not {', '.join(others)}"
            if problem:
                errors.append(_err(product, t.line, field, problem))
    return errors


def _cycles(products: list[DataProduct], only: set[str] | None) -> list[SpecError]:
    edges: dict[tuple[str, str], set[tuple[str, str]]] = {}
    where: dict[tuple[str, str], DataProduct] = {}
    for p in products:
        for t in p.transformations:
            node = (p.domain, t.output.table)
            where[node] = p
            edges.setdefault(node, set()).update(inp.ref(p.domain) for inp in t.inputs.values())
    errors, state, stack = [], {}, []

    def visit(node: tuple[str, str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                if only is not None and not any(d in only for d, _ in cycle):
                    continue
                product = where[node]
                errors.append(
                    _err(product, None, "inputs", "dependency cycle: " + " -> ".join(f"{d}.{t}" for d, t in cycle))
                )
            elif nxt in edges and state.get(nxt) is None:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if state.get(node) is None:
            visit(node)
    return errors


def validate(
    domains: dict[str, DomainSpecs],
    only: set[str] | None = None,
    extra: Iterable[Table] = (),
    graph: MeshGraph | None = None,
) -> list[SpecError]:
    """Every governance error in ``domains`` (restricted to the ``only`` domains if given); ``graph`` is the
    mesh already resolved from them, when the caller has it."""
    graph = graph or MeshGraph(domains, extra)
    chosen = [s for name, s in domains.items() if only is None or name in only]
    errors: list[SpecError] = [e for s in chosen for e in s.errors]
    for first, second in graph.duplicates:
        if only is None or second.domain in only:
            errors.append(
                SpecError(
                    relative(second.source_file),
                    second.line,
                    "table",
                    f"duplicate table {second.ref}: also declared in {relative(first.source_file)}:{first.line}",
                )
            )
    products = [p for s in chosen for p in s.products]
    for product in products:
        errors += _check_inputs(product, graph)
        errors += _check_transformation_code(product, graph)
        errors += _check_sql_checks(product)
    errors += _cycles([p for s in domains.values() for p in s.products], only)
    return sorted(set(errors))
