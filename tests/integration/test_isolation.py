"""A broken or hostile domain harms no other domain.

Each case is a mesh of three domains: ``good`` (healthy), ``other`` (an ordinary spec error) and ``bad``,
whose one file exits, kills its process, raises, hangs or is a YAML alias bomb. ``mesh validate`` names
``bad``'s file and still shows ``other``'s error, and exits 1; ``good``'s code location loads without ever
running ``bad``'s code in its process, and materializes.
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
    "sys_exit_0": ("orders.py", MARK + "import sys\n\nsys.exit(0)\n", "domains/bad/orders.py:5: calls sys.exit(0)"),
    "sys_exit_1": ("orders.py", MARK + "import sys\n\nsys.exit(1)\n", "domains/bad/orders.py:5: calls sys.exit(1)"),
    "os_exit": (
        "orders.py",
        MARK + "os._exit(3)\n",
        "domains/bad/orders.py: domain bad ended its process (exit status 3) while loading this file",
    ),
    "raises": ("orders.py", MARK + "raise RuntimeError('boom')\n", "domains/bad/orders.py:3: RuntimeError: boom"),
    "hangs": (
        "orders.py",
        MARK + "import threading\n\nthreading.Event().wait()\n",
        f"domains/bad/orders.py: domain bad did not finish loading within {TIMEOUT} s",
    ),
    "alias_bomb": ("orders.yaml", BOMB, "domains/bad/orders.yaml: refused: more than 8 YAML aliases (*name)"),
}
CONTACT = "owner: {0}@example.com\ncontacts: [{{kind: chat, value: '#{0}'}}]\n"


def write_mesh(root: Path, bad_file: str, bad_text: str) -> Path:
    domains = root / "domains"
    for name in ("good", "other", "bad"):
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
    (domains / "bad" / bad_file).write_text(bad_text)
    return domains


@pytest.fixture
def console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "console", Console(width=250, no_color=True, highlight=False))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_domain_harms_no_other_domain(
    case: str, tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch, console, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_file, bad_text, expected = HOSTILE[case]
    domains = write_mesh(tmp_path, bad_file, bad_text)
    ran = tmp_path / "ran"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MESH_TEST_RAN", str(ran))
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
        if bad_file.endswith(".py"):  # bad's code ran, but never in this process
            assert int(ran.read_text()) != os.getpid()

        assert cli.main(["validate"]) == 1
    finally:
        get_settings.cache_clear()
    out = capsys.readouterr().out
    errors = [line.removeprefix("error ") for line in out.splitlines() if line.startswith("error ")]
    assert [e for e in errors if e.startswith("domains/bad/")] == [errors[0]]
    assert errors[0].startswith(expected), errors
    assert errors[1:] == ["domains/other/p.yaml:7: tables.0.inputs.missing: unknown table other.missing"]
    assert "domains that will fail to load: bad, other" in out
