"""``mesh test``: the products' unit tests (``*.tests.yaml`` beside their specs) and dbt's own unit tests, in a
local SparkSession: no warehouse, no Dagster instance, no network."""

from __future__ import annotations

import argparse
import contextlib
import sys

from rich.console import Console

LOG = "test.log"
"""Under ``<home>/logs``: what Spark's JVM and dbt print while ``mesh test`` runs (``--verbose`` shows it)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    test = sub.add_parser(
        "test",
        help="run the products' unit tests (<product>.tests.yaml) and the dbt models' unit tests, locally",
        description="Runs each test case of the <product>.tests.yaml files under domains/ (rows given for each "
        "input, rows expected of the output) through the product's own transformation in a local SparkSession, "
        "then dbt's unit tests (dbt test --select test_type:unit) in the same session. No warehouse, no Dagster "
        "instance, no network. A failure prints expected and actual rows side by side, differing columns marked. "
        "Exits 1 when a test fails or a test file is invalid.",
    )
    test.add_argument("selection", nargs="?", help="<domain> or <domain>/<table> (default: every domain)")
    test.add_argument("--no-dbt", action="store_true", help="skip dbt's unit tests")
    test.add_argument(
        "--verbose", action="store_true", help=f"show Spark's and dbt's own output (kept in <home>/logs/{LOG})"
    )
    test.set_defaults(handler=cmd_test)


def cmd_test(args: argparse.Namespace, console: Console) -> int:
    """The cases' outcomes on the screen; Spark's and dbt's own lines in the log file unless ``--verbose``."""
    from mesh_assets.cli.capture import output_to
    from mesh_assets.settings import get_settings

    log = get_settings().home / "logs" / LOG
    with contextlib.ExitStack() as stack:
        if not args.verbose:
            screen = stack.enter_context(output_to(log))
            console = Console(file=screen) if console.file is sys.stdout else console  # stdout is the log now
        code = run_tests(args, console)
        if not args.verbose and code != 2:
            console.print(f"Spark's and dbt's output: {log}", highlight=False, soft_wrap=True)
        return code


def run_tests(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.settings import get_settings
    from mesh_assets.storage.resource import get_spark
    from mesh_assets.testing.suite import run_case, run_dbt_unit_tests, selected_cases

    domains_dir = get_settings().domains_dir
    cases, errors = selected_cases(domains_dir, args.selection)
    for error in errors:
        console.print(f"[red]error[/red] {error}", highlight=False)
    if errors:
        console.print(f"[red]{len(errors)} error(s)[/red] in test files: nothing run", highlight=False)
        return 1
    with_dbt = not args.no_dbt and (args.selection is None or "/" not in args.selection.replace(".", "/", 1))
    if not cases and not with_dbt:
        console.print(f"[red]error[/red] no test case for {args.selection}", highlight=False)
        return 2  # a selection that names nothing to run is bad input, not a failed test
    spark = get_spark()
    outcomes = [run_case(spark, domains_dir, case) for case in cases]
    if with_dbt:
        outcomes += run_dbt_unit_tests(spark, args.selection)
    colour = {"passed": "green", "failed": "red", "error": "red"}
    for outcome in outcomes:
        console.print(
            f"[{colour[outcome.status]}]{outcome.status.upper()}[/] {outcome.title} ({outcome.seconds:.1f}s)",
            highlight=False,
        )
        if outcome.detail:
            console.print(outcome.detail, highlight=False, markup=False)
    failed = [o for o in outcomes if o.status != "passed"]
    summary = f"{len(outcomes) - len(failed)} passed, {len(failed)} failed"
    console.print(f"[{'red' if failed else 'green'}]{summary}[/]", highlight=False)
    return 1 if failed else 0
