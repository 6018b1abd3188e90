"""Kind ``changes``: an ordered change feed applied by ``sequence_by``, as SCD type 1 or 2 (Lakeflow's AUTO CDC).

Each computed row is an event of its key: a delete where the kind's ``delete`` condition holds, else an upsert.
Events are ordered by ``sequence_by`` alone, never by arrival, and an event no newer than what the table already
holds for its key is ignored (late, out of order, or applied before: a re-run changes nothing and commits
nothing). ``except_columns`` (the feed's operation code) are read by ``delete`` and not stored.

SCD type 1 keeps one row per key, the latest event's. A deleted key leaves no row, so its delete is kept as a
tombstone (keys and sequence) in a Delta table of its own under the table's location, ``_mesh_tombstones``
(a directory whose name starts with ``_``: Delta's readers and ``VACUUM`` of the table ignore it). Consumers
read the table as it is: no hidden column, no deleted rows. A run makes at most two commits, in this order:
one ``MERGE`` of the run's deletes into the tombstones (none when it has no newer delete), then one ``MERGE``
into the table, which skips every upsert no newer than its key's tombstone, so a late update never brings a
deleted key back. Both commits are safe to repeat: a run killed between them left a tombstone whose delete
the re-run applies again (a delete at its tombstone's own sequence still applies), and the table only ever
holds deletes that are already tombstones. Tombstones are kept until a rebuild (which rewrites them).

SCD type 2 keeps every version: each upsert event is a row valid from its sequence value until the next
event's of its key (``valid_to`` null and ``is_current`` true while it is the latest), and a delete closes the
current version at the delete's sequence. ``valid_from`` and ``valid_to`` hold ``sequence_by``'s values, of its
type: times when the feed is ordered by a timestamp (Lakeflow's ``__START_AT``/``__END_AT``). The closed
versions are the tombstones: what the table holds for a key is its greatest ``valid_to`` or ``valid_from``, so
one ``MERGE`` per run (closing current versions and inserting the new ones) is the only commit.
"""

from __future__ import annotations

import uuid

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from mesh_assets.engine.session import scoped_conf
from mesh_assets.model.kinds import Changes
from mesh_assets.storage.delta import path_identifier, version_or_none
from mesh_assets.storage.strategies.merge import latest_per_key
from mesh_assets.storage.strategies.merging import keys_match, merge_commit, quoted
from mesh_assets.storage.strategies.target import Target
from mesh_assets.storage.writer import WriteResult, write_failed

DELETE = "__mesh_delete"
"""The event's column that says it deletes its key (the kind's ``delete`` condition, evaluated once)."""
CLOSE = "__mesh_close"
"""SCD type 2: the source row closes its key's current version rather than adding one."""
HELD = "__mesh_held"
"""The greatest sequence the table (or its tombstones) holds for a key."""
TOMBSTONES = "_mesh_tombstones"
"""SCD type 1: the directory, under the table's location, of the Delta table of deleted keys."""


def tombstones_location(location: str) -> str:
    """Where an SCD type 1 table of ``location`` keeps the sequence of each deleted key."""
    return f"{location.rstrip('/')}/{TOMBSTONES}"


def _same_keys(left: DataFrame, right: DataFrame, keys: tuple[str, ...]) -> Column:
    condition = F.lit(True)
    for k in keys:
        condition = condition & left[quoted(k)].eqNullSafe(right[quoted(k)])
    return condition


def _held_after(events: DataFrame, held: DataFrame | None, keys: tuple[str, ...], newer: Column) -> DataFrame:
    """``events`` whose key the table holds nothing of, or for which ``newer`` holds (``HELD`` the held
    sequence)."""
    if held is None:
        return events
    joined = events.join(
        held.withColumnsRenamed({k: f"__mesh_k_{i}" for i, k in enumerate(keys)}),
        how="left",
        on=[events[quoted(k)].eqNullSafe(F.col(f"__mesh_k_{i}")) for i, k in enumerate(keys)],
    )
    kept = joined.where(F.col(HELD).isNull() | newer)
    return kept.drop(HELD, *[f"__mesh_k_{i}" for i in range(len(keys))])


