"""The ``mesh`` subcommands; each returns the process exit code."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from rich.console import Console
from rich.table import Table

from mesh_assets.cli.lineage import cmd_lineage as cmd_lineage  # `mesh lineage`, dispatched by name
from mesh_assets.dbt.catalog import tool_tables
from mesh_assets.graph.catalog import DomainEntry
from mesh_assets.graph.isolate import catalog_graph, catalog_tables, discover_all, validate_catalog
from mesh_assets.graph.partition_counts import partition_count_warnings
from mesh_assets.graph.readers import deprecation_warnings
from mesh_assets.model.errors import SpecError
from mesh_assets.settings import ComputeLogSettings, MeshSettings, S3Settings, get_settings, scoped_environ

if TYPE_CHECKING:
    import dagster as dg

    from mesh_assets.graph.resolve import MeshGraph


def cmd_setup(args: argparse.Namespace, console: Console) -> int:
    """The jars the settings' engine and storage need (and the optional sets asked for), Spark's class-data
    archive unless ``--no-archive``, and the Dagster instance."""
    from mesh_assets.engine.jars import extras_for, provision
    from mesh_assets.engine.jvm import make_archive

    settings = get_settings()
    jars = provision(settings.jars_path, {*extras_for(settings), *getattr(args, "jars", [])})
    console.print(f"[green]{len(jars)} jars cached in {settings.jars_path}[/green]")
    if getattr(args, "archive", True):
        archive = make_archive(settings)
        console.print(f"Spark's class-data archive: {archive or 'none (no java on the PATH)'}")
    with persistent_instance(getattr(args, "instance", None)) as instance:
        storage = type(instance.run_storage).__name__
        console.print(f"Dagster instance ready at {instance.root_directory} ({storage})")
    return 0


WRITTEN_BY_MESH = "# Written by mesh setup, again when the instance setting changes (delete this line to keep edits)."
INSTANCE_STORAGE = {
    "sqlite": "",
    "postgres": """\
storage:
  postgres:
    postgres_db:
      hostname: {env: DAGSTER_PG_HOST}
      port: {env: DAGSTER_PG_PORT}
      username: {env: DAGSTER_PG_USER}
      password: {env: DAGSTER_PG_PASSWORD}
      db_name: {env: DAGSTER_PG_DB}
      scheme: postgresql+psycopg2
""",
}
"""Runs, event logs and schedules: SQLite files under DAGSTER_HOME, or one Postgres database that every code
location, the webserver and the daemon share (docs/deployment.md). Dagster reads the variables when it loads;
the scheme names the driver dagster-postgres installs (psycopg2), which SQLAlchemy 2.1 no longer defaults to."""
INSTANCE_COMMON = """\
telemetry:
  enabled: false
# A run whose worker dies is failed by its code server at once. The daemon fails runs that never start, or
# that outlive max_runtime_seconds (a backstop for a worker lost together with its code server; a run may
# set its own with the dagster/max_runtime tag), frees the pool slots a dead run still holds (else its
# table's writers would queue forever), and retries a run once when its worker crashed (never when a check
# or the code failed: a re-run of the same partitions is idempotent, a re-run of a bug is not).
run_monitoring:
  enabled: true
  poll_interval_seconds: 30
  start_timeout_seconds: 300
  max_runtime_seconds: 86400
  free_slots_after_run_end_seconds: 30
run_retries:
  enabled: true
  max_retries: 1
  retry_on_asset_or_op_failure: false
# Each domain's automation is evaluated in its own code server; the daemon asks for each sensor's tick on a
# thread of its own, so a domain whose evaluation is slow (or hangs until its timeout) delays only its own tick
# (bench/domain_isolation.py). The dbt models' automation is evaluated by the daemon itself, also on threads.
sensors:
  use_threads: true
  num_workers: 4
auto_materialize:
  use_threads: true
  num_workers: 4
