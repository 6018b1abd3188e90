"""The engine's run limit and each table's pool hold for every run, however it was launched.

Runs are submitted to Mesh's instance (the ``dagster.yaml`` ``mesh setup`` writes) as the UI and the backfill
daemon submit them (``submit_run``: the run is QUEUED), untagged as a run launched by hand is; the run queue's
own dequeue pass (Dagster's ``QueuedRunCoordinatorDaemon``) decides which start. Its launcher only records what
it was handed: the test is about what the queue lets through, not about executing the runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.definitions.selector import JobSubsetSelector
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.test_utils import InProcessTestWorkspaceLoadTarget
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

from mesh_assets.cli.commands import instance_yaml
from mesh_assets.settings import MeshSettings

LOCATION = Path(__file__).resolve().parents[1] / "fixtures" / "freshness" / "location.py"
STRICT, NAMED = dg.AssetKey(["fresh", "orders_strict"]), dg.AssetKey(["fresh", "orders_named"])
QUEUED, STARTING = dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING


class Queue:
    """Mesh's instance with ``engine.max_runs`` of ``limit`` and the ``fresh`` fixture location in process."""

    def __init__(self, home: Path, limit: int):
        config = yaml.safe_load(instance_yaml("sqlite", MeshSettings(engine={"max_runs": limit})))
        config["run_launcher"] = {"module": "dagster._core.test_utils", "class": "MockedRunLauncher"}
        home.mkdir()
        (home / "dagster.yaml").write_text(yaml.safe_dump(config))
        self.instance = dg.DagsterInstance.from_config(str(home))
        origin = InProcessCodeLocationOrigin(
            LoadableTargetOrigin(python_file=str(LOCATION), attribute="defs"), location_name="fresh"
        )
        self.context = WorkspaceProcessContext(self.instance, InProcessTestWorkspaceLoadTarget(origin))

    def submit(self, key: dg.AssetKey, day: str) -> str:
        """A run of ``key``'s ``day``, submitted as the UI's *Materialize* submits one: no Mesh tag."""
        request = self.context.create_request_context()
        location = request.get_code_location("fresh")
        [repo] = location.get_repositories().values()
        selector = JobSubsetSelector(
            location_name="fresh",
            repository_name=repo.name,
            job_name="__ASSET_JOB",
            op_selection=None,
            asset_selection={key},
            asset_check_selection=set(),
        )
        job = location.get_job(selector)  # the asset alone, as the UI's selection: its step and its pool
        plan = location.get_execution_plan(job, {}, step_keys_to_execute=None, known_state=None)
        run = self.instance.create_run(
            job_name=job.name,
            run_id=None,
            run_config={},
            resolved_op_selection=None,
            step_keys_to_execute=None,
            op_selection=None,
            status=None,
            root_run_id=None,
            parent_run_id=None,
            tags={"dagster/partition": day},
            job_snapshot=job.job_snapshot,
            execution_plan_snapshot=plan.execution_plan_snapshot,
            parent_job_snapshot=job.parent_job_snapshot,
            remote_job_origin=job.get_remote_origin(),
            job_code_origin=job.get_python_origin(),
            asset_selection=frozenset({key}),
            asset_check_selection=None,
            asset_graph=repo.asset_graph,
        )
        self.instance.submit_run(run.run_id, request)
        return run.run_id

    def dequeue(self) -> None:
        """One pass of the queue, as ``dagster-daemon`` makes every few seconds."""
        list(QueuedRunCoordinatorDaemon(interval_seconds=1).run_iteration(self.context))

    def status(self, run_id: str) -> dg.DagsterRunStatus:
        run = self.instance.get_run_by_id(run_id)
        assert run is not None
        return run.status

    def end(self, run_id: str) -> None:
        """The run's worker reports it succeeded."""
        run = self.instance.get_run_by_id(run_id)
        assert run is not None
        event = dg.DagsterEvent(event_type_value=dg.DagsterEventType.RUN_SUCCESS.value, job_name=run.job_name)
        self.instance.report_dagster_event(event, run_id=run_id)


@pytest.fixture
def queue(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Queue]:
    made = Queue(tmp_path / "dagster", request.param)
    yield made
    made.context.__exit__(None, None, None)
    made.instance.dispose()


@pytest.mark.parametrize("queue", [1], indirect=True)
def test_with_an_engine_limit_of_one_a_second_run_waits_queued_until_the_first_ends(queue: Queue):
    first = queue.submit(STRICT, "2021-06-01")
    second = queue.submit(NAMED, "2021-06-01")  # another table: only the engine's limit holds it
    assert (queue.status(first), queue.status(second)) == (QUEUED, QUEUED)

    queue.dequeue()
    assert (queue.status(first), queue.status(second)) == (STARTING, QUEUED)
    queue.dequeue()
    assert queue.status(second) == QUEUED  # still waiting, not failed

    queue.end(first)
    queue.dequeue()
    assert (queue.status(first), queue.status(second)) == (dg.DagsterRunStatus.SUCCESS, STARTING)


@pytest.mark.parametrize("queue", [2], indirect=True)
def test_a_run_of_a_table_another_run_writes_waits_for_its_pool_and_another_tables_run_starts(queue: Queue):
    first = queue.submit(STRICT, "2021-06-01")
    queue.dequeue()
    assert queue.status(first) == STARTING

    same_table = queue.submit(STRICT, "2021-06-02")
    other_table = queue.submit(NAMED, "2021-06-01")
    queue.dequeue()
    assert (queue.status(same_table), queue.status(other_table)) == (QUEUED, STARTING)

    queue.end(first)
    queue.end(other_table)
    queue.dequeue()
    assert queue.status(same_table) == STARTING
