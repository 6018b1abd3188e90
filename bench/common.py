"""Shared helpers: timing, machine description and the result rows every benchmark returns."""

from __future__ import annotations

import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Result:
    """One measured case: ``seconds`` against ``baseline_seconds`` measured in the same run."""

    benchmark: str
    case: str
    seconds: float
    baseline: str
    baseline_seconds: float
    target: str = ""
    met: bool | None = None
    notes: str = ""
    extra: dict[str, float] = field(default_factory=dict)
    measured: str = ""
    """When the benchmark ran (UTC), set by ``make bench``: rows kept from an earlier run keep their own time."""

    @property
    def ratio(self) -> float:
        return self.seconds / self.baseline_seconds if self.baseline_seconds else float("nan")


def timed(fn: Callable[[], object]) -> float:
    """Seconds ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_of(fn: Callable[[], object], repeat: int = 5) -> float:
    return statistics.median(timed(fn) for _ in range(repeat))


def python_seconds(code: str, env: dict[str, str] | None = None) -> float:
    """Run ``code`` in a fresh interpreter; it prints its own elapsed seconds as the last line."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    return float(out.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, server: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the Connect server exited with {server.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"the Connect server did not listen on {port} within {timeout:.0f}s")


@contextmanager
def connect_server(base: Path) -> Iterator[str]:
    """A Delta-enabled Spark Connect server on 127.0.0.1 for the block; yields its ``sc://`` URL."""
    from mesh_assets.engine.connect_server import server_command, server_env
    from mesh_assets.settings import MeshSettings

    port = _free_port()
    with (base / "server.log").open("wb") as log:
        server = subprocess.Popen(
            server_command(MeshSettings(home=base / "server"), port=port),
            env=server_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_for(port, server)
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)


def machine() -> str:
    cpus = os.cpu_count()
    mem = ""
    try:
        meminfo = Path("/proc/meminfo").read_text().splitlines()
        kb = int(next(line for line in meminfo if line.startswith("MemTotal")).split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{platform.system()} {platform.machine()}, {cpus} cores{mem}, Python {platform.python_version()}"


def print_results(results: list[Result]) -> None:
    """What a benchmark run alone prints: one JSON object per case."""
    for r in results:
        print(json.dumps({**r.__dict__, "ratio": r.ratio}))
