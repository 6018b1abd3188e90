"""A product reading its own past: running totals over five days, computed in order in one run, and the same
totals after a re-landed day 2 is backfilled with the days after it."""

from __future__ import annotations

import dagster as dg
import pytest
from delta.tables import DeltaTable
from trust import DAILY, Sales

pytestmark = pytest.mark.spark

RUNNING = dg.AssetKey(["tr", "running_sales"])
DAYS = [f"2021-06-0{d}" for d in range(1, 6)]


def totals(sales: Sales) -> dict[str, int]:
    table = sales.spark.read.format("delta").load(sales.mesh.registry.location(*RUNNING.path))
    return {r["p_date"].isoformat(): r["total"] for r in table.collect()}


def test_running_totals_over_five_days_and_after_a_backfill_of_day_two(spark, tmp_path):
    sales = Sales(spark, tmp_path / "warehouse", dg.DagsterInstance.ephemeral())
    for i, day in enumerate(DAYS, start=1):
        sales.land(day, [i])
    sales.materialize([DAILY], DAYS[0], DAYS[-1])

    sales.materialize([RUNNING], DAYS[0], DAYS[-1])  # one run: the days in order, each reading the one before

    assert totals(sales) == dict(zip(DAYS, [1, 3, 6, 10, 15], strict=True))
    location = sales.mesh.registry.location(*RUNNING.path)
    assert DeltaTable.forPath(spark, location).history().count() == 5  # one commit per day
    assert sales.instance.get_materialized_partitions(RUNNING) == set(DAYS)

    sales.land(DAYS[1], [20])  # day 2 re-landed: 20 instead of 2
    sales.materialize([DAILY], DAYS[1])
    sales.materialize([RUNNING], DAYS[1], DAYS[-1])  # the backfill of day 2 and the days that follow it

    assert totals(sales) == dict(zip(DAYS, [1, 21, 24, 28, 33], strict=True))
