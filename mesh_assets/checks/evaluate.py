"""Evaluating checks on staged data, per partition, before anything is published: every check of a table
judged in one :class:`~mesh_assets.checks.evaluation.Evaluation` (its tally shared by the row checks), each
by the judge of its kind (:mod:`mesh_assets.checks.kinds`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from mesh_assets.checks.evaluation import Evaluation
from mesh_assets.checks.kinds import HANDLERS
from mesh_assets.checks.outcomes import CheckOutcome
from mesh_assets.graph.resolve import Table
from mesh_assets.model.checks import CheckSpec
from mesh_assets.model.partitions import PartitionRange


@dataclass(frozen=True)
class Audit:
    """Every check's outcomes and the staged rows per partition key, from one evaluation."""

    outcomes: list[CheckOutcome]
    counts: dict[str, int]


def judge(evaluation: Evaluation, check: CheckSpec) -> list[CheckOutcome]:
    """The check's outcomes; failed ones carrying the error when the check cannot judge the rows."""
    evaluation.counts()  # the tally judges the row checks, and finds those that error
    error = evaluation.errors.get(check)
    if error is None:
        try:
            return HANDLERS[type(check)](evaluation, check)
        except PySparkException as exc:
            error = evaluation.error(check, exc)
    return [evaluation.outcome(check, k, False, error=error) for k in evaluation.keys]


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
    evaluation = Evaluation(spark, table, staged, part, location, selected)
    counts = evaluation.counts()
    return Audit([o for check in selected for o in judge(evaluation, check)], counts)


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
