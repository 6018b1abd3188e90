"""``mesh backfill`` and ``mesh rebuild``: print the plan, launch it through the webserver, follow it."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import dagster as dg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from mesh_assets.backfill import launch as launching
from mesh_assets.backfill.plan import BackfillError, BackfillPlan
from mesh_assets.compat import AssetGraph
from mesh_assets.settings import get_settings


def plan_and_launch(
    plan_for: Callable[[AssetGraph], BackfillPlan],
    instance: dg.DagsterInstance,
    args: argparse.Namespace,
    console: Console,
) -> int:
    """Plan over the whole mesh's asset graph and what the instance has published, print the plan (and what it
    leaves out), and (unless ``--dry-run``) launch it as one backfill through the webserver, as the UI does."""
    from mesh_assets.definitions import mesh_definitions

    graph = mesh_definitions().resolve_asset_graph()
    try:
        plan = plan_for(graph)
    except BackfillError as exc:
        console.print(f"[red]error[/red] {exc}", highlight=False)
        return 2
    print_plan(plan, console)
    if not plan.assets:
        console.print("[red]error[/red] nothing in the range can be computed; nothing launched", highlight=False)
        return 1
    if args.dry_run:
        console.print("Dry run: nothing launched.")
        return 0
    launched = launch(plan, console)
    if launched is None:
        return 1
    webserver, backfill_id = launched
    if not args.wait:
        return 0
    unpublished = lambda p: launching.not_published(instance, graph, plan, p)  # noqa: E731
    return wait_for_backfill(webserver, backfill_id, console, unpublished)


def launch(plan: BackfillPlan, console: Console) -> tuple[launching.Webserver, str] | None:
    """Launch ``plan`` as one backfill through the webserver of the ``dagster.url`` setting and print its link;
    None (and why) when the webserver did not take it."""
    settings = get_settings().dagster
    webserver = launching.Webserver(settings.url, settings.timeout_seconds)
    try:
        backfill_id = launching.launch_backfill(webserver, plan)
    except launching.WebserverError as exc:
        console.print(f"[red]error[/red] {exc}; nothing launched", highlight=False)
        return None
    console.print(f"Launched backfill [bold]{backfill_id}[/bold] through {webserver.url}")
    console.print(
        f"The Dagster daemon executes it (`make dev`); follow or cancel it at {webserver.url}/runs/b/{backfill_id}",
        highlight=False,
    )
    return webserver, backfill_id


def print_plan(plan: BackfillPlan, console: Console) -> None:
    title = plan.title or "Backfill plan"
    table = Table(title=f"{title}: {plan.partition_count} partition(s) of {len(plan.assets)} asset(s)")
    table.add_column("asset", no_wrap=True)
    table.add_column("partitions")
    table.add_column("count", justify="right")
    for asset in plan.assets:
        table.add_row(asset.key.to_user_string(), asset.describe(), str(asset.partition_count or "-"))
    console.print(table)
    for note in plan.notes:
        console.print(f"  {note}", highlight=False)
    if plan.left_out:
        console.print("Left out, as they cannot be computed:")
        for item in plan.left_out:
            console.print(f"  {item.describe()}", highlight=False)


def wait_for_backfill(
    webserver: launching.Webserver,
    backfill_id: str,
    console: Console,
    unpublished: Callable[[launching.BackfillProgress], dict[str, list[str]]],
    interval: float = 2.0,
) -> int:
    """Follow the backfill through the webserver until it ends; 0 when it published everything, else 1 with
    the partitions ``unpublished`` names."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console) as progress:
            state = launching.backfill_progress(webserver, backfill_id)
            task = progress.add_task(state.status, total=state.total or None)
            while True:
                state = launching.backfill_progress(webserver, backfill_id)
                progress.update(
                    task,
                    completed=state.done + state.failed,
                    total=state.total or None,
                    description=f"{state.status} ({state.failed} failed)" if state.failed else state.status,
                )
                if state.finished:
                    break
                time.sleep(interval)
    except launching.WebserverError as exc:
        console.print(f"[red]error[/red] {exc}; the backfill goes on without `--wait`", highlight=False)
        return 1
    ok = state.status in ("COMPLETED", "COMPLETED_SUCCESS") and not state.failed
    console.print(f"Backfill {backfill_id}: [{'green' if ok else 'red'}]{state.status}[/]")
    for asset, partitions in unpublished(state).items():
        console.print(f"  not published: {asset} {', '.join(partitions)}", highlight=False)
    return 0 if ok else 1
