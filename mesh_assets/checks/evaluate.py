"""Evaluating checks on staged data, per partition, before anything is published.

Checks are grouped by partition, so a year-long single-run backfill evaluates every check in a handful of
jobs, not one job per day. Row counts and every check judged row by row (``not_null``, ``accepted_values``)
share one aggregation, the *tally*; on freshly staged data it is also the job that fills the staging cache,
so a product with only such checks pays one Spark job for staging, counting and checking together.

A check that errors (a column the rows lack, a value Spark cannot cast) fails on its own: its columns are
resolved before the tally, and when a row check still takes the tally down, the rows are counted alone and
each row check is judged in a job of its own. Its outcomes fail with the error, one per partition it judged.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from mesh_assets.checks.contract import schema_drift
from mesh_assets.checks.errors import missing_columns, spark_error, withheld
from mesh_assets.checks.outcomes import CheckOutcome
from mesh_assets.graph.queries import rewrite_tables
from mesh_assets.graph.resolve import Table
from mesh_assets.model.checks import (
    AcceptedValues,
    CheckSpec,
    NotNull,
    RowCount,
    SchemaContract,
    SqlAssertion,
    Unique,
    Valid,
    VolumeAnomaly,
)
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.delta import is_delta_table

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


@dataclass(frozen=True)
class Audit:
    """Every check's outcomes and the staged rows per partition key, from one evaluation."""

    outcomes: list[CheckOutcome]
    counts: dict[str, int]


def partition_key(table: Table, part: PartitionRange) -> Column:
    """The partition key of each row, as Dagster spells it."""
    return F.date_format(table.partition_column, part.grain.spark_pattern)


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, int | float | str | bool | type(None)) else str(v) for k, v in row.items()}


