"""Loading a code location needs neither Spark nor the lineage client: importing them costs seconds of
start-up that every code server, sensor tick process and ``mesh validate`` would otherwise pay."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

RUN_SIDE = {"pyspark", "py4j", "delta", "deltalake", "openlineage", "dagster_dbt", "dagster_pyspark", "dagster_spark"}

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


def in_a_mesh(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``code`` run in a fresh interpreter, given the domains folder of a one-product mesh."""
    (tmp_path / "domains" / "shop").mkdir(parents=True)
    (tmp_path / "domains" / "shop" / "orders.yaml").write_text(SPEC)
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "domains")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MESH_HOME": str(tmp_path)},
    )


def test_yaml_products_load_without_spark_or_lineage(tmp_path: Path):
    out = in_a_mesh(LOAD, tmp_path)
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


COLLECTOR = """
import gc, sys
from pathlib import Path
from mesh_assets import mesh_definitions
collections = []
gc.callbacks.append(lambda phase, info: collections.append(info["generation"]) if phase == "start" else None)
mesh_definitions(Path(sys.argv[1]), dbt=False)
first = gc.get_freeze_count()
print("collections while building:", len(collections), "enabled after:", gc.isenabled(), "frozen:", first > 0)
mesh_definitions(Path(sys.argv[1]), dbt=False)
print("second build froze nothing more:", gc.get_freeze_count() <= first, "enabled after:", gc.isenabled())
gc.disable()
mesh_definitions(Path(sys.argv[1]), dbt=False)
print("a caller's pause kept:", not gc.isenabled())
gc.enable()
try:
    mesh_definitions(Path(sys.argv[1]) / "missing", dbt=False)
except Exception:
    print("enabled after a failed build:", gc.isenabled())
"""


def test_definitions_build_with_the_collector_paused_and_the_first_ones_stay_frozen(tmp_path: Path):
    """The collector walked a location's definitions again and again while they were built and in every later
    full collection: 0.75-0.85 s of a 2.4 s load at 1,000 products (bench/FINDINGS.md). It is paused while
    they build, the process's first definitions are frozen, later builds are collected as usual, a caller's
    own pause is kept, and a failed build leaves it running."""
    out = in_a_mesh(COLLECTOR, tmp_path)
    assert out.stdout.splitlines() == [
        "collections while building: 0 enabled after: True frozen: True",
        "second build froze nothing more: True enabled after: True",
        "a caller's pause kept: True",
        "enabled after a failed build: True",
    ]


EXIT = """
import atexit, gc, sys
from pathlib import Path
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))  # runs after Mesh's: last in, first out
from mesh_assets import mesh_definitions
mesh_definitions(Path(sys.argv[1]), dbt=False)
gc.unfreeze()  # what the build froze
print("frozen before exit:", gc.get_freeze_count() > 0)
"""


def test_a_process_that_built_definitions_exits_without_collecting_them(tmp_path: Path):
    """Python's last collection at exit walks every object still held (0.35-0.65 s of a launched run's exit,
    bench/FINDINGS.md); the heap is frozen at exit instead."""
    out = in_a_mesh(EXIT, tmp_path)
    assert out.stdout.split("\n")[:2] == ["frozen before exit: False", "frozen at exit: True"]


IMPORT = """
import gc
import dagster
full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "start" and info["generation"] == 2 else None)
from mesh_assets import domain_definitions, mesh_definitions
print("full collections importing Mesh:", len(full), "enabled after:", gc.isenabled())
from dagster._core.remote_representation.external_data import RepositorySnap
print("and the next import:", len(full))
"""


def test_importing_the_composition_root_sets_off_no_full_collection():
    """After Dagster's import the heap holds a few hundred thousand long-lived objects, and importing Mesh's
    composition root set off a full collection over them: 0.11 s of import against 0.05 s without; paused
    alone, the collection came at the next import (mesh_assets/collector.py). Public names import with the
    collector paused and the heap frozen after, and leave it running."""
    out = subprocess.run([sys.executable, "-c", IMPORT], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "full collections importing Mesh: 0 enabled after: True",
        "and the next import: 0",
    ]


COMPONENT = "type: mesh_assets.DataProduct\nattributes:\n" + textwrap.indent(SPEC, "  ")

COMPONENTS_LOAD = """
import sys
from mesh_assets import domain_definitions
graph = domain_definitions(sys.argv[1]).resolve_asset_graph()
print(sorted(key.to_user_string() for key in graph.get_all_asset_keys()), "dagster_aws" in sys.modules)
"""


def test_a_domains_components_load_without_every_installed_librarys_components(tmp_path: Path):
    """Dagster's component tree, built from its root, adds a description of every installed library's component
    types (importing dagster-aws and the rest: 0.32 s of the example's food_delivery location), which Mesh does
    not serve; a domain builds its ``defs`` folder alone."""
    folder = tmp_path / "domains" / "shop"
    (folder / "defs" / "orders").mkdir(parents=True)
    (folder / "defs" / "orders" / "defs.yaml").write_text(COMPONENT)
    (folder / "definitions.py").write_text(
        "from mesh_assets import domain_definitions\n\ndefs = domain_definitions(__file__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", COMPONENTS_LOAD, str(folder / "definitions.py")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MESH_HOME": str(tmp_path / "home")},
    )
    assert out.stdout.splitlines()[-1] == "['shop/orders', 'shop/raw_orders'] False"
