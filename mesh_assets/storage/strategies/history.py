"""Kind ``history``: a slowly changing dimension (type 2) kept by one ``MERGE`` per partition.

A partition's rows are the source's state, one per key. Each row of the table is one version of a key: its
columns, ``valid_from``, ``valid_to`` (null while current) and ``is_current``, and its partition column, which
is the partition that opened it. Applying partition P:

- a key whose ``updated_at`` grew (or, with ``check_columns``, whose checked values differ, nulls equal) closes
  its current row (``valid_to`` = the new version's ``valid_from``) and opens a new one;
- a new version's ``valid_from`` is its ``updated_at``, or with ``check_columns`` the start of P (UTC): never
  the clock, so a replay gives the same rows;
- a key missing from P's rows is closed at the start of P (never before its own ``valid_from``) with
  ``deletes: close``, left current with ``keep``; a closed key that comes back opens a new version;
- an unchanged key adds nothing: the same input applied again changes no row and commits nothing.

That is the standard SCD2 ``MERGE``: the changed rows are in its source twice, once to close the current row
and once, unmatched, to insert the new version; ``WHEN NOT MATCHED BY SOURCE AND t.is_current`` closes
deleted keys. Applying P again (a re-run of the latest partition with changed input) must not stack versions
on P's: the ``MERGE`` then goes by version (key and partition) from the table as it was before P (the versions
P opened taken away, the rows P closed open again) with P applied to it, so a re-run of the same input still
changes nothing. A partition before the table's latest is refused: only a rebuild replays it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from mesh_assets.model.errors import Refused
from mesh_assets.model.grain import timestamp_text
from mesh_assets.model.kinds import History
from mesh_assets.settings import S3Settings
from mesh_assets.storage.delta import version_or_none
from mesh_assets.storage.lake import history, open_table
from mesh_assets.storage.strategies.merging import keys_match, merge_commit, quoted, same_keys, same_row
from mesh_assets.storage.strategies.target import Target
from mesh_assets.storage.writer import WriteResult

APPLIED = "history_partition"
"""The key of the partition a history commit applied, in the commit's ``userMetadata``: how the next run knows
the table's latest applied partition from the log alone, without reading the table."""
LOOK_BACK = 100
"""Commits read back from the latest to find the latest partition applied (others are maintenance's)."""
NEW = "__mesh_new_version"
"""The source's flag on the second copy of a changed row: it matches no row and inserts the new version."""


class HistoryOutOfOrder(Refused):
    """A partition before the table's latest applied one: its versions would contradict later ones."""


class KeepHistory:
    """``history``: what :meth:`commit` does with one partition's rows (see the module)."""

    def __init__(self, kind: History) -> None:
        self.kind = kind

    def commit(self, spark: SparkSession, staged: DataFrame, target: Target) -> WriteResult:
        chosen = target.chosen()
        if target.partition_column is None or len(chosen) != 1:
            raise ValueError(f"{target.name}: a history table applies one partition per commit, not {len(chosen)}")
        target = replace(target, commit_info={**target.commit_info, APPLIED: target.keys()[0]})
        applying = Applying(spark, self.kind, target, chosen[0])
        exists = version_or_none(target.location, target.s3) is not None and not target.schema.rebuild
        again = exists and applying.applied_before()  # a rebuild's first partition recreates the table
        return merge_commit(
            spark,
            staged,
            target,
            create=applying.versions,
            statement=applying.reapply if again else applying.apply,
            source=applying.redone if again else lambda rows: rows,
        )