class ApplyChanges:
    def __init__(self, kind: Changes) -> None:
        self.kind = kind

    def stored(self, staged: DataFrame) -> list[str]:
        """The computed columns the table keeps: all but ``except_columns``."""
        left_out = set(self.kind.except_columns)
        return [c for c in staged.columns if c not in left_out]

    def events(self, rows: DataFrame) -> DataFrame:
        """The stored columns and ``DELETE`` (false without a ``delete`` condition)."""
        flag = F.coalesce(F.expr(self.kind.delete), F.lit(False)) if self.kind.delete else F.lit(False)
        return rows.withColumn(DELETE, flag).select(*map(quoted, self.stored(rows)), DELETE)

    def commit(self, spark: SparkSession, staged: DataFrame, target: Target) -> WriteResult:
        if self.kind.scd_type == 2:
            return self._versions(spark, staged, target)
        return self._latest(spark, staged, target)

    # SCD type 1 -------------------------------------------------------------------------------------------

    def _latest(self, spark: SparkSession, staged: DataFrame, target: Target) -> WriteResult:
        kind, seq = self.kind, quoted(self.kind.sequence_by)
        stored = self.stored(staged)
        tombs = tombstones_location(target.location)
        rebuild = target.schema.rebuild

        def latest(rows: DataFrame) -> DataFrame:
            return latest_per_key(self.events(rows), kind.unique_key, [kind.sequence_by])

        if kind.delete is not None:
            self._tombstone(spark, latest(target.rows_of_chosen(staged)), target, rebuild)

        def source(rows: DataFrame) -> DataFrame:
            if kind.delete is None or version_or_none(tombs, target.s3) is None:
                return latest(rows)
            held = spark.read.format("delta").load(tombs).withColumnRenamed(kind.sequence_by, HELD)
            s, h = F.col(seq), F.col(HELD)
            return _held_after(latest(rows), held, kind.unique_key, (s > h) | (F.col(DELETE) & (s >= h)))

        newer = f"{quoted(kind.sequence_by, 's')} > {quoted(kind.sequence_by, 't')}"
        update = "UPDATE SET " + ", ".join(f"{quoted(c, 't')} = {quoted(c, 's')}" for c in stored)
        insert = f"INSERT ({', '.join(map(quoted, stored))}) VALUES ({', '.join(quoted(c, 's') for c in stored)})"

        def statement(table: str, view: str) -> str:
            return (
                f"MERGE INTO {table} AS t USING {view} AS s ON {keys_match(kind.unique_key)} "
                f"WHEN MATCHED AND s.{DELETE} AND {newer} THEN DELETE "
                f"WHEN MATCHED AND NOT s.{DELETE} AND {newer} THEN {update} "
                f"WHEN NOT MATCHED AND NOT s.{DELETE} THEN {insert}"
            )

        def create(rows: DataFrame) -> DataFrame:
            return source(rows).where(~F.col(DELETE)).select(*map(quoted, stored))

        return merge_commit(spark, staged, target, create=create, statement=statement, source=source)

    def _tombstone(self, spark: SparkSession, latest: DataFrame, target: Target, rebuild: bool) -> None:
        """Commit the keys whose latest event of the run is a delete to the tombstones (first of the run's two
        commits); none when no delete is newer than its key's tombstone."""
        kind, location = self.kind, tombstones_location(target.location)
        deletes = latest.where(F.col(DELETE)).select(*map(quoted, kind.unique_key), quoted(kind.sequence_by))
        before = version_or_none(location, target.s3)
        try:
            if before is None or rebuild:
                if before is None and deletes.isEmpty():
                    return
                writer = deletes.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
                if target.metadata:
                    writer = writer.option("userMetadata", target.metadata)
                writer.save(location)
                return
            view = f"mesh_deletes_{uuid.uuid4().hex[:12]}"
            deletes.createOrReplaceTempView(view)
            seq = kind.sequence_by
            conf = {"spark.databricks.delta.commitInfo.userMetadata": target.metadata or ""}
            try:
                with scoped_conf(spark, conf):
                    spark.sql(
                        f"MERGE INTO {path_identifier(location)} AS t USING {view} AS s "
                        f"ON {keys_match(kind.unique_key)} "
                        f"WHEN MATCHED AND {quoted(seq, 's')} > {quoted(seq, 't')} "
                        f"THEN UPDATE SET {quoted(seq, 't')} = {quoted(seq, 's')} "
                        "WHEN NOT MATCHED THEN INSERT *"
                    )
            finally:
                spark.catalog.dropTempView(view)
        except Exception as exc:
            raise write_failed(
                target.s3, exc, target.name, target.location, target.keys(), version_or_none(target.location, target.s3)
            ) from exc

    # SCD type 2 -------------------------------------------------------------------------------------------

    def _versions(self, spark: SparkSession, staged: DataFrame, target: Target) -> WriteResult:
        kind = self.kind
        keys, seq = kind.unique_key, quoted(kind.sequence_by)
        stored = self.stored(staged)
        validity = [kind.valid_from, kind.valid_to, kind.is_current]
        columns = stored + validity

        def versions(events: DataFrame) -> DataFrame:
            """Each upsert event as a version: valid until its key's next event (an update or a delete)."""
            following = F.lead(F.col(seq)).over(Window.partitionBy(*map(quoted, keys)).orderBy(F.col(seq)))
            return (
                events.withColumn(kind.valid_to, following)
                .where(~F.col(DELETE))
                .withColumn(kind.valid_from, F.col(seq))
                .withColumn(kind.is_current, F.col(quoted(kind.valid_to)).isNull())
                .select(*map(quoted, columns))
            )

        def create(rows: DataFrame) -> DataFrame:
            return versions(self.events(rows))

        def source(rows: DataFrame) -> DataFrame:
            table = spark.read.format("delta").load(target.location)
            held = table.groupBy(*map(quoted, keys)).agg(
                F.max(F.coalesce(quoted(kind.valid_to), quoted(kind.valid_from))).alias(HELD)
            )
            events = _held_after(self.events(rows), held, keys, F.col(seq) > F.col(HELD))
            closes = events.groupBy(*map(quoted, keys)).agg(F.min(seq).alias(kind.valid_to))
            return (
                versions(events)
                .withColumn(CLOSE, F.lit(False))
                .unionByName(closes.withColumn(CLOSE, F.lit(True)), allowMissingColumns=True)
            )

        current = quoted(kind.is_current, "t")
        values = ", ".join(quoted(c, "s") for c in columns)

        def statement(table: str, view: str) -> str:
            return (
                f"MERGE INTO {table} AS t USING {view} AS s "
                f"ON {keys_match(keys)} AND {current} AND s.{CLOSE} "
                f"WHEN MATCHED THEN UPDATE SET {quoted(kind.valid_to, 't')} = {quoted(kind.valid_to, 's')}, "
                f"{current} = false "
                f"WHEN NOT MATCHED AND NOT s.{CLOSE} THEN INSERT ({', '.join(map(quoted, columns))}) VALUES ({values})"
            )

        return merge_commit(spark, staged, target, create=create, statement=statement, source=source)
