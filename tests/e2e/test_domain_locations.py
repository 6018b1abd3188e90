"""Two domains as two code locations, served as under ``make dev``: each asset and check is its own location's,
and one domain's automation, evaluated by its own code server, requests what the other domain published.

``down`` reads ``up``'s output ``clean`` (two blocking checks) and its hourly external table ``raw_clicks``. The
``down`` location holds both as placeholders with their partitions (its automation's graph), so the test
asks the webserver what the workspace shows for them, then runs ``down``'s sensor through the webserver's
dry run: Dagster evaluates it in ``down``'s code server, against the instance the test writes events to.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from runless import report_published
from webserver import code_server, dagster_webserver, grpc_workspace

from mesh_assets.backfill import Webserver

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ROOT / "tests" / "fixtures" / "locations" / "domains"
CLEAN, RAW = dg.AssetKey(["up", "clean"]), dg.AssetKey(["up", "raw_clicks"])
ASSETS = """{ assetNodes { assetKey { path } isMaterializable groupName repository { location { name } }
  assetChecksOrError { ... on AssetChecks { checks { name } } } } }"""
DRY_RUN = """mutation($selector: SensorSelector!, $cursor: String) {
  sensorDryRun(selectorData: $selector, cursor: $cursor) { __typename ... on PythonError { message }
  ... on DryRunInstigationTick { evaluationResult { cursor error { message } runRequests { tags { key value }
    assetSelection { path } } } } } }"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Webserver, Path]]:
    """The two locations, each in a code server of its own, and a webserver over them; its DAGSTER_HOME."""
    base = tmp_path_factory.mktemp("locations")
    home = base / "dagster"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MESH_", "DAGSTER_"))}
    env.update(MESH_HOME=str(base), DAGSTER_HOME=str(home), MESH_DOMAINS_DIR=str(DOMAINS))
    with (
        code_server("up", DOMAINS / "up" / "definitions.py", ROOT, env, base / "up.log") as up,
        code_server("down", DOMAINS / "down" / "definitions.py", ROOT, env, base / "down.log") as down,
    ):
        workspace = grpc_workspace(base / "workspace.yaml", {"up": up, "down": down})
        with dagster_webserver(workspace, env, base / "webserver.log") as url:
            yield Webserver(url, timeout=120), home


def test_each_asset_and_check_is_shown_from_the_location_that_defines_it(served) -> None:
    webserver, _ = served
    nodes = webserver.graphql(ASSETS, {})["assetNodes"]
    shown = {
        "/".join(n["assetKey"]["path"]): (
            n["repository"]["location"]["name"],
            n["isMaterializable"],
            n["groupName"],
            sorted(c["name"] for c in n["assetChecksOrError"].get("checks", [])),
        )
        for n in nodes
    }
    assert len(nodes) == len(shown)  # one node per table, though `down` defines placeholders of two of up's
    assert shown == {
        "up/clean": ("up", True, "clicks", ["not_null_id", "valid"]),
        "up/raw_clicks": ("up", False, "clicks", []),
        "down/report": ("down", True, "reports", ["valid"]),
        "down/clicks_per_day": ("down", True, "reports", ["valid"]),
    }


def test_a_domain_s_code_server_requests_what_another_domain_published_and_checked(served) -> None:
    webserver, home = served
    selector = {"repositoryLocationName": "down", "repositoryName": "__repository__", "sensorName": "down__automation"}

    def tick(cursor: str | None) -> tuple[set[tuple[str, str]], str | None]:
        result = webserver.graphql(DRY_RUN, {"selector": selector, "cursor": cursor})["sensorDryRun"]
        assert result["__typename"] == "DryRunInstigationTick", result
        evaluation = result["evaluationResult"]
        assert evaluation["error"] is None, evaluation["error"]
        requested = set()
        for request in evaluation["runRequests"] or []:
            partition = {t["key"]: t["value"] for t in request["tags"]}["dagster/partition"]
            requested |= {("/".join(k["path"]), partition) for k in request["assetSelection"]}
        return requested, evaluation["cursor"]

    requested, cursor = tick(None)
    assert requested == set()  # the first evaluation only starts the cursor
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for hour in range(24):
            report_published(instance, RAW, f"2024-01-08-{hour:02d}:00")
        report_published(instance, CLEAN, "2024-01-08", valid=True, not_null_id=False)
        report_published(instance, CLEAN, "2024-01-09", valid=True, not_null_id=True)
    requested, _ = tick(cursor)
    # a day of clicks needs its 24 hours (up's partitions, mapped in down's location); report 2024-01-08 waits:
    # a blocking check of its input failed in up's location
    assert requested == {("down/clicks_per_day", "2024-01-08"), ("down/report", "2024-01-09")}
