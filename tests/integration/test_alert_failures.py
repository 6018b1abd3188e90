"""An alert that cannot be delivered changes nothing else: the run that raised it keeps its own outcome.

The domain's webhook variable points at a closed port on 127.0.0.1 and carries a canary: the run fails for
its check, publishes its good partition and records its check results, and the warning it logs names the
variable, never the URL.
"""

from __future__ import annotations

import json
import logging
import uuid

import dagster as dg
import pytest
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

    assert not result.success
    assert f"check not_null_id on partition {bad} failed" in failure_message(result)
    assert {e.materialization.partition for e in result.get_asset_materialization_events()} == {good}
    assert rel.rows(good, "checked_events") == [(i, "ok") for i in (1, 2, 3)]
    assert rel.rows(bad, "checked_events") == []
    history = rel.instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(CHECKED, "not_null_id"), limit=10
    )
    assert {r.partition: r.event.dagster_event.event_specific_data.passed for r in history} == {good: True, bad: False}

    logs = rel.instance.all_logs(result.run_id)
    warnings = [e.user_message for e in logs if e.level == logging.WARNING]
    assert (
        "alert to rel's channel failed: the webhook in MESH_ALERT_WEBHOOK_REL is unreachable "
        "([Errno 111] Connection refused)"
    ) in warnings
    assert CANARY not in json.dumps([repr(e) for e in logs])