class Applying:
    """One partition applied to a history table: its rows as versions, and the statements that apply them."""

    def __init__(self, spark: SparkSession, kind: History, target: Target, partition: datetime) -> None:
        assert target.partitions is not None and target.partition_column is not None
        self.spark, self.kind, self.target = spark, kind, target
        self.partition_column = target.partition_column
        self.grain = grain = target.partitions.grain
        self.value = grain.literal(partition)
        self.partition = grain.sql_literal(partition)
        self.start = f"TIMESTAMP'{timestamp_text(partition)}'"
        """The partition's start, an exact UTC instant whatever the session's or the process's zone."""
        self.key = grain.key(partition)

    def versions(self, rows: DataFrame) -> DataFrame:
        """The partition's rows as current versions opened by it."""
        kind = self.kind
        opened = F.col(quoted(kind.updated_at)).cast("timestamp") if kind.updated_at else F.expr(self.start)
        return (
            rows.withColumn(self.partition_column, F.lit(self.value))
            .withColumn(kind.valid_from, opened)
            .withColumn(kind.valid_to, F.lit(None).cast("timestamp"))
            .withColumn(kind.is_current, F.lit(True))
        )

    def changed(self, old: str, new: str) -> str:
        """SQL: the row ``new`` is a new version of the key's current row ``old``."""
        kind = self.kind
        if kind.updated_at:
            return f"{quoted(kind.updated_at, new)} > {quoted(kind.updated_at, old)}"
        checked = kind.check_columns or ()
        return "NOT (" + " AND ".join(f"{quoted(c, old)} <=> {quoted(c, new)}" for c in checked) + ")"

    def closed_at(self, current: str) -> str:
        """SQL: when a key missing from the partition's rows stops being valid (never before it began)."""
        return f"greatest({self.start}, {quoted(self.kind.valid_from, current)})"

    def opened(self, row: str) -> str:
        """SQL: the ``valid_from`` of the version the source row ``row`` opens."""
        updated_at = self.kind.updated_at
        return f"CAST({quoted(updated_at, row)} AS TIMESTAMP)" if updated_at else self.start

    def apply(self, table: str, view: str) -> str:
        """The standard SCD2 ``MERGE`` of a partition after every one the table holds; ``view`` holds the rows
        as computed (their validity is written by the statement, so the source is no wider than the rows)."""
        kind, keys = self.kind, self.kind.unique_key
        current = quoted(kind.is_current, "t")
        source = (
            f"SELECT false AS {NEW}, s.* FROM {view} AS s UNION ALL "
            f"SELECT true AS {NEW}, s.* FROM {view} AS s JOIN {table} AS t "
            f"ON {keys_match(keys)} AND {current} WHERE {self.changed('t', 's')}"
        )
        written = {
            self.partition_column: self.partition,
            kind.valid_from: self.opened("s"),
            kind.valid_to: "CAST(NULL AS TIMESTAMP)",
            kind.is_current: "true",
        }
        columns = self.versions(self.spark.table(view)).columns
        close = f"{quoted(kind.valid_to, 't')} = {{end}}, {current} = false"
        deletes = ""
        if kind.deletes == "close":
            ended = close.format(end=self.closed_at("t"))
            deletes = f" WHEN NOT MATCHED BY SOURCE AND {current} THEN UPDATE SET {ended}"
        return (
            f"MERGE INTO {table} AS t USING ({source}) AS s ON {keys_match(keys)} AND {current} AND NOT s.{NEW} "
            f"WHEN MATCHED AND {self.changed('t', 's')} THEN UPDATE SET {close.format(end=self.opened('s'))} "
            f"WHEN NOT MATCHED THEN INSERT ({', '.join(map(quoted, columns))}) "
            f"VALUES ({', '.join(written.get(c, quoted(c, 's')) for c in columns)}){deletes}"
        )

    def reapply(self, table: str, view: str) -> str:
        """The ``MERGE`` by version (key and partition) of the partition applied again: ``view`` holds each
        key's latest earlier version and the partition's own, as they must be (:meth:`redone`)."""
        columns = self.columns_of(view)
        version = keys_match((*self.kind.unique_key, self.partition_column))
        return (
            f"MERGE INTO {table} AS t USING {view} AS s ON {version} "
            f"WHEN MATCHED AND NOT ({same_row(columns)}) THEN UPDATE SET "
            f"{', '.join(quoted(c, 't') + ' = ' + quoted(c, 's') for c in columns)} "
            f"WHEN NOT MATCHED THEN INSERT ({', '.join(map(quoted, columns))}) "
            f"VALUES ({', '.join(quoted(c, 's') for c in columns)}) "
            f"WHEN NOT MATCHED BY SOURCE AND {quoted(self.partition_column, 't')} = {self.partition} THEN DELETE"
        )

    def columns_of(self, view: str) -> list[str]:
        return [c for c in self.spark.table(view).columns if c != NEW]

    def applied_before(self) -> bool:
        """Whether the table holds versions this partition opened or closed: it is applied again. A partition
        before the latest one the table holds is refused. The latest is the one its last history commit names;
        a table without one (written before commits named it) is asked: its greatest partition, and a
        ``valid_to`` at or after this partition's start (a partition that only closed rows)."""
        latest = self.latest_applied()
        if latest is None:
            return self.applied_before_by_rows()
        if latest > self.key:
            raise self.out_of_order(latest)
        return latest == self.key

    def latest_applied(self) -> str | None:
        """The partition key the table's latest history commit applied, from the log (None: none names one)."""
        table = open_table(self.target.location, self.target.s3)
        for info in history(table, LOOK_BACK) if table is not None else ():
            try:
                metadata = json.loads(info.get("userMetadata") or "null")
            except ValueError:
                continue
            if isinstance(metadata, dict) and isinstance(metadata.get(APPLIED), str):
                return metadata[APPLIED]
        return None

    def out_of_order(self, latest: str) -> HistoryOutOfOrder:
        return HistoryOutOfOrder(
            f"{self.target.name}: partition {self.key} comes before the latest partition the history table "
            f"holds ({latest}): its versions follow from the earlier ones. Nothing was written. "
            f"Rebuild the table, which replays every partition in order: `mesh rebuild "
            f"{self.target.name.replace('.', '/', 1)}`"
        )

    def applied_before_by_rows(self) -> bool:
        kind, column = self.kind, self.partition_column
        table = self.spark.read.format("delta").load(self.target.location)
        latest, value = F.max(quoted(column)), F.lit(self.value)
        found = table.agg(
            F.date_format(latest, self.grain.spark_pattern).alias("latest"),
            F.coalesce(latest > value, F.lit(False)).alias("later"),
            F.coalesce(latest == value, F.lit(False)).alias("same"),
            F.coalesce(F.max(quoted(kind.valid_to)) >= F.expr(self.start), F.lit(False)).alias("closed"),
        ).first()
        assert found is not None
        if found["later"]:
            raise self.out_of_order(found["latest"])
        return bool(found["same"] or found["closed"])

    def redone(self, rows: DataFrame) -> DataFrame:
        """What the partition applied again must leave, version by version: each key's latest earlier version
        (reopened when this partition closed it, then closed again or not by the new rows) and the versions
        the new rows open. The versions this partition opened before and opens no more are deleted by the
        ``MERGE``."""
        kind, keys, column = self.kind, self.kind.unique_key, self.partition_column
        table = self.spark.read.format("delta").load(self.target.location)
        start = F.expr(self.start)
        columns = table.columns
        opened = table.where(F.col(quoted(column)) == F.lit(self.value)).select(
            *[F.col(quoted(k)).alias(f"__o{i}") for i, k in enumerate(keys)],
            F.col(quoted(kind.valid_from)).alias("__of"),
        )
        order = Window.partitionBy(*[F.col(quoted(k)) for k in keys]).orderBy(
            F.col(quoted(kind.valid_from)).desc_nulls_last(), F.col(quoted(column)).desc()
        )
        earlier = table.where(F.col(quoted(column)) < F.lit(self.value))
        latest = earlier.withColumn("__r", F.row_number().over(order)).where("__r = 1").drop("__r")
        ours = [F.col(quoted(k)) for k in keys]
        latest = latest.join(opened, same_keys(ours, [F.col(f"__o{i}") for i in range(len(keys))]), "left")
        to, current = F.col(quoted(kind.valid_to)), F.col(quoted(kind.is_current))
        closed_here = ~current & (
            (F.col("__of").isNotNull() & (to == F.col("__of"))) | (F.col("__of").isNull() & (to >= start))
        )
        before = latest.select(
            *[
                F.when(closed_here, F.lit(None).cast("timestamp")).otherwise(to).alias(c)
                if c == kind.valid_to
                else (current | closed_here).alias(c)
                if c == kind.is_current
                else F.col(quoted(c))
                for c in columns
            ]
        )
        new = self.versions(rows).select(*[F.col(quoted(c)) for c in columns])
        old = before.select(*[F.col(quoted(c)).alias(f"__l{i}") for i, c in enumerate(columns)])
        fresh = new.select(*[F.col(quoted(c)).alias(f"__s{i}") for i, c in enumerate(columns)])
        at = {c: i for i, c in enumerate(columns)}

        def lc(c: str) -> Column:
            return F.col(f"__l{at[c]}")

        def sc(c: str) -> Column:
            return F.col(f"__s{at[c]}")

        both = old.join(fresh, same_keys([lc(k) for k in keys], [sc(k) for k in keys]), "full")
        has_old, has_new, was_current = lc(column).isNotNull(), sc(column).isNotNull(), lc(kind.is_current)
        if kind.updated_at:
            change = sc(kind.updated_at) > lc(kind.updated_at)
        else:
            change = _any_differs([(lc(c), sc(c)) for c in kind.check_columns or ()])
        changed = has_old & was_current & has_new & F.coalesce(change, F.lit(False))
        gone = has_old & was_current & ~has_new if kind.deletes == "close" else F.lit(False)
        end = F.when(changed, sc(kind.valid_from)).when(gone, F.greatest(start, lc(kind.valid_from)))
        kept = both.where(has_old).select(
            *[
                F.when(changed | gone, end).otherwise(lc(c)).alias(c)
                if c == kind.valid_to
                else F.when(changed | gone, F.lit(False)).otherwise(lc(c)).alias(c)
                if c == kind.is_current
                else lc(c).alias(c)
                for c in columns
            ]
        )
        opens = both.where(has_new & (~has_old | ~was_current | changed)).select(*[sc(c).alias(c) for c in columns])
        return kept.unionByName(opens)


def _any_differs(pairs: list[tuple[Column, Column]]) -> Column:
    """True where any pair differs (nulls equal)."""
    same = F.lit(True)
    for old, new in pairs:
        same = same & old.eqNullSafe(new)
    return ~same


def applied_in_log(location: str, s3: S3Settings) -> list[tuple[int, str]]:
    """``(version, partition key)`` of every commit of the table that names the partition it applied, oldest
    first (none for a table of another kind)."""
    table = open_table(location, s3)
    found = []
    for info in history(table, table.version() + 1) if table is not None else ():
        try:
            metadata = json.loads(info.get("userMetadata") or "null")
        except ValueError:
            continue
        if isinstance(metadata, dict) and isinstance(metadata.get(APPLIED), str):
            found.append((info["version"], metadata[APPLIED]))
    return sorted(found)
