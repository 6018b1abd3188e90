"""``mesh``: the command line. Thin: parse arguments, call the library, print with rich."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console

from mesh_assets.cli import commands

console = Console()


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="mesh", description="Data products as Dagster assets on Spark and Delta.")
    sub = root.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help="fetch and cache Delta Lake's jars (once; offline afterwards)")
    demo = sub.add_parser("demo", help="land the example data and materialize the example mesh")
    demo.add_argument("--days", type=int, default=14)
    validate = sub.add_parser("validate", help="check every product against the governance rules")
    validate.add_argument("--domain", action="append", help="only this domain (repeatable)")
    sub.add_parser("list", help="domains, products, tables, owners and cross-domain edges")
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    handler = getattr(commands, f"cmd_{args.command}")
    return int(handler(args, console) or 0)


if __name__ == "__main__":
    sys.exit(main())
