"""The ``rel`` fixture domain's world for the reliability tests: a warehouse, runs, and waiting on them.

The domain (``tests/fixtures/reliability/domains/rel``) is a few tiny products over a landed table; the
fault, concurrency and alert tests run it on real Spark and Delta.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path

import dagster as dg
from delta.tables import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "reliability"
SCHEMA = "id bigint, payload string, p_date date"


def wait_for(condition: Callable[[], object], timeout: float, what: str, interval: float = 0.05) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


class Rel:
    """A warehouse for the ``rel`` domain, an instance, and helpers to land, run and read."""

    def __init__(self, spark, base: Path, instance: dg.DagsterInstance | None = None):
        self.spark = spark
        self.warehouse = base / f"wh-{uuid.uuid4().hex[:8]}"
        self.mesh = MeshResource(warehouse=str(self.warehouse))
        self.instance = instance or dg.DagsterInstance.ephemeral()
        self.defs = mesh_definitions(FIXTURE / "domains")
        self.assets = executable_assets(self.defs)

    def location(self, table: str = "events") -> str:
        return self.mesh.registry.location("rel", table)

    def frame(self, day: str, ids: Iterable[int | None], payload: str) -> DataFrame:
        d = date.fromisoformat(day)
        return self.spark.createDataFrame([(i, payload, d) for i in ids], SCHEMA)

    def land(self, day: str, ids: Iterable[int | None], payload: str) -> None:
        rng = PartitionRange.from_keys(Grain.DAILY, day, day)
        self.frame(day, ids, payload).coalesce(1).write.format("delta").mode("overwrite").partitionBy("p_date").option(
            "replaceWhere", replace_predicate("p_date", rng)
        ).save(self.location("raw_events"))

    def run(self, key: list[str], partition: str, instance: dg.DagsterInstance | None = None, end: str | None = None):
        """A run of ``partition``, or of the range ``partition``..``end`` as one run."""
        tags = {"dagster/asset_partition_range_start": partition, "dagster/asset_partition_range_end": end}
        observe_now(self.defs, instance or self.instance, self.mesh)  # the landed days, as the observer reports
        return dg.materialize(
            self.assets,
            instance=instance or self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(key)],
            partition_key=None if end else partition,
            tags=tags if end else None,
            raise_on_error=False,
        )

    def rows(self, day: str, table: str = "events") -> list[tuple]:
        df = self.spark.read.format("delta").load(self.location(table))
        return sorted(tuple(r) for r in df.where(F.col("p_date") == date.fromisoformat(day)).drop("p_date").collect())

    def version(self, table: str = "events") -> int:
        return DeltaTable.forPath(self.spark, self.location(table)).history(1).collect()[0]["version"]


def subprocess_env(rel: Rel, home: Path, **extra: str) -> dict[str, str]:
    """A Mesh process of its own: its own home and Spark, the test's warehouse, the checkout's jars."""
    return {
        **os.environ,
        "MESH_HOME": str(home),
        "MESH_WAREHOUSE": str(rel.warehouse),
        "MESH_PROJECT_ROOT": str(ROOT),
        "DAGSTER_HOME": str(home / "dagster"),
        **extra,
    }


class Gate:
    """The fixture's gate: while held, runs of ``held_events`` wait in their transformation."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.folder.mkdir()
        self.seen = 0

    def hold(self) -> None:
        (self.folder / "hold").touch()

    def release(self) -> None:
        (self.folder / "hold").unlink(missing_ok=True)

    def arrivals(self) -> list[int]:
        """Process ids of the runs that reached the gate, in order."""
        started = self.folder / "started"
        return [int(pid) for pid in started.read_text().split()] if started.exists() else []

    def next(self) -> int:
        """Wait for the next run to reach the gate; its process id."""
        pids = wait_for(lambda: len(a := self.arrivals()) > self.seen and a, 600, "a run to reach its transformation")
        self.seen += 1
        return pids[self.seen - 1]


def step_window(instance: dg.DagsterInstance, run_id: str) -> tuple[float, float]:
    """When the run's one step started and succeeded, from the instance's event log."""
    times = {
        e.dagster_event.event_type_value: e.timestamp
        for e in instance.all_logs(run_id)
        if e.dagster_event and e.dagster_event.event_type_value in {"STEP_START", "STEP_SUCCESS"}
    }
    return times["STEP_START"], times["STEP_SUCCESS"]


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    """The step's error and its causes, as the UI shows them."""
    error = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error
    messages = []
    while error is not None:
        messages.append(error.message)
        error = error.cause
    return "\n".join(messages)
