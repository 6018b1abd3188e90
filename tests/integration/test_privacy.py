"""Privacy by classification: a table classified above ``l0`` shows counts and column names, never row values.

The same failing rows are judged for a table classified ``l0`` and one classified ``l2``: the check samples,
the error of a check Spark cannot evaluate (its message quotes the value) and the evaluation Dagster records
show the values only for ``l0``. Runs of the ``rel`` fixture's products (classified ``l1``) fail on a check and
on a value Spark cannot cast: their step failures and the owners' alerts carry counts, checks and the error's
class, never the value.
"""

from __future__ import annotations

import json
from datetime import date

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

pytestmark = pytest.mark.spark

DAY = "2021-06-01"
SECRETS = ("ann@example.org", "vip@example.org")
CHECKS = (
    NotNull(columns=("email",)),
    SqlAssertion(name="no_vip", sql="SELECT * FROM staged WHERE email LIKE 'vip%'"),
    AcceptedValues(column="email", values=(1, 2), severity="warn"),  # Spark cannot cast 'ann@…' to a number
)


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
def judged(spark) -> dict[str, list]:
    rows = [(1, SECRETS[0]), (2, None), (3, SECRETS[1])]
    staged = spark.createDataFrame(
        [(*r, date.fromisoformat(DAY)) for r in rows], "id bigint, email string, p_date date"
    )
    part = PartitionRange.from_keys(Grain.DAILY, DAY, DAY)
    return {level: evaluate(spark, table(level), staged, part) for level in ("l0", "l2")}


def recorded(outcomes: list) -> str:
    key = dg.AssetKey(["shop", "customers"])
    return " ".join(f"{o.describe()} {evaluation(key, o).metadata}" for o in outcomes)


def test_a_classified_table_shows_counts_and_columns_never_values(judged) -> None:
    by_name = {o.name: o for o in judged["l2"]}
    assert by_name["not_null_email"].failing_rows == 1 and by_name["no_vip"].failing_rows == 1
    assert all(o.sample == [] for o in judged["l2"])
    assert by_name["not_null_email"].detail["failing_columns"] == "id, email, p_date"
    assert by_name["accepted_values_email"].error == (
        "[CAST_INVALID_INPUT] (message withheld: shop.customers is classified l2)"
    )
    assert not any(secret in recorded(judged["l2"]) for secret in SECRETS)


def test_an_open_table_shows_the_failing_rows(judged) -> None:
    by_name = {o.name: o for o in judged["l0"]}
    assert by_name["no_vip"].sample == [{"id": 3, "email": SECRETS[1], "p_date": DAY}]
    assert SECRETS[0] in by_name["accepted_values_email"].error


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
    withheld = (
        f"writing rel.typed_events partition {DAY} failed: [CAST_INVALID_INPUT] "
        "(message withheld: rel.typed_events is classified l1)"
    )
    assert withheld in failures["typed_events"]
    alerts = {a["mesh"]["table"]: a["mesh"]["message"] for a in received}
    assert "(1 failing rows)" in alerts["checked_events"] and "CAST_INVALID_INPUT" in alerts["typed_events"]
    assert secret not in json.dumps([failures, received])
    assert secret not in json.dumps([repr(e) for e in rel.instance.all_logs(result.run_id)])
