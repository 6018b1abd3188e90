"""A Dagster webserver for tests that launch backfills through it, as ``mesh backfill`` does under ``make dev``."""

from __future__ import annotations

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
            time.sleep(1)
        yield url
    finally:
        processes.stop(process)
