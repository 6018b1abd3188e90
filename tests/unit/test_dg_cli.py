"""``dg`` on the mesh: on every example domain (a dg project), ``dg scaffold defs mesh_assets.DataProduct`` writes a
product that passes ``dg check yaml`` and ``dg check defs``, and ``dg list defs`` lists the domain's assets with
the groups and owners of the asset-graph snapshot; a broken spec fails ``dg check defs`` with Mesh's own
message; ``dg`` gives editors the product's schema down to nested fields.

Every ``dg`` command runs in one process (tests/dg_runs.py) on a copy of ``domains/``: a process per command
would pay Dagster's import each time.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from dg_runs import run_in_a_process

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = sorted(p.parent.name for p in (ROOT / "domains").glob("*/dg.toml"))
SNAPSHOT = json.loads((ROOT / "tests" / "unit" / "snapshots" / "asset_graph.json").read_text())
SCAFFOLDED = "new_product"
BROKEN = "broken_growth"


def copy_domains(target: Path) -> Path:
    shutil.copytree(ROOT / "domains", target, ignore=shutil.ignore_patterns("__pycache__", ".dg"))
    return target


@pytest.fixture(scope="module")
def dg_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    base = tmp_path_factory.mktemp("dg")
    domains = copy_domains(base / "mesh" / "domains")
    broken = copy_domains(base / "broken" / "domains") / "growth"  # alone: its own mesh, one spec broken
    spec = broken / "defs" / "summary_gsc" / "defs.yaml"
    spec.write_text(spec.read_text().replace("  name: summary_gsc\n", "  name: summary_gsc\n  owner: nobody\n"))
    jobs = {
        domain: {
            "folder": str(domains / domain),
            "commands": [
                ["scaffold", "defs", "mesh_assets.DataProduct", SCAFFOLDED],
                ["check", "yaml"],
                ["check", "defs"],
                ["list", "defs", "--json"],
            ],
        }
        for domain in DOMAINS
    }
    jobs[BROKEN] = {"folder": str(broken), "commands": [["check", "defs"]]}
    jobs["schema"] = {
        "folder": str(domains / "growth"),
        "commands": [["utils", "inspect-component", "mesh_assets.DataProduct", "--defs-yaml-json-schema"]],
    }
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MESH_PROJECT_ROOT": str(ROOT)}  # the dbt project is the checkout's
    runs = run_in_a_process(jobs, base, env)
    runs["folders"] = {name: job["folder"] for name, job in jobs.items()}  # type: ignore[assignment]
    return runs


def by_command(runs: list[dict]) -> dict[str, dict]:
    return {" ".join(r["args"][:2]): r for r in runs}


@pytest.mark.parametrize("domain", DOMAINS)
def test_dg_scaffolds_checks_and_lists_every_example_domain(dg_runs, domain: str) -> None:
    run = by_command(dg_runs[domain])
    for command, result in run.items():
        assert result["code"] == 0, f"dg {command}: {result['stdout'][-2000:]}{result['stderr'][-2000:]}"

    spec = yaml.safe_load((Path(dg_runs["folders"][domain]) / "defs" / SCAFFOLDED / "defs.yaml").read_text())
    assert (spec["type"], spec["attributes"]["name"]) == ("mesh_assets.DataProduct", SCAFFOLDED)
    assert "All component YAML validated successfully." in run["check yaml"]["stdout"]
    assert "All definitions loaded successfully." in run["check defs"]["stdout"]  # the scaffolded product too

    listed = [a for a in json.loads(run["list defs"]["stdout"])["assets"] if a["asset_key"].split("/")[0] == domain]
    shown = {a["asset_key"]: (a["group_name"], sorted(o["email"] for o in a["owners"])) for a in listed}
    expected = {k: (v["group"], v["owners"]) for k, v in SNAPSHOT.items() if k.split("/")[0] == domain}
    assert expected and shown == expected  # its products, external tables and dbt models, as the UI shows them


def test_a_broken_spec_fails_dg_check_defs_with_the_file_line_and_field(dg_runs) -> None:
    [result] = dg_runs[BROKEN]
    assert result["code"] == 1
    out = result["stdout"] + result["stderr"]
    assert "defs/summary_gsc/defs.yaml:4: owner: String should match pattern" in out
    assert "pydantic_core" not in out


def test_dg_gives_editors_the_product_schema_down_to_nested_fields(dg_runs) -> None:
    [result] = dg_runs["schema"]
    assert result["code"] == 0, result["stderr"]
    schema = json.loads(result["stdout"])
    attributes = schema["properties"]["attributes"]
    nested = attributes["$defs"]
    assert attributes["required"] == ["name"]  # owner, contacts, tier, ...: the domain's defaults fill them
    assert {"tables", "external", "start_date", "cron", "owner", "contacts"} <= set(attributes["properties"])
    assert attributes["properties"]["tier"]["anyOf"][0]["enum"] == ["t1", "t2", "t3"]
    table = nested["TableSpec"]["properties"]
    assert {"table", "inputs", "sql", "sql_file", "checks", "partitioning", "schema", "contract"} <= set(table)
    assert table["partitioning"]["enum"][:5] == ["daily", "hourly", "none", "weekly", "monthly"]
    assert {"5min", "10min", "15min", "30min"} <= set(table["partitioning"]["enum"])
    inputs = set(nested["Input"]["properties"])
    assert {"table", "version", "window", "ignore_quality", "freshness_hours", "timeout_hours"} <= inputs
    assert "line" not in inputs  # Mesh's own bookkeeping, not something a spec writes
    assert {"regions", "partition_column", "checks"} <= set(nested["ExternalTable"]["properties"])
    assert set(nested["NotNull"]["properties"]) >= {"kind", "columns", "severity"}
    windows = nested["Window"]["anyOf"]
    # last_7 completes as it validates
    assert windows[0]["pattern"] == "^(same|all|changes|last_[0-9]+|previous_[0-9]+)$"
