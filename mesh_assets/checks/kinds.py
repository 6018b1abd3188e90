"""How each kind of check judges the staged rows of an :class:`~mesh_assets.checks.evaluation.Evaluation`
(``freshness`` is Dagster's: it never runs here)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from typing import Any

from pyspark.sql import functions as F

from mesh_assets.checks.contract import schema_drift
from mesh_assets.checks.evaluation import PK, SAMPLE_ROWS, Evaluation, jsonable, partition_key
from mesh_assets.checks.outcomes import CheckOutcome
from mesh_assets.graph.queries import rewrite_tables
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
from mesh_assets.storage.delta import is_delta_table


def row_check(ev: Evaluation, check: CheckSpec) -> list[CheckOutcome]:
    return ev.outcomes(check, ev.staged.where(ev.row_checks[check]), ev.failing_counts[check])


def unique(ev: Evaluation, check: Unique) -> list[CheckOutcome]:
    dups = ev.staged.groupBy(PK, *check.keys).count().where(F.col("count") > 1)
    return ev.failing(check, dups.withColumnRenamed("count", "copies"), weight="copies")


def sql(ev: Evaluation, check: SqlAssertion) -> list[CheckOutcome]:
    """Every row the query returns over the staged rows fails: per partition when it carries the
    partition column, else in every partition judged."""
    view = f"mesh_staged_{uuid.uuid4().hex[:10]}"
    ev.rows.createOrReplaceTempView(view)
    try:
        failing = ev.spark.sql(rewrite_tables(check.sql, {(None, "staged"): view}))
        if ev.part is not None and ev.table.partition_column in failing.columns:
            return ev.failing(check, failing.withColumn(PK, partition_key(ev.table, ev.part)))
        total = failing.count()
        shown = ev.table.shows_values and total
        rows = [jsonable(r.asDict()) for r in failing.limit(SAMPLE_ROWS).collect()] if shown else []
        detail = ev.columns_of(failing) if total else {}
        return [ev.outcome(check, k, total == 0, failing_rows=total, sample=rows, detail=detail) for k in ev.keys]
    finally:
        ev.spark.catalog.dropTempView(view)


def row_count(ev: Evaluation, check: RowCount) -> list[CheckOutcome]:
    out = []
    for key, n in run_counts(ev).items():
        low = check.min is not None and n < check.min
        high = check.max is not None and n > check.max
        reason = f"{n} rows, expected " + " and ".join(
            ([f">= {check.min}"] if check.min is not None else [])
            + ([f"<= {check.max}"] if check.max is not None else [])
        )
        out.append(ev.outcome(check, key, not (low or high), detail={"rows": n, "reason": reason}))
    return out


def volume_anomaly(ev: Evaluation, check: VolumeAnomaly) -> list[CheckOutcome]:
    history = published_counts(ev, check.trailing)
    out = []
    for key, n in run_counts(ev).items():
        previous = [history[k] for k in sorted(history) if k < key][-check.trailing :]
        if len(previous) < 3:
            out.append(ev.outcome(check, key, True, detail={"rows": n, "reason": "not enough history"}))
            continue
        mean = sum(previous) / len(previous)
        std = math.sqrt(sum((x - mean) ** 2 for x in previous) / (len(previous) - 1))
        passed = abs(n - mean) <= check.k * max(std, 1e-9) or n == mean
        reason = f"{n} rows vs mean {mean:.1f} ± {check.k}·{std:.1f} over {len(previous)} partitions"
        out.append(ev.outcome(check, key, passed, detail={"rows": n, "mean": mean, "std": std, "reason": reason}))
    return out


def run_counts(ev: Evaluation) -> dict[str, int]:
    counts = ev.counts()
    return {k: counts[k] for k in ev.keys}


def published_counts(ev: Evaluation, trailing: int) -> dict[str, int]:
    if ev.part is None or ev.location is None or not is_delta_table(ev.spark, ev.location):
        return {}
    grain = ev.part.grain
    lo, hi = grain.literal(grain.shift(ev.part.start, -trailing)), grain.literal(ev.part.end)
    published = ev.spark.read.format("delta").load(ev.location)
    if ev.part.region is not None:  # a region's earlier dates: its own rows alone
        published = published.where(F.col(ev.table.region_column) == F.lit(ev.part.region))
    column = F.col(ev.table.partition_column)
    rows = (
        published.where(column.between(F.lit(lo), F.lit(hi)))
        .groupBy(F.date_format(column, grain.spark_pattern).alias("k"))
        .count()
        .collect()
    )
    in_run = set(ev.keys)
    return {r["k"]: r["count"] for r in rows if r["k"] not in in_run}


def valid(ev: Evaluation, check: Valid) -> list[CheckOutcome]:
    """Rows this run computed are valid: only an invalidation fails the check, after publishing."""
    return [ev.outcome(check, k, True) for k in ev.keys]


def schema_contract(ev: Evaluation, check: SchemaContract) -> list[CheckOutcome]:
    drift = schema_drift(ev.table.contract, ev.table.partition_column, ev.rows)
    return [ev.outcome(check, k, not drift, detail={"drift": drift}) for k in ev.keys]


HANDLERS: dict[type, Callable[[Evaluation, Any], list[CheckOutcome]]] = {
    NotNull: row_check,
    AcceptedValues: row_check,
    Unique: unique,
    SqlAssertion: sql,
    RowCount: row_count,
    VolumeAnomaly: volume_anomaly,
    SchemaContract: schema_contract,
    Valid: valid,
}
"""How each kind of check judges the staged rows (``freshness`` is Dagster's: it never runs here)."""
