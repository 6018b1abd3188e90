"""``mesh pause`` / ``mesh resume``: hold a product's automation (and its consumers') and let it catch up.

The state is kept in the Dagster instance (:mod:`mesh_assets.automation.pause`), where the daemon's automation
reads it; each of the product's tables shows it in the UI (an observation, ``mesh/paused``) and in ``mesh list``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def add_parsers(sub: argparse._SubParsersAction) -> None:
    pause = sub.add_parser(
        "pause",
        help="stop automation of a product's tables (their consumers wait too) until `mesh resume`",
        description="Automation requests no run of the product's tables, nor of the tables that read them, until "
        "`mesh resume`: their condition product_and_inputs_not_paused is false in the UI's Automation page, and the "
        "automation's log names the paused product and the reason. Manual runs and backfills still run. Kept in "
        "the Dagster instance, shown on each table in the UI (mesh/paused) and in `mesh list`.",
    )
    pause.add_argument("product", help="<domain>/<product>")
    pause.add_argument("--reason", required=True, help="why (shown to the owners of every table held back)")
    pause.set_defaults(handler=cmd_pause)
    resume = sub.add_parser(
        "resume",
        help="restart automation of a paused product: what became due while paused is requested",
        description="Lifts `mesh pause`: the next automation tick requests the partitions that became due while "
        "the product was paused (an input published meanwhile), and its consumers follow.",
    )
    resume.add_argument("product", help="<domain>/<product>")
    resume.set_defaults(handler=cmd_resume)


def cmd_pause(args: argparse.Namespace, console: Console) -> int:
    return _set(args.product, args.reason, console)


def cmd_resume(args: argparse.Namespace, console: Console) -> int:
    return _set(args.product, None, console)


def _set(product: str, reason: str | None, console: Console) -> int:
    from mesh_assets.automation.pause import paused_products, set_paused
    from mesh_assets.cli.commands import mesh_catalog, persistent_instance
    from mesh_assets.dbt.catalog import tool_tables
    from mesh_assets.graph.isolate import catalog_graph
    from mesh_assets.graph.resolve import TableKind
    from mesh_assets.settings import get_settings

    domain, _, name = product.replace(".", "/", 1).partition("/")
    graph = catalog_graph(mesh_catalog(), tool_tables(get_settings().domains_dir))
    tables = [t for t in graph.tables.values() if (t.domain, t.product) == (domain, name)]
    outputs = [t.key for t in tables if t.kind is not TableKind.EXTERNAL]
    if not outputs:
        known = sorted({f"{t.domain}/{t.product}" for t in graph.tables.values() if t.kind is not TableKind.EXTERNAL})
        console.print(
            f"[red]error[/red] no product {product!r} with outputs; products: {', '.join(known)}", soft_wrap=True
        )
        return 2
    with persistent_instance() as instance:
        was = paused_products(instance, [(domain, name)]).get((domain, name))
        if reason is None and was is None:
            console.print(f"{domain}/{name} is not paused", highlight=False)
            return 0
        pause = set_paused(instance, domain, name, outputs, reason)
    if pause is not None:
        console.print(f"{domain}/{name} {pause.describe()}; automation holds it and its consumers", highlight=False)
    else:
        console.print(f"{domain}/{name} resumed: automation requests what became due while paused", highlight=False)
    return 0
