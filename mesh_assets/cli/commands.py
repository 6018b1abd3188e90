"""The ``mesh`` subcommands; each returns the process exit code."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import dagster as dg
from rich.console import Console
from rich.table import Table

from mesh_assets.settings import get_settings
from mesh_assets.spec.catalog import Catalog
from mesh_assets.spec.discovery import load_all
from mesh_assets.spec.validate import validate


def cmd_setup(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.engine.jars import provision

    jars = provision(get_settings().jars_path)
    console.print(f"[green]{len(jars)} jars cached in {get_settings().jars_path}[/green]")
    with persistent_instance() as instance:
        console.print(f"Dagster instance ready at {instance.root_directory}")
    return 0


INSTANCE_YAML = """\
# Written by mesh on first use: a local SQLite instance. Production uses dagster-postgres (docs/deployment.md).
telemetry:
  enabled: false
concurrency:
  pools:
    default_limit: 1
"""


def persistent_instance() -> dg.DagsterInstance:
    """The instance under ``.mesh/dagster`` that ``make dev`` shows (``DAGSTER_HOME`` wins if set)."""
    settings = get_settings()
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(settings.dagster_home)))
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
    return dg.DagsterInstance.get()


def cmd_demo(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.demo.run import DEMO_START, run_demo
    from mesh_assets.engine.resource import MeshResource
    from mesh_assets.factory.definitions import mesh_definitions

    defs = mesh_definitions()
    with persistent_instance() as instance:
        console.print(f"Dagster instance: {instance.root_directory}")
        console.print(f"Warehouse: {get_settings().warehouse_uri}")
        summary = run_demo(defs, instance, MeshResource(), DEMO_START, args.days)
    table = Table(title="Materialized by the demo")
    table.add_column("asset", no_wrap=True)
    table.add_column("partitions", no_wrap=True)
    table.add_column("rows per partition")
    for item in summary:
        parts = (
            f"{item.partitions[0]} .. {item.partitions[-1]} ({len(item.partitions)})"
            if item.partitions[0] != "-"
            else "(unpartitioned)"
        )
        table.add_row(item.asset, parts, " ".join(str(item.rows[p]) for p in item.partitions))
    console.print(table)
    return 0


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    domains = load_all(get_settings().domains_dir)
    errors = validate(domains, set(args.domain) if args.domain else None)
    for error in errors:
        console.print(f"[red]error[/red] {error}", highlight=False)
    products = sum(len(s.products) for name, s in domains.items() if not args.domain or name in args.domain)
    if errors:
        console.print(f"[red]{len(errors)} error(s)[/red] in {len(domains)} domain(s)")
        return 1
    console.print(f"[green]ok[/green]: {products} product(s) in {len(domains)} domain(s)")
    return 0


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    domains = load_all(get_settings().domains_dir)
    catalog = Catalog(domains)
    table = Table(title="Data products")
    for column in ("domain", "product", "table", "owner", "published", "partitioning", "kind"):
        table.add_column(column)
    edges = []
    for info in sorted(catalog.tables.values(), key=lambda i: (i.domain, i.product, i.table)):
        table.add_row(
            info.domain,
            info.product,
            info.table,
            info.owner,
            "yes" if info.published else "no",
            info.partitioning,
            "external" if info.external else "product",
        )
    for specs in domains.values():
        for product in specs.products:
            for t in product.transformations:
                for inp in t.inputs.values():
                    domain, name = inp.ref(product.domain)
                    if domain != product.domain:
                        edges.append(f"{domain}.{name} -> {product.domain}.{t.output.table}")
    console.print(table)
    console.print("Cross-domain edges:" if edges else "No cross-domain edges.")
    for edge in sorted(edges):
        console.print(f"  {edge}", highlight=False)
    return 0
