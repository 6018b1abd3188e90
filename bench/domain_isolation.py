"""Domains do not wait for each other: one domain's automation tick while another's evaluation is slow.

Each domain's automation sensor is evaluated in its domain's own code server (``use_user_code_server``),
against its own code location. Here a synthetic mesh (``definitions_load.write_mesh``, domains of 20 products)
is split as a deployment splits it: the last domain is the fast location, and every other domain is one slow
location on purpose (hundreds of assets, seconds of condition evaluation per tick). The fast domain's tick is
what its code server runs: its sensor, evaluated over its location, cursor carried between ticks. Measured:

- alone (the baseline);
- while the slow location ticks without pause in another process, as its own code server would;
- for contrast, while the slow location ticks on another thread of the same process: what the daemon's
  thread pool gave when it evaluated every domain itself (the fast tick waits for the interpreter).

The daemon's part (a gRPC call to the code server per tick, on a thread of its own) is not timed.
Run alone: ``python -m bench.domain_isolation --assets 500``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg

from bench.common import ROOT, Result, print_results
from bench.definitions_load import PRODUCTS_PER_DOMAIN, write_mesh
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all

SPIN = """
import sys
from bench.domain_isolation import spin
spin(sys.argv[1], float(sys.argv[2]))
"""


class Location:
    """One code location's automation, ticked as its code server runs it: each of its automation sensors,
    over the location's own repository, with the cursor the daemon hands back."""

    def __init__(self, defs: dg.Definitions) -> None:
        self.repository = defs.get_repository_def()
        self.sensors = [s for s in defs.sensors or [] if isinstance(s, dg.AutomationConditionSensorDefinition)]
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursors: dict[str, str | None] = {}

    def tick(self) -> float:
        gc.collect()
        start = time.perf_counter()
        for sensor in self.sensors:
            with dg.build_sensor_context(
                instance=self.instance, cursor=self.cursors.get(sensor.name), repository_def=self.repository
            ) as context:
                self.cursors[sensor.name] = sensor(context).cursor
        return time.perf_counter() - start


def locations(root: Path) -> tuple[Location, Location]:
    """(the slow location: every domain but the last; the fast one: the last domain's own location)."""
    domains = load_all(root)
    names = sorted(domains)
    slow = build_definitions(domains, only=set(names[:-1]), extra=[])
    fast = build_definitions(domains, only={names[-1]}, extra=[])
    return Location(slow), Location(fast)


def spin(root: str, seconds: float) -> None:
    """Tick the slow location for ``seconds`` in this process; print ``ticking`` once its cursor is warm."""
    warnings.filterwarnings("ignore")
    slow, _ = locations(Path(root))
    slow.tick()
    print("ticking", flush=True)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        slow.tick()


def in_another_process(root: Path, fast: Location, repeat: int, slow_seconds: float) -> list[float]:
    """The fast domain's ticks while the slow location ticks in another process."""
    spinner = subprocess.Popen(
        [sys.executable, "-c", SPIN, str(root), str(max(30.0, 4 * slow_seconds))],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert spinner.stdout is not None and spinner.stdout.readline().strip() == "ticking"
        return [fast.tick() for _ in range(repeat)]
    finally:
        spinner.kill()
        spinner.wait()


def on_threads(slow: Location, fast: Location, repeat: int) -> tuple[list[float], list[float]]:
    """(the fast ticks, the slow ticks) when both start together on two threads of one process."""
    fast_ticks, slow_ticks = [], []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(repeat):
            slow_future = pool.submit(slow.tick)
            fast_ticks.append(pool.submit(fast.tick).result())
            slow_ticks.append(slow_future.result())
    return fast_ticks, slow_ticks


def run(assets: int = 500, repeat: int = 5) -> list[Result]:
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, assets)
        slow, fast = locations(root)
        for location in (slow, fast):
            location.tick()  # the first evaluation only initialises the cursor
            location.tick()
        alone = statistics.median(fast.tick() for _ in range(repeat))
        threaded, slow_ticks = on_threads(slow, fast, repeat)
        slow_s = statistics.median(slow_ticks)
        isolated = statistics.median(in_another_process(root, fast, repeat, slow_s))
    products = PRODUCTS_PER_DOMAIN
    busy = f"another location's tick ({assets - products} assets) slow on purpose: {slow_s:.1f} s"
    baseline = "the same tick with no other domain evaluating"
    return [
        Result(
            "domain isolation",
            f"one domain's tick ({products} assets) in its own code server; {busy}, in its own",
            isolated,
            baseline,
            alone,
            "< 0.2 s",
            isolated < 0.2,
        ),
        Result(
            "domain isolation",
            f"for contrast, both evaluated in one process on two threads (the daemon before); {busy}",
            statistics.median(threaded),
            baseline,
            alone,
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--assets", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_results(run(args.assets, args.repeat))
