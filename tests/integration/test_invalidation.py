"""Invalidation after publish: a published day found wrong holds its consumers, marks what was computed from it
suspect two levels down (in another domain too), and a re-run of the fixed day and of its readers clears it."""

from __future__ import annotations

import dagster as dg
import pytest
from trust import DAILY, LEDGER, TWO_DAY, Sales

from mesh_assets.compat import AssetCheckExecutionRecordStatus as Status
from mesh_assets.model.checks import VALID

pytestmark = pytest.mark.spark

REASON = "refunds counted twice on 2021-06-02"


def validity(sales: Sales, key: dg.AssetKey) -> dict[str, tuple[str, str | None]]:
    """Per partition: the latest ``valid`` result (``passed`` or ``failed``) and, when failed, its description."""
    history = sales.instance.event_log_storage.get_asset_check_execution_history(dg.AssetCheckKey(key, VALID), 100)
    out: dict[str, tuple[str, str | None]] = {}
    for record in history:  # newest first
        evaluation = record.event.dagster_event.event_specific_data
        if record.partition not in out and record.status != Status.PLANNED:
            out[record.partition] = ("passed", None) if evaluation.passed else ("failed", evaluation.description)
    return out


def failure(result) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


def test_an_invalidated_day_holds_its_consumers_marks_two_levels_suspect_and_a_rerun_clears_it(
    spark, tmp_path, webhook
):
    received, point = webhook
    point("tr")
    point("ledger")
    sales = Sales(spark, tmp_path / "warehouse", dg.DagsterInstance.ephemeral())
    sales.land("2021-06-01", [1, 2])
    sales.land("2021-06-02", [10, 10])
    sales.materialize([DAILY, TWO_DAY, LEDGER], "2021-06-01", "2021-06-02")
    assert validity(sales, LEDGER) == {"2021-06-01": ("passed", None), "2021-06-02": ("passed", None)}

    invalidation = sales.defs.resolve_job_def("tr__invalidate").execute_in_process(
        run_config={
            "ops": {"tr__mark_invalid": {"config": {"table": "daily_sales", "start": "2021-06-02", "reason": REASON}}}
        },
        instance=sales.instance,
    )

    assert invalidation.success
    assert validity(sales, DAILY) == {
        "2021-06-01": ("passed", None),
        "2021-06-02": ("failed", f"invalidated: {REASON}"),
    }
    suspect = f"suspect: computed from invalid tr/daily_sales 2021-06-02 ({REASON})"
    assert validity(sales, TWO_DAY)["2021-06-02"] == ("failed", suspect)
    assert validity(sales, TWO_DAY)["2021-06-01"] == ("passed", None)  # its window ends before the day
    assert validity(sales, LEDGER) == {"2021-06-01": ("passed", None), "2021-06-02": ("failed", suspect)}
    told = {(a["mesh"]["domain"], a["mesh"]["table"]): a for a in received}
    assert len(received) == len(told) == 3  # once per table the invalidation reached
    ledger = told[("ledger", "ledger_entries")]
    assert ledger["channel"] == "#ledger" and ledger["mesh"]["owner"] == "ledger@example.com"
    assert ledger["text"].startswith(
        "[ledger/ledger] input invalidated: ledger.ledger_entries reads tr.daily_sales partition(s) 2021-06-02"
    )
    assert REASON in ledger["mesh"]["message"] and ledger["mesh"]["run_url"].endswith(invalidation.run_id)
    assert told[("tr", "daily_sales")]["mesh"]["kind"] == "invalidated"

    before = sales.amounts(TWO_DAY)
    held = sales.materialize([TWO_DAY], "2021-06-02", raise_on_error=False)
    assert not held.success
    assert "tr.daily_sales 2021-06-02 (check valid failed)" in failure(held)
    assert sales.amounts(TWO_DAY) == before  # nothing written

    sales.land("2021-06-02", [10])  # the fixed day
    sales.materialize([DAILY, TWO_DAY, LEDGER], "2021-06-02")

    for key in (DAILY, TWO_DAY, LEDGER):
        assert validity(sales, key) == {"2021-06-01": ("passed", None), "2021-06-02": ("passed", None)}
    assert sales.amounts(LEDGER) == {"2021-06-01": 3, "2021-06-02": 13}
