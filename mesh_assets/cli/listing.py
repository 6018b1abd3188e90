"""``mesh list``: every table of the mesh, products and dbt models alike, by domain and product, with its status
and tier, then the edges between domains and those through dbt models.

The default fits 80 columns (a heading per domain and per product, the product's owner beside it); ``--wide``
prints one row per table with every field; ``--json`` the same as JSON, for scripts. A product whose automation
is paused (``mesh pause``) has ``paused`` after its tables' status. A table partitioned by date and region has its
regions on a line under it (in ``--json``, with each region's time zone, where its days start).
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import groupby
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from mesh_assets.graph.resolve import MeshGraph, Table

FIELDS = (
    "domain",
    "product",
    "table",
    "version",
    "status",
    "tier",
    "owner",
    "published",
    "partitioning",
    "kind",
    "table_kind",
    "regions",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--wide", action="store_true", help="one row per table with every field (needs ~150 columns)")
    shape.add_argument("--json", action="store_true", help="every table and edge as JSON")


def fields(table: Table, paused: frozenset[tuple[str, str]] = frozenset()) -> dict[str, Any]:
    return {
        "domain": table.domain,
        "product": table.product,
        "table": table.name,
        "version": table.version,
        "status": status(table, paused),
        "tier": str(table.tier),
        "owner": table.owner,
        "published": table.published,
        "partitioning": table.grain.name,
        "kind": table.kind.value,
        "table_kind": "-" if table.external else table.table_kind.describe(),
        "regions": [{"region": r, "zone": z} for r, z in zip(table.regions, table.zones, strict=True)],
    }


def status(table: Table, paused: frozenset[tuple[str, str]]) -> str:
    """The table's lifecycle, and ``paused`` when its product's automation is."""
    return table.lifecycle() + (", paused" if (table.domain, table.product) in paused else "")


def edges(graph: MeshGraph) -> list[dict[str, str]]:
    """Each read between two tables of the mesh that crosses domains or involves a dbt model, by reader."""
    out = []
    for table in sorted(graph.tables.values(), key=lambda t: t.ref):
        for domain, name in sorted(table.inputs):
            source = graph.tables.get((domain, name))
            if source is None:
                continue
            dbt = "dbt" in (source.kind.value, table.kind.value)
            if domain != table.domain or dbt:
                out.append({"from": source.ref, "to": table.ref, "cross_domain": domain != table.domain, "dbt": dbt})
    return out


def print_listing(
    graph: MeshGraph, args: argparse.Namespace, console: Console, paused: frozenset[tuple[str, str]] = frozenset()
) -> None:
    tables = sorted(graph.tables.values(), key=lambda t: (t.domain, t.product, t.name))
    found = edges(graph)
    if getattr(args, "json", False):
        listing = {"tables": [fields(t, paused) for t in tables], "edges": found}
        sys.stdout.write(json.dumps(listing, indent=2) + "\n")
        return
    for line in wide(tables, paused) if getattr(args, "wide", False) else compact(tables, paused):
        console.print(line, highlight=False, soft_wrap=True)
    products = {(t.domain, t.product) for t in tables}
    domains = {t.domain for t in tables}
    dbt = sum(t.kind.value == "dbt" for t in tables)
    models = f" ({dbt} dbt model(s))" if dbt else ""
    console.print(f"{len(tables)} table(s){models} of {len(products)} product(s) in {len(domains)} domain(s)")
    cross = [e for e in found if e["cross_domain"]]
    through_dbt = [e for e in found if e["dbt"]]
    for title, chosen in (("Cross-domain edges", cross), ("dbt edges", through_dbt)):
        console.print(f"{title}:" if chosen else f"No {title[0].lower()}{title[1:]}.", highlight=False)
        for edge in chosen:
            console.print(f"  {edge['from']} -> {edge['to']}", highlight=False, soft_wrap=True)


NAME_WIDTH = 42
"""The table-name column of the default listing: with the other columns, 80 characters; a longer name gets a
line of its own."""


def compact(tables: list[Table], paused: frozenset[tuple[str, str]] = frozenset()) -> list[str]:
    """A heading per domain and product (with its owner), a line per table: what fits 80 columns."""
    from rich.markup import escape

    grain = max([6, *(len(t.grain.name) for t in tables)])  # ``monthly`` takes its extra column from the name's
    width = NAME_WIDTH - (grain - 6)
    lines = [f"{'table':<{width}} {'kind':<8} {'grain':<{grain}} tier published status"]
    for (domain, product), rows in groupby(tables, key=lambda t: (t.domain, t.product)):
        group = list(rows)
        lines.append(f"[bold]{domain}[/bold] / {product} ({escape(group[0].owner)})")
        for t in group:
            name = f"  {t.name}" + (f" v{t.version}" if t.version > 1 else "")
            if len(name) > width:
                lines.append(name)
                name = ""
            published, state = "yes" if t.published else "no", status(t, paused)
            columns = f"{t.kind.value:<8} {t.grain.name:<{grain}} {t.tier!s:<4} {published:<9} {state}"
            lines.append(f"{name:<{width}} {columns}")
            if t.regions:
                lines.append(f"    regions: {', '.join(t.regions)}")
    return lines


def wide(tables: list[Table], paused: frozenset[tuple[str, str]] = frozenset()) -> list[str]:
    """A row per table with every field, columns as wide as their longest value: ~150 characters."""
    rows = [list(FIELDS)] + [[_text(f, v) for f, v in fields(t, paused).items()] for t in tables]
    widths = [max(len(row[i]) for row in rows) for i in range(len(FIELDS))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _text(field: str, value: object) -> str:
    if field == "version":
        return f"v{value}"
    if isinstance(value, list):  # regions
        return ",".join(r["region"] for r in value) or "-"
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)
