"""The product enclosure: a transformation reads what its domain may read, and publishes only through its outputs.

- An input of another domain reaches the transformation with its ``pii`` columns masked for the reader
  (:func:`masked`, the masks from :mod:`mesh_assets.graph.access`).
- While a PySpark transformation runs, a Spark ``QueryExecutionListener`` sees every query and command it
  executes (:func:`enclosed`). A command that writes (``df.write`` to a path or a table, ``saveAsTable``,
  ``spark.sql("INSERT ...")``, ``DELETE``, ``CREATE TABLE``) fails the run before its outputs are published,
  naming what it wrote. Spark's listeners hear of a command once it ran, so what it wrote is then removed: every
  file under its target written since the transformation started (a Delta commit with its data files, a new
  directory whole). A query that read another domain's table the product may not read undeclared fails the run
  too: a ``collect()`` of it leaves no trace in the returned DataFrame's plan.

Needs a classic (JVM) session; under Spark Connect the listener cannot be attached and only the returned
DataFrame's plan is checked (:func:`mesh_assets.lineage.capture.observed_reads`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mesh_assets.graph.resolve import Node
from mesh_assets.lineage.capture import table_name
from mesh_assets.lineage.plan import leaf_paths, normalize, seq
from mesh_assets.model.errors import Refused
from mesh_assets.storage.tables import TableRegistry

READ_ONLY = {
    *("CreateViewCommand", "SetCommand", "ResetCommand", "ShowTables", "ShowTablesCommand", "ShowColumns"),
    *("DescribeRelation", "DescribeColumn", "DescribeTableCommand", "ExplainCommand", "ShowNamespaces"),
    *("SetCatalogAndNamespace", "SetNamespaceCommand"),
    *("CacheTableCommand", "UncacheTableCommand", "ClearCacheCommand", "CacheTable", "UncacheTable", "ClearCache"),
}
"""Commands a transformation may run: a temporary view (checked below), settings, listings, Spark's cache."""
SLACK_MS = 1000
"""How far before the transformation's start a file's time may fall and still be its write (a file system's
clock granularity)."""


class StrayWrite(Refused):
    """A transformation wrote outside its outputs: the run fails and what it wrote is removed."""


class WithheldRead(Refused):
    """A transformation read another domain's table it may not read undeclared."""


def masked(df: DataFrame, masks: dict[str, str]) -> DataFrame:
    """``df`` with each column of ``masks`` hashed (SHA-256 of its text, so equal values still join) or nulled."""
    present = {c: m for c, m in masks.items() if c in df.columns}
    if not present:
        return df
    types = dict(df.dtypes)
    return df.withColumns(
        {
            c: F.sha2(F.col(c).cast("string"), 256) if m == "hash" else F.lit(None).cast(types[c])
            for c, m in present.items()
        }
    )


def withheld_refusal(names: list[str] | tuple[str, ...], node: Node, withheld: tuple[str, ...]) -> WithheldRead | None:
    """The refusal of reads of ``names`` (``<domain>.<table>``) that ``node`` may not read undeclared, or None."""
    declared = {r.table.ref for r in node.reads}
    found = sorted({n for n in names if n in withheld and n not in declared})
    if not found:
        return None
    return WithheldRead(
        description=f"{node.table.ref} read {', '.join(found)} without declaring it: another domain's table that "
        f"is internal, restricted or masked for {node.domain}/{node.product.name}, so nothing was published "
        "(declare it as an input: its producer publishes it, and grants it when restricted)",
        metadata={"withheld_reads": found},
    )


@dataclass
class _Seen:
    """What one enclosed transformation ran: writes (description, location or None) and tables read."""

    writes: list[tuple[str, str | None]] = field(default_factory=list)
    reads: set[str] = field(default_factory=set)
    delta_writes: int = 0


def _option(value: Any) -> str | None:
    """A Scala ``Option``'s value as text, or None."""
    return str(value.get()) if value is not None and value.isDefined() else None


V2_WRITES = {"AppendData", "OverwriteByExpression", "OverwritePartitionsDynamic", "DeleteFromTable", "UpdateTable"}
CREATES = {"CreateTableAsSelect", "CreateTable", "ReplaceTableAsSelect", "ReplaceTable"}


def _table_location(table: Any) -> str | None:
    """Where a catalog table (Delta's ``DeltaTableV2``, or one with a ``location`` property) keeps its files."""
    try:
        return str(table.path())
    except Exception:
        location = table.properties().get("location")
        return str(location) if location is not None else None


def _target(plan: Any) -> tuple[str, str | None]:
    """(what a write command wrote, as a user reads it; the location of its files, when known)."""
    name = plan.nodeName()
    location: str | None = None
    try:
        if name == "InsertIntoHadoopFsRelationCommand":
            location = str(plan.outputPath())
        elif name == "SaveIntoDataSourceCommand":
            location = _option(plan.options().get("path"))
        elif name in V2_WRITES:
            relation = plan.table()
            location = _table_location(relation.table())
            return f"{name} into {relation.name()}" + (f" ({location})" if location else ""), location
        elif name in CREATES:
            location = _option(plan.tableSpec().location())
        elif name.endswith("Command"):
            location = str(plan.deltaLog().dataPath())  # Delta's DELETE, UPDATE, MERGE, ...
    except Exception:  # an unknown shape: named by its first line, its files found by no location
        location = None
    first = str(plan.toString()).splitlines()[0][:200]
    return (f"{name} to {location}" if location else first), location


