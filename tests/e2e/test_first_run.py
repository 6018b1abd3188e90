"""A newcomer's first ten minutes: ``make demo`` in a CI log, then the README's commands as typed.

One demo run for the module (``make -o setup demo``: the target's own command, its set-up taken as done), in a
throwaway home, with its output piped as CI and ``| tee`` pipe it. The README's blocks marked
``<!-- readme-test: runs after make demo -->`` then run as one shell session over that home, with nothing of
the virtual environment on the ``PATH``: the README itself must say how ``mesh`` gets there. The block of
"Adding a domain" runs as typed too, in a copy of the checkout's domains and workspace (it adds a domain; the
checkout stays as it is), without the demo.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from terminal import run_in_terminal, screen_lines

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DAYS = 7
"""Enough for the README's backfill of 2021-06-01 (with the 7-day windows that read it, to 06-07) to plan as it
does after ``make demo``'s 14 days."""
MARKER = "<!-- readme-test: runs after make demo -->"
BODY = r"\n```bash\n(.*?)```"
BLOCK = re.compile(re.escape(MARKER) + BODY, re.S)
NEW_DOMAIN = re.compile(re.escape("<!-- readme-test: adds a domain, in a copy of the checkout -->") + BODY, re.S)


@dataclass(frozen=True)
class DemoRun:
    home: Path
    env: dict[str, str]
    output: str
    returncode: int

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()


