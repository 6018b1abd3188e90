"""``mesh`` answers before it imports what it does not need: every ``--help`` without Dagster, Spark or dbt, and
``mesh stale`` without a webserver says so before loading any of them (bench/cli_startup.py times both)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from services import processes

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("dagster", "dagster_dbt", "pyspark", "dbt", "pandas", "pyarrow", "deltalake", "sqlglot")
PARSER_ONLY = (*HEAVY, "pydantic", "rich")
"""What ``--help`` needs none of: the parser is built from the standard library alone."""


def in_a_fresh_process(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_every_help_answers_without_importing_dagster_spark_dbt_or_even_rich():
    code = f"""
import contextlib, io, json, re, sys
from mesh_assets.cli.main import main, parser
(choices,) = re.findall(r"\\{{([\\w,-]+)\\}}", parser().format_usage())
helped = []
for argv in [["--help"], *[[name, "--help"] for name in choices.split(",")]]:
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
        main(argv)
    helped.append(out.getvalue().startswith("usage: mesh"))
print(json.dumps({{"helped": helped, "imported": [m for m in {PARSER_ONLY!r} if m in sys.modules]}}))
"""
    done = in_a_fresh_process(code)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[-1])
    assert len(answer["helped"]) > 10 and all(answer["helped"])  # mesh --help and each subcommand's
    assert answer["imported"] == []


def test_mesh_stale_without_a_webserver_says_so_at_once_without_a_traceback():
    url = f"http://127.0.0.1:{processes.free_port()}"  # nothing listens there
    code = f"""
import sys
from mesh_assets.cli.main import main
code = main(["stale"])
print("imported:", [m for m in {HEAVY!r} if m in sys.modules], "exit:", code)
"""
    done = in_a_fresh_process(code, {"MESH_DAGSTER__URL": url})
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert f"error no Dagster webserver answers at {url}" in out
    assert "start the webserver: make dev" in out
    assert out.endswith("imported: [] exit: 2")  # refused before Dagster or the mesh was loaded
    assert "Traceback" not in done.stderr

    entry = subprocess.run(
        [str(Path(sys.executable).parent / "mesh"), "stale"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MESH_DAGSTER__URL": url},
        timeout=120,
    )
    assert entry.returncode == 2 and entry.stderr == ""  # the installed command: the message alone


def test_the_webserver_probe_is_a_query_dagsters_graphql_schema_accepts():
    """The probe must pass against a running webserver: a query the schema refused would read as no webserver."""
    from dagster_graphql.schema import create_schema
    from graphql import parse, validate

    from mesh_assets.backfill.webserver import PING

    assert validate(create_schema().graphql_schema, parse(PING)) == []
