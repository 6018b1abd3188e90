"""``mesh plan`` and ``mesh apply``: what a change to the mesh adds, breaks and makes stale, then the backfill
that applies it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg
    from rich.console import Console

    from mesh_assets.change import ChangePlan, Side, TableDiff
    from mesh_assets.compat import AssetGraph

MARK = {"added": "+", "removed": "-", "changed": "~"}
BASE_HELP = "a git ref to compare with, e.g. origin/main (default: what the instance last published)"


def add_parsers(sub: argparse._SubParsersAction) -> None:
    plan = sub.add_parser(
        "plan",
        help="what a change adds, removes and breaks, and the partitions it makes stale, before it is applied",
        description="Compares the working tree's mesh with a base: a git ref (its domains loaded in processes of "
        "their own) or, without --base, what the instance last published (the code versions and revisions its "
        "materializations recorded). Prints the products and tables added, removed and changed (spec fields, SQL "
        "or code), schema changes against the published tables, additive or breaking, the readers a breaking "
        "change affects in every domain with their owners, and the partitions to recompute with their rows. "
        "Exits 1 on a breaking change to a published table, which belongs in a new major version: gate pull "
        "requests on it.",
    )
    plan.add_argument("--base", help=BASE_HELP)
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.set_defaults(handler=cmd_plan)
    apply = sub.add_parser(
        "apply",
        help="launch exactly the partitions `mesh plan` lists as one Dagster backfill",
        description="Plans as `mesh plan` does and launches its partitions as one asset backfill through the Dagster "
        "webserver (the dagster.url setting), visible and cancellable on the Backfills page; the daemon executes "
        "it. Refuses a plan with a breaking change. --dry-run prints the plan and launches nothing. --env NAME "
        "computes the plan's tables for a range of days into environment NAME instead, over production's data "
        "read in place, on the environment's own instance (`mesh env`): production is never written.",
    )
    apply.add_argument("--base", help=BASE_HELP)
    apply.add_argument("--dry-run", action="store_true", help="print the plan, launch nothing")
    apply.set_defaults(handler=cmd_apply)


def make_plan(base: str | None, instance: dg.DagsterInstance) -> ChangePlan | list[str]:
    """The plan of the working tree against ``base``; the problems instead when there is none to make."""
    made = plan_and_side(base, instance)
    return made if isinstance(made, list) else made[0]


def plan_and_side_or_say(
    base: str | None, instance: dg.DagsterInstance, console: Console
) -> tuple[ChangePlan, Side, AssetGraph | None] | None:
    """:func:`plan_and_side`, or None once its problems are printed (the caller exits 2)."""
    made = plan_and_side(base, instance)
    if isinstance(made, list):
        _problems(made, False, console)
        return None
    return made


def plan_and_side(
    base: str | None, instance: dg.DagsterInstance
) -> tuple[ChangePlan, Side, AssetGraph | None] | list[str]:
    """The plan, the working tree's mesh and its asset graph (None when nothing changed); or the problems."""
    from mesh_assets.change import (
        BaseUnavailable,
        InstanceRecords,
        compare_models_with_instance,
        compare_products,
        compare_tables,
        compare_with_instance,
        git_entries,
        plan_change,
        side_of,
    )
    from mesh_assets.cli.commands import mesh_catalog
    from mesh_assets.dbt.catalog import tool_tables
    from mesh_assets.graph.isolate import validate_catalog
    from mesh_assets.settings import get_settings

    settings = get_settings()
    if problem := _prepare_edited_models(settings.warehouse_uri):
        return [problem]
    entries = mesh_catalog(retry=True)
    work = side_of("working tree", entries, tool_tables(settings.domains_dir))
    errors = validate_catalog(entries, graph=work.graph)
    if errors:
        return [str(e) for e in errors] + ["the working tree does not pass governance (mesh validate): nothing planned"]
    records = InstanceRecords(instance)
    if base is None:
        products, tables = compare_with_instance(work, records)
    else:
        try:
            timeout = settings.discovery_timeout_seconds
            old = side_of(base, git_entries(base, settings.domains_dir, timeout, working=entries))
        except BaseUnavailable as exc:
            return [f"{exc}: nothing planned"]
        products, tables = compare_products(old, work), compare_tables(old, work, records)
    tables += compare_models_with_instance(work, records)  # dbt models: against production's records, always
    graph = None
    if tables:  # the asset graph's partition mappings, for the partitions to recompute: no change needs none
        from mesh_assets.definitions import mesh_definitions

        graph = mesh_definitions().resolve_asset_graph()
    return plan_change(base or "instance", products, tables, graph, instance, records), work, graph


