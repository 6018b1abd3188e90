"""``mesh validate`` and the code locations refuse exactly the same specs.

Every governance and bad-spec fixture is judged both ways, per domain: by ``mesh validate``'s path (the
catalog, each domain's Python in a process of its own) and by building that domain's code location
(``domain_definitions``, as Dagster loads it). A domain ``mesh validate`` passes must load; one it refuses
must not, and the location's error must be among validate's.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mesh_assets.definitions import domain_definitions, tool_tables
from mesh_assets.graph.discovery import domain_folders
from mesh_assets.graph.isolate import discover_all, validate_catalog
from mesh_assets.model.errors import SpecValidationError
from mesh_assets.settings import get_settings

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = [
    *sorted(p.parent for p in FIXTURES.glob("governance/*/domains")),
    FIXTURES / "reliability" / "bad_specs",
    FIXTURES / "dbt_consumer",
]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_validate_and_the_code_location_give_the_same_verdict(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(case)
    settings = get_settings()
    entries = discover_all(Path("domains"), settings.home, settings.discovery_timeout_seconds, retry=True)
    for folder in domain_folders(Path("domains")):
        expected = validate_catalog(entries, tool_tables(Path("domains")), only={folder.name})
        try:
            domain_definitions(folder / "definitions.py").get_repository_def()
        except SpecValidationError as exc:
            assert expected, f"{folder.name}: the location refuses what validate passes: {exc}"
            assert set(exc.errors) <= set(expected), folder.name
        except dg.DagsterInvalidDefinitionError as exc:
            pytest.fail(f"{folder.name}: Dagster refuses what validate did not see: {exc}")
        else:
            assert not expected, f"{folder.name}: validate refuses what the location loads: {expected}"
