"""Loading a code location needs neither Spark nor the lineage client: importing them costs seconds of
start-up that every code server, sensor tick process and ``mesh validate`` would otherwise pay."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RUN_SIDE = {"pyspark", "py4j", "delta", "deltalake", "openlineage", "dagster_dbt"}

LOAD = """
import sys
from pathlib import Path
from dagster._core.remote_representation.external_data import RepositorySnap
from mesh_assets import mesh_definitions
RepositorySnap.from_def(mesh_definitions(Path(sys.argv[1]), dbt=False).get_repository_def())
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""

SPEC = """\
name: orders
owner: team@example.com
contacts: [{kind: chat, value: "#orders"}]
external:
  - {table: raw_orders}
tables:
  - table: orders
    inputs: [{table: shop.raw_orders}]
    sql: SELECT id FROM shop.raw_orders
    checks:
      - {kind: not_null, columns: [id]}
"""


def test_yaml_products_load_without_spark_or_lineage(tmp_path: Path):
    (tmp_path / "domains" / "shop").mkdir(parents=True)
    (tmp_path / "domains" / "shop" / "orders.yaml").write_text(SPEC)
    out = subprocess.run(
        [sys.executable, "-c", LOAD, str(tmp_path / "domains")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MESH_HOME": str(tmp_path)},
    )
    assert set(out.stdout.split()) & RUN_SIDE == set()


LOADED = """
import sys
import {module}
print(" ".join(sorted(sys.modules)))
"""


def loaded_by(module: str) -> set[str]:
    code = LOADED.format(module=module)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_remote_side_of_a_submitted_run_loads_neither_dagster_nor_the_lineage_client():
    """A Spark application launched in engine mode ``submit`` imports this before its body: every module it
    loads and does not use delays the run (Dagster alone takes most of a second, the OpenLineage client and its
    HTTP stack a quarter); its events and lineage are the step's to record, Dagster Pipes is all it speaks, and
    sqlglot waits for a SQL product's query. (tests/services/test_submit_mode.py runs the application where
    Dagster cannot be imported.)"""
    loaded = loaded_by("mesh_assets.run.remote")
    assert "dagster_pipes" in loaded
    unused = {"dagster", "openlineage", "dagster_dbt", "httpx", "requests", "sqlglot"}
    assert {name.split(".")[0] for name in loaded} & unused == set()
    assert {"mesh_assets.definitions", "mesh_assets.components", "mesh_assets.automation"} & loaded == set()


def test_the_public_face_imports_each_name_on_first_use():
    loaded = loaded_by("mesh_assets")
    assert not any(name.startswith("mesh_assets.") for name in loaded)
    from mesh_assets import Product, domain_definitions

    assert Product.__module__ == "mesh_assets.model.author"
    assert domain_definitions.__module__ == "mesh_assets.definitions"


EXIT = """
import atexit, gc, sys
from pathlib import Path
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))  # runs after Mesh's: last in, first out
from mesh_assets import mesh_definitions
mesh_definitions(Path(sys.argv[1]), dbt=False)
print("frozen before exit:", gc.get_freeze_count() > 0)
"""


def test_a_process_that_built_definitions_exits_without_collecting_them(tmp_path: Path):
    """Python's last collection at exit walks every object still held (0.35-0.65 s of a launched run's exit,
    bench/FINDINGS.md); the heap is frozen at exit instead, and only then: frozen earlier, the garbage of
    later work would never be collected."""
    (tmp_path / "domains" / "shop").mkdir(parents=True)
    (tmp_path / "domains" / "shop" / "orders.yaml").write_text(SPEC)
    out = subprocess.run(
        [sys.executable, "-c", EXIT, str(tmp_path / "domains")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MESH_HOME": str(tmp_path)},
    )
    assert out.stdout.split("\n")[:2] == ["frozen before exit: False", "frozen at exit: True"]
