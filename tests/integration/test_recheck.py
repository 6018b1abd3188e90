"""Checks on their own: an output's checks re-run on a published day, nothing recomputed, and their result
gates its consumers like the publishing run's did."""

from __future__ import annotations

import dagster as dg
import pytest
from delta.tables import DeltaTable
from failure_alerts import alert_failed_run
from trust import DAILY, TWO_DAY, Sales

pytestmark = pytest.mark.spark

DAY = "2021-06-01"
ON_DAY = {"ops": {"tr__run_checks": {"config": {"table": "daily_sales", "start": DAY}}}}


def failure(result) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


def test_a_check_only_run_judges_the_published_rows_and_gates_consumers(spark, tmp_path, webhook):
    received, point = webhook
    point("tr")
    point("ledger")
    sales = Sales(spark, tmp_path / "warehouse", dg.DagsterInstance.ephemeral())
    sales.land(DAY, [1, 2])
    sales.materialize([DAILY], DAY)
    daily = DeltaTable.forPath(spark, sales.mesh.registry.location(*DAILY.path))
    daily.update(set={"amount": "CAST(NULL AS BIGINT)"})  # the published day damaged in place
    version = daily.history(1).first()["version"]
    checks = sales.defs.resolve_job_def("tr__checks")  # the domain's checks job, the table in its config

    run = checks.execute_in_process(ON_DAY, instance=sales.instance, resources={"mesh": sales.mesh})

    [result] = run.get_asset_check_evaluations()
    assert (result.check_name, result.partition, result.passed) == ("not_null_amount", DAY, False)
    assert daily.history(1).first()["version"] == version  # nothing written
    assert len(sales.instance.fetch_materializations(DAILY, limit=10).records) == 1  # nothing recomputed
    held = sales.materialize([TWO_DAY], DAY, raise_on_error=False)
    assert "tr.daily_sales 2021-06-01 (check not_null_amount failed)" in failure(held)
    assert alert_failed_run(sales.defs, sales.instance, held.run_id, "tr") == []
    told = {(a["mesh"]["domain"], a["mesh"]["table"]): a["mesh"] for a in received}
    assert set(told) == {("tr", "two_day_sales"), ("ledger", "ledger_entries")}  # the producer and its reader
    reader = told[("ledger", "ledger_entries")]
    assert (reader["kind"], reader["source"], reader["partitions"]) == ("input refused", "tr.two_day_sales", [DAY])
    assert reader["run_url"].endswith(held.run_id)

    daily.update(set={"amount": "CAST(3 AS BIGINT)"})  # fixed in place
    run = checks.execute_in_process(ON_DAY, instance=sales.instance, resources={"mesh": sales.mesh})

    assert [e.passed for e in run.get_asset_check_evaluations()] == [True]
    assert sales.materialize([TWO_DAY], DAY).success
    assert sales.amounts(TWO_DAY) == {DAY: 3}
