"""``dg`` commands run in one process, each in its own folder: ``python dg_runs.py jobs.json`` prints, per job, the
exit code and output of each command.

A ``dg`` process pays for importing Dagster and Mesh (seconds) before it does anything; invoking its command
line in-process, one job after another, pays that once. ``dg check defs`` loads each code location in a process of
its own, as a user's would; ``dg list defs`` imports it in this one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def forget_projects() -> None:
    """Forget the modules of the projects loaded so far: ``dg list defs`` imports a project's ``definitions``
    module in this process, and every domain's has that name."""
    for name in [n for n in sys.modules if n.split(".")[0] in {"definitions", "defs"}]:
        del sys.modules[name]


def run(jobs: dict[str, dict]) -> dict[str, list[dict]]:
    from click.testing import CliRunner
    from dagster_dg_cli.cli import cli

    runner = CliRunner()
    results: dict[str, list[dict]] = {}
    for name, job in jobs.items():
        os.chdir(job["folder"])  # dg finds its project (dg.toml) from the working directory
        forget_projects()
        results[name] = []
        for args in job["commands"]:
            outcome = runner.invoke(cli, args)
            error = (
                None if outcome.exception is None or isinstance(outcome.exception, SystemExit) else outcome.exception
            )
            out = {"stdout": outcome.stdout, "stderr": outcome.stderr, "error": repr(error)}
            results[name].append({"args": args, "code": outcome.exit_code, **out})
    return results


def run_in_a_process(jobs: dict[str, dict], base: Path, env: dict[str, str]) -> dict[str, list[dict]]:
    """``jobs`` run by this file in one process of their own (a test's process keeps its imports), with ``env``."""
    (base / "jobs.json").write_text(json.dumps(jobs))
    done = subprocess.run(
        [sys.executable, __file__, str(base / "jobs.json")], env=env, capture_output=True, text=True, timeout=1200
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


if __name__ == "__main__":
    print(json.dumps(run(json.loads(Path(sys.argv[1]).read_text()))))
