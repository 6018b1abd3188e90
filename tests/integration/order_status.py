"""The keyed kinds' small world: order status updates landed one day a partition (``km.raw_status``) and the
tables that apply them (tests/fixtures/kinds_merge/domains): merges and appends, in Python and YAML."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ROOT / "tests" / "fixtures" / "kinds_merge" / "domains"
SCHEMA = "order_id bigint, status string, updated_at string, placed_on string"

Update = tuple[int, str, str] | tuple[int, str, str, str]
"""(order id, status, ``updated_at`` as ``YYYY-MM-DD HH:MM`` UTC[, the day the order was placed])."""


class Orders:
    """A warehouse, an instance and the fixture's definitions: land a day's updates, materialize, read back."""

    def __init__(self, spark, warehouse: Path, instance: dg.DagsterInstance | None = None):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(warehouse))
        self.instance = instance or dg.DagsterInstance.ephemeral()
        self.defs = mesh_definitions(DOMAINS)
        self.cursors: dict[str, str | None] = {}

    def land(self, day: str, updates: list[Update], **extra: str) -> None:
        """Replace ``day`` of the landed updates, as the app would (``extra``: a column it added, one value)."""
        rows = [(u[0], u[1], u[2], u[3] if len(u) > 3 else day) for u in updates]
        frame = self.spark.createDataFrame(rows, SCHEMA).select(
            "order_id",
            "status",
            F.to_timestamp("updated_at").alias("updated_at"),
            F.to_date("placed_on").alias("placed_on"),
            *[F.lit(v).alias(k) for k, v in extra.items()],
            F.lit(day).cast("date").alias("p_date"),
        )
        where = replace_predicate("p_date", PartitionRange.from_keys(Grain.DAILY, day, day))
        frame.write.format("delta").mode("overwrite").partitionBy("p_date").option("replaceWhere", where).option(
            "mergeSchema", "true"
        ).save(self.location("raw_status"))
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def run(self, table: str, start: str, end: str | None = None, *, ok: bool = True):
        result = dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(["km", table])],
            tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end or start},
            raise_on_error=False,
        )
        assert result.success == ok, failure_message(result) if not result.success else "the run succeeded"
        return result

    def location(self, table: str) -> str:
        return self.mesh.registry.location("km", table)

    def rows(self, table: str, *columns: str) -> set[tuple]:
        """The table's rows as (order_id, status, updated_at as ``YYYY-MM-DD HH:MM`` in UTC, *columns)."""
        frame = self.spark.read.format("delta").load(self.location(table))
        shown = F.date_format("updated_at", "yyyy-MM-dd HH:mm")
        return {tuple(r) for r in frame.select("order_id", "status", shown, *columns).collect()}

    def version(self, table: str) -> int:
        return DeltaTable.forPath(self.spark, self.location(table)).history(1).collect()[0]["version"]

    def last_commit(self, table: str) -> dict:
        return DeltaTable.forPath(self.spark, self.location(table)).history(1).collect()[0].asDict()


def metadata(result: dg.ExecuteInProcessResult) -> dict:
    """The materialization's metadata, as plain values."""
    event = result.get_asset_materialization_events()[0].materialization
    return {k: getattr(v, "value", v) for k, v in event.metadata.items()}


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    """The failed step's error and its causes, as the UI shows them."""
    error = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error
    messages = []
    while error is not None:
        messages.append(error.message)
        error = error.cause
    return "\n".join(messages)


def kill_mid_write(orders: Orders, table: str, day: str, home: Path) -> None:
    """Run ``km.<table>``'s ``day`` in a process of its own and SIGKILL its driver and JVM (as a lost machine
    would) once its write put its first data file on disk; fails unless it was caught in the middle."""
    location = Path(orders.location(table))
    before = set(location.rglob("*.parquet"))
    env = {
        **os.environ,
        "MESH_HOME": str(home),
        "MESH_WAREHOUSE": orders.mesh.warehouse,
        "MESH_PROJECT_ROOT": str(ROOT),
        "DAGSTER_HOME": str(home / "dagster"),
    }
    job = subprocess.Popen(
        [sys.executable, str(DOMAINS.parent / "materialize.py"), table, day],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while not (set(location.rglob("*.parquet")) - before) and job.poll() is None:
            assert time.monotonic() < deadline, "the write did not start"
            time.sleep(0.05)
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    assert job.returncode == -signal.SIGKILL, "the run ended before it was killed"
    assert set(location.rglob("*.parquet")) - before, "the job was not caught in the middle of its write"
