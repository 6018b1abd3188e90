"""Faults on real Spark and Delta: a killed job, a killed run worker, a full disk.

Whatever fails, readers keep seeing a committed version of every table, and a re-run publishes exactly one
copy of the rows. Runs use the small ``rel`` fixture domain (``tests/fixtures/reliability``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import functions as F
from reliability import FIXTURE, Gate, Rel, failure_message, subprocess_env, wait_for

from mesh_assets import MeshResource, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

EVENTS = ["rel", "events"]
HELD = ["rel", "held_events"]


def committed_files(location: str) -> set[str]:
    """Data files the Delta log references (adds minus removes), as paths relative to the table."""
    files: set[str] = set()
    for log in sorted((Path(location) / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                files.add(action["add"]["path"])
            if "remove" in action:
                files.discard(action["remove"]["path"])
    return files


def data_files(location: str) -> set[str]:
    return {str(p.relative_to(location)) for p in Path(location).rglob("*.parquet")}


@pytest.fixture(scope="module")
def rel(spark, tmp_path_factory) -> Rel:
    return Rel(spark, tmp_path_factory.mktemp("faults"))


@pytest.mark.slow
def test_job_killed_mid_write_leaves_the_previous_version_and_a_rerun_publishes_once(rel, tmp_path):
    day, ids = "2021-06-03", range(400)
    rel.land(day, ids, "first")
    assert rel.run(EVENTS, day).success
    version, published = rel.version(), rel.rows(day)
    location = rel.location()
    before = data_files(location)

    rel.land(day, ids, "second")
    # One row per file: the write takes long enough to be caught with its first files on disk.
    env = subprocess_env(rel, tmp_path / "home", MESH_TEST_MAX_RECORDS_PER_FILE="1")
    job = subprocess.Popen(
        [sys.executable, str(FIXTURE / "materialize.py"), "rel/events", day],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: data_files(location) - before or job.poll() is not None, 300, "the write to start")
        os.killpg(job.pid, signal.SIGKILL)  # the driver and its JVM, as a lost machine would
        job.wait(30)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    orphans = data_files(location) - committed_files(location)
    assert job.returncode == -signal.SIGKILL and orphans, "the job was not caught in the middle of its write"

    assert rel.version() == version
    assert rel.rows(day) == published
    assert not (Path(location) / "_delta_log" / f"{version + 1:020d}.json").exists()

    assert rel.run(EVENTS, day).success
    assert rel.rows(day) == [(i, "second") for i in ids]


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (the run worker's Spark JVM), from /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Launcher:
    """Mesh's instance (``mesh setup``'s dagster.yaml) with the fixture location behind a code server.

    Runs go through Dagster's DefaultRunLauncher: each in a worker process the code server starts. The queue
    daemon is replaced by launching at once; the monitoring and retry daemons' iterations are called here.
    """

    def __init__(self, home: Path, gate: Gate):
        import yaml
        from dagster._core.workspace.context import WorkspaceProcessContext
        from dagster._core.workspace.load_target import PythonFileTarget

        from mesh_assets.cli.commands import instance_yaml

        config = yaml.safe_load(instance_yaml("sqlite"))
        config["run_coordinator"] = {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}
        config["run_monitoring"]["free_slots_after_run_end_seconds"] = 1  # not 30: the test calls the daemon
        home.mkdir(parents=True)
        (home / "dagster.yaml").write_text(yaml.safe_dump(config))
        self.instance = dg.DagsterInstance.from_config(str(home))
        self.gate = gate
        target = PythonFileTarget(
            python_file=str(FIXTURE / "location.py"),
            attribute="defs",
            working_directory=str(FIXTURE),
            location_name="rel",
        )
        self.context = WorkspaceProcessContext(self.instance, target)

    def launch(self, job: str, tags: dict[str, str]) -> str:
        mesh = MeshResource(warehouse=os.environ["MESH_WAREHOUSE"])  # the workers' warehouse (settings are cached)
        observe_now(mesh_definitions(FIXTURE / "domains"), self.instance, mesh)  # what was landed
        request = self.context.create_request_context()
        location = request.get_code_location("rel")
        [repo] = location.get_repositories().values()
        remote_job = repo.get_full_job(job)
        plan = location.get_execution_plan(remote_job, {}, step_keys_to_execute=None, known_state=None)
        run = self.instance.create_run(
            job_name=job,
            run_id=None,
            run_config={},
            resolved_op_selection=None,
            step_keys_to_execute=None,
            op_selection=None,
            status=None,
            root_run_id=None,
            parent_run_id=None,
            tags={**remote_job.tags, **tags},
            job_snapshot=remote_job.job_snapshot,
            execution_plan_snapshot=plan.execution_plan_snapshot,
            parent_job_snapshot=remote_job.parent_job_snapshot,
            remote_job_origin=remote_job.get_remote_origin(),
            job_code_origin=remote_job.get_python_origin(),
            asset_selection=None,
            asset_check_selection=None,
            asset_graph=repo.asset_graph,
        )
        self.instance.launch_run(run.run_id, request)
        return run.run_id

    def status(self, run_id: str) -> dg.DagsterRunStatus:
        run = self.instance.get_run_by_id(run_id)
        assert run is not None
        return run.status

    def finished(self, run_id: str, timeout: float) -> dg.DagsterRunStatus:
        wait_for(lambda: self.instance.get_run_by_id(run_id).is_finished, timeout, f"run {run_id} to end")
        return self.status(run_id)

    def messages(self, run_id: str) -> list[str]:
        return [e.message or "" for e in self.instance.all_logs(run_id)]

    def monitor(self) -> None:
        """One iteration of the monitoring daemon: check running runs, free the slots of ended ones."""
        import logging

        from dagster._daemon.monitoring import execute_concurrency_slots_iteration, execute_run_monitoring_iteration

        logger = logging.getLogger("run_monitoring")
        list(execute_run_monitoring_iteration(self.context, logger))
        list(execute_concurrency_slots_iteration(self.context, logger))

    def retry_failed(self) -> None:
        """One iteration of the daemon's automatic re-execution over the failed runs."""
        import logging

        from dagster._daemon.auto_run_reexecution.auto_run_reexecution import (
            consume_new_runs_for_automatic_reexecution,
        )

        failed = self.instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        list(consume_new_runs_for_automatic_reexecution(self.context, failed, logging.getLogger("retries")))


