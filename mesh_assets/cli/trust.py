"""``mesh stale`` and ``mesh invalidate``: what consumers may trust, after the fact."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def add_parsers(sub: argparse._SubParsersAction) -> None:
    stale = sub.add_parser(
        "stale",
        help="published partitions whose inputs were re-published or whose code changed since they were computed",
        description="Asks the Dagster webserver (the dagster.url setting; `make dev` serves one) for the staleness "
        "the UI shows, for every published partition of the table, or of every table of the mesh. Exits 1 when "
        "any partition is stale.",
    )
    stale.add_argument("asset", nargs="?", help="<domain>/<table> or <domain>.<table> (default: every table)")
    stale.set_defaults(handler=cmd_stale)
    invalidate = sub.add_parser(
        "invalidate",
        help="mark published partitions invalid, and every partition computed from them suspect",
        description="Fails the built-in `valid` check of the table's published partitions in the range (with the "
        "reason) and of every published partition downstream that read them: their consumers wait, as for any "
        "failed blocking check, until a run or backfill publishes them again. Needs only the instance.",
    )
    invalidate.add_argument("asset", help="<domain>/<table> or <domain>.<table>")
    invalidate.add_argument("--start", help="first partition (YYYY-MM-DD); omit for an unpartitioned table")
    invalidate.add_argument("--end", help="last partition (default: --start)")
    invalidate.add_argument("--reason", required=True, help="why: the owners of every consumer read it")
    invalidate.set_defaults(handler=cmd_invalidate)


def cmd_stale(args: argparse.Namespace, console: Console) -> int:
    """Asks the webserver whether it answers before importing Dagster or loading the mesh: without one, the
    command says so at once."""
    from mesh_assets.backfill.webserver import Webserver, WebserverError
    from mesh_assets.settings import get_settings

    settings = get_settings().dagster
    webserver = Webserver(settings.url, settings.timeout_seconds)
    try:
        webserver.answers()
    except WebserverError as exc:
        console.print(f"[red]error[/red] {exc}", highlight=False)
        return 2

    from mesh_assets.backfill import BackfillError, parse_asset_key
    from mesh_assets.backfill.stale import stale_partitions
    from mesh_assets.cli.commands import persistent_instance
    from mesh_assets.definitions import mesh_definitions

    graph = mesh_definitions().resolve_asset_graph()
    try:
        keys = [parse_asset_key(args.asset, graph)] if args.asset else sorted(graph.materializable_asset_keys)
    except BackfillError as exc:
        console.print(f"[red]error[/red] {exc}", highlight=False)
        return 2
    with persistent_instance() as instance:
        try:
            stale = stale_partitions(webserver, instance, keys)
        except WebserverError as exc:
            console.print(f"[red]error[/red] {exc}", highlight=False)
            return 2
    for partition in stale:
        console.print(partition.describe(), highlight=False, soft_wrap=True)
    console.print(f"{len(stale)} stale partition(s)" if stale else "Nothing is stale.")
    console.print("Invalid, suspect and check-failed partitions: mesh health", highlight=False)
    return 1 if stale else 0


def cmd_invalidate(args: argparse.Namespace, console: Console) -> int:
    """The invalidation is checked here first (a refusal creates no run), then recorded by the domain's
    ``<domain>__invalidate`` job executed in this process: a run in the UI, linked from every alert. The mesh is
    read from the catalog; the job is the one the domain's code location serves (so it follows what the
    location's plain assets read), built from the domain's own files only. Dagster's log of that run goes to
    ``<home>/logs/invalidate.log``; the screen shows what was marked."""
    from mesh_assets.assets.catalog import CatalogMesh
    from mesh_assets.backfill import BackfillError, parse_asset_key
    from mesh_assets.backfill.invalidate import invalidation
    from mesh_assets.backfill.plan import LAUNCHED_BY_TAG
    from mesh_assets.cli.capture import output_to
    from mesh_assets.cli.commands import mesh_catalog, persistent_instance
    from mesh_assets.definitions import INVALIDATE_OP, domain_definitions, invalidate_job_name, tool_tables
    from mesh_assets.graph.isolate import catalog_graph
    from mesh_assets.model.errors import SpecValidationError
    from mesh_assets.settings import get_settings

    settings = get_settings()
    tables = catalog_graph(mesh_catalog(), tool_tables(settings.domains_dir))
    mesh = CatalogMesh.of(tables)
    with persistent_instance() as instance:
        try:
            key = parse_asset_key(args.asset, mesh.graph)
            invalidation(instance, mesh, key, args.start, args.end, args.reason)
        except BackfillError as exc:
            console.print(f"[red]error[/red] {exc}; nothing marked", highlight=False, soft_wrap=True)
            return 2
        domain, op = key.path[0], f"{key.path[0]}__{INVALIDATE_OP}"
        config = {"table": key.to_user_string(), "reason": args.reason}
        config |= {k: v for k, v in (("start", args.start), ("end", args.end)) if v is not None}
        try:
            job = domain_definitions(settings.domains_dir / domain / "definitions.py").resolve_job_def(
                invalidate_job_name(domain)
            )
        except SpecValidationError as exc:
            for error in exc.errors:
                console.print(f"[red]error[/red] {error}", highlight=False)
            console.print(f"{domain}'s code location does not load: nothing marked", highlight=False)
            return 2
        with output_to(settings.home / "logs" / "invalidate.log"):  # Dagster's own records of the run
            result = job.execute_in_process(
                run_config={"ops": {op: {"config": config}}},
                instance=instance,
                tags={LAUNCHED_BY_TAG: "mesh invalidate"},
                raise_on_error=False,
            )
        if not result.success:
            [failure] = result.get_step_failure_events()
            console.print(f"[red]error[/red] {failure.step_failure_data.error.message.strip()}", highlight=False)
            return 2
    marked, problems = result.output_for_node(op)
    for m in marked:
        console.print(m.describe(), highlight=False, soft_wrap=True)
    for problem in problems:
        console.print(f"[yellow]warning[/yellow] {problem}", highlight=False)
    root = key.to_user_string()
    console.print(f"Recorded by run {result.run_id}.", highlight=False)
    console.print(f"Re-run or backfill {root} over the range to clear the marks (`mesh backfill {root} ...`).")
    return 0
