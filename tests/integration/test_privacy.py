"""Privacy by classification: a table classified above ``l0`` shows counts and names, never row values.

The same failing rows are judged for a table classified ``l0`` and one classified ``l2``: the check samples,
the error of a check Spark cannot evaluate (its message quotes the value) and the evaluation Dagster records
show the values only for ``l0``; the column or function a check names wrongly is named for both. Runs of the
``rel`` fixture's products (classified ``l1``, ``l2`` for ``vault``) fail on a check, on a value Spark cannot
cast and on the transformation's own error: their step failures, the owners' alerts and the lineage events
carry counts, checks, names and the error's class, never the value, which the run's compute log has whole.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from failure_alerts import alert_failed_run
from reliability import Rel, failure_message

from mesh_assets.checks.evaluate import evaluate
from mesh_assets.checks.results import evaluation
from mesh_assets.graph.resolve import Owner, Table, declared_table
from mesh_assets.model.checks import AcceptedValues, NotNull, SqlAssertion
from mesh_assets.model.grain import Grain
from mesh_assets.model.lifecycle import Classification
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.model.product import Contact, Output
from mesh_assets.settings import get_settings

pytestmark = pytest.mark.spark

DAY = "2021-06-01"
VAULT = Path(__file__).resolve().parents[1] / "fixtures" / "reliability" / "domains" / "rel" / "vault.py"
SECRETS = ("ann@example.org", "vip@example.org")
CHECKS = (
    NotNull(columns=("email",)),
    SqlAssertion(name="no_vip", sql="SELECT * FROM staged WHERE email LIKE 'vip%'"),
    AcceptedValues(column="email", values=(1, 2), severity="warn"),  # Spark cannot cast 'ann@…' to a number
    SqlAssertion(name="typo", sql="SELECT * FROM staged WHERE emial IS NULL"),
    SqlAssertion(name="misspelt", sql="SELECT * FROM staged WHERE lenght(email) > 3"),
    SqlAssertion(name="quoting", sql="SELECT * FROM staged WHERE assert_true(email IS NULL, email) IS NULL"),
)
CAST = '[CAST_INVALID_INPUT] The value <withheld> of the type "STRING" cannot be cast to "BIGINT"'


def table(classification: str) -> Table:
    owner = Owner(
        "shop",
        "customers",
        "shop@example.com",
        date(2021, 1, 1),
        None,
        (Contact(kind="chat", value="#s"),),
        Classification(classification),
    )
    return declared_table(Output(table="customers", checks=CHECKS), owner, 1, inputs=(), declared=())


@pytest.fixture(scope="module")
def judged(spark) -> dict[str, list | str]:
    rows = [(1, SECRETS[0]), (2, None), (3, SECRETS[1])]
    staged = spark.createDataFrame(
        [(*r, date.fromisoformat(DAY)) for r in rows], "id bigint, email string, p_date date"
    )
    part = PartitionRange.from_keys(Grain.DAILY, DAY, DAY)
    judged = {}
    for level in ("l0", "l2"):
        with contextlib.redirect_stderr(io.StringIO()) as stderr:  # the step's stderr: the run's compute log
            judged[level] = evaluate(spark, table(level), staged, part)
        judged[f"{level} stderr"] = stderr.getvalue()
    return judged


def recorded(outcomes: list) -> str:
    key = dg.AssetKey(["shop", "customers"])
    return " ".join(f"{o.describe()} {evaluation(key, o).metadata}" for o in outcomes)


def test_a_classified_table_shows_counts_and_columns_never_values(judged) -> None:
    by_name = {o.name: o for o in judged["l2"]}
    assert by_name["not_null_email"].failing_rows == 1 and by_name["no_vip"].failing_rows == 1
    assert all(o.sample == [] for o in judged["l2"])
    assert by_name["not_null_email"].detail["failing_columns"] == "id, email, p_date"
    error = by_name["accepted_values_email"].error
    assert error.startswith(CAST) and error.endswith(
        "(values withheld: shop.customers is classified l2; the full error is in the run's compute log (stderr))"
    )
    assert by_name["quoting"].error.startswith("[USER_RAISED_EXCEPTION] <withheld> SQLSTATE: P0001 (values withheld")
    assert not any(secret in recorded(judged["l2"]) for secret in SECRETS)
    compute_log = judged["l2 stderr"]
    assert "check accepted_values_email of shop.customers errored" in compute_log
    assert f"The value '{SECRETS[0]}' of the type" in compute_log


def test_a_classified_tables_check_errors_name_the_column_or_function_they_get_wrong(judged) -> None:
    for level in ("l0", "l2"):
        by_name = {o.name: o for o in judged[level]}
        assert by_name["typo"].error.startswith(
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `emial` "
            "cannot be resolved. Did you mean one of the following? [`email`, `id`, `p_date`]."
        )
        assert by_name["misspelt"].error.startswith("[UNRESOLVED_ROUTINE] Cannot resolve routine `LENGHT`")
        assert "withheld" not in by_name["typo"].error + by_name["misspelt"].error


def test_an_open_table_shows_the_failing_rows(judged) -> None:
    by_name = {o.name: o for o in judged["l0"]}
    assert by_name["no_vip"].sample == [{"id": 3, "email": SECRETS[1], "p_date": DAY}]
    assert SECRETS[0] in by_name["accepted_values_email"].error
    assert by_name["quoting"].error in {f"[USER_RAISED_EXCEPTION] {secret} SQLSTATE: P0001" for secret in SECRETS}


def test_a_classified_products_failed_runs_and_alerts_carry_no_row_values(spark, tmp_path, webhook) -> None:
    received, point = webhook
    point("rel")
    rel = Rel(spark, tmp_path)
    secret = "ann@example.org"
    rel.land(DAY, [1, None], secret)

    failures = {}
    for table in ("checked_events", "typed_events"):  # a failing check; a value Spark cannot cast to a number
        result = rel.run(["rel", table], DAY)
        assert not result.success
        failures[table] = failure_message(result)
        assert alert_failed_run(rel.defs, rel.instance, result.run_id, "rel") == []

    assert f"check not_null_id on partition {DAY} failed (1 failing rows)" in failures["checked_events"]
    # The cast is a plain projection: the audit's tally reads no cast column, the write computes it and fails.
    assert f"writing rel.typed_events partition {DAY} failed: {CAST}" in failures["typed_events"]
    assert "(values withheld: rel.typed_events is classified l1; the full error" in failures["typed_events"]
    alerts = {a["mesh"]["table"]: a["mesh"]["message"] for a in received}
    assert "(1 failing rows)" in alerts["checked_events"] and "CAST_INVALID_INPUT" in alerts["typed_events"]
    assert secret not in json.dumps([failures, received])
    assert secret not in json.dumps([repr(e) for e in rel.instance.all_logs(result.run_id)])


def compute_log_stderr(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> str:
    """What the run's steps wrote to stderr, as the run's page shows it."""
    [captured] = [e for e in result.all_events if e.event_type_value == "LOGS_CAPTURED"]
    manager = instance.compute_log_manager
    log_key = manager.build_log_key_for_run(result.run_id, captured.logs_captured_data.file_key)
    return (manager.get_log_data(log_key).stderr or b"").decode()


def test_a_classified_products_own_error_is_whole_in_the_compute_log_alone(spark, tmp_path, webhook) -> None:
    received, point = webhook
    point("rel")
    (tmp_path / "dagster").mkdir()
    (tmp_path / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = dg.DagsterInstance.local_temp(str(tmp_path / "dagster"))  # it keeps compute logs
    rel = Rel(spark, tmp_path, instance)
    secret = f"pin-{uuid.uuid4().hex[:8]}"
    rel.land(DAY, [1], secret)

    result = rel.run(["rel", "sealed_events"], DAY)  # raises ValueError(f"vault sealed for {payload}")

    assert not result.success
    where = VAULT.relative_to(Path.cwd()) if VAULT.is_relative_to(Path.cwd()) else VAULT
    assert (
        f"rel.sealed_events failed: [ValueError] raised at {where}:13 in build_sealed_events (message withheld: "
        "rel.sealed_events is classified l2; the full error is in the run's compute log (stderr))"
    ) in failure_message(result)
    assert alert_failed_run(rel.defs, instance, result.run_id, "rel") == []
    [alert] = [a["mesh"]["message"] for a in received if a["mesh"]["table"] == "sealed_events"]
    assert "[ValueError] raised at" in alert
    lineage = [p.read_text() for p in get_settings().lineage_dir.rglob("*") if p.is_file()]
    assert any("[ValueError] raised at" in text for text in lineage)
    assert secret not in json.dumps([repr(e) for e in instance.all_logs(result.run_id)] + received + lineage)
    stderr = compute_log_stderr(instance, result)
    assert f"ValueError: vault sealed for {secret}" in stderr and "Traceback (most recent call last)" in stderr
