"""One deployment as under ``make dev`` for the test files that need Dagster's daemon over real code servers.

A webserver, a ``dagster-daemon`` (its loops every second, ``quick_daemon``) and one code server per location
over one throwaway Mesh home and instance, started once for the session: starting them costs a minute or more
on a loaded machine, so ``tests/integration/test_backfill_daemon.py``, ``test_kind_deployment.py`` and
``test_daemon_end_to_end.py`` share it (one worker runs the three, ``SHARING_SESSION_FIXTURES``).

Automation is off (``automation.enabled: false``), so the only runs are those a test launches: the sensors
exist, stopped, and a test that wants the daemon's automation starts the sensors of its own domains, as an
operator does in the UI, and stops them when done. Each location's domains are its own; they share the
warehouse under the Mesh home, each in its own tables.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from quick_daemon import COMMAND as DAEMON
from receiver import json_receiver
from services import processes
from webserver import BIN, accepts, dagster_webserver, grpc_workspace

from mesh_assets.backfill import Webserver

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
LOCATIONS = {
    "food_delivery": ROOT / "domains" / "food_delivery" / "definitions.py",
    "km": FIXTURES / "kinds_merge" / "domains" / "km" / "definitions.py",
    "hist": FIXTURES / "history" / "domains" / "hist" / "definitions.py",
    "feeds": FIXTURES / "daemon" / "domains" / "feeds" / "definitions.py",
    "sales": FIXTURES / "daemon" / "domains" / "sales" / "definitions.py",
}
ALERTED = ("feeds", "sales")
"""The domains whose chat webhook is the deployment's receiver (:attr:`Deployment.alerts`)."""
REPOSITORY = "__repository__"
"""The repository name of a code location built from ``dg.Definitions``."""
SENSOR = """mutation($selector: SensorSelector!) { %s(sensorSelector: $selector) {
  __typename ... on Sensor { sensorState { status } } ... on PythonError { message } } }"""


@dataclass
class Deployment:
    """The services' environment (the CLI's, with ``MESH_DAGSTER__URL``), and what the alert receiver got."""

    env: dict[str, str]
    alerts: list[dict] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return Path(self.env["MESH_HOME"])

    @property
    def dagster_home(self) -> str:
        return self.env["DAGSTER_HOME"]

    @property
    def warehouse(self) -> Path:
        return self.home / "warehouse"

    @property
    def gate(self) -> Path:
        """``MESH_TEST_GATE`` of every run worker: the folder a held transformation waits on."""
        return Path(self.env["MESH_TEST_GATE"])

    @property
    def webserver(self) -> Webserver:
        return Webserver(self.env["MESH_DAGSTER__URL"], timeout=120)

    def switch(self, location: str, sensor: str, on: bool) -> None:
        """Start or stop a sensor through the webserver, as its toggle in the UI does."""
        mutation = "startSensor" if on else "stopSensor"
        selector = {"repositoryLocationName": location, "repositoryName": REPOSITORY, "sensorName": sensor}
        if on:
            result = self.webserver.graphql(SENSOR % mutation, {"selector": selector})[mutation]
            assert result["__typename"] == "Sensor", result
            return
        stop = """mutation($id: String!) { stopSensor(id: $id) { __typename } }"""
        query = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) {
          ... on Sensor { sensorState { id } } } }"""
        state = self.webserver.graphql(query, {"selector": selector})["sensorOrError"]["sensorState"]
        self.webserver.graphql(stop, {"id": state["id"]})

    def ticked(self, location: str, sensor: str, since: float) -> bool:
        """Whether the sensor finished a tick that started at ``since`` (a Unix time) or later. An automation
        sensor's first tick only records where it starts from (Dagster's ``newly_updated`` is empty on a first
        evaluation), so what lands before that tick never triggers a run: a test lands its data after it."""
        selector = {"repositoryLocationName": location, "repositoryName": REPOSITORY, "sensorName": sensor}
        query = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) {
          ... on Sensor { sensorState { ticks(limit: 1) { status timestamp } } } } }"""
        state = self.webserver.graphql(query, {"selector": selector})["sensorOrError"]["sensorState"]
        return any(t["status"] != "STARTED" and t["timestamp"] >= since for t in state["ticks"])


