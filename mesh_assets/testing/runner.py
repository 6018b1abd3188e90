"""Run a product's transformation on rows a test gives: the run's own call
(:func:`~mesh_assets.run.compute.apply_transformation`) on DataFrames made from the rows, in the local
SparkSession, with no warehouse, no Dagster instance and no network."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from mesh_assets.graph.discovery import load_domain
from mesh_assets.graph.resolve import MeshGraph, Node
from mesh_assets.model.errors import Refused
from mesh_assets.model.partitions import PartitionRange, ranges_of_regions
from mesh_assets.run.compute import apply_transformation

Rows = list[dict[str, Any]]
LOG = logging.getLogger("mesh.test")
TYPES: list[tuple[type, T.DataType]] = [
    (bool, T.BooleanType()),
    (int, T.LongType()),
    (float, T.DoubleType()),
    (Decimal, T.DecimalType(38, 9)),
    (datetime, T.TimestampType()),
    (date, T.DateType()),
    (str, T.StringType()),
]
"""A given value's Python type (as YAML reads it) and its Spark type; a column only ever null is a string."""


class CaseError(Refused):
    """A test that cannot run as written: an unknown table or input, a partition missing."""


def spark_type(column: str, values: list[Any]) -> T.DataType:
    for value in values:
        if value is None:
            continue
        for python, found in TYPES:
            if isinstance(value, python):
                return found
        raise CaseError(f"column {column}: a value of type {type(value).__name__} cannot be given ({value!r})")
    return T.StringType()


def frame(spark: SparkSession, name: str, rows: Rows) -> DataFrame:
    """``rows`` as a DataFrame: the columns of every row, each typed by its first value that is not null."""
    if not rows:
        raise CaseError(f"input {name}: give at least one row (Spark cannot tell the columns of none)")
    columns = list(dict.fromkeys(c for row in rows for c in row))
    schema = T.StructType([T.StructField(c, spark_type(c, [r.get(c) for r in rows])) for c in columns])
    values = [tuple(_as(row.get(c), f.dataType) for c, f in zip(columns, schema.fields, strict=True)) for row in rows]
    return spark.createDataFrame(values, schema)


def _as(value: Any, dtype: T.DataType) -> Any:
    if value is None:
        return None
    if isinstance(dtype, T.DoubleType):
        return float(value)
    if isinstance(dtype, T.DecimalType):
        return Decimal(str(value))
    if isinstance(dtype, T.TimestampType) and isinstance(value, date) and not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day)
    return value


@lru_cache(maxsize=16)
def domain_graph(folder: Path) -> MeshGraph:
    """The domain's products as discovery loads them (its Python runs here), errors refused with their place."""
    specs = load_domain(folder)
    if specs.errors:
        raise CaseError("the domain does not load: " + "; ".join(str(e) for e in specs.errors))
    return MeshGraph({specs.domain: specs})


def find_node(domains_dir: Path, domain: str, table: str) -> Node:
    folder = domains_dir / domain
    if not folder.is_dir():
        raise CaseError(f"no domain {domain!r} in {domains_dir}")
    graph = domain_graph(folder.resolve())
    node = graph.nodes.get((domain, table))
    if node is None:
        known = ", ".join(sorted(t for d, t in graph.nodes if d == domain))
        raise CaseError(f"{domain} has no product output {table!r} (outputs: {known})")
    return node


@dataclass(frozen=True)
class Given:
    """What a test runs: the output, its partition, and the rows of each input by input name."""

    domain: str
    table: str
    partition: str | None
    inputs: dict[str, Rows | DataFrame]


def partition_of(node: Node, key: str) -> PartitionRange:
    """The partition a test computes: a key of the table's grain, or ``2021-06-01|eu`` (a date and a region) of a
    table partitioned by date and region, whose run reads that region's local day."""
    if not node.table.regions:
        return PartitionRange.from_keys(node.table.grain, key, key)
    if "|" not in key:
        raise CaseError(f"{node.table.ref} is partitioned by date and region: give the partition as DATE|REGION")
    (part,) = ranges_of_regions(node.table.grain, node.table.regions, node.table.zones, [key])
    return part


def run(spark: SparkSession, domains_dir: Path, given: Given) -> DataFrame:
    """The output's rows computed from the given inputs' rows by the product's own transformation."""
    node = find_node(domains_dir, given.domain, given.table)
    t = node.transformation
    unknown = sorted(set(given.inputs) - set(t.inputs))
    if unknown:
        raise CaseError(f"{node.table.ref} has no input {', '.join(unknown)} (inputs: {', '.join(sorted(t.inputs))})")
    frames: dict[str, DataFrame | None] = {}
    for name, inp in t.inputs.items():
        rows = given.inputs.get(name)
        if rows is None:
            if not inp.window.skips_current:
                raise CaseError(f"input {name} of {node.table.ref} is not given")
            frames[name] = None  # its own past before its first partition: nothing
        else:
            frames[name] = rows if isinstance(rows, DataFrame) else frame(spark, name, rows)
    part = None
    if node.table.grain.partitioned:
        if given.partition is None:
            raise CaseError(f"{node.table.ref} is partitioned: give the partition the test computes")
        part = partition_of(node, given.partition)
    return apply_transformation(spark, node.domain, t, node.sql, frames, part, LOG, "mesh-test")
