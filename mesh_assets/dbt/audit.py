"""dbt tests run on a model's staged rows, one verdict per test and partition, before anything is published.

A dbt test compiles to a query returning failing rows from the model's relation. Mesh swaps that relation
(an identifier in the sqlglot parse tree) for a view of the staged rows and applies dbt's own verdict rule:
``failures = fail_calc`` over the failing rows, an error when ``failures <error_if>`` and the severity is
``error``, else a warning when ``failures <warn_if>``. Failing rows that carry the partition column are
counted per partition from one query; otherwise a test runs on each partition's rows, unless it is one of
dbt's row-counting tests and found nothing on the whole range.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mesh_assets.dbt.compiled import DbtModel, DbtTest
from mesh_assets.graph.queries import rewrite_tables, view_name

SAMPLE_ROWS = 5
PK = "__mesh_partition"


@dataclass(frozen=True)
class TestOutcome:
    """One dbt test's verdict on one partition's rows: ``pass``, ``warn`` or ``fail`` (dbt's statuses)."""

    test: DbtTest
    partition: str | None
    status: str
    failures: int | float | None = 0
    sample: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def refuses(self) -> bool:
        """A failed blocking test: its partition is not published."""
        return self.status == "fail" and self.test.blocking

    def describe(self) -> str:
        where = f" on partition {self.partition}" if self.partition else ""
        verdict = "failed" if self.status == "fail" else "warned"
        return f"dbt test {self.test.check.name}{where} {verdict} ({self.failures} failing rows)"


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, int | float | str | bool | type(None)) else str(v) for k, v in row.items()}


def _verdicts(test: DbtTest, failures: DataFrame) -> DataFrame:
    """dbt's ``get_test_sql`` over a frame holding ``failures``: whether it warns and whether it errors."""
    return failures.withColumn("should_warn", F.expr(f"failures {test.warn_if}")).withColumn(
        "should_error", F.expr(f"failures {test.error_if}")
    )


def _outcome(test: DbtTest, partition: str | None, row: Any, failing: DataFrame) -> TestOutcome:
    status = "pass"
    if test.severity == "error" and row["should_error"]:
        status = "fail"
    elif row["should_warn"]:
        status = "warn"
    sample = [] if status == "pass" else [_jsonable(r.asDict()) for r in failing.limit(SAMPLE_ROWS).collect()]
    return TestOutcome(test, partition, status, row["failures"], sample)


def _whole(test: DbtTest, failing: DataFrame, partition: str | None) -> TestOutcome:
    row = _verdicts(test, failing.agg(F.expr(test.fail_calc).alias("failures"))).first()
    return _outcome(test, partition, row, failing)


def _per_partition(test: DbtTest, failing: DataFrame, column: str, keys: list[str]) -> list[TestOutcome] | None:
    """Outcomes from failing rows that name their partition; None when some name none of ``keys``."""
    keyed = failing.withColumn(PK, F.date_format(F.col(column), "yyyy-MM-dd"))
    per_key = keyed.groupBy(PK).agg(F.expr(test.fail_calc).alias("failures"))
    rows = {r[PK]: r for r in _verdicts(test, per_key).collect()}
    if not set(rows) <= set(keys):
        return None
    empty = _whole(test, failing.limit(0), None)
    return [
        _outcome(test, key, rows[key], keyed.where(F.col(PK) == key).drop(PK))
        if key in rows
        else dataclasses.replace(empty, partition=key)
        for key in keys
    ]


def run_test(
    spark: SparkSession, model: DbtModel, test: DbtTest, rows: DataFrame, keys: list[str] | None
) -> list[TestOutcome]:
    """``test`` on ``rows`` of ``model``: one outcome per key, or one (partition None) when ``keys`` is None."""
    view = view_name(*model.key.path)
    rows.createOrReplaceTempView(view)
    column = model.partition_column
    try:
        failing = spark.sql(rewrite_tables(test.sql, {model.relation: view}))
        if keys and len(keys) > 1 and column and column in failing.columns:
            attributed = _per_partition(test, failing, column, keys)
            if attributed is not None:
                return attributed
        whole = _whole(test, failing, keys[0] if keys and len(keys) == 1 else None)
        if not keys or len(keys) == 1 or column is None:
            return [whole]
        if test.row_counting and whole.failures == 0:
            return [dataclasses.replace(whole, partition=key) for key in keys]
    finally:
        spark.catalog.dropTempView(view)
    day = F.date_format(F.col(column), "yyyy-MM-dd")
    return [outcome for key in keys for outcome in run_test(spark, model, test, rows.where(day == key), [key])]


def audit(spark: SparkSession, model: DbtModel, rows: DataFrame, keys: list[str] | None) -> list[TestOutcome]:
    """Every selected test of ``model`` on ``rows`` (see :func:`run_test`)."""
    return [outcome for test in model.tests for outcome in run_test(spark, model, test, rows, keys)]
