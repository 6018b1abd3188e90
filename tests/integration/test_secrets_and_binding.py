"""A Mesh process serves nobody but its own machine, and its secrets stay in the environment.

One process of its own (real Spark with its web UI on, a persistent instance) materializes a product twice:
a good day, then a day that fails a blocking check and alerts the domain's webhook. The webhook URL holds a
canary; afterwards no file of the instance (event logs, runs with their config and tags, compute logs), of
Mesh's home (lineage, Spark's files) and nothing the process printed (Dagster's and Spark's logs) contains it,
and every socket the process and its JVM listen on is on the loopback.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from http.server import HTTPServer
from pathlib import Path

import dagster as dg
import pytest
from receiver import json_receiver

from mesh_assets.cli.commands import instance_yaml
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.tables import TableRegistry
from mesh_assets.storage.writer import replace_predicate

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "reliability"
CANARY = f"canary-{uuid.uuid4().hex}"
GOOD, BAD = "2021-06-03", "2021-06-04"


@dataclass
class MeshProcess:
    home: Path
    instance_dir: Path
    output: str
    exit_code: int
    sockets: list[str]
    alerts: list[dict]


def receiver() -> tuple[HTTPServer, list[dict]]:
    received: list[dict] = []
    server = json_receiver(lambda _path, body: received.append(body))
    return server, received


@pytest.fixture(scope="module")
def mesh_process(spark, tmp_path_factory) -> Iterator[MeshProcess]:
    base = tmp_path_factory.mktemp("secrets")
    warehouse, home, instance_dir = base / "warehouse", base / "home", base / "dagster"
    instance_dir.mkdir()
    (instance_dir / "dagster.yaml").write_text(instance_yaml("sqlite"))
    registry = TableRegistry(str(warehouse))
    for day, ids in ((GOOD, [1, 2, 3]), (BAD, [1, None, 3])):
        rows = [(i, "p", date.fromisoformat(day)) for i in ids]
        rng = PartitionRange.from_keys(Grain.DAILY, day, day)
        spark.createDataFrame(rows, "id bigint, payload string, p_date date").write.format("delta").mode(
            "overwrite"
        ).partitionBy("p_date").option("replaceWhere", replace_predicate("p_date", rng)).save(
            registry.location("rel", "raw_events")
        )
    server, alerts = receiver()
    env = {
        **os.environ,
        "MESH_HOME": str(home),
        "MESH_WAREHOUSE": str(warehouse),
        "MESH_PROJECT_ROOT": str(ROOT),
        "DAGSTER_HOME": str(instance_dir),
        "MESH_TEST_INSTANCE": str(instance_dir),
        "MESH_TEST_SOCKETS": str(base / "sockets.json"),
        "MESH_SPARK__UI_ENABLED": "true",
        "MESH_ALERT_WEBHOOK_REL": f"http://127.0.0.1:{server.server_port}/hook?token={CANARY}",
    }
    env.pop("SPARK_LOCAL_IP", None)
    try:
        done = subprocess.run(
            [sys.executable, str(FIXTURE / "materialize.py"), "rel/checked_events", GOOD, BAD],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        server.shutdown()
    sockets = json.loads((base / "sockets.json").read_text()) if (base / "sockets.json").exists() else []
    yield MeshProcess(home, instance_dir, done.stdout + done.stderr, done.returncode, sockets, alerts)


def test_the_failing_day_alerted_through_the_secret_webhook(mesh_process):
    assert mesh_process.exit_code == 1, mesh_process.output[-3000:]
    [alert] = mesh_process.alerts
    assert alert["mesh"]["partitions"] == [BAD] and alert["mesh"]["checks"] == ["not_null_id"]


def test_every_server_of_a_mesh_process_listens_on_the_loopback_only(mesh_process):
    assert mesh_process.sockets, mesh_process.output[-3000:]
    ports = {int(s.rsplit(":", 1)[1]) for s in mesh_process.sockets}
    assert 4040 in ports or any(4040 < p < 4100 for p in ports)  # the Spark UI is among them
    for address in mesh_process.sockets:
        host = ipaddress.ip_address(address.rsplit(":", 1)[0])
        host = host.ipv4_mapped or host if isinstance(host, ipaddress.IPv6Address) else host
        assert host.is_loopback, f"{address} is reachable from other machines"


def files_containing(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_secrets_appear_in_no_log_run_or_file(mesh_process):
    assert mesh_process.exit_code == 1, mesh_process.output[-3000:]
    with dg.DagsterInstance.from_config(str(mesh_process.instance_dir)) as instance:
        runs = instance.get_runs()
        assert len(runs) == 2
        for run in runs:
            assert CANARY not in json.dumps([run.run_config, run.tags], default=str)
            events = [e.message or "" for e in instance.all_logs(run.run_id)]
            assert events and CANARY not in "\n".join(events)
            assert CANARY not in json.dumps([repr(e) for e in instance.all_logs(run.run_id)])
    assert (mesh_process.home / "lineage").is_dir()
    assert files_containing(mesh_process.instance_dir, CANARY.encode()) == []  # run storage, event logs, compute logs
    assert files_containing(mesh_process.home, CANARY.encode()) == []  # lineage, Spark's files
    assert "Started execution of step" in mesh_process.output and CANARY not in mesh_process.output
