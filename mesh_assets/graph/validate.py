"""Governance: the rules every product must pass before any asset exists.

Errors are collected, never raised one at a time, so ``mesh validate`` shows a domain team everything
that is wrong in one go.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from pathlib import Path

from mesh_assets.graph.access import grant_refusal
from mesh_assets.graph.discovery import DomainSpecs
from mesh_assets.graph.readers import read_refusal
from mesh_assets.graph.resolve import DeclaredInput, MeshGraph, Table, TableKind
from mesh_assets.graph.revisions import sql_text
from mesh_assets.model.checks import SqlAssertion
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.grain import Grain
from mesh_assets.model.kinds import Changes
from mesh_assets.model.product import DataProduct, Output, PySparkTransformation, SqlTransformation


def sql_tables(sql: str) -> set[tuple[str | None, str]]:
    """Tables a query reads, as (domain, table); SQL that is not one read-only query raises NotAQuery."""
    from mesh_assets.graph.queries import read_tables  # sqlglot: only where SQL is judged, not on a warm load

    return set(read_tables(sql))


def _sql_problem(sql: str) -> tuple[str | None, set[tuple[str | None, str]]]:
    """(why ``sql`` is refused, or None; the tables it reads)."""
    import sqlglot

    from mesh_assets.graph.queries import NotAQuery

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


def _check_inputs(table: Table, graph: MeshGraph) -> list[SpecError]:
    """Each declared input of ``table`` against the table it names, reported at the input's own line."""
    errors = []

    def err(inp: DeclaredInput, suffix: str, message: str) -> None:
        errors.append(SpecError(relative(table.source_file), inp.line, inp.field + suffix, message))

    for inp in table.declared:
        ref = f"{inp.domain}.{inp.table}"
        if inp.window == "previous" and (inp.domain, inp.table) != (table.domain, table.name):
            own_only = f"only {table.ref} may use it here, not {ref}"
            err(inp, ".window", f"window 'previous' reads a table's own past: {own_only}")
        info = graph.get(inp.domain, inp.table)
        if info is None:
            err(inp, "", f"unknown table {ref}" + (f" (version {inp.version})" if inp.version else ""))
            continue
        if inp.domain != table.domain and not info.published:
            err(
                inp, "", f"{ref} is internal to domain {inp.domain}; only published tables may be read by other domains"
            )
        if (refused := read_refusal(table, info, graph)) is not None:
            err(inp, "", refused)
        if info.published and (ungranted := grant_refusal(table.domain, table.product, info)) is not None:
            err(inp, "", ungranted)
        if inp.window == "changes" and (problem := _change_feed_refusal(table, info)) is not None:
            err(inp, ".window", problem)
        whole = inp.window in ("all", "changes")
        if not info.grain.partitioned and not whole:
            err(inp, ".window", f"{ref} is not partitioned; use window 'all'")
        if not table.grain.partitioned and not whole and info.grain.partitioned:
            err(inp, ".window", f"output {table.name} is not partitioned, so it reads whole tables; use window 'all'")
        unpartitioned = None if info.grain.partitioned else ref
        if not table.grain.partitioned:
            unpartitioned = f"output {table.name}"
        if inp.deadline == "timeout_hours" and unpartitioned:
            err(
                inp,
                ".timeout_hours",
                f"{unpartitioned} is not partitioned: timeout_hours applies to partitioned inputs of partitioned "
                "outputs (a table read whole takes freshness_hours: the oldest it may be)",
            )
        if inp.watermark and not table.grain.partitioned:
            err(inp, ".watermark", f"output {table.name} is not partitioned: a watermark must reach a partition's end")
        elif inp.watermark and not whole:
            err(inp, ".watermark", f"{ref} is read by partition: a watermark applies to a table read whole ('all')")
        one_region = _region_problems(table, info, inp, ref, err)
        if info.regions and ((not one_region and inp.window == "last") or table.grain is not Grain.DAILY):
            err(
                inp,
                ".window",
                f"{ref} is partitioned by date and region; a daily output reads it by 'same' (a day's regions) "
                "or 'all'",
            )
        if not whole and info.grain.finer_than(table.grain) and not info.grain.nests_in(table.grain):
            err(
                inp,
                ".window",
                f"{ref} is {info.grain} and {table.name} is {table.grain}: its partitions do not fit whole in "
                f"{table.name}'s, so a rollup would read some twice; read a finer table (daily) or use window 'all'",
            )
        if inp.min_complete is not None and (whole or unpartitioned):
            err(
                inp,
                ".min_complete",
                f"min_complete accepts part of a window of partitions; {unpartitioned or ref} is read whole",
            )
        if (problem := _outlives(table, info, inp.window)) is not None:
            err(inp, "", problem)
    return errors


