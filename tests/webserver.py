"""A Dagster webserver for tests that launch backfills through it, as ``mesh backfill`` does under ``make dev``."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import yaml
from services import processes

from mesh_assets.backfill import Webserver, WebserverError

BIN = Path(sys.executable).parent
LOCATIONS = """{ workspaceOrError { ... on Workspace { locationEntries {
  name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


def workspace(path: Path, locations: Mapping[str, Path], working_directory: Path) -> Path:
    """``path`` written as a workspace.yaml with one code location per ``name: definitions file``."""
    entries = [
        {
            "python_file": {
                "relative_path": str(file),
                "working_directory": str(working_directory),
                "location_name": name,
            }
        }
        for name, file in locations.items()
    ]
    path.write_text(yaml.safe_dump({"load_from": entries}))
    return path


def grpc_workspace(path: Path, sockets: Mapping[str, Path]) -> Path:
    """``path`` written as a workspace.yaml whose locations are the code servers listening on ``sockets``."""
    entries = [{"grpc_server": {"socket": str(sock), "location_name": name}} for name, sock in sockets.items()]
    path.write_text(yaml.safe_dump({"load_from": entries}))
    return path


def accepts(path: Path) -> bool:
    """Whether a server listens on the Unix socket ``path``."""
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
        return True


@contextmanager
def code_server(
    name: str, definitions: Path, working_directory: Path, env: Mapping[str, str], log: Path, timeout: float = 300
) -> Iterator[Path]:
    """One code server for location ``name`` on a Unix socket, until it serves; the socket.

    As under ``dagster dev``, the webserver and the daemon share it, so the location loads once rather than
    once per process that serves it. Stopped with the run workers it launched afterwards."""
    path = log.parent / f"{name}.sock"
    command = [str(BIN / "dagster"), "api", "grpc", "--socket", str(path), "--location-name", name]
    command += ["--python-file", str(definitions), "--working-directory", str(working_directory)]
    process = processes.start(command, log, dict(env))
    try:
        deadline = time.monotonic() + timeout
        while not accepts(path):
            if process.poll() is not None:
                raise RuntimeError(f"the code server exited with {process.returncode}:\n{processes.tail(log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the code server did not serve {name} in {timeout:.0f}s:\n{processes.tail(log)}")
            time.sleep(0.5)
        yield path
    finally:
        processes.stop(process)


def loaded(webserver: Webserver, count: int) -> bool:
    """Whether the webserver has loaded its ``count`` locations; a location that failed to load fails the test."""
    try:
        entries = webserver.graphql(LOCATIONS, {})["workspaceOrError"]["locationEntries"]
    except WebserverError:
        return False
    errors = [f"{e['name']}: {err['message']}" for e in entries if "message" in (err := e["locationOrLoadError"] or {})]
    assert not errors, errors
    return len(entries) == count and all(e["loadStatus"] == "LOADED" for e in entries)


@contextmanager
def dagster_webserver(workspace_yaml: Path, env: Mapping[str, str], log: Path, timeout: float = 300) -> Iterator[str]:
    """``dagster-webserver`` on a free loopback port over ``env``'s DAGSTER_HOME, until every location of
    ``workspace_yaml`` is loaded; its URL. Stopped with its code servers afterwards, whatever the outcome."""
    port = processes.free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port), "-w", str(workspace_yaml)]
    process = processes.start(command, log, dict(env))
    try:
        count = len(yaml.safe_load(workspace_yaml.read_text())["load_from"])
        deadline = time.monotonic() + timeout
        while not loaded(Webserver(url, timeout=10), count):
            if process.poll() is not None:
                raise RuntimeError(f"the webserver exited with {process.returncode}:\n{processes.tail(log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the webserver did not load {workspace_yaml} in {timeout:.0f}s:\n{processes.tail(log)}"
                )
            time.sleep(0.25)
        yield url
    finally:
        processes.stop(process)
