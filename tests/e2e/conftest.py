"""Dagster's webserver and daemon over a throwaway instance, and headless Chromium to drive the UI.

As under ``make dev`` (``dagster dev``), the webserver and the daemon share one code server per entry
of ``workspace.yaml``; here the code servers start together, so the five domains load in parallel.
Every service runs as its own process group (run workers and their Spark JVMs included) and is stopped
by signalling the whole group, so nothing outlives the test module.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import pytest
import yaml
from quick_daemon import COMMAND as DAEMON
from webserver import accepts

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
VIEWPORT = {"width": 1440, "height": 900}
UI_PREFERENCES = """
localStorage.setItem('communityNux', JSON.stringify('1'));
localStorage.setItem('DAGSTER_FLAGS', JSON.stringify({flagAssetGraphGroupsPerCodeLocation: true}));
"""
"""Dismiss the community sign-up dialog; show asset groups per code location (a User setting in the UI)."""
LOCATIONS_QUERY = """{ workspaceOrError { ... on Workspace { locationEntries {
  name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""
SCREENSHOTS = pytest.StashKey[Path]()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_groups(processes: list[subprocess.Popen], grace: float = 10.0) -> None:
    """SIGTERM each process group, give them ``grace`` seconds together, then SIGKILL what is left."""
    for proc in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    for proc in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # run workers and JVMs a leader left behind
        proc.wait()


@dataclass
class DagsterServices:
    """``make dev`` in miniature: code servers for ``workspace.yaml``, a webserver and a daemon, one instance."""

    base: Path
    url: str
    env: dict[str, str]
    sockets: dict[str, Path]
    instance: dg.DagsterInstance
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def mesh_home(self) -> Path:
        return Path(self.env["MESH_HOME"])

    @property
    def dagster_home(self) -> Path:
        return Path(self.env["DAGSTER_HOME"])

    @property
    def warehouse(self) -> Path:
        return self.mesh_home / "warehouse"

    @property
    def logs(self) -> Path:
        return self.base / "logs"

    def spawn(self, name: str, command: list[str]) -> None:
        with open(self.logs / f"{name}.log", "wb") as log:
            self.processes[name] = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def start_code_servers(self) -> None:
        workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text())
        for entry in workspace["load_from"]:
            target = entry["python_file"]
            name = target["location_name"]
            command = ["dagster", "api", "grpc", "--socket", str(self.sockets[name]), "--location-name", name]
            command += ["--python-file", target["relative_path"], "--working-directory", str(ROOT)]
            self.spawn(f"code-server-{name}", [str(BIN / command[0]), *command[1:]])

    def start(self, timeout: float) -> None:
        """Once every code server serves its location, start the webserver and the daemon and wait for both."""
        self.wait(lambda: all(accepts(s) for s in self.sockets.values()), timeout, "code servers")
        grpc = [{"grpc_server": {"socket": str(s), "location_name": n}} for n, s in self.sockets.items()]
        workspace = self.base / "workspace.yaml"
        workspace.write_text(yaml.safe_dump({"load_from": grpc}))
        port = self.url.rsplit(":", 1)[1]
        self.spawn("webserver", [str(BIN / "dagster-webserver"), "-w", str(workspace), "-h", "127.0.0.1", "-p", port])
        self.spawn("daemon", [*DAEMON, "run", "-w", str(workspace)])
        self.wait(self.locations_loaded, timeout, "webserver")

    def wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            self.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not ready after {timeout:.0f}s; logs in {self.logs}")
            time.sleep(0.25)

    def locations_loaded(self) -> bool:
        """True when the webserver has loaded every location; a location that failed to load fails the test."""
        try:
            entries = self.graphql(LOCATIONS_QUERY)["workspaceOrError"]["locationEntries"]
        except OSError:
            return False
        if len(entries) != len(self.sockets) or any(e["loadStatus"] != "LOADED" for e in entries):
            return False
        errors = [
            f"{e['name']}: {e['locationOrLoadError']['message']}"
            for e in entries
            if "message" in e["locationOrLoadError"]
        ]
        assert not errors, errors
        return True

    def check_alive(self) -> None:
        for name, proc in self.processes.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.logs / name}.log")

    def graphql(self, query: str) -> dict:
        request = urllib.request.Request(
            f"{self.url}/graphql", json.dumps({"query": query}).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)["data"]

    def stop(self) -> None:
        stop_groups(list(self.processes.values()))


def service_env(mesh_home: Path, dagster_home: Path, url: str) -> dict[str, str]:
    """The services' environment: the throwaway homes, no inherited Mesh settings or alert webhooks.

    Automation is switched off so that the only runs are the ones a test starts: the sensors exist,
    stopped, as ``automation.enabled: false`` configures them.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MESH_", "DAGSTER_"))}
    env.update(
        MESH_HOME=str(mesh_home),
        MESH_PROJECT_ROOT=str(ROOT),
        DAGSTER_HOME=str(dagster_home),
        MESH_AUTOMATION__ENABLED="false",
        MESH_ALERTS__WEBSERVER_URL=url,
    )
    return env


@pytest.fixture(scope="module")
def dagster_services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DagsterServices]:
    """The instance prepared as ``mesh setup`` prepares it, and the code servers loading.

    Not yet serving: a test prepares its data meanwhile, then calls ``start`` for the webserver and daemon.
    The instance's storage is created here, once, before any service opens it.
    """
    from mesh_assets.cli.commands import instance_yaml

    base = tmp_path_factory.mktemp("dagster")
    mesh_home = base / "mesh-home"
    (mesh_home / "dagster").mkdir(parents=True)
    (mesh_home / "dagster" / "dagster.yaml").write_text(instance_yaml("sqlite"))
    (base / "logs").mkdir()
    url = f"http://127.0.0.1:{free_port()}"
    workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text())
    names = [entry["python_file"]["location_name"] for entry in workspace["load_from"]]
    env = service_env(mesh_home, mesh_home / "dagster", url)
    with dg.DagsterInstance.from_config(str(mesh_home / "dagster")) as instance:
        services = DagsterServices(base, url, env, {n: base / f"{n}.sock" for n in names}, instance)
        try:
            services.start_code_servers()
            yield services
        finally:
            services.stop()


@pytest.fixture(scope="session")
def screenshots(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where UI tests save screenshots: ``MESH_SCREENSHOTS_DIR`` (e.g. docs/screenshots) or a pytest temp dir."""
    configured = os.environ.get("MESH_SCREENSHOTS_DIR")
    folder = (ROOT / configured) if configured else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    request.config.stash[SCREENSHOTS] = folder
    return folder


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    folder = config.stash.get(SCREENSHOTS, None)
    if folder is not None:
        terminalreporter.write_line(f"UI screenshots: {folder}")


@pytest.fixture(scope="module")
def browser_page(dagster_services: DagsterServices) -> Iterator:
    """One Chromium page for the module (Debian's browser: Playwright never downloads one)."""
    from playwright.sync_api import expect, sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: `make services` installs Debian's chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=VIEWPORT, base_url=dagster_services.url)
        context.add_init_script(UI_PREFERENCES)
        page = context.new_page()
        page.set_default_timeout(60_000)
        expect.set_options(timeout=60_000)  # assertions wait as long as actions: 5 s is short on a busy machine
        yield page
        browser.close()
