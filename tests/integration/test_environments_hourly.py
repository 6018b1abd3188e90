"""Promotion of an hourly product with real Spark and Delta: ``mesh apply --env`` computes a day's 24 hours in the
environment, ``mesh apply --from-env`` publishes each hour whose input did not move into production without a Spark
job (one commit, one materialization per hour with its data version) and leaves the hour whose input re-landed to
the next plan."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from production import Production, production_home

from mesh_assets import mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.cli.environments import table_location
from mesh_assets.cli.main import main
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.lake import open_table
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "environments_hourly" / "domains"
CLICKS = dg.AssetKey(["hr", "hourly_clicks"])
HOURS = [f"2021-06-01-{h:02d}:00" for h in range(24)]
MOVED = "2021-06-01-05:00"


def clicks_of(hour: int) -> int:
    return hour % 3 + 1


def land(production: Production, hours: list[int], per_hour) -> None:
    rows = [(i, datetime(2021, 6, 1, h, tzinfo=UTC)) for h in hours for i in range(per_hour(h))]
    frame = production.mesh.spark.createDataFrame(rows, "id bigint, p_hour timestamp")
    span = PartitionRange.from_keys(Grain.HOURLY, HOURS[hours[0]], HOURS[hours[-1]])
    frame.write.format("delta").mode("overwrite").partitionBy("p_hour").option(
        "replaceWhere", replace_predicate("p_hour", span)
    ).save(production.mesh.registry.location("hr", "raw_clicks"))


def clicks(production: Production, location: str | None = None) -> dict[str, int]:
    location = location or production.mesh.registry.location(*CLICKS.path)
    rows = production.mesh.spark.read.format("delta").load(location).collect()
    return {Grain.HOURLY.key(r["p_hour"].replace(tzinfo=UTC)): r["clicks"] for r in rows}


@pytest.fixture(scope="module")
def production(spark, tmp_path_factory) -> Iterator[Production]:
    """A day of hourly clicks landed and the hourly product materialized for its 24 hours: production."""
    base = tmp_path_factory.mktemp("hourly")
    domains = base / "domains"
    shutil.copytree(FIXTURE, domains)
    with production_home(base, domains, []) as world:
        land(world, list(range(24)), clicks_of)
        defs = mesh_definitions(domains)
        observe_now(defs, world.instance, world.mesh, {})
        world.materialize(defs, [CLICKS], HOURS[0], HOURS[-1])
        yield world


def test_an_hourly_change_is_promoted_by_the_hour_and_an_hour_whose_input_moved_is_left(
    production: Production, monkeypatch: pytest.MonkeyPatch
):
    from rich.console import Console

    from mesh_assets.cli.change import make_plan
    from mesh_assets.cli.environments import promote_from
    from mesh_assets.compat import DATA_VERSION_TAG

    assert clicks(production) == {key: clicks_of(h) for h, key in enumerate(HOURS)}
    sql = production.domains / "hr" / "defs" / "clicks" / "hourly_clicks.sql"
    sql.write_text(sql.read_text().replace("COUNT(*) AS clicks", "COUNT(*) * 10 AS clicks"))
    assert main(["apply", "--env", "hourly", "--from", "2021-06-01", "--to", "2021-06-01"]) == 0
    built = clicks(production, table_location("hourly", *CLICKS.path))
    assert built == {key: clicks_of(h) * 10 for h, key in enumerate(HOURS)}

    land(production, [5], lambda h: 7)  # hour 5 re-landed in production after the environment read it
    observe_now(mesh_definitions(production.domains), production.instance, production.mesh, {})

    def no_spark(*args, **kwargs):
        raise AssertionError("promotion started Spark")

    monkeypatch.setattr("mesh_assets.engine.session.get_spark", no_spark)
    args = argparse.Namespace(from_env="hourly", base=None, dry_run=False)
    assert promote_from(args, Console(width=200), production.instance) is None
    monkeypatch.undo()

    expected = {key: clicks_of(h) * 10 for h, key in enumerate(HOURS)}
    expected[MOVED] = clicks_of(5)  # not promoted: production's rows of that hour stay until it is recomputed
    assert clicks(production) == expected
    version = open_table(production.mesh.registry.location(*CLICKS.path), production.mesh.settings.s3).version()
    promoted = {
        r.partition_key: r.asset_materialization.tags[DATA_VERSION_TAG]
        for r in production.instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=CLICKS), limit=100).records
        if r.asset_materialization.metadata.get("mesh/promoted_from")
    }
    assert promoted == {key: f"delta-v{version}" for key in HOURS if key != MOVED}  # one commit for 23 hours

    plan = make_plan(None, production.instance)  # what mesh apply launches next: the hour whose input moved
    [left] = plan.recompute
    assert (left.asset.key, [(r.start, r.end) for r in left.asset.ranges]) == (CLICKS, [(MOVED, MOVED)])
