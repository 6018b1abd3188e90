"""``mesh diff``: how a table's rows in an environment (or at another path) differ from production's."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from mesh_assets.datadiff import TableDiff
    from mesh_assets.graph.resolve import Table
    from mesh_assets.storage.resource import MeshResource


def add_parser(sub: argparse._SubParsersAction) -> None:
    diff = sub.add_parser(
        "diff",
        help="rows only on one side, rows changed per key and per column, schema differences: a table vs another",
        description="Compares a table's production rows (left) with the same table in an environment (right, "
        "--env) or another Delta table (--against) over a partition range, as Spark jobs: one full outer join on "
        "the table's key (its kind's unique_key, else "
        "its unique check's keys with the partition column, else the whole row) and one aggregation. Prints rows "
        "only on each side, rows changed, changed values per column, schema differences and a few example keys "
        "per difference (withheld for tables classified l2 or l3). Exits 1 when the tables differ.",
    )
    diff.add_argument(
        "asset", nargs="?", help="<domain>/<table> or <domain>.<table> (with --env alone: every table it built)"
    )
    right = diff.add_mutually_exclusive_group(required=True)
    right.add_argument("--env", help="the table as environment ENV computed it (mesh apply --env ENV)")
    right.add_argument("--against", help="the other Delta table: a path or URI")
    diff.add_argument(
        "--from",
        dest="start",
        help="first partition: its key (a week's Monday, YYYY-MM-DD|REGION) or a day (default: every partition)",
    )
    diff.add_argument("--to", dest="end", help="last partition, as --from (default: --from)")
    diff.add_argument("--key", action="append", help="match rows on this column instead (repeatable)")
    diff.add_argument("--json", action="store_true", help="print the diff as JSON")
    diff.set_defaults(handler=cmd_diff)


def against_location(value: str) -> str:
    """The Delta table location ``--against`` names: a path (made absolute) or a URI as given."""
    from pathlib import Path

    return value if "://" in value else str(Path(value).resolve())


def environment_location(env: str, domain: str, table: str, production: str) -> str:
    """Where environment ``env`` wrote ``domain.table``; refused when it did not compute it (it reads production's)."""
    from mesh_assets.cli.environments import table_location
    from mesh_assets.model.errors import Refused

    location = table_location(env, domain, table)
    if location == production:
        raise Refused(f"environment {env!r} does not compute {domain}/{table}: it reads production's table in place")
    return location


def cmd_diff(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.cli.commands import mesh_catalog
    from mesh_assets.dbt.catalog import tool_tables
    from mesh_assets.graph.isolate import catalog_graph
    from mesh_assets.model.errors import Refused
    from mesh_assets.settings import get_settings
    from mesh_assets.storage.environment import EnvironmentRefused, environments_dir, load
    from mesh_assets.storage.resource import MeshResource

    settings = get_settings()
    graph = catalog_graph(mesh_catalog(), tool_tables(settings.domains_dir))
    try:
        if args.asset is None and args.env is None:
            raise Refused("name a table (<domain>/<table>), or --env NAME to compare every table the environment built")
        if args.asset is None:  # every table the environment computed, over the range it was built for
            env = load(environments_dir(settings.home) / args.env)
            refs, start, end = list(env.tables), args.start or env.start, args.end or args.start or env.end
        else:
            refs, start, end = [args.asset], args.start, args.end
        tables = []
        for ref in refs:
            domain, _, name = ref.replace(".", "/", 1).partition("/")
            if (table := graph.get(domain, name)) is None:
                raise Refused(f"unknown table {ref!r}")
            tables.append(table)
        if not tables:
            console.print(f"environment {args.env} built no table: nothing to compare", highlight=False)
            return 0
        resource = MeshResource()
        diffs = [(t.ref, diff_one(resource, t, args, start, end)) for t in tables]
    except (Refused, EnvironmentRefused) as exc:
        console.print(f"[red]error[/red] {exc}", highlight=False)
        return 2
    if args.json:
        found = [diff.to_json() for _, diff in diffs]
        sys.stdout.write(json.dumps(found if args.asset is None else found[0], indent=2) + "\n")
    else:
        for ref, diff in diffs:
            print_diff(diff, ref, console)
    return 0 if all(diff.same for _, diff in diffs) else 1


def diff_one(
    resource: MeshResource, table: Table, args: argparse.Namespace, start: str | None, end: str | None
) -> TableDiff:
    """``table``'s production rows against the other side ``args`` name, over ``start``..``end`` when given."""
    from mesh_assets.datadiff import diff_tables, partition_span, table_key, withheld_reason
    from mesh_assets.model.errors import Refused

    span = None
    if start or end:
        if not table.grain.partitioned:
            if args.asset is not None:
                raise Refused(f"{table.ref} is not partitioned: drop --from/--to")
        else:
            span = partition_span(table, start or end or "", end or start or "")
    left = resource.registry.location(table.domain, table.name)
    right = environment_location(args.env, table.domain, table.name, left) if args.env else None
    key = tuple(args.key) if args.key else table_key(table)
    return diff_tables(
        resource.spark, left, right or against_location(args.against), key, span, withheld=withheld_reason(table)
    )


def print_diff(diff: TableDiff, ref: str, console: Console) -> None:
    from rich.table import Table

    span = diff.partitions
    where = f" {span.column} {span.start}..{span.end}" if span else ""
    if span and span.regions:
        where += f" {span.region_column} {', '.join(span.regions)}"
    console.print(f"[bold]{ref}[/bold]{where}: {diff.left} (left) vs {diff.right} (right)", highlight=False)
    console.print(f"key: {', '.join(diff.key) or 'the whole row'}", highlight=False)
    schema = diff.schema
    for column in schema.only_left:
        console.print(f"  schema: column {column} only on the left", highlight=False)
    for column in schema.only_right:
        console.print(f"  schema: column {column} only on the right", highlight=False)
    for column, (lt, rt) in schema.retyped.items():
        console.print(f"  schema: column {column} is {lt} on the left, {rt} on the right", highlight=False)
    summary = Table("", "rows", "example keys")
    summary.add_row("left", str(diff.left_rows), "")
    summary.add_row("right", str(diff.right_rows), "")
    summary.add_row("only left", str(diff.only_left), _keys(diff, "only_left"))
    summary.add_row("only right", str(diff.only_right), _keys(diff, "only_right"))
    summary.add_row("changed", str(diff.changed), "")
    for column, count in diff.column_changes.items():
        if count:
            summary.add_row(f"  {column}", str(count), _keys(diff, column))
    console.print(summary)
    if diff.withheld:
        console.print(diff.withheld, highlight=False)
    console.print("same rows" if diff.same else "the tables differ", highlight=False)


def _keys(diff: TableDiff, name: str) -> str:
    found = diff.examples.get(name, [])
    return "; ".join(", ".join(f"{k}={v}" for k, v in key.items()) for key in found)