def quicker_monitoring(config: Path) -> None:
    """The instance ``mesh setup`` wrote, its run monitoring every 2 s rather than 30 and a dead run's pool slots
    freed after 1 s rather than 30, so a killed run's retry starts in seconds; kept by the CLI's later commands
    (the marker line of a file Mesh wrote is dropped, as an operator who edits it does)."""
    settings = yaml.safe_load(config.read_text())
    settings["run_monitoring"] |= {"poll_interval_seconds": 2, "free_slots_after_run_end_seconds": 1}
    config.write_text(yaml.safe_dump(settings, sort_keys=False))


def code_servers(base: Path, env: dict[str, str], stack: ExitStack, timeout: float = 600) -> dict[str, Path]:
    """One code server per location, started together so that the locations load at once, each stopped by
    ``stack``; their sockets once every one serves."""
    sockets, started = {}, {}
    for name, definitions in LOCATIONS.items():
        sockets[name] = base / f"{name}.sock"
        command = [str(BIN / "dagster"), "api", "grpc", "--socket", str(sockets[name]), "--location-name", name]
        command += ["--python-file", str(definitions), "--working-directory", str(ROOT)]
        started[name] = processes.start(command, base / f"{name}-code-server.log", env)
        stack.callback(processes.stop, started[name])
    deadline = time.monotonic() + timeout
    while not all(accepts(path) for path in sockets.values()):
        for name, process in started.items():
            if process.poll() is not None:
                log = processes.tail(base / f"{name}-code-server.log")
                raise RuntimeError(f"the code server of {name} exited with {process.returncode}:\n{log}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the code servers did not all serve in {timeout:.0f}s; logs in {base}")
        time.sleep(0.25)
    return sockets


@contextmanager
def deployment(base: Path) -> Iterator[Deployment]:
    """Set up the instance under ``base``, start every service, and stop them all afterwards."""
    (base / "dagster").mkdir(parents=True)
    (base / "gate").mkdir()
    received: list[dict] = []
    receiver = json_receiver(lambda _path, body: received.append(body))
    hook = f"http://127.0.0.1:{receiver.server_port}/hook"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("MESH_", "DAGSTER_"))},
        "MESH_HOME": str(base),
        "DAGSTER_HOME": str(base / "dagster"),
        "MESH_PROJECT_ROOT": str(ROOT),
        "MESH_SPARK__JIT": os.environ.get("MESH_SPARK__JIT", "quick"),
        "MESH_AUTOMATION__ENABLED": "false",  # only what the tests launch or switch on runs
        "MESH_AUTOMATION__INTERVAL_SECONDS": "5",
        "MESH_AUTOMATION__OBSERVER_INTERVAL_SECONDS": "5",
        "MESH_TEST_GATE": str(base / "gate"),
        **{f"MESH_ALERT_WEBHOOK_{domain.upper()}": hook for domain in ALERTED},
    }
    subprocess.run([BIN / "mesh", "setup"], env=env, check=True, capture_output=True, cwd=ROOT)
    quicker_monitoring(base / "dagster" / "dagster.yaml")
    try:
        with ExitStack() as stack:
            sockets = code_servers(base, env, stack)
            workspace_yaml = grpc_workspace(base / "workspace.yaml", sockets)
            daemon = processes.start([*DAEMON, "run", "-w", workspace_yaml], base / "daemon.log", env)
            stack.callback(processes.stop, daemon)
            url = stack.enter_context(dagster_webserver(workspace_yaml, env, base / "webserver.log"))
            yield Deployment({**env, "MESH_DAGSTER__URL": url}, received)
    finally:
        receiver.shutdown()
