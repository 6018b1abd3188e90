"""How soon ``mesh`` commands answer, each a fresh process of the installed ``mesh`` entry point on the example
mesh, as a user types them.

- ``mesh --help`` and the slowest subcommand's ``--help`` against ``python -c pass`` (the interpreter alone):
  building the parser imports no library heavier than rich. Target 0.5 s.
- ``mesh validate`` and ``mesh list`` (the catalog kept from a first run, as after ``make demo``) against plain
  ``dagster --help``, what a Dagster command pays to start. Target 3 s.
- ``mesh stale`` with no webserver (``dagster.url`` at a loopback port nothing listens on): it says so before
  importing Dagster. Against ``python -c pass``; target 1 s.
- ``mesh plan`` on an unchanged repo: against the instance, whose records name every product table's current
  code version and revision, as after ``make demo`` (recorded here without computing anything), and against
  ``--base HEAD`` (the domains as committed). Against plain ``dagster --help``; target 5 s.

Run alone: ``python -m bench.cli_startup --repeat 5`` (or ``python -m bench --only cli_startup``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, Result, _free_port, print_results

BIN = Path(sys.executable).parent
MESH = str(BIN / "mesh")


CPU: dict[str, float] = {}
"""Median CPU seconds (user and system, the process and its children) of each command measured, by its words:
on a loaded machine wall seconds grow with the load, CPU seconds much less."""


def _seconds(command: list[str], env: dict[str, str], repeat: int, ok: tuple[int, ...] = (0,)) -> float:
    """Median wall seconds of ``command`` in a fresh process; fails loudly on an unexpected exit code."""
    times, cpu = [], []
    for _ in range(repeat):
        before, start = os.times(), time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
        times.append(time.perf_counter() - start)
        after = os.times()
        cpu.append(after.children_user + after.children_system - before.children_user - before.children_system)
        if done.returncode not in ok:
            raise RuntimeError(f"{' '.join(command[1:])} exited {done.returncode}: {done.stdout}{done.stderr}")
    CPU[" ".join([Path(command[0]).name, *command[1:]])] = statistics.median(cpu)
    return statistics.median(times)


def record_unchanged(home: Path) -> int:
    """An instance under ``home`` recording a few published partitions of every product table of the example
    mesh, each with its current code version and revision (what ``mesh plan`` compares); how many tables."""
    import dagster as dg

    from mesh_assets.change import side_of
    from mesh_assets.cli.commands import mesh_catalog
    from mesh_assets.compat import CODE_VERSION_TAG
    from mesh_assets.dbt.catalog import tool_tables
    from mesh_assets.graph.resolve import TableKind
    from mesh_assets.graph.revisions import REVISION_KEY
    from mesh_assets.model.grain import midnight
    from mesh_assets.settings import get_settings

    work = side_of("working tree", mesh_catalog(), tool_tables(get_settings().domains_dir))
    tables = [t for t in work.tables.values() if t.kind is TableKind.PRODUCT]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for table in tables:
            days = range(3) if table.grain.partitioned else []
            keys = [table.grain.key(midnight(table.start_date) + i * table.grain.step) for i in days]
            for partition in keys or [None]:
                instance.report_runless_asset_event(
                    dg.AssetMaterialization(
                        asset_key=table.key,
                        partition=partition,
                        metadata={REVISION_KEY: table.revision or "", "dagster/row_count": 10},
                        tags={CODE_VERSION_TAG: table.code_version or ""},
                    )
                )
    return len(tables)


def run(repeat: int = 5) -> list[Result]:
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-cli-"))
    home = base / "dagster"
    home.mkdir()
    env = {**os.environ, "MESH_PROJECT_ROOT": str(ROOT), "DAGSTER_HOME": str(home)}
    env.pop("MESH_DOMAINS_DIR", None)
    os.environ.update({"MESH_PROJECT_ROOT": str(ROOT), "DAGSTER_HOME": str(home)})
    tables = record_unchanged(home)
    python = _seconds([sys.executable, "-c", "pass"], env, repeat)
    dagster = _seconds([str(BIN / "dagster"), "--help"], env, repeat)
    help_ = _seconds([MESH, "--help"], env, repeat)
    commands = subprocess.run([MESH, "--help"], capture_output=True, text=True, env=env, check=True).stdout
    names = commands.split("{", 1)[1].split("}", 1)[0].split(",")
    slowest = max(names, key=lambda n: _seconds([MESH, n, "--help"], env, 1))
    sub_help = _seconds([MESH, slowest, "--help"], env, repeat)
    subprocess.run([MESH, "validate"], capture_output=True, env=env, cwd=ROOT, check=True)  # the catalog kept
    validate = _seconds([MESH, "validate"], env, repeat)
    listing = _seconds([MESH, "list"], env, repeat)
    nobody = {**env, "MESH_DAGSTER__URL": f"http://127.0.0.1:{_free_port()}"}
    stale = _seconds([MESH, "stale"], nobody, repeat, ok=(2,))
    plan = _seconds([MESH, "plan"], env, repeat)
    plan_git = _seconds([MESH, "plan", "--base", "HEAD"], env, repeat)
    python_words = f"{Path(sys.executable).name} -c pass"
    baselines = {"python -c pass": (python, python_words), "dagster --help": (dagster, "dagster --help")}

    def row(words: str, seconds: float, baseline: str, limit: float, notes: str = "") -> Result:
        wall, cpu_key = baselines[baseline]
        cpu = f"CPU {CPU[f'mesh {words}']:.2f} s against {CPU[cpu_key]:.2f} s"
        notes = f"{notes}; {cpu}" if notes else cpu
        return Result("cli startup", f"mesh {words}", seconds, baseline, wall, f"<= {limit} s", seconds <= limit, notes)

    return [
        row("--help", help_, "python -c pass", 0.5),
        row(f"{slowest} --help", sub_help, "python -c pass", 0.5, "the slowest subcommand's help"),
        row("validate", validate, "dagster --help", 3.0, "example mesh, catalog kept"),
        row("list", listing, "dagster --help", 3.0, "example mesh, catalog kept"),
        row("stale", stale, "python -c pass", 1.0, "no webserver: exits 2 naming the URL"),
        row("plan", plan, "dagster --help", 5.0, f"unchanged: {tables} tables recorded as current"),
        row("plan --base HEAD", plan_git, "dagster --help", 5.0, "the working tree's domains as committed"),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    print_results(run(parser.parse_args().repeat))
