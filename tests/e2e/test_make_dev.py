"""``make dev`` serves this machine only: every TCP socket its processes listen on is bound to 127.0.0.1.

The test runs the dev target itself (``make -o setup dev``: the target's own commands, its set-up taken as
done) on a free port, over a workspace of the small ``rel`` fixture domain and a throwaway instance. Once the
webserver serves the location and the daemon runs, it reads from /proc the listening sockets of the whole
process tree (make, ``dagster dev``, the webserver, the daemon and the code servers), then stops it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "reliability"
READY_QUERY = """{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } }
  instance { daemonHealth { allDaemonStatuses { daemonType healthy } } } }"""


def listening(pids: list[int]) -> list[str]:
    """The fixture's reader of /proc: addresses of the TCP sockets ``pids`` listen on."""
    spec = importlib.util.spec_from_file_location("materialize", FIXTURE / "materialize.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.listening(pids)


def descendants(root: int) -> list[int]:
    """``root`` and every process under it, from the parent ids in /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    tree, grown = {root}, True
    while grown:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grown = bool(more)
    return sorted(tree)


def command_line(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ready(url: str) -> bool:
    """The webserver answers, has loaded the location, and sees every daemon healthy."""
    request = urllib.request.Request(
        f"{url}/graphql", json.dumps({"query": READY_QUERY}).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            data = json.load(response)["data"]
    except OSError:
        return False
    locations = data["workspaceOrError"]["locationEntries"]
    daemons = data["instance"]["daemonHealth"]["allDaemonStatuses"]
    return [(e["name"], e["loadStatus"]) for e in locations] == [("rel", "LOADED")] and all(
        d["healthy"] for d in daemons
    )


@pytest.fixture(scope="module")
def make_dev(tmp_path_factory) -> Iterator[tuple[subprocess.Popen, str, Path]]:
    base = tmp_path_factory.mktemp("make-dev")
    workspace = base / "workspace.yaml"
    location = {"relative_path": str(FIXTURE / "location.py"), "location_name": "rel"}
    workspace.write_text(yaml.safe_dump({"load_from": [{"python_file": {**location, "working_directory": "."}}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MESH_", "DAGSTER_"))}
    env.update(
        MESH_HOME=str(base / "home"),
        DAGSTER_HOME=str(base / "home" / "dagster"),
        MESH_AUTOMATION__ENABLED="false",
    )
    port = free_port()
    command = ["make", "-o", "setup", "dev", f"DEV_PORT={port}", f"DEV_WORKSPACE={workspace}"]
    with (base / "make-dev.log").open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process, f"http://127.0.0.1:{port}", base / "make-dev.log"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever of the tree outlived make
        process.wait()


def test_every_server_of_make_dev_listens_on_the_loopback_only(make_dev):
    process, url, _ = make_dev
    deadline = time.monotonic() + 300
    while not ready(url):
        assert process.poll() is None, f"make dev exited with {process.returncode}"
        assert time.monotonic() < deadline, "make dev did not serve within 300 s"
        time.sleep(1)

    tree = descendants(process.pid)
    sockets = listening(tree)
    code_servers = [pid for pid in tree if any(c in command_line(pid) for c in ("code-server start", "api grpc"))]

    assert f"127.0.0.1:{url.rsplit(':', 1)[1]}" in sockets
    assert code_servers, [command_line(pid) for pid in tree]
    for pid in code_servers:
        assert "--socket" in command_line(pid) and listening([pid]) == [], command_line(pid)
    for address in sockets:
        host = ipaddress.ip_address(address.rsplit(":", 1)[0])
        host = host.ipv4_mapped or host if isinstance(host, ipaddress.IPv6Address) else host
        assert host == ipaddress.ip_address("127.0.0.1"), f"{address} is reachable from other machines"


def test_make_dev_says_where_the_ui_is_and_leaves_dagsters_chatter_out(make_dev):
    """Its terminal names the UI's address; Dagster's INFO lines and its advice to use `dg dev` stay out."""
    process, url, log = make_dev
    deadline = time.monotonic() + 300
    while not ready(url):
        assert process.poll() is None, f"make dev exited with {process.returncode}"
        assert time.monotonic() < deadline, "make dev did not serve within 300 s"
        time.sleep(1)
    printed = log.read_text()
    assert f"Dagster UI on {url} once its code locations load" in printed
    assert "superseded" not in printed and "dg dev" not in printed, printed
    assert " - INFO - " not in printed, printed
