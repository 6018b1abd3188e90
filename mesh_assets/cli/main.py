"""``mesh``: the command line. Thin: parse arguments, call the library, print with rich."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console

from mesh_assets.cli import commands, trust

console = Console()


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="mesh", description="Data products as Dagster assets on Spark and Delta.")
    sub = root.add_subparsers(dest="command", required=True)
    setup = sub.add_parser("setup", help="fetch and cache Delta Lake's jars (once; offline afterwards)")
    setup.add_argument(
        "--instance",
        choices=["sqlite", "postgres"],
        help="the Dagster instance's storage (default: the `instance` setting); postgres reads DAGSTER_PG_* variables",
    )
    demo = sub.add_parser("demo", help="land the example data and materialize the example mesh")
    demo.add_argument("--days", type=int, default=14)
    validate = sub.add_parser("validate", help="check every product against the governance rules")
    validate.add_argument("--domain", action="append", help="only this domain (repeatable)")
    validate.add_argument(
        "--lineage", action="store_true", help="also list undeclared reads of recent runs (from the lineage files)"
    )
    validate.add_argument("--runs", type=int, default=50, help="with --lineage: how many recent runs to report")
    sub.add_parser("list", help="domains, products, tables, owners and cross-domain edges")
    backfill = sub.add_parser(
        "backfill",
        help="recompute an asset's partition range (and what reads it) as one Dagster backfill",
        description="Plans the partitions to recompute through the asset graph's partition mappings and launches "
        "one asset backfill through the Dagster webserver, as the UI does (the dagster.url setting, "
        "http://127.0.0.1:3000 by default), visible and cancellable on the Backfills page. The Dagster daemon "
        "executes it: run `make dev`. --dry-run needs neither.",
    )
    backfill.add_argument("asset", help="<domain>/<table> or <domain>.<table>")
    backfill.add_argument("--start", required=True, help="first partition (YYYY-MM-DD)")
    backfill.add_argument("--end", required=True, help="last partition (YYYY-MM-DD)")
    backfill.add_argument("--downstream", action="store_true", help="include every partition downstream of the range")
    backfill.add_argument("--dry-run", action="store_true", help="print the plan, launch nothing")
    backfill.add_argument(
        "--wait", action="store_true", help="follow the backfill until it ends (needs the daemon running)"
    )
    rebuild = sub.add_parser(
        "rebuild",
        help="rewrite a table with its new schema: every partition, one Dagster backfill (a dropped, renamed or "
        "retyped column)",
        description="Plans every partition of the table, first to last, and launches one asset backfill tagged "
        "mesh/rebuild=true through the Dagster webserver: its run replaces the whole table, and its schema, in one "
        "Delta commit. The Dagster daemon executes it: run `make dev`. --dry-run needs neither.",
    )
    rebuild.add_argument("asset", help="<domain>/<table> or <domain>.<table>")
    rebuild.add_argument("--downstream", action="store_true", help="rebuild every table that reads it too, whole")
    rebuild.add_argument("--dry-run", action="store_true", help="print the plan, launch nothing")
    rebuild.add_argument(
        "--wait", action="store_true", help="follow the backfill until it ends (needs the daemon running)"
    )
    ingest = sub.add_parser(
        "ingest",
        help="the example's simulated ingestion: land central's raw order events hour by hour",
        description="Lands the example mesh's central.raw_order_events (mesh_examples), one Delta commit per UTC "
        "hour, the way an outside writer would; the observer and the automation take it from there.",
    )
    ingest.add_argument("--start", required=True, help="first hour (YYYY-MM-DDTHH)")
    ingest.add_argument("--hours", type=int, default=1, help="how many hours, one Delta commit each")
    lineage = sub.add_parser("lineage", help="the OpenLineage graph around a dataset or job, from emitted events")
    lineage.add_argument("node", help="node id (dataset:<ns>:<name>, job:<ns>:<name>), <domain>.<table>, or a path")
    direction = lineage.add_mutually_exclusive_group()
    direction.add_argument("--upstream", action="store_true")
    direction.add_argument("--downstream", action="store_true")
    lineage.add_argument("--depth", type=int, default=20)
    output = lineage.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="Marquez lineage API shape")
    output.add_argument("--mermaid", action="store_true", help="Mermaid flowchart text")
    trust.add_parsers(sub)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    handler = getattr(args, "handler", None) or getattr(commands, f"cmd_{args.command}")
    return int(handler(args, console) or 0)


if __name__ == "__main__":
    sys.exit(main())
