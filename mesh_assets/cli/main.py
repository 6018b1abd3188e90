"""``mesh``: the command line. Thin: parse arguments, call the library, print with rich.

Building the parser imports the standard library alone: ``mesh --help`` answers at once, and each command
imports rich, Dagster, Spark or dbt inside its handler, only when it needs them (tests/unit/test_cli_startup.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from mesh_assets.cli import change, datadiff, environments, health, maintenance, pause, testing, trust
from mesh_assets.cli.lineage import add_lineage_parser
from mesh_assets.cli.listing import add_arguments as add_list_arguments
from mesh_assets.engine.jars import EXTRAS

EXAMPLES = {
    "setup": "mesh setup",
    "demo": "mesh demo --days 3",
    "validate": "mesh validate --domain food_delivery",
    "list": "mesh list",
    "backfill": "mesh backfill food_delivery.orders --start 2021-06-04 --end 2021-06-06 --downstream --dry-run",
    "rebuild": "mesh rebuild food_delivery/orders --downstream --dry-run",
    "ingest": "mesh ingest --start 2021-06-15T00 --hours 3",
    "lineage": "mesh lineage food_delivery.orders_7_days --upstream --mermaid",
    "stale": "mesh stale food_delivery/orders",
    "invalidate": 'mesh invalidate food_delivery/orders --start 2021-06-03 --reason "refunds landed late"',
    "health": "mesh health food_delivery/orders",
    "plan": "mesh plan --base HEAD",
    "apply": "mesh apply --base HEAD --dry-run",
    "env": "mesh env list",
    "maintain": "mesh maintain --retired --dry-run",
    "restore": "mesh restore food_delivery/orders --to-version 3",
    "tables": "mesh tables --domain food_delivery",
    "pause": 'mesh pause food_delivery/orders --reason "source migration until Monday"',
    "resume": "mesh resume food_delivery/orders",
    "diff": "mesh diff food_delivery/orders --against /tmp/orders --from 2021-06-03 --to 2021-06-04",
    "test": "mesh test food_delivery/weekly_orders",
}
"""One line per subcommand that runs as typed after ``make demo`` (with ``.venv`` activated), shown in its help."""


class HelpWithExample(argparse.HelpFormatter):
    """Wraps descriptions as argparse does, but prints the example epilog as written: a command on one line."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("example"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def with_examples(root: argparse.ArgumentParser, commands: dict[str, argparse.ArgumentParser]) -> None:
    root.formatter_class = HelpWithExample
    root.epilog = f"example:\n  {EXAMPLES['validate']}\n\n`mesh <command> --help`: its options and an example."
    for name, sub in commands.items():
        sub.formatter_class = HelpWithExample
        sub.epilog = f"example:\n  {EXAMPLES[name]}"


class Version(argparse.Action):
    """``mesh --version``: the version pyproject.toml gives, as the installed package's metadata holds it
    (CHANGELOG.md says what changed in it); read only when asked, so building the parser reads no metadata."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print Mesh's version")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        sys.stdout.write(f"mesh {metadata.version('mesh-assets')}\n")
        parser.exit()


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="mesh", description="Data products as Dagster assets on Spark and Delta.")
    root.add_argument("--version", action=Version)
    sub = root.add_subparsers(dest="command", required=True)
    setup = sub.add_parser("setup", help="fetch and cache Delta Lake's jars (once; offline afterwards)")
    setup.add_argument(
        "--instance",
        choices=["sqlite", "postgres"],
        help="the Dagster instance's storage (default: the `instance` setting); postgres reads DAGSTER_PG_* variables",
    )
    setup.add_argument(
        "--jars",
        action="append",
        choices=EXTRAS,
        default=[],
        help="also fetch this optional jar set (repeatable; default: only the sets the settings use, e.g. s3a "
        "for an s3a:// warehouse)",
    )
    setup.add_argument(
        "--archive",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="archive Spark's classes for later drivers' JVMs (minutes once, then 2-3 CPU-seconds saved per "
        "driver: worth it for many drivers, as the test suite's; `make setup` and `make dev` skip it)",
    )
    demo = sub.add_parser("demo", help="land the example data and materialize the example mesh")
    demo.add_argument("--days", type=int, default=14, help="how many days of example data, from 2021-06-01 (1-30)")
    demo.add_argument(
        "--verbose", action="store_true", help="print dbt's, Spark's and Dagster's own logs instead of progress"
    )
    validate = sub.add_parser("validate", help="check every product against the governance rules")
    validate.add_argument("--domain", action="append", help="only this domain (repeatable)")
    validate.add_argument(
        "--lineage",
        action="store_true",
        help="also list undeclared reads of recent runs (from the lineage files, or the lineage server events go to)",
    )
    validate.add_argument("--runs", type=int, default=50, help="with --lineage: how many recent runs to report")
    listing = sub.add_parser(
        "list",
        help="domains, products, tables (dbt models too) with status, tier and owner; cross-domain and dbt edges",
        description="Every table of the mesh by domain and product, fitting 80 columns; --wide for a row per "
        "table with every field, --json for scripts.",
    )
    add_list_arguments(listing)
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
    backfill.add_argument(
        "--region", help="of a table partitioned by date and region, this region's dates alone (default: every region)"
    )
    backfill.add_argument(
        "--from-lineage",
        action="store_true",
        help="with --downstream: follow the lineage graph (files or lineage server) instead of the asset graph",
    )
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
    add_lineage_parser(sub)
    trust.add_parsers(sub)
    health.add_parser(sub)
    change.add_parsers(sub)
    environments.add_parsers(sub)
    datadiff.add_parser(sub)
    testing.add_parser(sub)
    maintenance.add_parsers(sub)
    pause.add_parsers(sub)
    with_examples(root, sub.choices)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        from mesh_assets.cli import commands

        handler = getattr(commands, f"cmd_{args.command}")
    from mesh_assets.cli.capture import warnings_to_log
    from mesh_assets.cli.errors import run_reported

    console = globals().get("console") or __getattr__("console")
    with warnings_to_log():
        return run_reported(args.command, lambda: int(handler(args, console) or 0), console)


def __getattr__(name: str) -> object:
    """``console``, rich's, made on first use (PEP 562): ``mesh --help`` never imports rich."""
    if name != "console":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from rich.console import Console

    globals()["console"] = Console()
    return globals()["console"]


if __name__ == "__main__":
    sys.exit(main())
