"""One dbt model through Mesh's quality gate: compute, stage, test per partition, publish what passed.

The model's compiled SELECT runs on Mesh's session and its rows are staged (invisible to readers). Its
dbt tests run on the staged rows of each partition. Partitions whose blocking tests passed are published in
one Delta commit (``replaceWhere`` on the partition column for ``incremental`` models, the whole table for
``table`` models and full refreshes, which publish only when every partition passed), and the table is
registered, so the models after it read what was published. A partition an upstream model of the run did
not publish is not computed.

An ``incremental`` model with ``incremental_strategy: merge`` is a table of kind ``merge``: after its tests
pass, Mesh's implied ``unique_key`` check (one row per key, per day when it has a ``partition_by``) refuses it by
name, else its rows are committed by the kind's strategy (:mod:`mesh_assets.storage.strategies`): one
``MERGE``, none when nothing changed. Its days apply in order: one after a refused day is held back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import dagster as dg
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot.errors import ParseError

from mesh_assets.dbt.access import Tables, readable_sql
from mesh_assets.dbt.audit import TestOutcome, audit
from mesh_assets.dbt.compiled import DbtModel
from mesh_assets.dbt.nodes import DBT_GRAIN
from mesh_assets.graph.queries import NotAQuery, parse_query
from mesh_assets.model.kinds import KEY_CHECK, Replay
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.run.publish import publishable
from mesh_assets.storage.schema import SchemaRule
from mesh_assets.storage.strategies import Target, strategy_for
from mesh_assets.storage.strategies.merging import quoted
from mesh_assets.storage.strategies.replace import commit
from mesh_assets.storage.tables import TableNotFoundError, TableRegistry
from mesh_assets.storage.writer import WriteResult, partition_counts, stage


@dataclass
class ModelRun:
    """What the gate did with one model over the run's partitions."""

    model: DbtModel
    keys: list[str]
    result: WriteResult | None = None
    published: dict[str, int] = field(default_factory=dict)
    """Rows per published partition (empty for a ``table`` model, whose rows belong to no partition)."""
    outcomes: list[TestOutcome] = field(default_factory=list)
    blocked: dict[str, list[str]] = field(default_factory=dict)
    """Partitions not computed, with why: an input of the run did not publish them."""
    held_back: list[str] = field(default_factory=list)
    """Partitions that passed but come after a refused one, of a model whose days are applied in order."""

    @property
    def refused(self) -> dict[str, list[TestOutcome]]:
        """Partitions whose blocking tests failed, with those tests' outcomes."""
        out: dict[str, list[TestOutcome]] = {}
        for outcome in self.outcomes:
            if outcome.refuses and outcome.partition:
                out.setdefault(outcome.partition, []).append(outcome)
        return out

    @property
    def withheld(self) -> list[str]:
        """Partitions this run did not publish although it built the model."""
        if self.model.sql is None:
            return []
        if self.result is None:
            return list(self.keys)
        return [k for k in self.keys if k in self.blocked or k in self.refused or k in self.held_back]


def _day(column: str) -> Column:
    return F.date_format(F.col(column), "yyyy-MM-dd")


def _each_partition(outcomes: list[TestOutcome], keys: list[str]) -> list[TestOutcome]:
    """A whole-table verdict recorded for each of the run's partitions (the checks are partitioned)."""
    return [dataclasses.replace(o, partition=key) for o in outcomes for key in keys]


def _query(spark: SparkSession, registry: TableRegistry, model: DbtModel, tables: Tables | None) -> DataFrame:
    """The model's rows, other domains' tables read as it may see them (:mod:`mesh_assets.dbt.access`)."""
    assert model.sql is not None
    try:
        parse_query(model.sql)
    except (NotAQuery, ParseError) as exc:
        raise dg.Failure(description=f"dbt model {model.ref} did not compile to one query: {exc}") from None
    df = spark.sql(readable_sql(spark, registry, model, tables) if tables is not None else model.sql)
    column = model.partition_column
    if model.kind.per_partition and column in df.columns:
        raise dg.Failure(
            description=f"dbt snapshot {model.ref} returns a column {column}, the day Mesh records each version was "
            "opened by: rename it, or name another column in the snapshot's partition_by; nothing was published"
        )
    if column and not model.kind.per_partition and column not in df.columns:
        raise dg.Failure(description=f"dbt model {model.ref} has no column {column} (its partition_by)")
    return df


def check_published(spark: SparkSession, registry: TableRegistry, model: DbtModel, keys: list[str]) -> ModelRun:
    """The model's selected tests on its published rows of the run's partitions (a checks-only run)."""
    try:
        rows = spark.table(registry.register(spark, *model.key.path))
    except TableNotFoundError as exc:
        raise dg.Failure(description=f"dbt model {model.ref} has never been published: {exc}") from None
    column = model.partition_column
    if column and model.partitioned:
        return ModelRun(model, keys, outcomes=audit(spark, model, rows.where(_day(column).isin(keys)), keys))
    return ModelRun(model, keys, outcomes=_each_partition(audit(spark, model, rows, None), keys))


