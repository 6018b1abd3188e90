"""``mesh maintain``, ``mesh restore`` and ``mesh tables``: Mesh's own tables kept fast, bounded and recoverable.

``maintain`` and ``restore`` are recorded as runs of the domain's ``<domain>__maintain`` / ``<domain>__restore``
jobs executed in this process (as ``mesh invalidate`` runs its job): the UI shows them, and the maintenance ops
take their tables' pools. ``tables`` reads the Delta logs alone.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def add_parsers(sub: argparse._SubParsersAction) -> None:
    maintain = sub.add_parser(
        "maintain",
        help="compact tables whose small files piled up and clean up replaced files past their retention",
        description="Runs each domain's <domain>__maintain job in this process: per table, holding its pool, "
        "Delta's OPTIMIZE on the "
        "partitions holding maintenance.small_files small files or more (Z-ordered by the output's zorder), then "
        "VACUUM with the tier's retention (maintenance.retention_hours, 7 days at least), skipped while a running "
        "run reads the table. Neither counts as new data: nothing goes stale, nothing downstream runs. With "
        "--retired: the tables of retired outputs no table reads, untouched for longer than their retention.",
    )
    maintain.add_argument("asset", nargs="*", help="<domain>/<table> (default: every product output)")
    maintain.add_argument("--domain", action="append", help="only this domain's tables (repeatable)")
    maintain.add_argument("--no-compact", dest="compact", action="store_false", help="clean up only")
    maintain.add_argument("--no-vacuum", dest="vacuum", action="store_false", help="compact only")
    maintain.add_argument(
        "--retired", action="store_true", help="delete the tables of retired outputs instead (see --dry-run)"
    )
    maintain.add_argument("--dry-run", action="store_true", help="with --retired: list what would be deleted")
    maintain.set_defaults(handler=cmd_maintain)
    restore = sub.add_parser(
        "restore",
        help="bring a table back to an earlier Delta version in one commit; mark what read later ones suspect",
        description="Runs the domain's <domain>__restore job in this process: Delta's RESTORE to the version (or "
        "the newest one committed at the time, UTC), a materialization with the new data version for every "
        "partition it changed (their checks run again), and what was computed from the withdrawn versions marked "
        "suspect as `mesh invalidate` marks it, until a backfill recomputes it. A version cleaned up is refused.",
    )
    restore.add_argument("asset", help="<domain>/<table>")
    target = restore.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-version", type=int, help="the Delta version to bring back")
    target.add_argument("--to-timestamp", help="the newest version committed at or before this time (UTC)")
    restore.set_defaults(handler=cmd_restore)
    tables = sub.add_parser(
        "tables",
        help="each table's files: count, small ones, bytes, last compaction and last clean-up",
        description="Reads each product output's Delta log (no Spark): live files, the small ones among them, "
        "their bytes, and when it was last compacted and cleaned up (UTC).",
    )
    tables.add_argument("asset", nargs="*", help="<domain>/<table> (default: every product output)")
    tables.add_argument("--domain", action="append", help="only this domain's tables (repeatable)")
    tables.set_defaults(handler=cmd_tables)


def _outputs(args: argparse.Namespace, console: Console) -> tuple[Any, list[Any]] | None:
    """The mesh from the catalog and the product outputs the arguments name; None (said) when one is unknown."""
    from mesh_assets.backfill import BackfillError, parse_asset_key
    from mesh_assets.cli.commands import mesh_catalog
    from mesh_assets.dbt.catalog import tool_tables
    from mesh_assets.graph.isolate import catalog_graph
    from mesh_assets.graph.resolve import TableKind
    from mesh_assets.settings import get_settings

    graph = catalog_graph(mesh_catalog(), tool_tables(get_settings().domains_dir))
    outputs = [t for t in graph.tables.values() if t.kind is TableKind.PRODUCT]
    if args.asset:
        from mesh_assets.assets.catalog import CatalogMesh

        asset_graph = CatalogMesh.of(graph).graph
        try:
            keys = {parse_asset_key(a, asset_graph) for a in args.asset}
        except BackfillError as exc:
            console.print(f"[red]error[/red] {exc}", highlight=False)
            return None
        outputs = [t for t in outputs if t.key in keys]
        if len(outputs) != len(keys):
            console.print("[red]error[/red] only product outputs are maintained by Mesh", highlight=False)
            return None
    if args.domain:
        outputs = [t for t in outputs if t.domain in set(args.domain)]
    return graph, sorted(outputs, key=lambda t: (t.domain, t.name))


def _execute(domain: str, job_name: str, run_config: dict, log: str, tag: str):
    """Run the domain's job in this process on the persistent instance, Dagster's own records to ``log``."""
    from mesh_assets.backfill.plan import LAUNCHED_BY_TAG
    from mesh_assets.cli.capture import output_to
    from mesh_assets.cli.commands import persistent_instance
    from mesh_assets.definitions import domain_definitions
    from mesh_assets.settings import get_settings

    settings = get_settings()
    job = domain_definitions(settings.domains_dir / domain / "definitions.py").resolve_job_def(job_name)
    with persistent_instance() as instance, output_to(settings.home / "logs" / log):
        return job.execute_in_process(
            run_config=run_config,
            instance=instance,
            tags={LAUNCHED_BY_TAG: tag},
            raise_on_error=False,
        )


def _failure(result: Any) -> str:
    failures = result.get_step_failure_events()
    return failures[0].step_failure_data.error.message.strip() if failures else "the run failed"


def cmd_maintain(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.maintenance.jobs import MAINTAIN_OP, maintain_job_name

    found = _outputs(args, console)
    if found is None:
        return 2
    graph, outputs = found
    if args.retired:
        return _retired(args, console, graph, outputs)
    if args.dry_run:
        console.print("[red]error[/red] --dry-run goes with --retired (maintenance itself deletes no live data)")
        return 2
    for retired in (t for t in outputs if not t.status.deployed):
        console.print(f"{retired.ref}: retired, not maintained (see --retired)", highlight=False, soft_wrap=True)
    outputs = [t for t in outputs if t.status.deployed]
    failed = 0
    for domain in sorted({t.domain for t in outputs}):
        op = f"{domain}__{MAINTAIN_OP}"
        tables = [t.name for t in outputs if t.domain == domain]
        config = {"ops": {op: {"config": {"tables": tables, "compact": args.compact, "vacuum": args.vacuum}}}}
        result = _execute(domain, maintain_job_name(domain), config, "maintenance.log", "mesh maintain")
        if not result.success:
            console.print(f"[red]error[/red] {domain}: {_failure(result)}", highlight=False, soft_wrap=True)
            failed += 1
            continue
        for done in result.output_for_node(op):
            console.print(done.describe(), highlight=False, soft_wrap=True)
        console.print(f"Recorded by run {result.run_id}.", highlight=False)
    return 1 if failed else 0


def _retired(args: argparse.Namespace, console: Console, graph: Any, outputs: list[Any]) -> int:
    from mesh_assets.maintenance.retired import delete, retired_tables
    from mesh_assets.storage.resource import MeshResource

    mesh = MeshResource()
    candidates = retired_tables(graph, outputs, mesh.registry, mesh.settings.maintenance)
    for candidate in candidates:
        console.print(candidate.describe(), highlight=False, soft_wrap=True)
    deletable = [c for c in candidates if c.deletable]
    if args.dry_run:
        console.print(f"Dry run: {len(deletable)} table(s) would be deleted; nothing deleted.")
        return 0
    for candidate in deletable:
        delete(mesh.registry.location(candidate.table.domain, candidate.table.name))
        console.print(f"deleted {candidate.table.ref} ({candidate.location})", highlight=False, soft_wrap=True)
    console.print(f"{len(deletable)} table(s) deleted.")
    return 0


def cmd_restore(args: argparse.Namespace, console: Console) -> int:
    """Checked here first (a refusal creates no run), then recorded by the domain's restore job."""
    from mesh_assets.maintenance.jobs import RESTORE_OP, restore_job_name
    from mesh_assets.maintenance.restore import RestoreRefused
    from mesh_assets.maintenance.restore_run import resolve_version, restorable
    from mesh_assets.storage.resource import MeshResource

    found = _outputs(argparse.Namespace(asset=[], domain=None), console)
    if found is None:
        return 2
    graph, _ = found
    domain = args.asset.replace(".", "/").split("/", 1)[0]
    try:
        table = restorable(graph, domain, args.asset)
        aim = resolve_version(MeshResource(), table, args.to_version, args.to_timestamp)
    except RestoreRefused as exc:
        console.print(f"[red]error[/red] {exc}; nothing restored", highlight=False, soft_wrap=True)
        return 2
    config = {"table": table.name, "to_version": aim.version}
    op = f"{domain}__{RESTORE_OP}"
    run_config = {"ops": {op: {"config": config}}}
    result = _execute(domain, restore_job_name(domain), run_config, "restore.log", "mesh restore")
    if not result.success:
        console.print(f"[red]error[/red] {_failure(result)}", highlight=False, soft_wrap=True)
        return 2
    done = result.output_for_node(op)
    keys = ", ".join(p or "-" for p in done.partitions) or "none"
    console.print(
        f"{done.ref}: restored to version {done.to_version} as version {done.version}; partitions: {keys}",
        highlight=False,
        soft_wrap=True,
    )
    for marked in done.suspects:
        console.print(marked.describe(), highlight=False, soft_wrap=True)
    for problem in done.problems:
        console.print(f"[yellow]warning[/yellow] {problem}", highlight=False)
    console.print(f"Recorded by run {result.run_id}.", highlight=False)
    if done.suspects:
        console.print(f"Backfill what read it to clear the suspects (`mesh backfill {done.ref} ... --downstream`).")
    return 0


def cmd_tables(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table as Grid

    from mesh_assets.maintenance.files import table_files
    from mesh_assets.storage.resource import MeshResource

    found = _outputs(args, console)
    if found is None:
        return 2
    _, outputs = found
    mesh = MeshResource()
    small = mesh.settings.maintenance.small_file_bytes
    grid = Grid("table", "files", "small", "bytes", "last compaction", "last clean-up", box=None, pad_edge=False)

    def when(moment: Any) -> str:
        return moment.strftime("%Y-%m-%d %H:%M") if moment else "never"

    for t in outputs:
        column = t.partition_column if t.grain.partitioned else None
        files = table_files(mesh.registry.location(t.domain, t.name), mesh.registry.s3, small, column)
        if files is None:
            grid.add_row(t.ref, "-", "-", "-", "not written", "")
            continue
        grid.add_row(
            t.ref, str(files.files), str(files.small), str(files.bytes), when(files.last_compaction),
            when(files.last_clean_up),
        )  # fmt: skip
    console.print(grid)
    return 0
