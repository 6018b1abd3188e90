"""Every ``mesh`` command, fed each bad-spec fixture, says what is wrong and never shows a traceback.

The bad-spec fixtures are those of tests/bad_specs.py. Each command that
reads the mesh must print the errors ``mesh validate`` prints, file, line and field, and exit non-zero; the
commands that read no specs (``setup``, ``ingest``, ``lineage``) are fed a bad setting, bad arguments or an
unknown node instead. The commands run in this process (``mesh_assets.cli.main.main``, which the ``mesh`` script
calls): an exception escaping them is the traceback a user would see. No Spark: every command stops before it
would start one.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from bad_specs import BAD_MESHES
from rich.console import Console

from mesh_assets.cli import main as cli
from mesh_assets.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

READS_THE_MESH = {
    "validate": ["validate"],
    "list": ["list"],
    "plan": ["plan"],
    "apply": ["apply", "--dry-run"],
    "backfill": ["backfill", "sales/orders", "--start", "2021-06-01", "--end", "2021-06-02"],
    "rebuild": ["rebuild", "sales/orders", "--dry-run"],
    "health": ["health"],
    "demo": ["demo", "--days", "1"],
}
"""Commands that build the mesh first, with arguments that would be right on a good one."""
READS_ONE_DOMAIN = {"invalidate": ["invalidate", "sales/orders", "--start", "2021-06-01", "--reason", "late refunds"]}
"""``mesh invalidate`` reads the catalog, and loads only the table's own domain: another domain's errors do not
stop it, and in these meshes it refuses first because nothing is published (or the table is unknown)."""
READS_THE_CATALOG = {
    "tables": ["tables"],
    "maintain": ["maintain", "--retired", "--dry-run"],
    "restore": ["restore", "sales/orders", "--to-version", "0"],
}
"""Maintenance works on the tables the catalog last saw (a domain whose files fail keeps its last good entry): on
these meshes nothing was ever written, and each says so without a traceback."""
ASKS_THE_WEBSERVER_FIRST = {"stale": ["stale"]}
"""``mesh stale`` asks the webserver before it loads the mesh: here none answers, and it says so."""
OTHER_INPUT = {
    "setup": (["setup"], {"MESH_INSTANCE": "mysql"}, "setting instance: Input should be 'sqlite' or 'postgres'"),
    "ingest": (["ingest", "--start", "2021-06-15 00:00"], {}, "--start '2021-06-15 00:00': expected YYYY-MM-DDTHH"),
    "lineage": (["lineage", "sales.nowhere"], {}, "no lineage node 'sales.nowhere'"),
    "pause": (["pause", "sales/nowhere", "--reason", "migration"], {}, "no product 'sales/nowhere' with outputs"),
    "resume": (["resume", "sales/nowhere"], {}, "no product 'sales/nowhere' with outputs"),
    "env": (["env", "drop", "nowhere"], {}, "'nowhere' is not an environment under"),
    "diff": (["diff", "sales/nowhere", "--against", "/nowhere"], {}, "unknown table 'sales/nowhere'"),
    "test": (["test", "sales/nowhere"], {}, "no test case for sales/nowhere"),
}
"""Commands that read no specs (or only the catalog, as ``pause``): their own bad input, and the message naming
it."""


def test_every_command_is_covered() -> None:
    commands = set(cli.parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert commands == (
        set(READS_THE_MESH)
        | set(READS_ONE_DOMAIN)
        | set(READS_THE_CATALOG)
        | set(ASKS_THE_WEBSERVER_FIRST)
        | set(OTHER_INPUT)
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli-errors")


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator:
    """``run(mesh, argv, env)``: ``mesh``'s command ``argv`` in this process, its exit code and its output. Its
    instance (one for the module), warehouse and logs are throwaway; the webserver it would reach listens nowhere."""

    def call(mesh: Path, argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
        monkeypatch.chdir(mesh)
        for name, value in {
            "MESH_PROJECT_ROOT": str(mesh),
            "MESH_DOMAINS_DIR": str(mesh / "domains"),
            "MESH_HOME": str(home / mesh.name),
            "DAGSTER_HOME": str(home / "dagster"),
            "MESH_DBT_PROJECT_DIR": str(home / "no-dbt"),
            "MESH_DAGSTER__URL": "http://127.0.0.1:9",
            **(env or {}),
        }.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        out = io.StringIO()
        monkeypatch.setattr(cli, "console", Console(file=out, width=250, no_color=True, highlight=False))
        code = cli.main(argv)  # an exception here is a traceback on a user's screen
        return code, out.getvalue()

    yield call
    get_settings.cache_clear()


@pytest.mark.slow  # 23 meshes, ten commands each: 10-15 CPU-seconds
@pytest.mark.parametrize("mesh", BAD_MESHES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_each_command_names_what_is_wrong_with_a_bad_mesh(run, mesh: Path) -> None:
    code, out = run(mesh, ["validate"])
    entries = re.split(r"\n(?=error |warning |\d+ error\(s\) in )", out)  # an error may wrap onto more lines
    errors = [" ".join(e.split()[1:]) for e in entries if e.startswith("error ")]
    assert code == 1 and errors, out
    assert all(":" in e.split()[0] for e in errors), errors  # each names its file (and line)
    for name, argv in READS_THE_MESH.items():
        code, out = run(mesh, argv)
        said = " ".join(out.split())
        assert code != 0, f"mesh {name}: {out}"
        assert "Traceback" not in out and "failed: " not in out, f"mesh {name}: {out}"
        assert [e for e in errors if e not in said] == [], f"mesh {name} does not print validate's errors:\n{out}"
    code, out = run(mesh, READS_ONE_DOMAIN["invalidate"])
    assert code == 2 and "Traceback" not in out and out.rstrip().endswith("nothing marked"), out
    for name, argv in READS_THE_CATALOG.items():
        code, out = run(mesh, argv)
        assert "Traceback" not in out and "failed: " not in out, f"mesh {name}: {out}"
        assert code == (2 if name == "restore" else 0), f"mesh {name}: {out}"
    assert out.rstrip().endswith("nothing restored"), out  # the restore's: its table was never written
    code, out = run(mesh, ASKS_THE_WEBSERVER_FIRST["stale"])
    assert code == 2 and "Traceback" not in out and "error no Dagster webserver answers at" in out, out


@pytest.mark.parametrize("name", sorted(OTHER_INPUT))
def test_commands_that_read_no_specs_name_their_bad_input(run, name: str) -> None:
    argv, env, message = OTHER_INPUT[name]
    code, out = run(FIXTURES / "governance" / "many_errors", argv, env)
    assert code == 2, out
    assert message in out and "Traceback" not in out, out


def test_a_fault_of_mesh_itself_is_one_line_and_a_file_with_its_traceback(run, monkeypatch: pytest.MonkeyPatch) -> None:
    from mesh_assets.cli import commands

    def broken(args: object, console: Console) -> int:
        raise KeyError("graph node")

    monkeypatch.setattr(commands, "cmd_list", broken)
    code, out = run(FIXTURES / "governance" / "cross_domain", ["list"])
    assert code == 70, out
    [line] = out.strip().splitlines()
    assert line.startswith("error mesh list failed: KeyError: 'graph node' (a fault in Mesh, not in your specs"), line
    log = Path(line.split("the traceback is in ")[1].split(":")[0])
    assert log.is_relative_to(get_settings().home) and "Traceback" in log.read_text() and "broken" in log.read_text()
