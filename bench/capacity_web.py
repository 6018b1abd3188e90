"""Capacity of the webserver and the daemon: an asset's partitions page at 10^3 to 10^5 hourly partitions, and
the runs the daemon's queue launches a minute; each for a Mesh location against the same plain Dagster one.

Both run the real processes on a throwaway Postgres instance (tests/services/postgres.py) as ``mesh setup
--instance postgres`` writes it: each location a code server of its own (``dagster api grpc``, as
docs/deployment.md deploys a domain), shared by ``dagster-webserver`` and ``dagster-daemon``, all on 127.0.0.1
and stopped afterwards.

Partition page: one hourly product (a Mesh SQL product with its checks, reading the domain's hourly external
table) and a plain ``@dg.asset`` with the same ``HourlyPartitionsDefinition``, each with about 1,000, 26,280
(three years) and 100,000 hours, 95 % of them materialized (ten hours missing in every 200, the last two not
yet run: gaps as a real history has them). The reports are copied in SQL from one the instance API wrote, then
one more reported through the API so Dagster's status cache sees them all. The webserver is asked what the
UI's asset partitions page asks (its queries copied from dagster-webserver's bundle): ``PartitionHealthQuery``
(every partition key and the status ranges), ``AssetPartitionDetailQuery`` (the selected partition's events
and latest run) and ``AssetPartitionStaleQuery``; the first answer is kept apart (it builds the status
cache), then the median of 5. The webserver's resident memory is read after the queries.

Run launch: ``N`` runs of a trivial asset submitted through the webserver's ``launchRun`` (as the UI does) to
the queue (``QueuedRunCoordinator``, ``DefaultRunLauncher``, at most :data:`MAX_RUNS` at once), launched by
``dagster-daemon``; the rate is the runs finished a minute from the first submission to the last run's end.
The Mesh asset is a plain asset in a domain of 67 SQL products (the target deployment's domain), so each run's
worker loads that location as a product's run does, without Spark; the baseline is the same asset alone in
a plain Dagster location. Run alone: ``python -m bench.capacity_web --hours 1000 --runs 20``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg

from bench.common import ROOT, Result, print_results
from bench.definitions_load import LOCATION_FILE, write_mesh

sys.path[:0] = [str(ROOT / "tests" / "services"), str(ROOT / "tests")]

HOURS = (1_000, 26_280, 100_000)
RUNS = (8, 24)
MAX_RUNS = 8
"""The queue's ``max_concurrent_runs`` for the launch rate (Mesh writes ``engine.max_runs``, 2 by default)."""
DOMAIN_PRODUCTS = 67
MISSING_EVERY, MISSING = 200, 10
REPEAT = 5
BIN = Path(sys.executable).parent

PARTITION_HEALTH = """
query PartitionHealthQuery($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      id
      partitionKeysByDimension { name type partitionKeys }
      assetPartitionStatuses {
        ... on TimePartitionStatuses { ranges { status startTime endTime startKey endKey } }
        ... on DefaultPartitionStatuses { materializedPartitions materializingPartitions failedPartitions }
        ... on MultiPartitionStatuses {
          primaryDimensionName
          ranges { primaryDimStartKey primaryDimEndKey primaryDimStartTime primaryDimEndTime }
        }
      }
    }
  }
}"""
PARTITION_DETAIL = """
query AssetPartitionDetailQuery($assetKey: AssetKeyInput!, $partitionKey: String!) {
  assetOrError(assetKey: $assetKey) {
    ... on Asset {
      id
      definition { id opNames latestRunForPartition(partition: $partitionKey) { id status endTime } }
      assetEventHistory(partitions: [$partitionKey], limit: 1000,
                        eventTypeSelectors: [MATERIALIZATION, OBSERVATION, FAILED_TO_MATERIALIZE]) {
        results {
          ... on MaterializationEvent { runId timestamp partition metadataEntries { __typename label } }
          ... on ObservationEvent { runId timestamp partition }
          ... on FailedToMaterializeEvent { runId timestamp partition }
        }
      }
    }
  }
}"""
PARTITION_STALE = """
query AssetPartitionStaleQuery($assetKey: AssetKeyInput!, $partitionKey: String!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      id
      staleStatus(partition: $partitionKey)
      staleCauses(partition: $partitionKey) { key { path } reason category dependency { path } }
    }
  }
}"""
LAUNCH = """
mutation LaunchRun($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on InvalidStepError { invalidStepKey }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""

PLAIN_HOURLY = """import dagster as dg

hourly = dg.HourlyPartitionsDefinition(start_date="{start}-00:00")


@dg.asset(key=["plain", "t"], partitions_def=hourly)
def t() -> dg.MaterializeResult:
    return dg.MaterializeResult()


defs = dg.Definitions(assets=[t])
"""
NOOP = """import dagster as dg


