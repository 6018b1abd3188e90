"""Staleness as the Dagster UI shows it: a re-landed external day makes what was computed from it stale, level
by level, partition by partition, with the reason; ``mesh stale`` and ``mesh health`` list it; the automation
recomputes it and nothing is stale after. Changed code makes what it computed stale too.

The webserver serves a copy of the fixture mesh over the test's instance: its GraphQL API is what the UI asks.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import dagster as dg
import pytest
from trust import DAILY, DOMAINS, TWO_DAY, Sales
from webserver import dagster_webserver, workspace

from mesh_assets.backfill import Webserver
from mesh_assets.backfill.stale import stale_partitions
from mesh_assets.cli.main import main
from mesh_assets.settings import get_settings

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
AT = datetime(2021, 6, 3, 1)
RELOAD = """mutation MeshReload($name: String!) {
  reloadRepositoryLocation(repositoryLocationName: $name) { __typename ... on WorkspaceLocationEntry { loadStatus } }
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """A webserver over a throwaway instance with the fixture mesh's two code locations, served from a copy the
    test may edit; (its URL, DAGSTER_HOME, the copy's domains folder)."""
    base = tmp_path_factory.mktemp("stale")
    home = base / "dagster"
    home.mkdir()
    domains = Path(shutil.copytree(DOMAINS, base / "domains", ignore=shutil.ignore_patterns("__pycache__")))
    locations = {d: domains / d / "definitions.py" for d in ("tr", "ledger")}
    env = {**os.environ, "DAGSTER_HOME": str(home), "MESH_HOME": str(base), "MESH_PROJECT_ROOT": str(ROOT)}
    with dagster_webserver(workspace(base / "workspace.yaml", locations, ROOT), env, base / "webserver.log") as url:
        yield url, home, domains


def requested(sales: Sales, cursor: object) -> tuple[dict[dg.AssetKey, set[str]], object]:
    result = dg.evaluate_automation_conditions(
        defs=sales.defs, instance=sales.instance, cursor=cursor, evaluation_time=AT
    )
    wanted = {key: set(result.get_requested_partitions(key)) for key in (DAILY, TWO_DAY)}
    return {k: v for k, v in wanted.items() if v}, result.cursor


def stale(webserver: Webserver, instance: dg.DagsterInstance) -> dict[tuple[dg.AssetKey, str | None], tuple]:
    return {(s.key, s.partition): s.reasons for s in stale_partitions(webserver, instance, [DAILY, TWO_DAY])}


def test_a_relanded_day_makes_its_consumers_stale_until_automation_recomputes_them(
    spark, served, tmp_path, monkeypatch, capsys
) -> None:
    url, home, domains = served
    webserver = Webserver(url, timeout=120)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        sales = Sales(spark, tmp_path / "warehouse", instance, domains)
        sales.land("2021-06-01", [1, 2])
        sales.land("2021-06-02", [10])
        sales.materialize([DAILY, TWO_DAY], "2021-06-01", "2021-06-02")
        _, cursor = requested(sales, None)
        assert stale(webserver, instance) == {}

        sales.land("2021-06-01", [1, 2, 4])  # re-landed by its outside writer: a late sale of 4

        assert stale(webserver, instance) == {
            (DAILY, "2021-06-01"): ("upstream data changed: tr/raw_sales 2021-06-01 has a new data version",)
        }
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        monkeypatch.setenv("MESH_DOMAINS_DIR", str(domains))
        monkeypatch.setenv("MESH_DBT_PROJECT_DIR", str(tmp_path / "no-dbt"))
        monkeypatch.setenv("MESH_DAGSTER__URL", url)
        get_settings.cache_clear()
        assert main(["stale"]) == 1
        printed = capsys.readouterr().out
        assert "tr/daily_sales 2021-06-01: upstream data changed: tr/raw_sales 2021-06-01" in printed
        assert "1 stale partition(s)" in printed
        assert main(["health"]) == 1  # the stale day beside any invalid or suspect one, with what clears it
        health = " ".join(capsys.readouterr().out.split())
        assert (
            "tr/daily_sales stale 2021-06-01: upstream data changed: tr/raw_sales 2021-06-01 has a new data version "
            "clear: mesh backfill tr/daily_sales --start 2021-06-01 --end 2021-06-01" in health
        )
        assert health.endswith("1 partition(s) of 1 table(s) invalid, suspect, failing a check or stale")

        wanted, cursor = requested(sales, cursor)
        assert wanted == {DAILY: {"2021-06-01"}, TWO_DAY: {"2021-06-01", "2021-06-02"}}  # what read it, level by level
        sales.materialize([DAILY], "2021-06-01")

        next_level = stale(webserver, instance)
        assert set(next_level) == {(TWO_DAY, "2021-06-01"), (TWO_DAY, "2021-06-02")}  # both windows that read it
        assert next_level[(TWO_DAY, "2021-06-02")] == (
            "upstream data changed: tr/daily_sales 2021-06-01 has a new data version",
        )
        sales.materialize([TWO_DAY], "2021-06-01", "2021-06-02")

        assert stale(webserver, instance) == {}
        assert main(["stale", "tr/two_day_sales"]) == 0
        assert sales.amounts(TWO_DAY) == {"2021-06-01": 7, "2021-06-02": 17}

        sales_py = domains / "tr" / "sales.py"  # the two-day total's transformation changes, and is deployed
        sales_py.write_text(sales_py.read_text().replace('daily.agg(F.sum("amount")', "daily.agg(F.sum(daily.amount)"))
        assert webserver.graphql(RELOAD, {"name": "tr"})["reloadRepositoryLocation"]["loadStatus"] == "LOADED"

        reason = "code version changed: tr/two_day_sales {} has a new code version"
        assert stale(webserver, instance) == {
            (TWO_DAY, day): (reason.format(day),) for day in ("2021-06-01", "2021-06-02")
        }
    get_settings.cache_clear()
