"""A broken or hostile domain harms no other domain.

One mesh holds ``good`` (healthy), ``other`` (an ordinary spec error) and one hostile domain per case, whose
one file calls ``sys.exit(0)`` or ``sys.exit(1)``, kills its process, raises, hangs, or is a YAML alias bomb.
``good``'s code location loads without ever running a hostile file in its process, and materializes;
``mesh validate`` names each hostile domain's file, still shows ``other``'s error, and exits 1.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pytest
from rich.console import Console

from mesh_assets import MeshResource, domain_definitions, executable_assets
from mesh_assets.cli import main as cli
from mesh_assets.settings import get_settings

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TIMEOUT = 5
MARK = "import os, pathlib\npathlib.Path(os.environ['MESH_TEST_RAN']).write_text(str(os.getpid()))\n"
BOMB = "name: p\nlaughs:\n  - &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  - &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)
HOSTILE = {
    "exits_0": ("orders.py", MARK + "import sys\n\nsys.exit(0)\n", "domains/exits_0/orders.py:5: calls sys.exit(0)"),
    "exits_1": ("orders.py", MARK + "import sys\n\nsys.exit(1)\n", "domains/exits_1/orders.py:5: calls sys.exit(1)"),
    "os_exit": (
        "orders.py",
        MARK + "os._exit(3)\n",
        "domains/os_exit/orders.py: domain os_exit ended its process (exit status 3) while loading this file",
    ),
    "raises": ("orders.py", MARK + "raise RuntimeError('boom')\n", "domains/raises/orders.py:3: RuntimeError: boom"),
    "hangs": (
        "orders.py",
        MARK + "import threading\n\nthreading.Event().wait()\n",
        f"domains/hangs/orders.py: domain hangs did not finish loading within {TIMEOUT} s",
    ),
    "alias_bomb": ("orders.yaml", BOMB, "domains/alias_bomb/orders.yaml: refused: more than 8 YAML aliases (*name)"),
}
"""Each hostile domain: its one file, its text, and the start of the one error ``mesh validate`` prints."""
CONTACT = "owner: {0}@example.com\ncontacts: [{{kind: chat, value: '#{0}'}}]\n"


def write_mesh(root: Path) -> Path:
    domains = root / "domains"
    for name in ("good", "other", *HOSTILE):
        (domains / name).mkdir(parents=True)
    (domains / "good" / "definitions.py").write_text(
        "from mesh_assets import domain_definitions\n\ndefs = domain_definitions(__file__)\n"
    )
    (domains / "good" / "numbers.yaml").write_text(
        "name: numbers\n" + CONTACT.format("good") + "tables:\n  - table: numbers\n    partitioning: none\n"
        "    write_mode: full\n    sql: SELECT 1 AS n UNION ALL SELECT 2 AS n\n"
    )
    (domains / "other" / "p.yaml").write_text(
        "name: p\n" + CONTACT.format("other") + "tables:\n  - table: t\n    inputs:\n      - {table: missing}\n"
        "    sql: SELECT * FROM other.missing\n"
    )
    for name, (file, text, _) in HOSTILE.items():
        (domains / name / file).write_text(text.replace("MESH_TEST_RAN", f"MESH_TEST_RAN_{name.upper()}"))
    return domains


@pytest.fixture
def console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "console", Console(width=250, no_color=True, highlight=False))


@pytest.mark.timeout(600)
def test_hostile_domains_harm_no_other_domain(
    tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch, console, capsys: pytest.CaptureFixture[str]
) -> None:
    domains = write_mesh(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name in HOSTILE:
        monkeypatch.setenv(f"MESH_TEST_RAN_{name.upper()}", str(tmp_path / f"ran_{name}"))
    monkeypatch.setenv("MESH_DOMAINS_DIR", str(domains))
    monkeypatch.setenv("MESH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MESH_DISCOVERY_TIMEOUT_SECONDS", str(TIMEOUT))
    get_settings.cache_clear()
    try:
        defs = domain_definitions(domains / "good" / "definitions.py")
        mesh = MeshResource(warehouse=str(tmp_path / "warehouse"))
        result = dg.materialize(
            executable_assets(defs), resources={"mesh": mesh}, selection=[dg.AssetKey(["good", "numbers"])]
        )
        assert result.success
        rows = spark.read.format("delta").load(mesh.registry.location("good", "numbers")).collect()
        assert sorted(r.n for r in rows) == [1, 2]
        ran = {
            name: int((tmp_path / f"ran_{name}").read_text())
            for name, (f, _, _) in HOSTILE.items()
            if f.endswith(".py")
        }
        assert len(ran) == 5 and os.getpid() not in ran.values()  # their code ran, never in this process

        assert cli.main(["validate"]) == 1
    finally:
        get_settings.cache_clear()
    out = capsys.readouterr().out
    errors = [line.removeprefix("error ") for line in out.splitlines() if line.startswith("error ")]
    for name, (_, _, expected) in HOSTILE.items():
        mine = [e for e in errors if e.startswith(f"domains/{name}/")]
        assert len(mine) == 1 and mine[0].startswith(expected), (name, errors)
    assert "domains/other/p.yaml:7: tables.0.inputs.missing: unknown table other.missing" in errors
    assert len(errors) == len(HOSTILE) + 1
    assert f"domains that will fail to load: {', '.join(sorted([*HOSTILE, 'other']))}" in out
