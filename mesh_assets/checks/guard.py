"""Checks judged inside the write: a row that fails a blocking row check, or falls outside the run's
partitions, stops the write before its commit.

Write-audit-publish reads the rows twice, once for the checks' tally and once for the write (or keeps a copy
between them). When every check of a table is judged row by row and blocks (``not_null``,
``accepted_values``), or needs no rows (``valid``, a contract the rows' schema meets), the write itself can
judge them: each row passes through a filter that raises Spark's ``raise_error`` on a failing row, so the
write's tasks fail, Delta commits nothing and readers keep the previous version. The run then judges the
rows the usual way, which says which check failed on which partition and publishes the partitions that
passed (:mod:`mesh_assets.run.publish`). A run whose rows pass reads them once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from mesh_assets.checks.contract import schema_drift
from mesh_assets.checks.errors import missing_columns
from mesh_assets.checks.evaluation import UNPARTITIONED, row_failure
from mesh_assets.checks.outcomes import CheckOutcome
from mesh_assets.graph.resolve import Table
from mesh_assets.model.checks import CheckSpec, SchemaContract, Valid
from mesh_assets.model.partitions import PartitionRange

TRIPPED = "a row failed a blocking check or fell outside the run's partitions; the write was stopped"
"""The guard's ``raise_error`` text: it names no value (the run then says which check, partition and rows)."""


@dataclass(frozen=True)
class Guard:
    """The filter that stops a write on the first row the audit would refuse, and the checks it stands for."""

    condition: Column
    checks: tuple[CheckSpec, ...]
    drift: dict[CheckSpec, list[str]]

    def outcomes(self, part: PartitionRange | None) -> list[CheckOutcome]:
        """What the audit would have found on rows that all passed: every check passed on every partition."""
        keys = part.keys() if part else [UNPARTITIONED]
        return [
            CheckOutcome(
                check,
                None if key == UNPARTITIONED else key,
                True,
                detail={"drift": self.drift[check]} if check in self.drift else {},
            )
            for check in self.checks
            for key in keys
        ]


def write_guard(
    table: Table, rows: DataFrame, part: PartitionRange | None, case_sensitive: bool, checks: Iterable[CheckSpec]
) -> Guard | None:
    """The guard of a write of ``rows``; None when the checks need the rows judged first (a check that counts,
    compares or queries, a warning, a column the rows lack, a contract they break)."""
    failures, drift, selected = [], {}, tuple(checks)
    for check in selected:
        if isinstance(check, Valid):
            continue
        if isinstance(check, SchemaContract):
            drift[check] = schema_drift(table.contract, table.partition_column, rows)
            if drift[check]:
                return None
            continue
        condition = row_failure(check)
        if condition is None or not check.blocking or missing_columns(check, rows.columns, case_sensitive):
            return None
        failures.append(condition)
    if part is not None:
        failures.append(outside(table.partition_column, part))
    if not failures:
        return Guard(F.lit(True), selected, drift)
    refused = reduce(lambda a, b: a | b, failures)
    return Guard(F.when(refused, F.raise_error(F.lit(TRIPPED))).otherwise(F.lit(True)), selected, drift)


def outside(column: str, part: PartitionRange) -> Column:
    """Rows without a partition value, of a partition the run does not write, or off the grain's grid (a
    Wednesday in a weekly table: its partition is its Monday), as the audit's per-partition tally refuses them."""
    value = F.col(column)
    after = part.literal(part.end_excluded())
    refused = value.isNull() | (value < F.lit(part.literal(part.start))) | (value >= F.lit(after))
    off_grid = _off_grid(value, part)
    return refused if off_grid is None else refused | off_grid


def _off_grid(value: Column, part: PartitionRange) -> Column | None:
    """Rows whose partition value is not where a partition of the grain starts; None for a daily grain."""
    unit, count = part.grain.unit, part.grain.count
    if unit == "week":
        return F.dayofweek(value) != 2  # Spark counts from Sunday (1): a week's partition is its Monday
    if unit == "month":
        return F.dayofmonth(value) != 1
    if unit == "hour":
        return value != F.date_trunc("hour", value)
    if unit == "minute":
        return (value != F.date_trunc("minute", value)) | (F.minute(value) % count != 0)
    return None