def _region_problems(
    table: Table, info: Table, inp: DeclaredInput, ref: str, err: Callable[[DeclaredInput, str, str], None]
) -> bool:
    """Report what does not fit in how ``table`` reads the regions of ``info``; whether it reads one region of it
    (the one ``region`` names, or the output's own)."""
    if inp.region is not None:
        if not info.regions:
            err(inp, ".region", f"{ref} is not partitioned by region: remove region")
        elif inp.region not in info.regions:
            err(inp, ".region", f"{inp.region} is not a region of {ref}: one of {', '.join(info.regions)}")
        return bool(info.regions)
    if not table.regions or not info.regions or inp.window in ("all", "changes"):
        return False
    if not set(table.regions) <= set(info.regions):
        missing = ", ".join(r for r in table.regions if r not in info.regions)
        err(
            inp,
            "",
            f"{ref} has no region {missing} of output {table.name}: read one of its regions with region: "
            f"<one of {', '.join(info.regions)}>, or declare the same regions",
        )
    return True


def _line_naming(file: Path | None, name: str) -> int | None:
    """The first line of ``file`` that quotes ``name`` (where a dbt model's ``source()`` or ``ref()`` names it)."""
    try:
        text = file.read_text() if file is not None else ""
    except OSError:
        return None
    quoted = (f"'{name}'", f'"{name}"')
    return next((n for n, line in enumerate(text.splitlines(), 1) if any(q in line for q in quoted)), None)


def _check_tool_reads(table: Table, graph: MeshGraph) -> list[SpecError]:
    """A dbt model's sources and refs against the tables they name, as a product's inputs are."""
    errors = []
    for domain, name in table.inputs:
        ref, info = f"{domain}.{name}", graph.get(domain, name)
        if info is None:
            problem = "an unknown table"
        elif domain != table.domain and not info.published:
            problem = f"which is internal to domain {domain}; only published tables may be read by other domains"
        elif (ungranted := grant_refusal(table.domain, table.product, info)) is not None:
            problem = f"which it may not: {ungranted}"
        else:
            continue
        file = relative(table.source_file)
        errors.append(
            SpecError(
                file,
                _line_naming(table.source_file, name),
                "depends_on",
                f"dbt model {table.ref} reads {ref}, {problem}",
            )
        )
    return errors


def _change_feed_refusal(table: Table, upstream: Table) -> str | None:
    """Why ``table`` may not read ``upstream``'s Change Data Feed: only a ``changes`` output applies a feed, and
    only from a Mesh output that keeps one (``change_feed: true``)."""
    if not isinstance(table.table_kind, Changes):
        kind = table.table_kind.name
        return f"window 'changes' reads a change feed, which only an output of kind changes applies ({kind} here)"
    if not (isinstance(upstream.spec, Output) and upstream.spec.change_feed):
        return f"{upstream.ref} keeps no change feed: declare change_feed: true on its output to read it by 'changes'"
    return None


def _outlives(table: Table, upstream: Table, window: str) -> str | None:
    """Why ``table`` may not read ``upstream`` by ``window``: its partitions would go on past the upstream's end
    date, each one waiting forever for input partitions that will never exist (and alerting as late)."""
    end = upstream.end_date
    if end is None or window in ("all", "changes") or not (table.grain.partitioned and upstream.grain.partitioned):
        return None
    if table.end_date is not None and table.end_date <= end:
        return None
    mine = f"ends on {table.end_date}" if table.end_date else "has no end_date"
    return (
        f"{upstream.ref} has no partitions from {end} on (its end_date), but {table.ref} {mine}: give product "
        f"{table.product} an end_date on or before {end}, or read {upstream.ref} with window 'all'"
    )


