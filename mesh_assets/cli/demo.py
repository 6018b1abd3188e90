"""``mesh demo``: progress on the screen, other tools' logs in ``<home>/logs/demo.log``, a summary that fits 80
columns and reads the same on every run."""

from __future__ import annotations

import argparse
import contextlib
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
from rich import box
from rich.console import Console, RenderableType
from rich.table import Table

from mesh_assets.cli.capture import output_to, warnings_to_stderr
from mesh_assets.settings import Jit, get_settings

if TYPE_CHECKING:
    from mesh_examples.progress import DemoProgress
    from mesh_examples.run import AssetSummary


def run_demo_command(args: argparse.Namespace, console: Console, instance_for: Callable[[], dg.DagsterInstance]) -> int:
    """Run the demo with its logs in the log file (on the screen with ``--verbose``); 1 when anything failed."""
    from mesh_assets.definitions import mesh_definitions
    from mesh_assets.storage.resource import MeshResource
    from mesh_examples.progress import DemoProgress
    from mesh_examples.run import DEMO_START, HISTORY_DAYS, run_demo

    if not 1 <= args.days <= HISTORY_DAYS:
        console.print(
            f"[red]error[/red] --days {args.days}: the example's history is June 2021, "
            f"from 1 to {HISTORY_DAYS} days; nothing landed",
            highlight=False,
        )
        return 2
    log = get_settings().home / "logs" / "demo.log"
    defs = mesh_definitions()  # a mesh that fails governance stops here, its errors on the screen, before Spark
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings_to_stderr())
        if not args.verbose:
            console = Console(file=stack.enter_context(output_to(log)))
        instance = stack.enter_context(instance_for())
        print_stripped(console, f"Dagster instance: {shown(Path(instance.root_directory))}")
        print_stripped(console, f"Warehouse: {get_settings().warehouse_uri}")
        progress = DemoProgress(console, live=not args.verbose)
        try:
            with progress:  # stopped before the summary, which then follows the bars rather than printing above
                summary = run_demo(defs, instance, MeshResource(), DEMO_START, args.days, progress, quick_session)
        except Exception as exc:
            traceback.print_exc()
            console.print(f"[red]demo failed[/red]: {exc}", highlight=False)
            return report_log(console, log, args.verbose, 1)
        return report(console, summary, progress, log, args.verbose)


def quick_session() -> None:
    """Start the demo's session, when it has Spark work, with quick compilation unless ``spark.jit`` is
    configured: its JVM lives a minute over small data, where C2's compiling costs more than it saves
    (:mod:`mesh_assets.engine.jvm`)."""
    from mesh_assets.engine.session import get_spark

    settings = get_settings()
    if "jit" not in settings.spark.model_fields_set:
        get_spark(settings.model_copy(update={"spark": settings.spark.model_copy(update={"jit": Jit.QUICK})}))


def print_stripped(console: Console, renderable: RenderableType, highlight: bool = False) -> None:
    """``renderable`` as the console wraps it, with no trailing spaces: neither a table's padding to its width
    nor the space left where a long path was wrapped onto its own line shows in a CI log."""
    with console.capture() as captured:
        console.print(renderable, highlight=highlight)
    for line in captured.get().splitlines():
        console.out(line.rstrip(), highlight=False)


def report(console: Console, summary: list[AssetSummary], progress: DemoProgress, log: Path, verbose: bool) -> int:
    """The summary, then each failure (the table and the partitions refused) and each product left incomplete,
    then where the full log is; 1 when anything failed."""
    print_stripped(console, summary_table(summary), highlight=True)
    for message in progress.failures:
        console.print(f"[red]failed[/red]: {message}", highlight=False)
    for line in progress.incomplete():
        console.print(f"[red]not published[/red]: {line}", highlight=False)
    failed = bool(progress.failures or progress.incomplete())
    return report_log(console, log, verbose, 1 if failed else 0)


def report_log(console: Console, log: Path, verbose: bool, code: int) -> int:
    if not verbose:
        console.print(f"Full log (dbt, Spark, Dagster): {shown(log)}", highlight=False, soft_wrap=True)
    return code


def shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies under it (the README's ``.mesh/...``)."""
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    return str(path)


def summary_table(summary: list[AssetSummary]) -> Table:
    """Domains as headings, tables under them: partitions published, rows, and the rows of the smallest and
    largest partition; a table partitioned by date and region has a line per region under it. No timings or run
    ids, so two runs over the same data print the same table."""
    dated = sorted({p.split("|")[0] for item in summary for p in item.partitions if p != "-"})
    span = f" ({dated[0]} .. {dated[-1]})" if dated else ""
    table = Table(title=f"Published by the demo{span}", box=box.SIMPLE_HEAD, show_edge=False, title_justify="left")
    table.add_column("domain / table", overflow="fold")
    table.add_column("partitions", justify="right")
    table.add_column("rows", justify="right")
    table.add_column("per\npartition", justify="right")
    domain = None
    for item in summary:
        name_domain, name = item.asset.split("/", 1)
        if name_domain != domain:
            domain = name_domain
            table.add_row(f"[bold]{domain}[/bold]")
        partitions = "whole" if item.partitions == ["-"] else str(len(item.partitions))
        table.add_row(f"  {name}", partitions, *counted([item.rows[p] for p in item.partitions]))
        regions: dict[str, list[int]] = {}
        for p in item.partitions:
            if "|" in p:
                regions.setdefault(p.split("|", 1)[1], []).append(item.rows[p])
        for region, counts in sorted(regions.items()):
            table.add_row(f"    {region}", str(len(counts)), *counted(counts))
    return table


def counted(counts: list[int]) -> tuple[str, str]:
    """The rows of some partitions, and those of the smallest and largest (one number when all are the same)."""
    spread = "" if len(counts) < 2 else str(counts[0]) if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
    return str(sum(counts)), spread
