"""``mesh test``'s work: every selected ``*.tests.yaml`` case run in the local SparkSession, then dbt's own unit
tests (``dbt test --select test_type:unit``) in the same session, on a throwaway target and warehouse."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from mesh_assets.graph.discovery import domain_folders
from mesh_assets.model.errors import SpecError
from mesh_assets.testing.cases import Case, read_cases, test_files
from mesh_assets.testing.rows import compare, render
from mesh_assets.testing.runner import CaseError, Given, run


@dataclass(frozen=True)
class Outcome:
    """One test's result: ``passed``, ``failed`` (with the side-by-side text) or ``error`` (it could not run)."""

    title: str
    status: str
    seconds: float
    detail: str = ""


def selected_cases(domains_dir: Path, selection: str | None) -> tuple[list[Case], list[SpecError]]:
    """The cases of ``selection`` (``domain``, ``domain/table``, or every domain when None), and the errors of
    their test files."""
    domain, _, table = (selection or "").replace(".", "/", 1).partition("/")
    cases, errors = [], []
    for folder in domain_folders(domains_dir):
        if domain and folder.name != domain:
            continue
        for path in test_files(folder):
            found, bad = read_cases(path, folder.name)
            cases += [c for c in found if not table or c.table == table]
            errors += bad
    return cases, errors


def run_case(spark: SparkSession, domains_dir: Path, case: Case) -> Outcome:
    started = time.monotonic()
    where = f"{case.file}:{case.line}" if case.line else str(case.file)
    try:
        df = run(spark, domains_dir, Given(case.domain, case.table, case.partition, dict(case.given)))
        actual = [r.asDict(recursive=True) for r in df.collect()]
    except CaseError as exc:
        return Outcome(case.title, "error", time.monotonic() - started, f"{where}: {exc}")
    except Exception as exc:  # the product's own code or query failed: the test fails, saying how
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return Outcome(case.title, "error", time.monotonic() - started, f"{where}: {type(exc).__name__}: {first}")
    mismatch = compare(case.expect, actual)
    seconds = time.monotonic() - started
    if mismatch is None:
        return Outcome(case.title, "passed", seconds)
    return Outcome(
        case.title, "failed", seconds, f"{where}\n" + render(case.title, mismatch, len(case.expect), len(actual))
    )


def run_dbt_unit_tests(spark: SparkSession, selection: str | None) -> list[Outcome]:
    """dbt's unit tests of the selected domain's models (``path:models/<domain>``), run by dbt in ``spark``."""
    from mesh_assets.dbt.project import SESSION, dbt_env, project_dir
    from mesh_assets.dbt.runner import invoke_dbt

    domain = (selection or "").replace(".", "/", 1).partition("/")[0]
    select = f"test_type:unit,path:models/{domain}" if domain else "test_type:unit"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mesh-test-dbt-") as tmp:
        result = invoke_dbt(
            ["test", "--select", select],
            project_dir=project_dir(),
            profiles_dir=project_dir(),
            target=SESSION,
            target_path=Path(tmp) / "target",
            env=dbt_env(str(Path(tmp) / "warehouse")),
        )
    outcomes = []
    for event in result.events:
        if (
            event["info"]["name"] != "LogTestResult"
            or event["data"].get("node_info", {}).get("resource_type") != "unit_test"
        ):
            continue
        data = event["data"]
        status = {"pass": "passed", "fail": "failed"}.get(data["status"], "error")
        detail = "" if status == "passed" else "\n".join(result.errors())
        outcomes.append(Outcome(f"dbt {data['name']}", status, float(data.get("execution_time") or 0), detail))
    if not outcomes and not result.success:
        detail = "\n".join(result.errors()) or str(result.exception)
        outcomes.append(Outcome("dbt unit tests", "error", time.monotonic() - started, detail))
    return outcomes