class _Evaluation:
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
        self._failing: dict[CheckSpec, dict[str, int]] = {}

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
                    self.errors[check] = self._error(exc)
                else:
                    self._failing[check] = {r[PK]: int(r["count"]) for r in failing}

    def _count(self, checks: dict[CheckSpec, Column]) -> None:
        """Rows per key and failing rows per key of ``checks``, in one aggregation."""
        named = {f"f{i}": check for i, check in enumerate(checks)}
        aggregates = [F.count(F.lit(1)).alias("rows")]
        aggregates += [F.sum(F.when(checks[c], 1).otherwise(0)).alias(n) for n, c in named.items()]
        self._counts = {k: 0 for k in self.keys}
        self._failing = {check: {} for check in self.row_checks}
        for row in self.staged.groupBy(PK).agg(*aggregates).collect():
            self._counts[row[PK]] = row["rows"]
            for name, check in named.items():
                self._failing[check][row[PK]] = int(row[name])

    def outcome(self, check: CheckSpec, key: str, passed: bool, **kwargs: Any) -> CheckOutcome:
        return CheckOutcome(check, None if key == UNPARTITIONED else key, passed, **kwargs)

    def failing(self, check: CheckSpec, failing: DataFrame, weight: str | None = None) -> list[CheckOutcome]:
        """Outcomes from a DataFrame of failing rows (each row a failure, or ``weight`` failures)."""
        agg = F.sum(weight) if weight else F.count(F.lit(1))
        per_key = {r[PK]: int(r["n"]) for r in failing.groupBy(PK).agg(agg.alias("n")).collect()}
        return self._outcomes(check, failing, per_key)

    def _outcomes(self, check: CheckSpec, failing: DataFrame, per_key: dict[str, int]) -> list[CheckOutcome]:
        """One outcome per key; sample rows are read only when something failed."""
        samples: dict[str, list[dict[str, Any]]] = {}
        failed = [k for k, n in per_key.items() if n]
        if failed and self.table.shows_values:
            for row in failing.limit(SAMPLE_ROWS * min(len(failed), 20)).collect():
                data = row.asDict()
                samples.setdefault(data.pop(PK), []).append(_jsonable(data))
        return [
            self.outcome(
                check,
                k,
                per_key.get(k, 0) == 0,
                failing_rows=per_key.get(k, 0),
                sample=samples.get(k, [])[:SAMPLE_ROWS],
                detail=self._columns(failing) if per_key.get(k, 0) else {},
            )
            for k in self.keys
        ]

    def _columns(self, failing: DataFrame) -> dict[str, Any]:
        """What a classified table's failing rows may show instead of their values: their columns."""
        if self.table.shows_values:
            return {}
        return {"failing_columns": ", ".join(c for c in failing.columns if c != PK)}

    def _error(self, exc: PySparkException) -> str:
        """Spark's error; for a classified table its class alone (the message may quote a value)."""
        if self.table.shows_values:
            return spark_error(exc)
        return withheld(exc, self.table.ref, self.table.classification)

    def run(self, check: CheckSpec) -> list[CheckOutcome]:
        """The check's outcomes; failed ones carrying the error when the check cannot judge the rows."""
        self.counts()  # the tally judges the row checks, and finds those that error
        error = self.errors.get(check)
        if error is None:
            try:
                return HANDLERS[type(check)](self, check)
            except PySparkException as exc:
                error = self._error(exc)
        return [self.outcome(check, k, False, error=error) for k in self.keys]

    def _row_check(self, check: CheckSpec) -> list[CheckOutcome]:
        return self._outcomes(check, self.staged.where(self.row_checks[check]), self._failing[check])

    def _unique(self, check: Unique) -> list[CheckOutcome]:
        dups = self.staged.groupBy(PK, *check.keys).count().where(F.col("count") > 1)
        return self.failing(check, dups.withColumnRenamed("count", "copies"), weight="copies")

    def _sql(self, check: SqlAssertion) -> list[CheckOutcome]:
        """Every row the query returns over the staged rows fails: per partition when it carries the
        partition column, else in every partition judged."""
        view = f"mesh_staged_{uuid.uuid4().hex[:10]}"
        self.rows.createOrReplaceTempView(view)
        try:
            failing = self.spark.sql(rewrite_tables(check.sql, {(None, "staged"): view}))
            if self.part is not None and self.table.partition_column in failing.columns:
                return self.failing(check, failing.withColumn(PK, partition_key(self.table, self.part)))
            total = failing.count()
            shown = self.table.shows_values and total
            rows = [_jsonable(r.asDict()) for r in failing.limit(SAMPLE_ROWS).collect()] if shown else []
            detail = self._columns(failing) if total else {}
            return [
                self.outcome(check, k, total == 0, failing_rows=total, sample=rows, detail=detail) for k in self.keys
            ]
        finally:
            self.spark.catalog.dropTempView(view)

    def _row_count(self, check: RowCount) -> list[CheckOutcome]:
        out = []
        for key, n in self._run_counts().items():
            low = check.min is not None and n < check.min
            high = check.max is not None and n > check.max
            reason = f"{n} rows, expected " + " and ".join(
                ([f">= {check.min}"] if check.min is not None else [])
                + ([f"<= {check.max}"] if check.max is not None else [])
            )
            out.append(self.outcome(check, key, not (low or high), detail={"rows": n, "reason": reason}))
        return out

    def _volume_anomaly(self, check: VolumeAnomaly) -> list[CheckOutcome]:
        history = self._published_counts(check.trailing)
        out = []
        for key, n in self._run_counts().items():
            previous = [history[k] for k in sorted(history) if k < key][-check.trailing :]
            if len(previous) < 3:
                out.append(self.outcome(check, key, True, detail={"rows": n, "reason": "not enough history"}))
                continue
            mean = sum(previous) / len(previous)
            std = math.sqrt(sum((x - mean) ** 2 for x in previous) / (len(previous) - 1))
            passed = abs(n - mean) <= check.k * max(std, 1e-9) or n == mean
            reason = f"{n} rows vs mean {mean:.1f} ± {check.k}·{std:.1f} over {len(previous)} partitions"
            out.append(self.outcome(check, key, passed, detail={"rows": n, "mean": mean, "std": std, "reason": reason}))
        return out

    def _run_counts(self) -> dict[str, int]:
        counts = self.counts()
        return {k: counts[k] for k in self.keys}

    def _published_counts(self, trailing: int) -> dict[str, int]:
        if self.part is None or self.location is None or not is_delta_table(self.spark, self.location):
            return {}
        grain = self.part.grain
        assert grain.step is not None
        lo, hi = grain.literal(self.part.start - trailing * grain.step), grain.literal(self.part.end)
        published = self.spark.read.format("delta").load(self.location)
        column = F.col(self.table.partition_column)
        rows = (
            published.where(column.between(F.lit(lo), F.lit(hi)))
            .groupBy(F.date_format(column, grain.spark_pattern).alias("k"))
            .count()
            .collect()
        )
        in_run = set(self.keys)
        return {r["k"]: r["count"] for r in rows if r["k"] not in in_run}

    def _valid(self, check: Valid) -> list[CheckOutcome]:
        """Rows this run computed are valid: only an invalidation fails the check, after publishing."""
        return [self.outcome(check, k, True) for k in self.keys]

    def _schema_contract(self, check: SchemaContract) -> list[CheckOutcome]:
        drift = schema_drift(self.table.contract, self.table.partition_column, self.rows)
        return [self.outcome(check, k, not drift, detail={"drift": drift}) for k in self.keys]


HANDLERS: dict[type, Callable[[_Evaluation, Any], list[CheckOutcome]]] = {
    NotNull: _Evaluation._row_check,
    AcceptedValues: _Evaluation._row_check,
    Unique: _Evaluation._unique,
    SqlAssertion: _Evaluation._sql,
    RowCount: _Evaluation._row_count,
    VolumeAnomaly: _Evaluation._volume_anomaly,
    SchemaContract: _Evaluation._schema_contract,
    Valid: _Evaluation._valid,
}
"""How each kind of check judges the staged rows (``freshness`` is Dagster's: it never runs here)."""


def audit(
    spark: SparkSession,
    table: Table,
    staged: DataFrame,
    part: PartitionRange | None,
    location: str | None = None,
    checks: Iterable[CheckSpec] | None = None,
) -> Audit:
    """Every check of ``table`` (or ``checks``) on ``staged``, and its rows per partition key.

    The counts come from the same tally as the row checks, and include keys outside ``part`` if the data has
    rows there, so the writer can refuse them by name.
    """
    selected = list(checks if checks is not None else table.checks)
    evaluation = _Evaluation(spark, table, staged, part, location, selected)
    counts = evaluation.counts()
    return Audit([o for check in selected for o in evaluation.run(check)], counts)


def evaluate(
    spark: SparkSession,
    table: Table,
    staged: DataFrame,
    part: PartitionRange | None,
    location: str | None = None,
    checks: Iterable[CheckSpec] | None = None,
) -> list[CheckOutcome]:
    """Every check of ``table`` on ``staged``, one outcome per check and partition."""
    return audit(spark, table, staged, part, location, checks).outcomes
