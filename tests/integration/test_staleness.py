"""Staleness as the Dagster UI shows it: a re-published day makes what was computed from it stale, partition by
partition, with the reason; ``mesh stale`` lists it; the automation recomputes it and nothing is stale after.

The webserver serves the fixture mesh over the test's instance: its GraphQL API is what the UI asks.
"""

from __future__ import annotations

import os
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


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A webserver over a throwaway instance with the fixture mesh's two code locations; (its URL, DAGSTER_HOME)."""
    base = tmp_path_factory.mktemp("stale")
    home = base / "dagster"
    home.mkdir()
    locations = {d: DOMAINS / d / "definitions.py" for d in ("tr", "ledger")}
    env = {**os.environ, "DAGSTER_HOME": str(home), "MESH_HOME": str(base), "MESH_PROJECT_ROOT": str(ROOT)}
    with dagster_webserver(workspace(base / "workspace.yaml", locations, ROOT), env, base / "webserver.log") as url:
        yield url, home


def requested(sales: Sales, cursor: object) -> tuple[dict[dg.AssetKey, set[str]], object]:
    result = dg.evaluate_automation_conditions(
        defs=sales.defs, instance=sales.instance, cursor=cursor, evaluation_time=AT
    )
    wanted = {key: set(result.get_requested_partitions(key)) for key in (DAILY, TWO_DAY)}
    return {k: v for k, v in wanted.items() if v}, result.cursor


def test_a_republished_day_makes_its_consumers_stale_until_automation_recomputes_them(
    spark, served, tmp_path, monkeypatch, capsys
) -> None:
    url, home = served
    webserver = Webserver(url, timeout=120)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        sales = Sales(spark, tmp_path / "warehouse", instance)
        sales.land("2021-06-01", [1, 2])
        sales.land("2021-06-02", [10])
        sales.materialize([DAILY, TWO_DAY], "2021-06-01", "2021-06-02")
        _, cursor = requested(sales, None)
        assert stale_partitions(webserver, instance, [DAILY, TWO_DAY]) == []

        sales.land("2021-06-01", [1, 2, 4])  # re-landed: a late sale of 4
        sales.materialize([DAILY], "2021-06-01")  # the day's total is re-published

        stale = {(s.key, s.partition): s.reasons for s in stale_partitions(webserver, instance, [DAILY, TWO_DAY])}
        assert set(stale) == {(TWO_DAY, "2021-06-01"), (TWO_DAY, "2021-06-02")}  # both windows that read it
        assert stale[(TWO_DAY, "2021-06-02")] == (
            "upstream data changed: tr/daily_sales 2021-06-01 has a new data version",
        )
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        monkeypatch.setenv("MESH_DOMAINS_DIR", str(DOMAINS))
        monkeypatch.setenv("MESH_DBT_PROJECT_DIR", str(tmp_path / "no-dbt"))
        monkeypatch.setenv("MESH_DAGSTER__URL", url)
        get_settings.cache_clear()
        assert main(["stale", "tr/two_day_sales"]) == 1
        printed = capsys.readouterr().out
        assert "tr/two_day_sales 2021-06-02: upstream data changed: tr/daily_sales 2021-06-01" in printed
        assert "2 stale partition(s)" in printed

        wanted, cursor = requested(sales, cursor)
        assert wanted == {TWO_DAY: {"2021-06-01", "2021-06-02"}}  # every window that read the day, nothing else
        sales.materialize([TWO_DAY], "2021-06-01", "2021-06-02")

        assert stale_partitions(webserver, instance, [DAILY, TWO_DAY]) == []
        assert sales.amounts(TWO_DAY) == {"2021-06-01": 7, "2021-06-02": 17}
    get_settings.cache_clear()
