"""The service tests' mesh: one fixture domain (``shop``), its landed export, and rows in a comparable form.

Used both in the pytest process (local mode, the shared SparkSession) and by ``shop_run.py`` in processes
that reach Spark some other way, so every engine lands the same rows and is compared the same way.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import dagster as dg
import processes
from pyspark.sql import SparkSession

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.tables import TableRegistry
from mesh_assets.storage.writer import replace_predicate
from mesh_examples.generator import RAW_ORDERS_SCHEMA, raw_orders

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ROOT / "tests" / "fixtures" / "services" / "domains"
ORDERS = ["shop", "orders"]
CITY_ORDERS = ["shop", "city_orders"]
DAYS = [date(2021, 6, 1), date(2021, 6, 2)]
PARTITIONS = [d.isoformat() for d in DAYS]
RANGE = f"{PARTITIONS[0]}..{PARTITIONS[-1]}"
"""Both days in one run, as a single-run backfill does."""


@dataclass(frozen=True)
class LocalShop:
    """``shop`` as local mode materialized it for :data:`PARTITIONS` (the ``local_shop`` fixture)."""

    registry: TableRegistry
    rows: dict[str, list[str]]
    """``<domain>/<table>`` -> rows as :func:`rows` gives them."""


def land(spark: SparkSession, registry: TableRegistry, days: Sequence[date], rows: list[tuple] | None = None) -> None:
    """Replace ``days`` of ``shop.raw_orders`` with ``rows`` (default: the demo generator's), in one commit."""
    days = sorted(days)
    rows = [row for day in days for row in raw_orders(day)] if rows is None else rows
    landed = PartitionRange.from_keys(Grain.DAILY, str(days[0]), str(days[-1]))
    (
        spark.createDataFrame(rows, RAW_ORDERS_SCHEMA)
        .write.format("delta")
        .mode("overwrite")
        .partitionBy("p_date")
        .option("replaceWhere", replace_predicate("p_date", landed))
        .save(registry.location("shop", "raw_orders"))
    )


def materialize(
    instance: dg.DagsterInstance,
    mesh: MeshResource,
    keys: Iterable[list[str]],
    partitions: str,
    domains: Path = DOMAINS,
) -> dg.ExecuteInProcessResult:
    """One run of ``keys`` for ``partitions``: a partition key, or ``first..last`` for a single-run range."""
    first, _, last = partitions.partition("..")
    tags = {"dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": last} if last else {}
    defs = mesh_definitions(domains)
    observe_now(defs, instance, mesh)  # the landed days, as the observer reports them
    return dg.materialize(
        executable_assets(defs),
        instance=instance,
        resources={"mesh": mesh},
        selection=[dg.AssetKey(k) for k in keys],
        partition_key=None if last else first,
        tags=tags,
        raise_on_error=False,
    )


def rows(spark: SparkSession, registry: TableRegistry, key: list[str]) -> list[str]:
    """Every row of the table as sorted JSON lines: equal lists mean equal tables, whichever engine wrote them."""
    df = spark.read.format("delta").load(registry.location(*key))
    return sorted(json.dumps(r.asDict(), default=str, sort_keys=True) for r in df.collect())


def run_command(*args: str) -> list[str]:
    """``shop_run.py`` with ``args`` in a fresh interpreter (see its docstring)."""
    return [sys.executable, str(Path(__file__).with_name("shop_run.py")), *args]


def run_env(home: Path, **overrides: str) -> dict[str, str]:
    """The environment of a ``shop_run.py`` process: its own Mesh home, the checkout's jars, ``overrides``."""
    return {**os.environ, "MESH_PROJECT_ROOT": str(ROOT), "MESH_HOME": str(home), **overrides}


def run(log: Path, env: dict[str, str], *args: str, timeout: float = 600) -> dict:
    return json.loads(processes.run(run_command(*args), log, env, timeout).strip().splitlines()[-1])


def definitions() -> dg.Definitions:
    return mesh_definitions(DOMAINS)