"""


def compute_logs_yaml(logs: ComputeLogSettings, s3: S3Settings) -> str:
    """The instance's compute log manager: Dagster's local one unless the settings name a bucket."""
    if logs.bucket is None:
        return ""
    config = {"bucket": logs.bucket, "prefix": logs.prefix, "upload_interval": logs.upload_interval_seconds}
    if s3.endpoint:
        config |= {"endpoint_url": s3.endpoint, "use_ssl": s3.endpoint.startswith("https://")}
    if s3.region:
        config["region"] = s3.region
    block = {"module": "dagster_aws.s3.compute_log_manager", "class": "S3ComputeLogManager", "config": config}
    return yaml.safe_dump({"compute_logs": block}, sort_keys=False)


CONCURRENCY = """\
# Every run goes through the run queue, however it was launched (automation, the UI, `mesh backfill`, a
# schedule): the queue starts at most engine.max_runs of them at once, and a run whose table's pool is held
# by another run's write stays queued until that run ends (one slot per table: Delta never sees two writers
# of a table commit at once). A run waits; none fails for it.
concurrency:
  pools:
    default_limit: 1
  runs:
    max_concurrent_runs: {max_runs}
"""


def instance_yaml(kind: str, settings: MeshSettings | None = None) -> str:
    settings = settings or get_settings()
    logs = compute_logs_yaml(settings.compute_logs, settings.s3)
    concurrency = CONCURRENCY.format(max_runs=settings.engine.max_runs)
    return f"{WRITTEN_BY_MESH}\n{INSTANCE_STORAGE[kind]}{logs}{concurrency}{INSTANCE_COMMON}"


def persistent_instance(kind: str | None = None) -> dg.DagsterInstance:
    """The instance under ``.mesh/dagster`` that ``make dev`` shows (``DAGSTER_HOME`` wins if set); in an environment
    (the ``environment`` setting), always the environment's own SQLite instance.

    ``kind`` (default: the ``instance`` setting) picks its storage; a ``dagster.yaml`` that mesh did not
    write, or whose marker line was removed, is left as it is.
    """
    settings = get_settings()
    home = Path(os.environ.get("DAGSTER_HOME") or settings.dagster_home)
    if settings.environment is not None:  # an environment's own SQLite instance, never production's storage
        home, kind = settings.dagster_home, "sqlite"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    wanted = instance_yaml(kind or settings.instance, settings)
    current = config.read_text() if config.exists() else None
    if current is None or (current.startswith(WRITTEN_BY_MESH) and current != wanted):
        config.write_text(wanted)
    import dagster as dg

    # Dagster's public way to an instance reads DAGSTER_HOME; it is set only for that call, not for the process.
    with scoped_environ({"DAGSTER_HOME": str(home)}):
        return dg.DagsterInstance.get()


def cmd_demo(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.cli.demo import run_demo_command

    return run_demo_command(args, console, persistent_instance)


def mesh_catalog(retry: bool = False) -> dict[str, DomainEntry]:
    """Every domain's catalog entry, each domain's Python run in a process of its own."""
    settings = get_settings()
    return discover_all(settings.domains_dir, settings.home, settings.discovery_timeout_seconds, retry=retry)


def _domain_of(file: Path, domains_dir: Path) -> str:
    """The domain whose folder holds ``file`` (an error's file)."""
    try:
        return file.resolve().relative_to(domains_dir.resolve()).parts[0]
    except (ValueError, IndexError):
        return str(file)


def failing_domains(errors: list[SpecError]) -> str:
    """The domains ``errors`` are in, whose code locations fail to load."""
    return ", ".join(sorted({_domain_of(Path(e.file), get_settings().domains_dir) for e in errors}))


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.dbt.project import project_dir
    from mesh_assets.dbt.set_aside import parse_errors

    entries = mesh_catalog(retry=True)
    only = set(args.domain) if args.domain else None
    graph = catalog_graph(entries, tool_tables(get_settings().domains_dir))
    dbt_errors = parse_errors(project_dir(), only)  # dbt model files the last parse set aside, by owning domain
    errors = sorted({*validate_catalog(entries, only=only, graph=graph), *(e for _, e in dbt_errors)})
    for error in errors:
        console.print(f"[red]error[/red] {error}", highlight=False)
    chosen = [t for t in catalog_tables(entries) if only is None or t.domain in only]
    for warning in [*deprecation_warnings(graph, only), *partition_count_warnings(chosen)]:
        console.print(f"[yellow]warning[/yellow] {warning}", highlight=False)
    products = {(t.domain, t.product) for t in chosen}
    unread = getattr(args, "lineage", False) and report_undeclared_reads(console, args.runs) is None
    if errors:
        dbt_files = {e.file: domain for domain, e in dbt_errors}
        domains_dir = get_settings().domains_dir
        failing = sorted({dbt_files.get(e.file) or _domain_of(Path(e.file), domains_dir) for e in errors})
        console.print(f"[red]{len(errors)} error(s)[/red] in {len(entries)} domain(s)", highlight=False)
        console.print(f"domains that will fail to load: {', '.join(failing)}", highlight=False)
        return 1
    console.print(f"[green]ok[/green]: {len(products)} product(s) in {len(entries)} domain(s)")
    return 2 if unread else 0


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    """Every table that loads; then the errors of a domain whose specs fail, which is not listed in full (exit 1;
    with ``--json``, the errors go to stderr)."""
    from mesh_assets.automation.pause import paused_products
    from mesh_assets.cli.listing import print_listing

    entries = mesh_catalog()
    graph = catalog_graph(entries, tool_tables(get_settings().domains_dir))
    try:
        with persistent_instance() as instance:
            paused = frozenset(paused_products(instance, {(t.domain, t.product) for t in graph.tables.values()}))
    except Exception as exc:  # the listing comes from the files; only the pause state needs the instance
        Console(stderr=True).print(f"warning: which products are paused is unknown ({type(exc).__name__})")
        paused = frozenset()
    print_listing(graph, args, console, paused)
    failing = report_failing_domains(entries, graph, Console(stderr=True) if getattr(args, "json", False) else console)
    return 1 if failing else 0


def report_failing_domains(entries: dict[str, DomainEntry], graph: MeshGraph, console: Console) -> bool:
    """Print the errors of the domains whose specs fail, which a command over the catalog leaves out (their
    tables are not all known); whether there were any."""
    errors = validate_catalog(entries, graph=graph)
    for error in errors:
        console.print(f"[red]error[/red] {error}", highlight=False, soft_wrap=True)
    if errors:
        console.print(f"left out, as their code locations fail to load: {failing_domains(errors)}", highlight=False)
    return bool(errors)


def report_undeclared_reads(console: Console, runs: int) -> int | None:
    """Recent runs that read tables they do not declare, from the lineage files or the lineage server events
    go to; returns their count, or ``None`` when the server could not be read (said in red)."""
    from mesh_assets.lineage.graph import undeclared_reads
    from mesh_assets.lineage.source import LineageUnavailable, recent_events

    try:
        events, source = recent_events(get_settings())
    except LineageUnavailable as exc:
        console.print(f"[red]error[/red] lineage: undeclared reads not checked: {exc}", highlight=False)
        return None
    found = undeclared_reads(events, limit=runs)
    if not found:
        console.print(f"[green]lineage[/green]: no undeclared reads in recent runs ({source})", highlight=False)
        return 0
    table = Table(title=f"Undeclared reads in recent runs ({source})")
    for column in ("job", "time", "read without declaring", "run id"):
        table.add_column(column)
    for item in found:
        table.add_row(item.job, item.time, ", ".join(item.tables), item.run_id)
    console.print(table)
    return len(found)


def cmd_backfill(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.backfill import plan_backfill
    from mesh_assets.cli.backfills import plan_and_launch
    from mesh_assets.cli.lineage import lineage_readers
    from mesh_assets.lineage.source import LineageUnavailable

    readers = None
    if getattr(args, "from_lineage", False):
        try:
            readers = lineage_readers(get_settings(), args.asset)
        except LineageUnavailable as exc:
            console.print(f"[red]error[/red] {exc}; nothing planned", highlight=False)
            return 2
    with persistent_instance() as instance:
        return plan_and_launch(
            lambda graph: plan_backfill(
                graph,
                args.asset,
                args.start,
                args.end,
                downstream=args.downstream,
                instance=instance,
                children=readers,
                region=args.region,
            ),
            instance,
            args,
            console,
        )


def cmd_rebuild(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.backfill import plan_rebuild
    from mesh_assets.cli.backfills import plan_and_launch

    with persistent_instance() as instance:
        return plan_and_launch(
            lambda graph: plan_rebuild(graph, args.asset, downstream=args.downstream, instance=instance),
            instance,
            args,
            console,
        )


def cmd_ingest(args: argparse.Namespace, console: Console) -> int:
    """The example's simulated ingestion (``mesh_examples``): only the example mesh has it. Spark's JVM prints
    its own lines to ``<home>/logs/ingest.log``; the screen shows the hours landed."""
    from mesh_assets.cli.capture import output_to
    from mesh_examples.commands import ingest

    with output_to(get_settings().home / "logs" / "ingest.log") as screen:
        on_screen = Console(file=screen) if console.file is sys.stdout else console  # stdout is the log now
        return ingest(args, on_screen)
