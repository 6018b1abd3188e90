"""One evaluation of checks on staged rows: the *tally* and the outcomes it gives, per partition.

Checks are grouped by partition, so a year-long single-run backfill evaluates every check in a handful of
jobs, not one job per day. Row counts and every check judged row by row (``not_null``, ``accepted_values``)
share one aggregation, the tally; on freshly staged data it is also the job that fills the staging cache,
so a product with only such checks pays one Spark job for staging, counting and checking together.

A check that errors (a column the rows lack, a value Spark cannot cast) fails on its own: its columns are
resolved before the tally, and when a row check still takes the tally down, the rows are counted alone and
each row check is judged in a job of its own. Its outcomes fail with the error, one per partition it judged.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from mesh_assets.checks.errors import missing_columns, spark_error, to_compute_log, withheld
from mesh_assets.checks.outcomes import CheckOutcome
from mesh_assets.graph.resolve import Table
from mesh_assets.model.checks import AcceptedValues, CheckSpec, NotNull
from mesh_assets.model.partitions import PartitionRange

PK = "__mesh_partition"
SAMPLE_ROWS = 5
UNPARTITIONED = "-"


def row_failure(check: CheckSpec) -> Column | None:
    """The condition a failing row meets, for checks judged row by row; None for any other check."""
    if isinstance(check, NotNull):
        return reduce(lambda a, b: a | b, (F.col(c).isNull() for c in check.columns))
    if isinstance(check, AcceptedValues):
        column = F.col(check.column)
        return column.isNotNull() & ~column.isin(list(check.values))
    return None


def partition_key(table: Table, part: PartitionRange) -> Column:
    """The partition key of each row, as Dagster spells it."""
    return F.date_format(table.partition_column, part.grain.spark_pattern)


def jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, int | float | str | bool | type(None)) else str(v) for k, v in row.items()}


class Evaluation:
    """The staged rows of one run, keyed by partition, and what the checks judged of them so far."""

    def __init__(
        self,
        spark: SparkSession,
        table: Table,
        staged: DataFrame,
        part: PartitionRange | None,
        location: str | None,
        checks: list[CheckSpec],
    ):
        self.spark, self.table, self.part, self.location = spark, table, part, location
        self.keys = part.keys() if part else [UNPARTITIONED]
        self.rows = staged
        self.staged = staged.withColumn(PK, partition_key(table, part) if part else F.lit(UNPARTITIONED))
        case_sensitive = spark.conf.get("spark.sql.caseSensitive", "false") == "true"
        self.errors: dict[CheckSpec, str] = {
            c: error for c in checks if (error := missing_columns(c, staged.columns, case_sensitive))
        }
        self.row_checks = {
            check: cond for check in checks if check not in self.errors and (cond := row_failure(check)) is not None
        }
        self._counts: dict[str, int] | None = None
        self.failing_counts: dict[CheckSpec, dict[str, int]] = {}

    def counts(self) -> dict[str, int]:
        """Rows per partition key (every key of the run, plus any key the data has outside it)."""
        if self._counts is None:
            self._tally()
        assert self._counts is not None
        return self._counts

    def _tally(self) -> None:
        """Counts and row checks in one job; if a row check errors, counts alone, then each row check alone."""
        try:
            self._count(self.row_checks)
        except PySparkException:
            if not self.row_checks:
                raise
            self._count({})  # raises if the rows themselves cannot be computed: that is no check's error
            for check, condition in self.row_checks.items():
                try:
                    failing = self.staged.where(condition).groupBy(PK).count().collect()
                except PySparkException as exc:
                    self.errors[check] = self.error(check, exc)
                else:
                    self.failing_counts[check] = {r[PK]: int(r["count"]) for r in failing}

    def _count(self, checks: dict[CheckSpec, Column]) -> None:
        """Rows per key and failing rows per key of ``checks``, in one aggregation."""
        named = {f"f{i}": check for i, check in enumerate(checks)}
        aggregates = [F.count(F.lit(1)).alias("rows")]
        aggregates += [F.sum(F.when(checks[c], 1).otherwise(0)).alias(n) for n, c in named.items()]
        self._counts = {k: 0 for k in self.keys}
        self.failing_counts = {check: {} for check in self.row_checks}
        for row in self.staged.groupBy(PK).agg(*aggregates).collect():
            self._counts[row[PK]] = row["rows"]
            for name, check in named.items():
                self.failing_counts[check][row[PK]] = int(row[name])

    def outcome(self, check: CheckSpec, key: str, passed: bool, **kwargs: Any) -> CheckOutcome:
        return CheckOutcome(check, None if key == UNPARTITIONED else key, passed, **kwargs)

    def failing(self, check: CheckSpec, failing: DataFrame, weight: str | None = None) -> list[CheckOutcome]:
        """Outcomes from a DataFrame of failing rows (each row a failure, or ``weight`` failures)."""
        agg = F.sum(weight) if weight else F.count(F.lit(1))
        per_key = {r[PK]: int(r["n"]) for r in failing.groupBy(PK).agg(agg.alias("n")).collect()}
        return self.outcomes(check, failing, per_key)

    def outcomes(self, check: CheckSpec, failing: DataFrame, per_key: dict[str, int]) -> list[CheckOutcome]:
        """One outcome per key; sample rows are read only when something failed."""
        samples: dict[str, list[dict[str, Any]]] = {}
        failed = [k for k, n in per_key.items() if n]
        if failed and self.table.shows_values:
            for row in failing.limit(SAMPLE_ROWS * min(len(failed), 20)).collect():
                data = row.asDict()
                samples.setdefault(data.pop(PK), []).append(jsonable(data))
        return [
            self.outcome(
                check,
                k,
                per_key.get(k, 0) == 0,
                failing_rows=per_key.get(k, 0),
                sample=samples.get(k, [])[:SAMPLE_ROWS],
                detail=self.columns_of(failing) if per_key.get(k, 0) else {},
            )
            for k in self.keys
        ]

    def columns_of(self, failing: DataFrame) -> dict[str, Any]:
        """What a classified table's failing rows may show instead of their values: their columns."""
        if self.table.shows_values:
            return {}
        return {"failing_columns": ", ".join(c for c in failing.columns if c != PK)}

    def error(self, check: CheckSpec, exc: PySparkException) -> str:
        """Spark's error; for a classified table without the values it quotes, which the compute log gets."""
        if self.table.shows_values:
            return spark_error(exc)
        to_compute_log(f"check {check.check_name} of {self.table.ref} errored", exc)
        return withheld(exc, self.table.ref, self.table.classification)
