"""Writers of one table at once, each in a process of its own with its own Spark, as two deployments would be.

Outside Mesh's pools, Delta's optimistic concurrency decides: of two writers of one partition one commits
and the other is told so; writers of different partitions both commit, also when their first write
creates the table. Mesh's own runs of a table never meet in Delta: the table's pool lets one step at a
time write it. Two worker processes (``tests/fixtures/reliability/worker.py``) serve every test here.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from reliability import FIXTURE, Gate, Rel, step_window, subprocess_env, wait_for

from mesh_assets.assets.specs import table_pool
from mesh_assets.cli.commands import instance_yaml

pytestmark = [pytest.mark.spark, pytest.mark.slow]

IDS = [0, 1, 2]


class Worker:
    """One worker process: commands go to its stdin, answers come back one JSON line each."""

    def __init__(self, env: dict[str, str], log: Path):
        with log.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(FIXTURE / "worker.py")],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
            )
        self.log = log
        self.answers: queue.Queue[dict | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.answers.put(json.loads(line))
        self.answers.put(None)

    def send(self, **command: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 300) -> dict:
        found = self.answers.get(timeout=timeout)
        if found is None:
            raise AssertionError(f"worker exited with {self.process.wait()}; its output is in {self.log}")
        return found

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # type: ignore[union-attr]
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture(scope="module")
def rel(spark, tmp_path_factory) -> Rel:
    return Rel(spark, tmp_path_factory.mktemp("concurrent"))


@pytest.fixture(scope="module")
def gate(tmp_path_factory) -> Gate:
    return Gate(tmp_path_factory.mktemp("gate") / "gate")


@pytest.fixture(scope="module")
def workers(rel, gate, tmp_path_factory) -> Iterator[tuple[Worker, Worker]]:
    """Two Mesh processes on the module's warehouse, each with its own home and Spark, started together."""
    base = tmp_path_factory.mktemp("workers")
    pair = tuple(
        Worker(subprocess_env(rel, base / name, MESH_TEST_GATE=str(gate.folder)), base / f"{name}.log")
        for name in ("one", "two")
    )
    try:
        for worker in pair:
            assert "ready" in worker.answer()
        yield pair
    finally:
        for worker in pair:
            worker.stop()


def write_at_once(workers: tuple[Worker, Worker], location: str, days: dict[str, str], tmp_path: Path) -> dict:
    """``{tag: day}``: each tag's rows committed to its day by Mesh's writer, one tag per process, together."""
    barrier = tmp_path / f"barrier-{uuid.uuid4().hex[:8]}"
    for worker, (tag, day) in zip(workers, days.items(), strict=True):
        worker.send(do="commit", location=location, name="rel.events", day=day, ids=IDS, tag=tag, barrier=str(barrier))
    return {tag: worker.answer() for worker, tag in zip(workers, days, strict=True)}


def test_two_writers_of_one_partition_never_lose_or_double_rows(rel, workers, tmp_path):
    day = "2021-06-08"
    rel.land(day, range(3), "raw")
    assert rel.run(["rel", "events"], day).success
    start = rel.version()

    out = write_at_once(workers, rel.location(), {"a": day, "b": day}, tmp_path)

    committed = {tag: a["version"] for tag, a in out.items() if "version" in a}
    refused = {tag: a["failed"] for tag, a in out.items() if "failed" in a}
    assert len(committed) == 1 and len(refused) == 1, out
    [(winner, version)] = committed.items()
    [message] = refused.values()
    assert message == (
        f"writing rel.events partition {day} failed: another write committed to the same partitions first "
        f"(ConcurrentAppendException); re-run to publish; nothing of this write was committed; the table is at "
        f"version {version}, committed by another writer"
    )
    assert rel.rows(day) == [(i, winner) for i in IDS]
    assert rel.version() == version == start + 1


