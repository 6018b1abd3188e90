"""Invalidation after publish: published days found wrong (``mesh invalidate`` over a range) hold their consumers,
mark what was computed from them suspect two levels down (in another domain too), and a backfill of the fixed
days and of their readers clears it."""

from __future__ import annotations

import dagster as dg
import pytest
from trust import DAILY, DOMAINS, LEDGER, TWO_DAY, Sales

from mesh_assets.backfill import plan_backfill
from mesh_assets.cli.main import main
from mesh_assets.compat import AssetCheckExecutionRecordStatus as Status
from mesh_assets.model.checks import VALID
from mesh_assets.settings import get_settings

pytestmark = pytest.mark.spark

REASON = "refunds counted twice on 2021-06-02 and 03"
DAYS = ("2021-06-01", "2021-06-02", "2021-06-03")


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


def test_an_invalidated_range_holds_its_consumers_marks_two_levels_suspect_and_a_backfill_clears_it(
    spark, tmp_path, webhook, monkeypatch, capsys
):
    received, point = webhook
    point("tr")
    point("ledger")
    home = tmp_path / "dagster"
    home.mkdir()
    for name, value in {"DAGSTER_HOME": home, "MESH_DOMAINS_DIR": DOMAINS, "MESH_DBT_PROJECT_DIR": tmp_path}.items():
        monkeypatch.setenv(name, str(value))
    get_settings.cache_clear()
    sales = Sales(spark, tmp_path / "warehouse", dg.DagsterInstance.from_config(str(home)))
    sales.land("2021-06-01", [1, 2])
    sales.land("2021-06-02", [10, 10])
    sales.land("2021-06-03", [5, 5])
    sales.materialize([DAILY, TWO_DAY, LEDGER], "2021-06-01", "2021-06-03")
    assert validity(sales, LEDGER) == {d: ("passed", None) for d in DAYS}

    invalidated = main(
        ["invalidate", "tr/daily_sales", "--start", "2021-06-02", "--end", "2021-06-03", "--reason", REASON]
    )

    assert invalidated == 0
    printed = capsys.readouterr().out
    assert "tr/daily_sales 2021-06-02, 2021-06-03: invalid" in printed
    assert "tr/two_day_sales 2021-06-02, 2021-06-03: suspect" in printed
    assert "ledger/ledger_entries 2021-06-02, 2021-06-03: suspect" in printed
    # the marks are recorded by one run, the one each alert links
    [run] = sales.instance.get_runs(filters=dg.RunsFilter(tags={"mesh/launched_by": "mesh invalidate"}))
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert validity(sales, DAILY) == {
        "2021-06-01": ("passed", None),
        "2021-06-02": ("failed", f"invalidated: {REASON}"),
        "2021-06-03": ("failed", f"invalidated: {REASON}"),
    }
    suspect = f"suspect: computed from invalid tr/daily_sales 2021-06-02, tr/daily_sales 2021-06-03 ({REASON})"
    assert validity(sales, TWO_DAY)["2021-06-01"] == ("passed", None)  # its window ends before the range
    for key in (TWO_DAY, LEDGER):
        assert validity(sales, key)["2021-06-02"] == validity(sales, key)["2021-06-03"] == ("failed", suspect)
    told = {(a["mesh"]["domain"], a["mesh"]["table"]): a for a in received}
    assert len(received) == len(told) == 3  # once per table the invalidation reached
    ledger = told[("ledger", "ledger_entries")]
    assert ledger["channel"] == "#ledger" and ledger["mesh"]["owner"] == "ledger@example.com"
    assert ledger["text"].startswith(
        "[ledger/ledger] input invalidated: ledger.ledger_entries reads tr.daily_sales partition(s) 2021-06-02"
    )
    assert REASON in ledger["mesh"]["message"] and ledger["mesh"]["run_url"].endswith(run.run_id)
    assert told[("tr", "daily_sales")]["mesh"]["kind"] == "invalidated"

    before = sales.amounts(TWO_DAY)
    held = sales.materialize([TWO_DAY], "2021-06-03", raise_on_error=False)
    assert not held.success
    assert "tr.daily_sales 2021-06-02 (check valid failed)" in failure(held)
    assert sales.amounts(TWO_DAY) == before  # nothing written

    sales.land("2021-06-02", [10])  # the fixed day
    plan = plan_backfill(sales.defs.resolve_asset_graph(), DAILY, "2021-06-02", "2021-06-03", instance=sales.instance)
    assert plan.as_dict() == {a.to_user_string(): ["2021-06-02..2021-06-03"] for a in (DAILY, TWO_DAY, LEDGER)}
    for key, rng in plan.runs():  # what the daemon runs for `mesh backfill tr/daily_sales ...`: a run per range
        assert sales.materialize([key], rng.start, rng.end).success

    for key in (DAILY, TWO_DAY, LEDGER):
        assert validity(sales, key) == {d: ("passed", None) for d in DAYS}
    assert sales.amounts(LEDGER) == {"2021-06-01": 3, "2021-06-02": 13, "2021-06-03": 20}
    get_settings.cache_clear()