@pytest.fixture(scope="module")
def launcher(rel, tmp_path_factory) -> Iterator[Launcher]:
    """One instance and code server for the module (each costs seconds); run workers inherit this env."""
    base = tmp_path_factory.mktemp("launcher")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MESH_WAREHOUSE", str(rel.warehouse))
        env.setenv("MESH_HOME", str(base / "worker-home"))
        env.setenv("MESH_TEST_GATE", str(base / "gate"))
        launcher = Launcher(base / "dagster", Gate(base / "gate"))
        with launcher.context, launcher.instance:
            yield launcher


@pytest.mark.slow
@pytest.mark.e2e
def test_killed_run_worker_fails_the_run_and_the_retry_completes(rel, launcher):
    day, gate = "2021-06-04", launcher.gate
    rel.land(day, range(50), "held")
    assert launcher.instance.run_monitoring_enabled and launcher.instance.run_retries_enabled

    gate.hold()
    first = launcher.launch("held_events_job", {"dagster/partition": day})
    worker = gate.next()
    jvms = children(worker)
    os.kill(worker, signal.SIGKILL)

    # The code server that started the worker notices it is gone: the run fails, it does not hang.
    assert launcher.finished(first, 120) == dg.DagsterRunStatus.FAILURE
    assert any("was terminated by signal 9" in m for m in launcher.messages(first))
    wait_for(lambda: not any(alive(p) for p in jvms), 60, "the worker's Spark JVM to exit")
    assert not Path(rel.location("held_events")).exists(), "a killed run must not leave a table behind"

    # The dead run still holds its table's pool slot; the monitoring daemon frees it, else the retry would wait.
    assert launcher.instance.event_log_storage.get_concurrency_run_ids() == {first}
    time.sleep(1.5)
    launcher.monitor()
    assert launcher.instance.event_log_storage.get_concurrency_run_ids() == set()

    gate.release()
    launcher.retry_failed()
    retries = launcher.instance.get_run_records(dg.RunsFilter(tags={"dagster/parent_run_id": first}))
    [retry] = [r.dagster_run.run_id for r in retries]
    assert launcher.finished(retry, 600) == dg.DagsterRunStatus.SUCCESS
    assert rel.rows(day, "held_events") == [(i, "held") for i in range(50)]
    assert rel.version("held_events") == 0


