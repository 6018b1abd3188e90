"""Automation of rollups, evaluated in-process against an ephemeral instance (no Spark): a week is requested once
its seven days are published, an hour of 15-minute batches once its ``min_complete`` share is, and late finer
data requests the coarser partition again. Each case runs over the whole mesh and over the reader's own code
location (where the producer's tables are placeholders), as :mod:`test_automation` does."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path

import automation_worlds as worlds
import dagster as dg
import pytest

from mesh_assets.graph.discovery import DomainSpecs
from mesh_assets.model.product import DataProduct, ExternalTable, Input, Output, PySparkTransformation, Window

DAYS = dg.AssetKey(["up", "raw_days"])
QUARTERS = dg.AssetKey(["up", "raw_quarters"])
WEEK = [(date(2024, 1, 8) + timedelta(days=d)).isoformat() for d in range(7)]
HOUR = [f"2024-01-15-10:{m:02d}" for m in (0, 15, 30, 45)]


def _fn(inputs: dict[str, Input]) -> Callable[..., None]:
    def build(**_: object) -> None:
        return None

    build.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in inputs]
    )
    return build


def _product(domain: str, outputs: list[tuple[Output, dict[str, Input]]], **kw) -> DataProduct:
    return DataProduct(
        domain=domain,
        name=domain,
        owner="team:data",
        contacts=[{"kind": "chat", "value": "#data"}],
        start_date=date(2024, 1, 1),
        transformations=[PySparkTransformation(output=o, inputs=i, fn=_fn(i)) for o, i in outputs],
        **kw,
    )


def domains() -> dict[str, DomainSpecs]:
    up = _product(
        "up",
        [],
        external=(
            ExternalTable(table="raw_days"),
            ExternalTable(table="raw_quarters", partitioning="15min", partition_column="p_ts"),
        ),
    )
    down = _product(
        "down",
        [
            (
                Output(table="weekly", partitioning="weekly", partition_column="p_week"),
                {"days": Input(table="up.raw_days", window=Window(kind="same"))},
            ),
            (
                Output(table="hourly", partitioning="hourly", partition_column="p_hour"),
                {"quarters": Input(table="up.raw_quarters", window=Window(kind="same"), min_complete=0.75)},
            ),
        ],
    )
    return {"up": DomainSpecs("up", Path("."), [up]), "down": DomainSpecs("down", Path("."), [down])}


def whole_mesh() -> dg.Definitions:
    return worlds.whole_mesh(domains())


def down_location() -> dg.Definitions:
    return worlds.down_location(domains())


class Ticker:
    """Evaluates the conditions tick by tick, carrying the cursor like the sensor does."""

    def __init__(self, build: Callable[[], dg.Definitions]) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.defs = build()
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursor = None
        self.now = datetime(2024, 1, 16, 1, 0)

    def tick(self) -> dict[str, set[str]]:
        self.now += timedelta(minutes=1)
        result = dg.evaluate_automation_conditions(
            defs=self.defs, instance=self.instance, cursor=self.cursor, evaluation_time=self.now
        )
        self.cursor = result.cursor
        return {
            key.to_user_string(): set(result.get_requested_partitions(key))
            for key in self.defs.resolve_asset_graph().get_all_asset_keys()
            if result.get_num_requested(key)
        }

    def publish(self, key: dg.AssetKey, *partitions: str) -> None:
        for partition in partitions:
            self.instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))


@pytest.fixture(params=[whole_mesh, down_location], ids=["whole mesh", "down's code location"])
def ticker(request: pytest.FixtureRequest) -> Ticker:
    t = Ticker(request.param)
    assert t.tick() == {}  # the first evaluation only initialises the cursor
    return t


def test_a_week_is_requested_with_its_seventh_day_and_again_when_a_day_is_republished(ticker: Ticker) -> None:
    for day in WEEK[:6]:
        ticker.publish(DAYS, day)
        assert "down/weekly" not in ticker.tick()
    ticker.publish(DAYS, WEEK[6])
    assert ticker.tick() == {"down/weekly": {"2024-01-08"}}
    assert ticker.tick() == {}
    ticker.publish(DAYS, WEEK[2])  # late data for Wednesday
    assert ticker.tick() == {"down/weekly": {"2024-01-08"}}


def test_an_hour_is_requested_with_its_min_complete_share_and_again_when_the_late_quarter_lands(
    ticker: Ticker,
) -> None:
    ticker.publish(QUARTERS, *HOUR[:2])
    assert "down/hourly" not in ticker.tick()  # 2 of 4: below min_complete 0.75
    ticker.publish(QUARTERS, HOUR[3])
    assert ticker.tick() == {"down/hourly": {"2024-01-15-10:00"}}
    assert ticker.tick() == {}
    ticker.publish(QUARTERS, HOUR[2])  # the late quarter: the hour is recomputed with all four
    assert ticker.tick() == {"down/hourly": {"2024-01-15-10:00"}}