def _check_transformation_code(product: DataProduct) -> list[SpecError]:
    errors = []
    for i, t in enumerate(product.transformations):
        if isinstance(t, SqlTransformation):
            field = f"tables.{i}.{'sql' if t.sql is not None else 'sql_file'}"
            versions: dict[tuple[str, str], int] = {}
            for name, inp in t.inputs.items():
                if versions.setdefault(inp.ref(product.domain), inp.version or 1) != (inp.version or 1):
                    ref = ".".join(inp.ref(product.domain))
                    errors.append(
                        _err(
                            product,
                            inp.line or t.line,
                            f"tables.{i}.inputs.{name}",
                            f"a query names {ref} once, so it reads one version of it; compare versions in PySpark",
                        )
                    )
                if inp.window.kind == "previous" and inp.target(product.domain) == (product.domain, t.output.name):
                    errors.append(
                        _err(
                            product,
                            inp.line or t.line,
                            f"tables.{i}.inputs.{name}.window",
                            "a SQL product cannot read its own past (its first partition has no table to read); "
                            "write it in PySpark",
                        )
                    )
            problem, read = _sql_problem(sql_text(t, product))
            at = t.sql_line or t.line
            if problem:
                errors.append(_err(product, at, field, problem))
                continue
            declared = {inp.ref(product.domain) for inp in t.inputs.values()}
            for domain, table in sorted(read, key=str):
                if domain is None:
                    errors.append(_err(product, at, field, f"table {table!r} must be qualified as <domain>.{table}"))
                elif (domain, table) not in declared:
                    message = f"SQL reads {domain}.{table}, which is not a declared input"
                    errors.append(_err(product, at, field, message))
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


def _own_past(table: Table) -> set[tuple[str, str]]:
    """The table itself when it reads itself only through ``previous`` (its strictly earlier partitions): no
    cycle. A plain self-read still is one."""
    own = [inp for inp in table.declared if (inp.domain, inp.table) == (table.domain, table.name)]
    return {(table.domain, table.name)} if own and all(inp.window == "previous" for inp in own) else set()


def _cycles(graph: MeshGraph, only: set[str] | None) -> list[SpecError]:
    """Every dependency cycle through a table of ``only`` (default: any), found by an iterative depth-first
    walk so a chain of any depth is walked without recursion."""
    edges = {key: sorted((set(t.inputs) & graph.tables.keys()) - _own_past(t)) for key, t in graph.tables.items()}
    errors, state = [], {}
    for root in sorted(edges):
        if root in state:
            continue
        state[root] = 1
        path, todo = [root], [iter(edges[root])]
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                if only is None or any(d in only for d, _ in cycle):
                    table = graph.tables[path[-1]]
                    message = "dependency cycle: " + " -> ".join(f"{d}.{t}" for d, t in cycle)
                    errors.append(SpecError(relative(table.source_file), table.line, "inputs", message))
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(edges.get(nxt, ())))
    return errors


def mesh_errors(graph: MeshGraph, only: set[str] | None = None, mesh: Iterable[str] | None = None) -> list[SpecError]:
    """The rules between tables (duplicates, inputs, cycles) for the tables of ``only`` (default: all): they need
    only the resolved tables, which other domains contribute from the catalog, never by running their code.
    A dbt model's reads are judged when its domain is one of the ``mesh``'s domain folders (default: any), so
    a mesh without it (a fixture, a test) is not judged by the project's models."""
    judged = set(only) if only is not None else set(mesh) if mesh is not None else None
    errors: list[SpecError] = []
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
    for table in graph.tables.values():
        if only is None or table.domain in only:
            errors += _check_inputs(table, graph)
        if table.kind is TableKind.DBT and (judged is None or table.domain in judged):
            errors += _check_tool_reads(table, graph)
    return errors + _cycles(graph, only)


def local_errors(specs: DomainSpecs) -> list[SpecError]:
    """One domain's errors that need its products' code and files: discovery's, SQL, function parameters."""
    errors = list(specs.errors)
    for product in specs.products:
        errors += _check_transformation_code(product)
        errors += _check_sql_checks(product)
    return errors


def validate(
    domains: dict[str, DomainSpecs],
    only: set[str] | None = None,
    extra: Iterable[Table] = (),
    graph: MeshGraph | None = None,
    judged: dict[str, list[SpecError]] | None = None,
) -> list[SpecError]:
    """Every governance error in ``domains`` (restricted to the ``only`` domains if given); ``graph`` is the
    mesh already resolved from them (and ``extra``), when the caller has it; ``judged`` are domains' own errors
    already found for their current content (see :mod:`~mesh_assets.graph.own_domain`)."""
    graph = graph or MeshGraph(domains, extra)
    judged = judged or {}
    errors = [
        e
        for name, s in domains.items()
        if only is None or name in only
        for e in (judged[name] if name in judged else local_errors(s))
    ]
    return sorted(set(errors + mesh_errors(graph, only, domains)))
