"""``mesh health``: per table, the published partitions consumers should not trust now, each with why and the
command that clears it: invalidated and suspect partitions (``mesh invalidate``), those a check failed (both
from the instance), and stale ones (from the webserver, when one answers)."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from itertools import groupby
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg
    from rich.console import Console

    from mesh_assets.backfill.health import Unhealthy
    from mesh_assets.backfill.webserver import Webserver


def add_parser(sub: argparse._SubParsersAction) -> None:
    health = sub.add_parser(
        "health",
        help="invalid, suspect, check-failed and stale partitions per table, with the command that clears them",
        description="Lists, per table, the published partitions whose `valid` check was failed by `mesh "
        "invalidate` (invalid) or by an invalidation upstream (suspect), those whose latest check on their "
        "current data failed (from the instance), and the stale ones (asked of the Dagster webserver, the "
        "dagster.url setting, when it answers; without one the list says so). Each with the reason and the "
        "command that clears it. Exits 1 when anything is listed.",
    )
    health.add_argument("asset", nargs="?", help="<domain>/<table> or <domain>.<table> (default: every table)")
    health.set_defaults(handler=cmd_health)


def cmd_health(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.backfill.health import check_keys, unhealthy_partitions
    from mesh_assets.backfill.webserver import Webserver, WebserverError
    from mesh_assets.cli.commands import mesh_catalog, persistent_instance, report_failing_domains
    from mesh_assets.dbt.catalog import tool_tables
    from mesh_assets.graph.isolate import catalog_graph
    from mesh_assets.graph.resolve import TableKind
    from mesh_assets.settings import get_settings

    settings = get_settings()
    entries = mesh_catalog()
    graph = catalog_graph(entries, tool_tables(settings.domains_dir))
    tables = list(graph.tables.values())
    if args.asset:
        wanted = args.asset.replace(".", "/", 1)
        tables = [t for t in tables if f"{t.domain}/{t.name}" == wanted]
        if not tables:
            console.print(f"[red]error[/red] unknown table {args.asset!r}", highlight=False)
            return 2
    webserver = Webserver(settings.dagster.url, settings.dagster.timeout_seconds)
    with persistent_instance() as instance:
        found = unhealthy_partitions(instance, check_keys(tables))
        try:
            webserver.answers()
            found += _stale(webserver, instance, [t.key for t in tables if t.kind is not TableKind.EXTERNAL])
            unasked = None
        except WebserverError as exc:
            unasked = str(exc)
    for line in listing(found, console.width):
        console.print(line, highlight=False, soft_wrap=True)
    if unasked:
        console.print(f"[yellow]stale partitions not listed[/yellow]: {unasked}", highlight=False)
    what = "invalid, suspect or failing a check" if unasked else "invalid, suspect, failing a check or stale"
    tables_hit = len({u.key for u in found})
    summary = f"{len(found)} partition(s) of {tables_hit} table(s) {what}" if found else f"No partition is {what}."
    console.print(summary, highlight=False)
    failing = report_failing_domains(entries, graph, console)  # their tables were not looked at
    return 1 if found or failing else 0


def _stale(webserver: Webserver, instance: dg.DagsterInstance, keys: list[dg.AssetKey]) -> list[Unhealthy]:
    from mesh_assets.backfill.health import Unhealthy
    from mesh_assets.backfill.stale import stale_partitions

    stale = stale_partitions(webserver, instance, keys)
    return [Unhealthy(s.key, s.partition, "stale", "; ".join(s.reasons)) for s in stale]


def listing(found: list[Unhealthy], width: int = 80) -> list[str]:
    """Per table, its partitions grouped by state and reason (wrapped at ``width``), each group with the command
    that clears it (on one line, to copy)."""
    lines = []
    order = {"invalid": 0, "suspect": 1, "check failed": 2, "stale": 3}
    for key, in_table in groupby(sorted(found, key=lambda u: u.key.path), key=lambda u: u.key):
        name = key.to_user_string()
        lines.append(name)
        rows = sorted(in_table, key=lambda u: (order.get(u.state, 9), u.reason, u.partition or ""))
        for (state, reason), grouped in groupby(rows, key=lambda u: (u.state, u.reason)):
            group = list(grouped)
            partitions = [u.partition for u in group]
            text = f"{state} {_span(partitions)}: {reason}"
            lines += textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False)
            sources = sorted({source for u in group for source in u.sources})
            lines += [f"    clear: {command}" for command in clearing(name, state, partitions, sources)]
    return lines


def _span(partitions: list[str | None]) -> str:
    keys = sorted(p for p in partitions if p)
    if not keys:
        return "(the whole table)"
    return keys[0] if len(keys) == 1 else f"{keys[0]}..{keys[-1]} ({len(keys)})"


def clearing(name: str, state: str, partitions: list[str | None], sources: Sequence[str] = ()) -> list[str]:
    """The commands that publish the partitions again, so that their checks run anew on what they read: an
    invalidated table with its readers; a suspect's invalid sources with theirs (it would wait for them alone)."""
    if state == "suspect" and sources:
        by_table: dict[str, list[str | None]] = {}
        for source in sources:
            table, _, partition = source.partition(" ")
            by_table.setdefault(table, []).append(partition or None)
        return [_publish(table, keys, downstream=True) for table, keys in sorted(by_table.items())]
    return [_publish(name, partitions, downstream=state == "invalid")]


def _publish(name: str, partitions: list[str | None], downstream: bool) -> str:
    keys = sorted(p for p in partitions if p)
    command = f"mesh backfill {name} --start {keys[0]} --end {keys[-1]}" if keys else f"mesh rebuild {name}"
    return command + (" --downstream" if downstream else "")
