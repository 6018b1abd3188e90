"""``mesh lineage`` and the lineage side of ``mesh backfill --from-lineage``: the graph from the configured
source (the local event files, or the lineage server events are sent to)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg
    from rich.console import Console

    from mesh_assets.lineage.graph import LineageGraph
    from mesh_assets.settings import MeshSettings

FORMATS = ("table", "json", "mermaid", "dot")


def add_lineage_parser(sub: argparse._SubParsersAction) -> None:
    lineage = sub.add_parser(
        "lineage",
        help="the OpenLineage graph around a dataset or job, from the event files or the lineage server",
        description="Reads the lineage server's API (Marquez's /api/v1/lineage) when events are sent over HTTP "
        "(lineage.url, or OPENLINEAGE_URL / openlineage.yml when lineage.transport is unset), else the local files.",
    )
    lineage.add_argument(
        "node", nargs="?", help="node id (dataset:<ns>:<name>, job:<ns>:<name>), <domain>.<table>, or a path"
    )
    lineage.add_argument(
        "--flush",
        action="store_true",
        help="deliver the events the lineage server did not take (kept under <home>/lineage/undelivered/)",
    )
    direction = lineage.add_mutually_exclusive_group()
    direction.add_argument("--upstream", action="store_true")
    direction.add_argument("--downstream", action="store_true")
    lineage.add_argument("--depth", type=int, default=20)
    output = lineage.add_mutually_exclusive_group()
    output.add_argument("--format", choices=FORMATS, default="table", help="json is Marquez's lineage API shape")
    output.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    output.add_argument("--mermaid", dest="format", action="store_const", const="mermaid", help="--format mermaid")
    output.add_argument(
        "--columns", action="store_true", help="the column lineage of the node's dataset (a job's output), as Mermaid"
    )


def cmd_lineage(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table

    from mesh_assets.lineage.source import LineageUnavailable, lineage_around
    from mesh_assets.settings import get_settings

    if args.flush:
        return flush(console)
    if args.node is None:
        console.print("[red]error[/red] name a node (e.g. food_delivery.orders_7_days), or pass --flush")
        return 2
    try:
        graph, start = lineage_around(get_settings(), args.node, args.depth)
    except LineageUnavailable as exc:
        console.print(f"[red]error[/red] {exc}", highlight=False)
        return 2
    if args.columns:
        return print_columns(graph, start, console)
    direction = "upstream" if args.upstream else "downstream" if args.downstream else "both"
    sub = graph.subgraph(start, direction, args.depth)
    if args.format == "json":
        console.out(json.dumps(sub.to_marquez(), indent=2), highlight=False)
    elif args.format == "mermaid":
        console.out(sub.to_mermaid(), end="", highlight=False)
    elif args.format == "dot":
        console.out(sub.to_dot(), end="", highlight=False)
    else:
        table = Table(title=f"Lineage of {start} ({direction}, depth {args.depth})")
        for column in ("node", "type", "reads from", "writes to"):
            table.add_column(column)
        for node in sorted(sub.nodes.values(), key=lambda n: (n.type, n.id)):
            table.add_row(node.id, node.type, "\n".join(sorted(node.ins)), "\n".join(sorted(node.outs)))
        console.print(table)
    return 0


def flush(console: Console) -> int:
    """Deliver the waiting events: 0 when none is left, 1 when the server still does not take them."""
    from mesh_assets.lineage.emit import deliver_waiting, spool_dir
    from mesh_assets.settings import get_settings

    settings = get_settings()
    done = deliver_waiting(settings)
    if done is None:
        console.print("[red]error[/red] events are not sent to a lineage server (lineage.transport is not http)")
        return 2
    url, delivery = done
    if delivery.delivered or not delivery.waiting:
        said = f"delivered {delivery.delivered} waiting event(s) to {url}" if delivery.delivered else ""
        console.print(said or f"no events waiting for {url}", highlight=False)
    if delivery.waiting:
        console.print(
            f"[red]error[/red] {delivery.waiting} event(s) still waiting for {url} in {spool_dir(settings)}: "
            f"{delivery.error}",
            highlight=False,
        )
        return 1
    return 0


def print_columns(graph: LineageGraph, start: str, console: Console) -> int:
    from mesh_assets.lineage.graph import column_lineage_mermaid
    from mesh_assets.lineage.source import LineageUnavailable, column_lineage
    from mesh_assets.settings import get_settings

    try:
        found = column_lineage(get_settings(), graph, start)
    except LineageUnavailable as exc:
        console.print(f"[red]error[/red] {exc}", highlight=False)
        return 2
    if found is None:
        console.print(f"[red]error[/red] no column lineage recorded for {start}", highlight=False)
        return 2
    console.out(column_lineage_mermaid(*found), end="", highlight=False)
    return 0


def lineage_readers(settings: MeshSettings, root: str, depth: int = 50) -> Callable[[dg.AssetKey], list[dg.AssetKey]]:
    """The assets whose runs read an asset's output, as the lineage graph around ``root`` records them."""
    import dagster as dg

    from mesh_assets.lineage.source import lineage_around

    graph, _ = lineage_around(settings, root, depth)

    def readers(key: dg.AssetKey) -> list[dg.AssetKey]:
        job = graph.nodes.get(f"job:{settings.lineage.namespace_prefix}{key.path[0]}:{'.'.join(key.path)}")
        if job is None:
            return []
        found = {r for out in job.outs for r in graph.nodes[out].outs if graph.nodes[r].type == "JOB"}
        return sorted(dg.AssetKey(graph.nodes[r].name.split(".")) for r in found)

    return readers