class _Listener:
    """Spark's ``QueryExecutionListener``, called on the driver's listener thread through Py4J."""

    def __init__(self) -> None:
        self.active: _Seen | None = None

    def onSuccess(self, func_name: str, qe: Any, duration_ns: int) -> None:
        self._record(func_name, qe)

    def onFailure(self, func_name: str, qe: Any, exception: Any) -> None:
        self._record(func_name, qe)

    def _record(self, func_name: str, qe: Any) -> None:
        seen = self.active
        if seen is None:
            return
        try:
            plan = qe.analyzed()
            seen.reads.update(normalize(p) for leaf in seq(plan.collectLeaves()) for p in leaf_paths(leaf))
            if func_name == "deltaTransactionalWrite":
                seen.delta_writes += 1
            elif _writes(plan):
                seen.writes.append(_target(plan))
        except Exception as exc:  # a plan this code cannot read is still a command it did not expect
            seen.writes.append((f"a command Mesh could not read ({type(exc).__name__})", None))

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]


def _writes(plan: Any) -> bool:
    """Whether ``plan`` is a command other than a temporary view, a setting or a listing."""
    jvm = plan.getClass().getClassLoader()
    command = jvm.loadClass("org.apache.spark.sql.catalyst.plans.logical.Command")
    if not command.isInstance(plan):
        return False
    name = plan.nodeName()
    if name == "CreateViewCommand":
        return "TempView" not in str(plan.toString()).splitlines()[0]
    return name not in READ_ONLY


_LISTENERS: weakref.WeakKeyDictionary[SparkSession, _Listener] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _listener(spark: SparkSession) -> _Listener | None:
    """The session's listener, attached on first use; None under Spark Connect (no JVM to attach it to)."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return None
    with _lock:
        if spark not in _LISTENERS:
            from pyspark.java_gateway import ensure_callback_server_started

            ensure_callback_server_started(spark.sparkContext._gateway)
            listener = _Listener()
            jsession.listenerManager().register(listener)
            _LISTENERS[spark] = listener
        return _LISTENERS[spark]


DRAIN_TIMEOUT_MS = 300_000
"""How long to wait for Spark's listener bus: its own default (10 s) fails a run on a busy driver."""


def _drain(spark: SparkSession) -> None:
    """Wait until Spark's listeners have heard of every query run so far (they are told asynchronously)."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(DRAIN_TIMEOUT_MS)


def remove_written(spark: SparkSession, location: str, since_ms: int) -> list[str]:
    """Delete every file under ``location`` written since ``since_ms``, then the directories left empty; the
    files removed."""
    jvm = spark.sparkContext._jvm
    root = jvm.org.apache.hadoop.fs.Path(location)
    fs = root.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(root):
        return []
    removed, files = [], fs.listFiles(root, True)
    while files.hasNext():
        status = files.next()
        if status.getModificationTime() >= since_ms - SLACK_MS:
            removed.append(str(status.getPath()))
    for path in removed:
        fs.delete(jvm.org.apache.hadoop.fs.Path(path), False)
    _remove_empty(fs, root)
    return removed


def _remove_empty(fs: Any, directory: Any) -> bool:
    """Remove the empty directories under ``directory`` (itself too, if left empty); whether it was removed."""
    entries = fs.listStatus(directory)
    left = len(entries)
    for entry in entries:
        if entry.isDirectory() and _remove_empty(fs, entry.getPath()):
            left -= 1
    return left == 0 and fs.delete(directory, False)


@contextmanager
def enclosed(spark: SparkSession, node: Node, registry: TableRegistry, withheld: tuple[str, ...]) -> Iterator[None]:
    """Run a transformation inside the enclosure: on leaving, a write it made fails the run (after removing what
    it wrote), as does a read of a table of ``withheld`` it did not declare."""
    listener = _listener(spark)
    if listener is None:
        yield
        return
    jvm = spark.sparkContext._jvm
    _drain(spark)  # what ran before (Mesh registering the inputs) is told late: never the transformation's
    since = jvm.java.lang.System.currentTimeMillis()
    seen = _Seen()
    listener.active = seen
    try:
        yield
    finally:
        _drain(spark)
        listener.active = None
        if seen.writes or seen.delta_writes:
            raise _stray(spark, node, seen, since)
    names = [table_name(p, registry.warehouse) for p in seen.reads]
    if (refused := withheld_refusal(names, node, withheld)) is not None:
        raise refused


def _stray(spark: SparkSession, node: Node, seen: _Seen, since: int) -> StrayWrite:
    """The refusal of a transformation's writes, after removing every file they wrote."""
    writes = seen.writes or [("a Delta write", None)]
    removed: list[str] = []
    unknown = [what for what, location in writes if location is None]
    for location in sorted({loc for _, loc in writes if loc is not None}):
        removed += remove_written(spark, location, since)
    text = "; ".join(what for what, _ in writes)
    cleanup = f"removed the {len(removed)} file(s) it wrote" if removed else "found no file it wrote"
    if unknown:
        cleanup += f" (where {', '.join(unknown)} wrote is unknown: check it)"
    return StrayWrite(
        description=f"{node.table.ref}'s transformation wrote outside its outputs: {text}. A product publishes only "
        f"through its outputs, so nothing was published; {cleanup}",
        metadata={"stray_writes": [what for what, _ in writes], "removed_files": removed[:100]},
    )
