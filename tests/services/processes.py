"""Starting and stopping the service processes the service tests run: each in its own process group on
127.0.0.1, its output in a log file, stopped with its children whatever the test's outcome."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(command: Sequence[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``command`` in a new session (its own process group), stdout and stderr into ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            list(command), stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=log.parent
        )


def tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


def wait_for_port(port: int, process: subprocess.Popen | None, log: Path, timeout: float = 180) -> None:
    """Until something accepts connections on 127.0.0.1:``port``; fails early if ``process`` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode} before listening on {port}:\n{tail(log)}")
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout:.0f}s:\n{tail(log)}")


def stop(process: subprocess.Popen, grace: float = 20) -> None:
    """SIGTERM the process group, SIGKILL it after ``grace`` seconds, and kill any member left behind."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def run(command: Sequence[str], log: Path, env: dict[str, str], timeout: float = 600, cwd: Path | None = None) -> str:
    """Run ``command`` to completion in its own process group (killed with its children on timeout), in ``cwd``
    (default: this process's); its stdout, with stderr appended to ``log``. Raises with the log's tail when it
    fails."""
    with log.open("ab") as err:
        process = subprocess.Popen(
            list(command), stdout=subprocess.PIPE, stderr=err, env=env, start_new_session=True, text=True, cwd=cwd
        )
        try:
            out, _ = process.communicate(timeout=timeout)
        finally:
            stop(process)
    if process.returncode != 0:
        raise RuntimeError(f"{command[:3]} exited with {process.returncode}:\n{out[-2000:]}\n{tail(log)}")
    return out