def test_writers_of_different_partitions_all_land(rel, workers, tmp_path):
    days = {"a": "2021-06-09", "b": "2021-06-10"}
    rel.land("2021-06-11", range(3), "raw")
    assert rel.run(["rel", "events"], "2021-06-11").success
    start = rel.version()

    out = write_at_once(workers, rel.location(), days, tmp_path)

    assert sorted(a.get("version", -1) for a in out.values()) == [start + 1, start + 2], out
    for tag, day in days.items():
        assert rel.rows(day) == [(i, tag) for i in IDS]
    assert rel.rows("2021-06-11") == [(i, "raw") for i in range(3)]


def test_writers_creating_a_new_table_for_different_days_both_land(rel, workers, tmp_path):
    days = {"a": "2021-06-12", "b": "2021-06-13"}
    table = f"new_{uuid.uuid4().hex[:8]}"

    out = write_at_once(workers, rel.location(table), days, tmp_path)

    [(first, again), (second, conflict)] = sorted(
        (a.get("version", -1), a.get("written_again_after")) for a in out.values()
    )
    assert (first, again, second) == (0, None, 1), out  # the second write failed, then went into the new table
    assert conflict in ("ProtocolChangedException", "MetadataChangedException"), out
    for tag, day in days.items():
        assert rel.rows(day, table) == [(i, tag) for i in IDS]


def test_writers_creating_a_new_table_for_one_day_leave_one_writers_rows(rel, workers, tmp_path):
    day, table = "2021-06-14", f"new_{uuid.uuid4().hex[:8]}"

    out = write_at_once(workers, rel.location(table), {"a": day, "b": day}, tmp_path)

    committed = {tag: a["version"] for tag, a in out.items() if "version" in a}
    refused = [a["failed"] for a in out.values() if "failed" in a]
    assert list(committed.values()) == [0] and len(refused) == 1, out
    assert refused == [
        f"writing rel.events partition {day} failed: another writer created the table with rows of the same "
        "partitions first (ProtocolChangedException); re-run to publish; nothing of this write was committed; "
        "the table is at version 0, committed by another writer"
    ]
    [winner] = committed
    assert rel.rows(day, table) == [(i, winner) for i in IDS]
    assert rel.version(table) == 0


@pytest.mark.parametrize("second_day", ["2021-06-16", "2021-06-15"], ids=["other-partition", "same-partition"])
def test_runs_of_one_table_queue_on_its_pool(rel, workers, gate, tmp_path, second_day):
    """Two processes run ``held_events`` at once on one instance configured as ``mesh setup`` writes it: the
    second run's step waits for the table's pool until the first one's step ended, then both land once."""
    first_day, pool = "2021-06-15", table_pool("rel", "held_events")
    for day in {first_day, second_day}:
        rel.land(day, range(4), f"held {day}")
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml("sqlite"))
    one, two = workers
    gate.seen = len(gate.arrivals())

    gate.hold()
    try:
        one.send(do="materialize", asset="rel/held_events", partition=first_day, instance=str(home))
        holder = gate.next()  # the first run's step is in its transformation, holding the pool's one slot
        two.send(do="materialize", asset="rel/held_events", partition=second_day, instance=str(home))
        with dg.DagsterInstance.from_config(str(home)) as instance:
            waiting = wait_for(lambda: blocked_run(instance, pool), 120, "the second run to wait for the pool")
            assert gate.arrivals()[gate.seen - 1 :] == [holder]  # the second step did not start
    finally:
        gate.release()
    first, second = one.answer(), two.answer()

    assert first["success"] and second["success"]
    assert waiting == second["run_id"]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        _, first_end = step_window(instance, first["run_id"])
        second_start, _ = step_window(instance, second["run_id"])
        assert second_start >= first_end
        assert instance.event_log_storage.get_concurrency_run_ids() == set()
    for day in {first_day, second_day}:
        assert rel.rows(day, "held_events") == [(i, f"held {day}") for i in range(4)]


def blocked_run(instance: dg.DagsterInstance, pool: str) -> str | None:
    """The run whose step the instance reported blocked by ``pool``, if any."""
    for run in instance.get_runs():
        if any(f"blocked by limit for pool {pool}" in (e.message or "") for e in instance.all_logs(run.run_id)):
            return run.run_id
    return None