def gate_model(
    spark: SparkSession,
    registry: TableRegistry,
    model: DbtModel,
    part: PartitionRange,
    parents: Sequence[ModelRun],
    *,
    full_refresh: bool,
    commit_info: dict[str, str],
    unready: Mapping[str | None, list[str]] | None = None,
    tables: Tables | None = None,
) -> ModelRun:
    """Compute, stage, test and publish ``model`` for ``part``; parents are the run's models it reads,
    ``unready`` the partitions whose inputs from outside the run are not published or not checked, and
    ``tables`` the mesh's, whose grants and masks the model's reads of other domains follow."""
    keys = part.keys()
    if model.sql is None:
        return check_published(spark, registry, model, keys)
    blocked: dict[str, list[str]] = {k: list(why) for k, why in (unready or {}).items() if k is not None}
    for parent in parents:
        for key in parent.withheld:
            blocked.setdefault(key, []).append(f"its input {parent.model.ref} {key} was not published")
    whole_table = not model.partitioned or full_refresh
    if blocked and whole_table:
        reasons = sorted({r for rs in blocked.values() for r in rs})
        blocked = {key: reasons for key in keys}
    if len(blocked) == len(keys):
        return ModelRun(model, keys, blocked=blocked)
    df = _query(spark, registry, model, tables)
    column = model.partition_column
    if blocked:
        assert column is not None
        df = df.where(~_day(column).isin(list(blocked)) | F.col(column).isNull())
    staged = stage(df)
    try:
        if not model.partitioned:
            outcomes = _each_partition(audit(spark, model, staged, None), keys)
            counts = None
        else:
            assert column is not None
            counts = partition_counts(staged, column, part)
            outside = sorted(str(k) for k in counts if k not in keys)
            if outside:
                raise dg.Failure(
                    description=f"dbt model {model.ref} returned rows outside the run's partitions "
                    f"{keys[0]}..{keys[-1]} ({column} {', '.join(outside)}); nothing of it was published"
                )
            outcomes = audit(spark, model, staged, [k for k in keys if k not in blocked])
        run = ModelRun(model, keys, outcomes=outcomes, blocked=blocked)
        refused = {*blocked, *run.refused}
        publish = [k for k in keys if k not in refused]
        if model.partitioned and model.kind.replay is not Replay.ANY:  # days applied in order: stop at a refused one
            publish = [DBT_GRAIN.key(v) for v in publishable(model.kind, part, set(refused)) or []]
            run.held_back = [k for k in keys if k not in publish and k not in refused]
        if not publish or (whole_table and len(publish) < len(keys)):
            return run
        location = registry.location(*model.key.path)
        info = {"commit_info": {**commit_info, "asset": model.ref}, "name": model.ref, "s3": registry.s3}
        values = [DBT_GRAIN.parse(k) for k in publish] if len(publish) < len(keys) else None
        if model.kind.keyed:
            refuse_duplicate_keys(model, staged, publish)
            target = Target(location, publish=values, counts=counts, schema=SchemaRule(rebuild=full_refresh), **info)
            if model.partitioned:
                target = dataclasses.replace(target, partition_column=column, partitions=part)
            elif model.kind.per_partition:  # a snapshot: the rows are the state at the run's last day
                last = part.single(part.end)
                target = dataclasses.replace(
                    target, partition_column=column, partitions=last, counts={last.keys()[0]: staged.count()}
                )
            run.result = strategy_for(model.kind).commit(spark, staged, target)
        elif model.materialized == "table" or (full_refresh and registry.exists(spark, *model.key.path)):
            # The whole table: an existing table keeps its partitioning; Delta refuses a changed schema.
            total = None if counts is None else {"*": sum(counts.values())}
            run.result = commit(spark, staged, location, partition_column=None, partitions=None, counts=total, **info)
        else:
            run.result = commit(
                spark, staged, location, partition_column=column, partitions=part, publish=values, counts=counts, **info
            )
        run.published = {k: counts.get(k, 0) for k in publish} if counts is not None else {}
    finally:
        staged.unpersist()
    registry.register(spark, *model.key.path)
    return run


def refuse_duplicate_keys(model: DbtModel, rows: DataFrame, publish: list[str]) -> None:
    """The check every keyed kind implies (``unique_key``): one row per key, per day of a partitioned model, in
    the rows about to be published; else the model is refused by the check's name and nothing is published."""
    keys = list(model.kind.unique_key)
    column = model.partition_column if model.partitioned else None
    if column is not None:
        rows = rows.where(_day(column).isin(publish))
    by = [F.col(quoted(k)) for k in keys] + ([_day(column).alias(column)] if column else [])
    shared = rows.groupBy(*by).count().where(F.col("count") > 1)
    total = shared.count()
    if not total:
        return
    raise dg.Failure(
        description=f"dbt model {model.ref}: check {KEY_CHECK} failed: {total} key(s) of unique_key "
        f"({', '.join(keys)}) have more than one row{' on one day' if column else ''}, and a {model.kind.name} table "
        "needs one row per key; nothing of it was published",
        metadata={"check": KEY_CHECK, "unique_key": keys, "duplicate_keys": total},
    )