@dg.asset(key={key!r})
def noop() -> dg.MaterializeResult:
    return dg.MaterializeResult()
"""
PLAIN_NOOP = NOOP + "\n\ndefs = dg.Definitions(assets=[noop])\n"


def missing(index: int, count: int) -> bool:
    """Whether the ``index``-th of ``count`` hours is left unmaterialized: ten hours in every 200 (an outage, a
    failed day) and the last two (not yet run)."""
    return index % MISSING_EVERY >= MISSING_EVERY - MISSING or index >= count - 2


def runs_per_minute(submitted: float, ends: list[float]) -> float:
    """Runs finished a minute, from the first submission to the last run's end."""
    return 60 * len(ends) / (max(ends) - submitted)


def _write_hourly(base: Path, hours: int) -> tuple[Path, Path, str]:
    """(Mesh location file, plain location file, start date) for an hourly table of at least ``hours`` hours."""
    start = (datetime.now(UTC) - timedelta(hours=hours)).date()
    folder = base / "domains" / "web"
    folder.mkdir(parents=True)
    (folder / "definitions.py").write_text(LOCATION_FILE)
    contact = "contacts: [{kind: chat, value: '#web'}]"
    (folder / "raw.yaml").write_text(
        f"name: raw\nowner: web@example.com\n{contact}\nstart_date: {start}\n"
        "external:\n  - {table: raw, partitioning: hourly}\n"
    )
    (folder / "t.yaml").write_text(
        f"name: t\nowner: web@example.com\n{contact}\nstart_date: {start}\ntables:\n  - table: t\n"
        "    partitioning: hourly\n    inputs: [{table: web.raw}]\n    sql: SELECT id, amount FROM web.raw\n"
        "    checks:\n      - {kind: not_null, columns: [id]}\n      - {kind: unique, keys: [id]}\n"
    )
    plain = base / "plain" / "definitions.py"
    plain.parent.mkdir(parents=True)
    plain.write_text(PLAIN_HOURLY.format(start=start))
    return folder / "definitions.py", plain, str(start)


def _materialize(instance: dg.DagsterInstance, cursor, key: dg.AssetKey, keys: list[str]) -> int:
    """Report 95 % of ``keys`` materialized (runless, the body copied in SQL); how many were."""
    chosen = [k for i, k in enumerate(keys) if not missing(i, len(keys))]
    template, last = chosen[0], chosen[-1]
    metadata = {"dagster/row_count": 1000, "delta_version": 7, "table_uri": "s3a://warehouse/web/t"}
    instance.report_runless_asset_event(dg.AssetMaterialization(key, partition=template, metadata=metadata))
    cursor.execute(
        """
        INSERT INTO event_logs (run_id, event, dagster_event_type, timestamp, step_key, asset_key, partition)
        SELECT t.run_id, replace(t.event, %(template)s, k), t.dagster_event_type, t.timestamp, t.step_key,
               t.asset_key, k
        FROM (SELECT * FROM event_logs WHERE asset_key = %(key)s AND partition = %(template)s LIMIT 1) t,
             unnest(%(keys)s::text[]) k
        """,
        {"template": template, "key": key.to_string(), "keys": chosen[1:-1]},
    )
    # the last through the API: the asset's record then points past every copied row, as after real runs
    instance.report_runless_asset_event(dg.AssetMaterialization(key, partition=last, metadata=metadata))
    cursor.execute("ANALYZE event_logs")
    return len(chosen)


def _rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024


@contextmanager
def _services(base: Path, locations: dict[str, Path], env: dict[str, str], daemon: bool) -> Iterator[tuple]:
    """Each location's code server, the webserver over them (and the daemon): (Webserver, webserver's pid)."""
    import processes
    from webserver import code_server, grpc_workspace, loaded

    from mesh_assets.backfill import Webserver

    with ExitStack() as stack:
        sockets = {
            name: stack.enter_context(code_server(name, file, file.parent, env, base / f"{name}.log", timeout=600))
            for name, file in locations.items()
        }
        workspace = grpc_workspace(base / "workspace.yaml", sockets)
        port = processes.free_port()
        command = [str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port), "-w", str(workspace)]
        web = processes.start(command, base / "webserver.log", env)
        stack.callback(processes.stop, web)
        if daemon:
            started = processes.start(
                [str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], base / "daemon.log", env
            )
            stack.callback(processes.stop, started)
        server = Webserver(f"http://127.0.0.1:{port}", timeout=600)
        deadline = time.monotonic() + 600
        while not loaded(Webserver(server.url, timeout=10), len(locations)):
            if web.poll() is not None or time.monotonic() > deadline:
                log = processes.tail(base / "webserver.log")
                raise RuntimeError(f"the webserver did not load its locations:\n{log}")
            time.sleep(0.5)
        yield server, web.pid