def _prepare_edited_models(warehouse: str) -> str | None:
    """Prepare dbt's manifest again when a model's SQL was edited since it was prepared, so the plan sees the
    working tree's models (dbt parses, no Spark); the problem when dbt cannot parse the project."""
    from mesh_assets.dbt.project import edited_models, prepare
    from mesh_assets.dbt.set_aside import ParseFailed

    if not edited_models():
        return None
    try:
        prepare(warehouse)
    except ParseFailed as exc:
        return f"dbt could not parse the project: {exc}: nothing planned"
    return None


def cmd_plan(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.cli.commands import persistent_instance

    with persistent_instance() as instance:
        plan = make_plan(args.base, instance)
    if isinstance(plan, list):
        return _problems(plan, args.json, console)
    if args.json:
        sys.stdout.write(json.dumps(plan.to_json(), indent=2) + "\n")
    else:
        print_change_plan(plan, console)
    return plan.exit_code


def cmd_apply(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.cli.backfills import launch
    from mesh_assets.cli.commands import persistent_instance

    with persistent_instance() as instance:
        plan = make_plan(args.base, instance)
    if isinstance(plan, list):
        return _problems(plan, False, console)
    print_change_plan(plan, console)
    if plan.refused:
        console.print("[red]error[/red] a breaking change to a published table: nothing launched", highlight=False)
        return 1
    if not plan.recompute:
        console.print("Nothing to recompute: nothing launched.")
        return 0
    if args.dry_run:
        console.print("Dry run: nothing launched.")
        return 0
    return 0 if launch(plan.backfill(), console) is not None else 1


def _problems(problems: list[str], as_json: bool, console: Console) -> int:
    if as_json:
        sys.stdout.write(json.dumps({"errors": problems, "exit_code": 2}, indent=2) + "\n")
    for problem in [] if as_json else problems:
        console.print(f"[red]error[/red] {problem}", highlight=False)
    return 2


def _table_lines(diff: TableDiff) -> list[str]:
    what = [*diff.fields, *([f"{diff.code} changed"] if diff.code else [])]
    version = f" (version {diff.table.version})" if diff.table.version > 1 else ""
    lines = [f"  {MARK[diff.change]} {diff.table.ref}{version}" + (f": {', '.join(what)}" if what else "")]
    if diff.schema is not None:
        kind = "additive" if diff.schema.additive else "BREAKING"
        lines.append(f"      schema against the {diff.schema_against}: {diff.schema.describe()} ({kind})")
    if diff.breaking:
        where = "published" if diff.gating else "internal"
        lines.append(f"      breaking ({where}): {'; '.join(diff.breaking)}")
        lines += [f"      read by {c.describe()}" for c in diff.consumers] or ["      read by no table of the mesh"]
    return lines


def print_change_plan(plan: ChangePlan, console: Console) -> None:
    """The plan as a domain team reads it in a pull request's CI log."""
    from rich.table import Table

    console.print(f"Plan: the working tree against {plan.base}", highlight=False)
    if not plan.products and not plan.tables:
        console.print("No change.")
    if plan.products:
        console.print("Products:")
    for product in plan.products:
        fields = f": {', '.join(product.fields)}" if product.fields else ""
        console.print(f"  {MARK[product.change]} {product.ref}{fields}", highlight=False)
    if plan.tables:
        console.print("Tables:")
    for line in [line for diff in plan.tables for line in _table_lines(diff)]:
        console.print(line, highlight=False)
    if plan.recompute:
        title = f"Partitions to recompute (`mesh apply`): {plan.partition_count} of {len(plan.recompute)} table(s)"
        table = Table(title=title)
        for column, justify in (("table", "left"), ("partitions", "left"), ("count", "right"), ("rows", "right")):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        table.add_column("why")
        for item in plan.recompute:
            rows = f"{item.rows:,}" if item.rows is not None else "-"
            count = str(item.asset.partition_count or "-")
            table.add_row(item.asset.key.to_user_string(), item.asset.describe(), count, rows, item.reason)
        console.print(table)
    for item in plan.left_out:
        console.print(f"  left out, as it cannot be computed: {item.describe()}", highlight=False)
    if plan.refused:
        console.print(
            f"[red]refused[/red]: {len(plan.refused)} breaking change(s) to published tables", highlight=False
        )
        for diff in plan.refused:
            nxt = diff.table.version + 1
            console.print(
                f"  {diff.table.ref}: publish the change as version {nxt} beside it (version: {nxt}), and deprecate "
                "this one with a sunset (status: deprecated, sunset: <date>) until its readers move",
                highlight=False,
            )
