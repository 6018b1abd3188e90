"""An alert that cannot be delivered changes nothing else: the run keeps its own outcome, the sensor its work.

The domain's webhook variable points at a closed port on 127.0.0.1 and carries a canary: the run fails for
its check, publishes its good partition and records its check results; the domain's run-failure sensor,
evaluated on the failed run, returns normally and logs a warning that names the variable, never the URL.
"""

from __future__ import annotations

import json
import uuid

import dagster as dg
import pytest
from failure_alerts import alert_failed_run
from reliability import Rel, failure_message

pytestmark = pytest.mark.spark

CANARY = f"canary-{uuid.uuid4().hex}"
CHECKED = dg.AssetKey(["rel", "checked_events"])


@pytest.fixture(scope="module")
def rel(spark, tmp_path_factory) -> Rel:
    return Rel(spark, tmp_path_factory.mktemp("alerts"))


def test_a_failing_check_keeps_its_outcome_when_the_webhook_is_unreachable(rel, monkeypatch):
    good, bad = "2021-06-21", "2021-06-22"
    rel.land(good, [1, 2, 3], "ok")
    rel.land(bad, [1, None, 3], "ok")
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_REL", f"http://127.0.0.1:1/hook?token={CANARY}")

    result = rel.run(CHECKED.path, good, end=bad)
    warnings = alert_failed_run(rel.defs, rel.instance, result.run_id, "rel")

    assert not result.success
    assert f"check not_null_id on partition {bad} failed" in failure_message(result)
    assert {e.materialization.partition for e in result.get_asset_materialization_events()} == {good}
    assert rel.rows(good, "checked_events") == [(i, "ok") for i in (1, 2, 3)]
    assert rel.rows(bad, "checked_events") == []
    history = rel.instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(CHECKED, "not_null_id"), limit=10
    )
    assert {r.partition: r.event.dagster_event.event_specific_data.passed for r in history} == {good: True, bad: False}

    assert warnings == [
        "alert to rel's channel failed: the webhook in MESH_ALERT_WEBHOOK_REL is unreachable "
        "([Errno 111] Connection refused); it will be retried"
    ]
    assert CANARY not in json.dumps([repr(e) for e in rel.instance.all_logs(result.run_id)])