def _page(server, key: list[str], partition: str) -> dict[str, float]:
    """Cold and warm (median) seconds of each of the page's queries, and the number of partition keys."""
    asked = {"assetKey": {"path": key}}
    queries = {
        "health": (PARTITION_HEALTH, asked),
        "detail": (PARTITION_DETAIL, {**asked, "partitionKey": partition}),
        "stale": (PARTITION_STALE, {**asked, "partitionKey": partition}),
    }
    out: dict[str, float] = {}
    for name, (query, variables) in queries.items():
        times = []
        for _ in range(REPEAT + 1):
            start = time.perf_counter()
            data = server.graphql(query, variables)
            times.append(time.perf_counter() - start)
        node = data.get("assetNodeOrError") or data.get("assetOrError")
        if "id" not in node:
            raise RuntimeError(f"{key}: the webserver answered {data}")
        if name == "health":
            out["keys"] = len(node["partitionKeysByDimension"][0]["partitionKeys"])
            out["ranges"] = len(node["assetPartitionStatuses"]["ranges"])
        out[f"{name} cold"] = times[0]
        out[name] = statistics.median(times[1:])
    return out


def _partition_pages(server_env: dict[str, str], instance_home: Path, hours: int) -> dict[str, dict[str, float]]:
    from mesh_assets.settings import scoped_environ

    with tempfile.TemporaryDirectory(prefix="mesh-bench-web-") as tmp:
        base = Path(tmp)
        mesh_file, plain_file, _ = _write_hourly(base, hours)
        env = {**os.environ, **server_env, "DAGSTER_HOME": str(instance_home), "MESH_HOME": str(base / "home")}
        env["MESH_DBT_PROJECT_DIR"] = str(base)
        with _services(base, {"web": mesh_file, "plain": plain_file}, env, daemon=False) as (server, pid):
            out = {}
            with scoped_environ(server_env):
                instance = dg.DagsterInstance.from_config(str(instance_home))
            for name, key in (("mesh", ["web", "t"]), ("plain", ["plain", "t"])):
                data = server.graphql(PARTITION_HEALTH, {"assetKey": {"path": key}})
                keys = data["assetNodeOrError"]["partitionKeysByDimension"][0]["partitionKeys"]
                with _cursor(server_env) as cursor:
                    done = _materialize(instance, cursor, dg.AssetKey(key), keys)
                out[name] = {**_page(server, key, keys[-3]), "materialized": done}
            instance.dispose()
            out["rss"] = {"webserver MiB": _rss_mib(pid)}
            return out


@contextmanager
def _cursor(server_env: dict[str, str]):
    import psycopg2

    connection = psycopg2.connect(
        host=server_env["DAGSTER_PG_HOST"],
        port=int(server_env["DAGSTER_PG_PORT"]),
        user=server_env["DAGSTER_PG_USER"],
        password=server_env["DAGSTER_PG_PASSWORD"],
        dbname=server_env["DAGSTER_PG_DB"],
    )
    connection.autocommit = True
    try:
        yield connection.cursor()
    finally:
        connection.close()


def _launch_rate(server_env: dict[str, str], instance_home: Path, counts: tuple[int, ...]) -> dict:
    """For each location and each count: (runs a minute, median seconds from a run's start to its end)."""
    from mesh_assets.settings import scoped_environ

    out: dict[tuple[str, int], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="mesh-bench-launch-") as tmp:
        base = Path(tmp)
        write_mesh(base / "domains", DOMAIN_PRODUCTS, per_domain=DOMAIN_PRODUCTS)
        (base / "domains" / "d00" / "noop.py").write_text(NOOP.format(key=["d00", "noop"]))
        plain = base / "plain" / "definitions.py"
        plain.parent.mkdir(parents=True)
        plain.write_text(PLAIN_NOOP.format(key=["plain", "noop"]))
        env = {**os.environ, **server_env, "DAGSTER_HOME": str(instance_home), "MESH_HOME": str(base / "home")}
        env["MESH_DBT_PROJECT_DIR"] = str(base)
        locations = {"d00": base / "domains" / "d00" / "definitions.py", "plain": plain}
        with _services(base, locations, env, daemon=True) as (server, _):
            with scoped_environ(server_env):
                instance = dg.DagsterInstance.from_config(str(instance_home))
            pairs = (("plain", ["plain", "noop"]), ("d00", ["d00", "noop"]))
            for location, key in pairs:  # not measured: the daemon's and each code server's first launch
                _queue(server, instance, location, key, 1)
            for count in counts:
                for location, key in pairs if count % 2 else reversed(pairs):
                    out[(location, count)] = _queue(server, instance, location, key, count)
            instance.dispose()
    return out


