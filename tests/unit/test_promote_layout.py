"""Promotion's file selection for every grain: a file belongs to the Dagster key its partition values name (an
hour's or a quarter hour's timestamp, a week's Monday, a month's first day, a region's ``date|region``), so a
promotion copies exactly the files of the partitions it promotes, and a (date, region) promotion replaces only
dates ready in every region it promotes."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from mesh_assets.change.promote import Layout, _files, promote, whole_dates
from mesh_assets.model.grain import Grain, region_key
from mesh_assets.settings import S3Settings
from mesh_assets.storage.environment import Environment


def table(path: Path, columns: dict[str, pa.Array], partition_by: list[str]) -> str:
    """A Delta table of one row per value, one file per partition; returns its location."""
    rows = len(next(iter(columns.values())))
    write_deltalake(str(path), pa.table({"x": list(range(rows)), **columns}), partition_by=partition_by)
    return str(path)


def files_of(location: str, layout: Layout, keys: set[str]) -> set[str]:
    """The partition folders of the files promotion picks for ``keys``."""
    found = _files(location, S3Settings(), None, layout, keys)
    assert found is not None
    return {"/".join(p.split("/")[:-1]) for p in found}


@pytest.mark.parametrize(
    ("grain", "keys", "picked"),
    [
        (Grain.HOURLY, {"2024-03-29-05:00"}, 1),
        (Grain.minutes(15), {"2024-03-29-05:00", "2024-03-29-05:15"}, 2),
    ],
)
def test_an_hour_or_minutes_partition_picks_its_own_timestamps_files(tmp_path, grain, keys, picked) -> None:
    stamps = [datetime(2024, 3, 29, 5, m, tzinfo=UTC) for m in (0, 15, 30)] + [datetime(2024, 3, 29, 6, tzinfo=UTC)]
    location = table(tmp_path / "t", {"p_ts": pa.array(stamps, pa.timestamp("us", tz="UTC"))}, ["p_ts"])
    layout = Layout(grain, "p_ts")
    chosen = files_of(location, layout, keys)
    assert len(chosen) == picked  # by day alone (the key's first 10 characters) every file would match
    assert files_of(location, layout, {"2024-03-29-06:00"}) != chosen


def test_a_week_is_its_mondays_files_and_a_month_its_first_days(tmp_path) -> None:
    days = [date(2024, 3, 25), date(2024, 4, 1), date(2024, 3, 27)]  # two Mondays, and a Wednesday off the grid
    location = table(tmp_path / "w", {"p_week": pa.array(days, pa.date32())}, ["p_week"])
    assert files_of(location, Layout(Grain.WEEKLY, "p_week"), {"2024-03-25"}) == {"p_week=2024-03-25"}
    assert files_of(location, Layout(Grain.WEEKLY, "p_week"), {"2024-03-27"}) == set()  # not a week's key
    assert files_of(location, Layout(Grain.MONTHLY, "p_week"), {"2024-04-01"}) == {"p_week=2024-04-01"}


def test_a_regional_partition_picks_its_date_in_its_region_alone(tmp_path) -> None:
    columns = {
        "p_date": pa.array([date(2024, 3, 31)] * 3 + [date(2024, 4, 1)], pa.date32()),
        "region": ["eu", "apac", "latam", "eu"],
    }
    location = table(tmp_path / "r", columns, ["p_date", "region"])
    layout = Layout(Grain.DAILY, "p_date", "region")
    keys = {region_key("2024-03-31", "eu"), region_key("2024-03-31", "apac")}
    assert keys == {"2024-03-31|eu", "2024-03-31|apac"}
    assert files_of(location, layout, keys) == {"p_date=2024-03-31/region=eu", "p_date=2024-03-31/region=apac"}


def test_a_regional_promotion_replaces_only_dates_ready_in_every_region_it_promotes() -> None:
    ready = ["2024-03-31|eu", "2024-03-31|apac", "2024-04-01|eu"]  # 2024-04-01 in apac is recomputed
    assert whole_dates(ready) == (["2024-03-31|eu", "2024-03-31|apac"], ["2024-04-01|eu"])
    assert whole_dates(["2024-04-01|eu", "2024-04-02|eu"]) == (["2024-04-01|eu", "2024-04-02|eu"], [])


def test_an_unpartitioned_table_is_not_promoted_and_says_why(tmp_path) -> None:
    key = dg.AssetKey(["roll", "totals"])
    env = Environment("ci", str(tmp_path), str(tmp_path / "warehouse"), str(tmp_path / "home"), tables=("roll/totals",))
    graph = SimpleNamespace(toposorted_asset_keys=[key], has=lambda k: True, get=lambda k: SimpleNamespace())
    with dg.DagsterInstance.ephemeral() as own:
        done = promote(env, graph, own, own, None, {}, dry_run=True)  # type: ignore[arg-type]
    assert done.promoted == {}
    assert done.left == {
        key: {"the whole table": "recomputed: it is not partitioned, so it has no partition to promote"}
    }