def newcomer_env(home: Path) -> dict[str, str]:
    """A shell as a newcomer's: no Mesh or Dagster settings, no virtual environment, colours on offer.

    Nor an enclosing make's variables: under ``make test`` they would make the inner ``make demo`` a sub-make,
    which prints "Entering directory" lines that a newcomer's top-level ``make demo`` never shows.
    """
    venv = os.environ.get("VIRTUAL_ENV")
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not (venv and p.startswith(venv)) and ".venv" not in p]
    inherited = ("MESH_", "DAGSTER_", "FORCE_COLOR", "COLUMNS", "MAKE", "MFLAGS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(inherited)}
    env.update(PATH=os.pathsep.join(path), MESH_HOME=str(home), TERM="xterm-256color")
    env.pop("VIRTUAL_ENV", None)
    return env


def demo_command(home: Path, days: int) -> list[str]:
    """``make demo`` as typed, its set-up taken as done (``-o setup``)."""
    return [
        "make",
        "--no-print-directory",  # nor "Entering directory" lines from make flags the shell still carries
        "-o",
        "setup",
        "demo",
        f"DEMO_ARGS=--days {days}",
        f"DAGSTER_HOME={home / 'dagster'}",
    ]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    home = tmp_path_factory.mktemp("newcomer") / ".mesh"
    return make_demo(home, newcomer_env(home))


def make_demo(home: Path, env: dict[str, str]) -> DemoRun:
    made = subprocess.run(
        demo_command(home, DAYS),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    return DemoRun(home, env, made.stdout, made.returncode)


def test_the_demo_reads_cleanly_in_a_ci_log(demo: DemoRun):
    assert demo.returncode == 0, demo.output
    assert "\x1b" not in demo.output, "escape codes in a non-terminal"
    assert len(demo.lines) < 60, demo.output
    assert all(len(line) <= 80 for line in demo.lines[:-1]), demo.output  # the last: the log's path, unbroken
    assert "…" not in demo.output, "a column was cut"
    assert [line for line in demo.lines if line != line.rstrip()] == []


def test_the_demo_shows_each_product_and_its_partitions(demo: DemoRun):
    """One line per product as it completes; every partitioned product published all its days."""
    done = dict(re.findall(r"^  (\w+/\w+): (\d+/\d+) partitions$", demo.output, re.M))
    assert done["food_delivery/orders"] == f"{DAYS}/{DAYS}"
    assert done["courier/courier_distances"] == f"{2 * DAYS}/{2 * DAYS}"  # two tables
    assert done["food_delivery/menu_catalog"] == "3/3"  # three unpartitioned tables
    assert done["central/city_sessions"] == f"{3 * DAYS}/{3 * DAYS}"  # each date in three regions
    assert done["food_delivery/monthly_city_orders"] == "1/1"  # June to date
    assert "food_delivery/weekly_city_orders" not in done  # no ISO week fits in June's first 7 days
    assert {product.split("/")[0] for product in done} == {"analytics", "central", "courier", "food_delivery", "growth"}


def test_the_summary_keeps_its_columns(demo: DemoRun):
    start = next(i for i, line in enumerate(demo.lines) if line.startswith("Published by the demo"))
    assert demo.lines[start] == f"Published by the demo (2021-06-01 .. 2021-06-{DAYS:02d})"
    assert demo.lines[start + 1].split() == ["per"]
    assert demo.lines[start + 2].split() == ["domain", "/", "table", "partitions", "rows", "partition"]
    rows = {
        m[1]: (m[2], int(m[3]))
        for m in re.finditer(r"^   (\w+) +(\d+|whole) +(\d+)(?: +\d+(?:-\d+)?)? *$", demo.output, re.M)
    }
    assert rows["orders"][0] == str(DAYS) and rows["orders"][1] > 0
    assert rows["orders_7_days"][0] == str(DAYS)
    assert rows["menus"][0] == "whole" and rows["menus"][1] > 0
    assert rows["summary_gsc"][0] == "whole"
    assert rows["city_daily_sessions"][0] == str(3 * DAYS) and rows["monthly_city_orders"][0] == "1"
    regions = re.findall(r"^     (eu|latam|apac) +(\d+) +\d+", demo.output, re.M)
    assert regions == [("apac", str(DAYS)), ("eu", str(DAYS)), ("latam", str(DAYS))]  # under city_daily_sessions


def test_other_tools_logs_go_to_the_named_log_file(demo: DemoRun):
    log = demo.home / "logs" / "demo.log"
    assert demo.lines[-1] == f"Full log (dbt, Spark, Dagster): {log}"
    text = log.read_text()
    for own in ("Setting default log level", "Running with dbt=", "STEP_SUCCESS"):  # Spark, dbt, Dagster
        assert own in text
        assert own not in demo.output


EXAMPLE = re.compile(r"^<!-- readme-output: ([^\n]+) -->\n```text\n(.*?)```", re.S | re.M)
"""An example output and the command that prints it, typed after ``make demo`` in an 80-column terminal."""


def test_the_readme_examples_are_what_the_commands_print(demo: DemoRun):
    """Each marked example output, against what the command prints on the screen (stdout and stderr) over the
    demo's world: whoever changes what a command prints changes its example in the README too. Only the demo's
    home and trailing blanks may differ."""
    examples = EXAMPLE.findall((ROOT / "README.md").read_text())
    assert len(examples) >= 2
    for command, shown in examples:
        ran = subprocess.run(
            ["bash", "-c", f". .venv/bin/activate && {command}"],
            cwd=ROOT,
            env={**demo.env, "COLUMNS": "80"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # the screen: a library's warning on it would be part of the example
            text=True,
            timeout=300,
        )
        printed = "".join(f"{line.rstrip()}\n" for line in ran.stdout.replace(str(demo.home), ".mesh").splitlines())
        assert printed == shown, f"README's example of `{command}` differs from what it prints:\n{printed}"


def test_the_readme_commands_run_as_typed_after_the_demo(demo: DemoRun):
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    assert len(blocks) >= 3
    script = "set -ex\n" + "\n".join(blocks)
    typed = subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        env=demo.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    assert typed.returncode == 0, typed.stdout
    assert re.search(r"^ok: \d+ product\(s\) in 5 domain\(s\)$", typed.stdout, re.M), typed.stdout
    assert typed.stdout.count("Dry run: nothing launched.") == len(re.findall(r"--dry-run", "".join(blocks)))
    assert "Warning:" not in typed.stdout, typed.stdout  # a library's (Dagster's BetaWarning) is in mesh.log


def test_the_readme_adds_a_domain_as_typed(tmp_path: Path):
    """From an empty folder to a domain ``dg`` scaffolds into, whose code location loads and whose product
    validates: the block of "Adding a domain", run in a copy holding what it reads (no demo needed)."""
    (block,) = NEW_DOMAIN.findall((ROOT / "README.md").read_text())
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "domains", checkout / "domains", ignore=shutil.ignore_patterns("__pycache__", ".dg"))
    shutil.copy(ROOT / "workspace.yaml", checkout)
    for shared in (".venv", "dbt_project"):
        (checkout / shared).symlink_to(ROOT / shared)
    typed = subprocess.run(
        ["bash", "-c", f"set -ex\n. .venv/bin/activate\n{block}"],  # the README's first block activates .venv
        cwd=checkout,
        env=newcomer_env(tmp_path / ".mesh"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    assert typed.returncode == 0, typed.stdout
    assert "All definitions loaded successfully." in typed.stdout  # dg check defs
    assert re.search(r"^ok: \d+ product\(s\) in 6 domain\(s\)$", typed.stdout, re.M), typed.stdout  # no tables yet
    assert (checkout / "domains" / "payments" / "defs" / "invoices" / "defs.yaml").is_file()
    served = [
        e["python_file"]["location_name"]
        for e in yaml.safe_load((checkout / "workspace.yaml").read_text())["load_from"]
    ]
    assert served[-1] == "payments" and len(served) == 6


@pytest.fixture(scope="module")
def second_demo(demo: DemoRun) -> tuple[DemoRun, str]:
    """``make demo`` again with nothing changed, and the log it left (the first run's is replaced)."""
    again = make_demo(demo.home, demo.env)
    return again, (demo.home / "logs" / "demo.log").read_text()


def summary(run: DemoRun) -> list[str]:
    return run.lines[next(i for i, line in enumerate(run.lines) if line.startswith("Published by the demo")) :]


def test_a_second_demo_with_nothing_changed_recomputes_nothing_and_prints_the_same_summary(
    demo: DemoRun, second_demo: tuple[DemoRun, str]
):
    """After the tests that read the first run's log: it replaces that log."""
    again, log = second_demo
    assert again.returncode == 0, again.output
    assert summary(again) == summary(demo)
    assert f"example data for 2021-06-01 .. 2021-06-{DAYS:02d} already landed" in again.output
    assert "RUN_START" not in log, "no Dagster run was launched"
    assert "Setting default log level" not in log, "no Spark session was started"


RECOMPUTED = ("analytics", "city_daily_kpis")
"""The table the terminal's demo recomputes: a dbt model (dbt's lines), published by a run (Dagster's) on Spark
(Spark's), that no other table reads, so that nothing else is recomputed with it."""


def test_a_terminal_shows_the_progress_and_the_summary_and_the_log_file_the_rest(demo: DemoRun):
    """In a terminal (a pseudo-terminal, 80 columns), over the world the piped demos left with one table removed
    (so last in this file): the demo computes that table alone, on Spark, through dbt and a Dagster run, and
    shows the others as published; the screen keeps the stages, one bar per product and the summary; Dagster's
    records, dbt's and Spark's lines go to the log file, as they do in a pipe."""
    shutil.rmtree(demo.home / "warehouse" / RECOMPUTED[0] / RECOMPUTED[1])
    code, output = run_in_terminal(demo_command(demo.home, DAYS), ROOT, demo.env, timeout=900)
    screen = screen_lines(output)
    assert code == 0, output
    products = [line for line in screen if re.search(r" \d+/\d+ partitions$", line)]
    # the example's data products, each published in full; the weekly rollup has no ISO week in 7 days, so no bar
    assert len(products) == 14, screen
    assert all(re.search(rf" ({DAYS}|{2 * DAYS}|{3 * DAYS}|3|1)/\1 partitions$", line) for line in products), screen
    assert f"Published by the demo (2021-06-01 .. 2021-06-{DAYS:02d})" in screen
    # make's command, instance and warehouse, 3 stages, 14 products, the summary's 29 lines, the log's path
    assert len(screen) <= 54, "\n".join(screen)
    log = (demo.home / "logs" / "demo.log").read_text()
    for own in ("Setting default log level", "Running with dbt=", "STEP_SUCCESS"):  # Spark, dbt, Dagster
        assert own in log
        assert own not in output
    published = re.findall(r"Materialized value (\w+ \w+)\.", log)
    assert log.count("RUN_START") == 1 and published == [" ".join(RECOMPUTED)] * DAYS, "one run, that table alone"
