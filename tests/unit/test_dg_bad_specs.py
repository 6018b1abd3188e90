"""``dg check yaml`` and ``dg check defs`` say what ``mesh validate`` says, on every bad-spec fixture.

Each domain with components (a ``defs/`` folder) of the bad-spec fixtures (tests/bad_specs.py) is made a dg
project on a copy, and both commands run on it (in one process, tests/dg_runs.py). ``dg check yaml`` checks the
files against the component's JSON schema, one file per run: dagster-dg-cli 1.13.27 keeps one ``defs.yaml`` per
component type when it is given the whole project or several paths (the last one found), so only a product's
folder given alone is surely checked (the README says so). Every error it reports is one ``mesh validate``
reports, at the same file and line and naming the same field, and every unknown field Mesh finds in a
``defs.yaml`` it finds too (a typo in a nested field once came out as the top-level field holding it, "is not
valid under any of the given schemas").
``dg check defs`` fails exactly for the domains Mesh refuses, with the schema's errors of the file it checked or,
once that passes, Mesh's own for every file (file, line, field) and nothing else: no Python traceback, and not
the "Stack Trace:" block Dagster prints under any exception that stops a location from loading (under the
validation command Mesh prints its errors and exits 1 itself: ``mesh_assets/definitions.py``).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from bad_specs import BAD_MESHES
from dg_runs import run_in_a_process

from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.validate import validate
from mesh_assets.model.errors import SpecError

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
DG_ERROR = re.compile(r"^(\S+\.ya?ml):(\d+) - mesh_assets\.DataProduct attributes\.(\S+) (.*)$", re.M)
DOMAINS = [(mesh, d.name) for mesh in BAD_MESHES for d in sorted((mesh / "domains").iterdir()) if (d / "defs").is_dir()]


def mesh_errors(domains: Path) -> list[SpecError]:
    """What ``mesh validate`` reports for ``domains``, files relative to its parent (``domains/<domain>/...``)."""
    cwd = os.getcwd()
    os.chdir(domains.parent)
    try:
        return validate(load_all(Path("domains")))
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Per ``<fixture>/<domain>``: its folder, Mesh's errors in its files, and dg's two results."""
    base = tmp_path_factory.mktemp("dg-bad")
    jobs, found = {}, {}
    for mesh in BAD_MESHES:
        name = str(mesh.relative_to(FIXTURES))
        domains = shutil.copytree(mesh / "domains", base / name / "domains")
        errors = mesh_errors(domains)
        for _, domain in [d for d in DOMAINS if d[0] == mesh]:
            folder = domains / domain
            (folder / "dg.toml").write_text(
                (ROOT / "domains" / "growth" / "dg.toml").read_text().replace('"growth"', f'"{domain}"')
            )
            (folder / "definitions.py").write_text((ROOT / "domains" / "growth" / "definitions.py").read_text())
            key = f"{name}/{domain}"
            products = sorted(p.name for p in (folder / "defs").iterdir() if (p / "defs.yaml").exists())
            checks = [["check", "yaml", f"defs/{product}"] for product in products]  # one file each: see above
            jobs[key] = {"folder": str(folder), "commands": [*checks, ["check", "defs"]]}
            found[key] = [e for e in errors if e.file.startswith(f"domains/{domain}/")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MESH_DBT_PROJECT_DIR": str(base / "no-dbt")}
    results = run_in_a_process(jobs, base, env)
    return {
        k: {"folder": Path(jobs[k]["folder"]), "errors": found[k], "yaml": r[:-1], "defs": r[-1]}
        for k, r in results.items()
    }


def reported(result: dict) -> str:
    return result["stdout"] + result["stderr"]


@pytest.mark.parametrize("case", [f"{m.relative_to(FIXTURES)}/{d}" for m, d in DOMAINS])
def test_dg_check_yaml_and_defs_say_what_mesh_validate_says(runs, case: str) -> None:
    run = runs[case]
    folder, errors = run["folder"], run["errors"]
    mesh_root = folder.parent.parent
    said = "".join(reported(r) for r in run["yaml"])
    schema_errors = [(Path(f).resolve(), int(line), path, message) for f, line, path, message in DG_ERROR.findall(said)]
    assert "Traceback" not in said and "Stack Trace" not in said
    for file, line, path, message in schema_errors:
        relative = str(file.relative_to(mesh_root.resolve()))
        field = [p for p in path.split(".") if not p.isdigit()][-1]
        assert [e for e in errors if (e.file, e.line) == (relative, line) and field in e.field.split(".")], (
            f"dg: {relative}:{line} {path} {message}; mesh validate: {[str(e) for e in errors]}"
        )
    unknown = {(e.file, e.line, e.field) for e in errors if "unknown field" in e.message and "/defs/" in e.file}
    from_dg = {(str(f.relative_to(mesh_root.resolve())), n, p) for f, n, p, m in schema_errors if "unexpected" in m}
    assert unknown <= from_dg, said
    assert [r["code"] for r in run["yaml"]] == [1 if DG_ERROR.search(reported(r)) else 0 for r in run["yaml"]], said

    checked = reported(run["defs"])
    assert "Traceback" not in checked and "Stack Trace" not in checked, checked  # Mesh's errors alone
    assert run["defs"]["code"] == (1 if errors else 0), checked
    if DG_ERROR.search(checked):  # the schema's errors of one file (see above), as dg check yaml reports them
        assert set(DG_ERROR.findall(checked)) <= set(DG_ERROR.findall(said)), checked
    else:  # Mesh's own report, files relative to the domain's folder
        assert not errors or "specs do not pass `mesh validate`: its code location is not loaded" in checked, checked
        for error in errors:
            where = str(SpecError(error.file.split("/", 2)[2], error.line, error.field, ""))  # file:line: field:
            assert where in checked, f"{error}\n{checked}"