def _queue(server, instance: dg.DagsterInstance, location: str, key: list[str], count: int) -> tuple[float, float]:
    params = {
        "selector": {
            "repositoryLocationName": location,
            "repositoryName": "__repository__",
            "jobName": "__ASSET_JOB",
            "assetSelection": [{"path": key}],
        },
        "runConfigData": {},
    }
    submitted = time.time()
    ids = []
    for _ in range(count):
        answer = server.graphql(LAUNCH, {"params": params})["launchRun"]
        if answer["__typename"] != "LaunchRunSuccess":
            raise RuntimeError(f"{location}: launchRun answered {answer}")
        ids.append(answer["run"]["runId"])
    if count > 1:
        print(f"{location}: {count} runs submitted in {time.time() - submitted:.1f} s", flush=True)
    deadline = time.monotonic() + 3600
    while True:
        records = instance.get_run_records(dg.RunsFilter(run_ids=ids))
        if all(r.dagster_run.is_finished for r in records) and len(records) == count:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{location}: {count} runs did not finish within an hour")
        time.sleep(1)
    failed = [r.dagster_run.run_id for r in records if r.dagster_run.status != dg.DagsterRunStatus.SUCCESS]
    if failed:
        raise RuntimeError(f"{location}: {len(failed)} of {count} runs did not succeed, e.g. {failed[0]}")
    ends = [r.end_time for r in records]
    launched = {
        e.run_id: e.timestamp
        for run_id in ids
        for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_STARTING)
    }
    worker = statistics.median(r.end_time - launched[r.dagster_run.run_id] for r in records)
    return runs_per_minute(submitted, ends), worker


def _instance_home(server_env: dict[str, str]) -> Path:
    from mesh_assets.cli.commands import CONCURRENCY, INSTANCE_COMMON, INSTANCE_STORAGE

    home = Path(tempfile.mkdtemp(prefix="mesh-bench-instance-"))
    concurrency = CONCURRENCY.format(max_runs=MAX_RUNS)
    (home / "dagster.yaml").write_text(INSTANCE_STORAGE["postgres"] + concurrency + INSTANCE_COMMON)
    return home


def run(hours: tuple[int, ...] = HOURS, runs: tuple[int, ...] = RUNS) -> list[Result]:
    warnings.filterwarnings("ignore")
    from postgres import start_postgres, stop_postgres

    results: list[Result] = []
    server = start_postgres()
    home = _instance_home(server.env)
    try:
        first: dict[str, float] = {}
        for size in hours:
            page = _partition_pages(server.env, home, size)
            mesh, plain, rss = page["mesh"], page["plain"], page["rss"]["webserver MiB"]
            count = f"{int(mesh['keys']):,} hourly partitions ({int(mesh['materialized']):,} materialized, "
            count += f"{int(mesh['ranges'])} status ranges)"
            for name, label in (
                ("health", "PartitionHealthQuery (every partition key and status range)"),
                ("detail", "AssetPartitionDetailQuery (one partition's events, latest run)"),
                ("stale", "AssetPartitionStaleQuery (one partition's staleness)"),
            ):
                first.setdefault(name, mesh[name])
                results.append(
                    Result(
                        "capacity web",
                        f"partitions page, {label}, {count}, warm",
                        mesh[name],
                        "the same plain Dagster asset, same run",
                        plain[name],
                        notes=f"first answer {mesh[name + ' cold']:.3f} s, plain {plain[name + ' cold']:.3f} s; "
                        f"the Mesh figure is {mesh[name] / first[name]:.1f}x its figure at {hours[0]:,} hours; "
                        f"webserver RSS {rss:,.0f} MiB after both pages",
                        extra={"keys": mesh["keys"], "rss MiB": rss, "cold": mesh[name + " cold"]},
                    )
                )
        rates = _launch_rate(server.env, home, runs)
        for count in runs:
            mesh_rate, mesh_worker = rates[("d00", count)]
            plain_rate, plain_worker = rates[("plain", count)]
            results.append(
                Result(
                    "capacity web",
                    f"daemon: {count} queued runs launched by the run queue ({MAX_RUNS} at once), a trivial asset "
                    f"in a domain of {DOMAIN_PRODUCTS} products (runs a minute as seconds; a run took "
                    f"{mesh_worker:.1f} s from its launch to its end, plain {plain_worker:.1f} s)",
                    mesh_rate,
                    "the same asset in a plain Dagster location (runs a minute)",
                    plain_rate,
                    extra={"runs per minute": mesh_rate, "worker seconds": mesh_worker},
                )
            )
    finally:
        stop_postgres(server)
        shutil.rmtree(home, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hours", type=int, nargs="*", default=list(HOURS))
    parser.add_argument("--runs", type=int, nargs="*", default=list(RUNS))
    args = parser.parse_args()
    print_results(run(tuple(args.hours), tuple(args.runs)))


if __name__ == "__main__":
    main()