@pytest.mark.slow
@pytest.mark.e2e
def test_run_lost_with_its_code_server_is_failed_by_run_monitoring(rel, launcher):
    """Runs last of the launcher's tests: it kills the module's code server."""
    day, gate = "2021-06-05", launcher.gate
    rel.land(day, range(5), "lost")
    gate.seen = len(gate.arrivals())
    gate.hold()
    run_id = launcher.launch("held_events_job", {"dagster/partition": day, "dagster/max_runtime": "1"})
    worker = gate.next()
    server, jvms = parent(worker), children(worker)
    os.kill(server, signal.SIGKILL)
    os.kill(worker, signal.SIGKILL)
    time.sleep(2)
    assert launcher.status(run_id) == dg.DagsterRunStatus.STARTED  # nobody left to notice

    launcher.monitor()
    assert launcher.status(run_id) == dg.DagsterRunStatus.FAILURE
    time.sleep(1.5)
    launcher.monitor()
    assert launcher.instance.event_log_storage.get_concurrency_run_ids() == set()  # its table is writable again
    wait_for(lambda: not any(alive(p) for p in jvms), 60, "the worker's Spark JVM to exit")
    assert not Path(rel.location("held_events")).exists() or rel.rows(day, "held_events") == []


def fill(disk: Path, leave: int) -> Path:
    """Fill the filesystem of ``disk`` up to ``leave`` free bytes; delete the returned file to free it."""
    filler = disk / "filler"
    block = b"\0" * (1 << 16)
    with filler.open("wb") as out:
        try:
            while True:
                out.write(block)
                out.flush()
        except OSError:
            pass
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


@pytest.fixture
def small_disk(spark, tmp_path) -> Iterator[Path]:
    """A 32 MB tmpfs: a disk that really fills up (needs the privilege to mount; skipped without it)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield disk
    # The tables registered on the disk; SHOW TABLES, since a quick driver cannot list them as catalog objects.
    for table in spark.sql("SHOW TABLES IN rel").collect() if spark.catalog.databaseExists("rel") else []:
        spark.sql(f"DROP TABLE IF EXISTS `rel`.`{table.tableName}`")
    subprocess.run(["umount", "-l", str(disk)], check=True)


def land_big_day(rel: Rel, day: str, rows: int) -> None:
    """A day of incompressible rows (a few MB of Parquet): more than the write below has room for."""
    rng = PartitionRange.from_keys(Grain.DAILY, day, day)
    big = rel.spark.range(rows).select(
        "id", F.sha2(F.col("id").cast("string"), 512).alias("payload"), F.lit(date.fromisoformat(day)).alias("p_date")
    )
    big.write.format("delta").mode("overwrite").partitionBy("p_date").option(
        "replaceWhere", replace_predicate("p_date", rng)
    ).save(rel.location("raw_events"))


@pytest.mark.slow
def test_full_disk_fails_the_write_clearly_and_keeps_the_previous_version(spark, small_disk):
    rel = Rel(spark, small_disk)
    rel.land("2021-06-01", range(5), "small")
    assert rel.run(EVENTS, "2021-06-01").success
    version, published = rel.version(), rel.rows("2021-06-01")
    land_big_day(rel, "2021-06-02", 20_000)
    filler = fill(small_disk, leave=256 * 1024)

    result = rel.run(EVENTS, "2021-06-02")

    assert not result.success
    message = failure_message(result)
    assert (
        "writing rel.events partition 2021-06-02 failed: java.io.IOException: No space left on device; "
        f"the table is unchanged at version {version}"
    ) in message
    assert rel.version() == version and rel.rows("2021-06-01") == published
    assert rel.rows("2021-06-02") == []

    filler.unlink()
    assert rel.run(EVENTS, "2021-06-02").success
    assert len(rel.rows("2021-06-02")) == 20_000 == len({r[0] for r in rel.rows("2021-06-02")})


@pytest.mark.slow
def test_file_size_limit_fails_the_write_clearly_and_keeps_the_previous_version(spark, tmp_path):
    """The same fault without privileges: the Spark JVM may not write files over 64 KB (RLIMIT_FSIZE)."""
    import resource

    rel = Rel(spark, tmp_path)
    rel.land("2021-06-01", range(5), "small")
    land_big_day(rel, "2021-06-02", 20_000)
    assert rel.run(EVENTS, "2021-06-01").success
    version = rel.version()
    jvm = spark.sparkContext._gateway.proc.pid
    soft, hard = resource.prlimit(jvm, resource.RLIMIT_FSIZE)
    resource.prlimit(jvm, resource.RLIMIT_FSIZE, (64 * 1024, hard))
    try:
        result = rel.run(EVENTS, "2021-06-02")
    finally:
        resource.prlimit(jvm, resource.RLIMIT_FSIZE, (soft, hard))

    assert not result.success
    assert (
        "writing rel.events partition 2021-06-02 failed: java.io.IOException: File too large; "
        f"the table is unchanged at version {version}"
    ) in failure_message(result)
    assert rel.version() == version and rel.rows("2021-06-02") == []
    assert rel.run(EVENTS, "2021-06-02").success
    assert len(rel.rows("2021-06-02")) == 20_000
