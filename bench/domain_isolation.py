"""Domains do not wait for each other: one domain's automation tick while another's evaluation is slow.

A synthetic mesh (``definitions_load.write_mesh``) where one domain's sensor is made slow on purpose: it
targets all but the last 20 products, a few seconds of condition evaluation per tick. The fast domain's
sensor targets the last 20. Its tick is measured from the moment the daemon would start it:

- one after the other, as Dagster's asset daemon evaluates sensors by default (the fast tick waits behind
  the slow one);
- on the daemon's thread pool (``auto_materialize: use_threads``, which ``mesh setup`` configures), both
  started together: the fast tick shares the interpreter with the slow one;
- while the slow domain ticks in another process, as it would in its own code server with
  ``use_user_code_server``: the floor of isolating domains.

Run alone: ``python -m bench.domain_isolation --assets 500``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg

from bench.automation_tick import Graph
from bench.common import ROOT, Result, print_results
from bench.definitions_load import PRODUCTS_PER_DOMAIN, write_mesh
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.storage.resource import MeshResource

SPIN = """
import sys
from bench.domain_isolation import spin
spin(sys.argv[1], float(sys.argv[2]))
"""


def graphs(root: Path) -> tuple[Graph, Graph]:
    """(the slow domain's sensor, the fast domain's), each with its own instance and cursor."""
    built = build_definitions(load_all(root), extra=[])
    mesh = dg.Definitions(assets=built.assets, resources={"mesh": MeshResource()})
    graph = mesh.resolve_asset_graph()
    sensors = sorted((s for s in built.sensors or [] if s.name.endswith("__automation")), key=lambda s: s.name)
    slow = dg.AssetSelection.assets(*(k for s in sensors[:-1] for k in s.asset_selection.resolve(graph)))
    return Graph(mesh, slow), Graph(mesh, sensors[-1].asset_selection)


def spin(root: str, seconds: float) -> None:
    """Tick the slow domain for ``seconds`` in this process; print ``ticking`` once its cursor is warm."""
    warnings.filterwarnings("ignore")
    slow, _ = graphs(Path(root))
    slow.tick()
    print("ticking", flush=True)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        slow.tick()


def in_another_process(root: Path, fast: Graph, repeat: int, slow_seconds: float) -> list[float]:
    """The fast domain's ticks while the slow domain ticks in another process."""
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


def run(assets: int = 500, repeat: int = 5) -> list[Result]:
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, assets)
        slow, fast = graphs(root)
        for graph in (slow, fast):
            graph.tick()  # the first evaluation only initialises the cursor
            graph.tick()
        alone = statistics.median(fast.tick() for _ in range(repeat))
        serial, threaded, slow_ticks = [], [], []
        with ThreadPoolExecutor(max_workers=2) as pool:
            for _ in range(repeat):
                start = time.perf_counter()
                slow_ticks.append(slow.tick())
                fast.tick()
                serial.append(time.perf_counter() - start)
                start = time.perf_counter()
                slow_future = pool.submit(slow.tick)
                fast_future = pool.submit(fast.tick)
                fast_future.result()
                threaded.append(time.perf_counter() - start)
                slow_future.result()
        slow_s = statistics.median(slow_ticks)
        isolated = statistics.median(in_another_process(root, fast, repeat, slow_s))
    products = PRODUCTS_PER_DOMAIN
    busy = f"another domain's tick ({assets - products} assets) slow on purpose: {slow_s:.1f} s"
    baseline = "the same tick with no other domain evaluating"
    return [
        Result(
            "domain isolation",
            f"one domain's tick ({products} assets), sensors one after the other; {busy}",
            statistics.median(serial),
            baseline,
            alone,
            "< 0.2 s",
            statistics.median(serial) < 0.2,
        ),
        Result(
            "domain isolation",
            f"one domain's tick ({products} assets), daemon thread pool; {busy}",
            statistics.median(threaded),
            baseline,
            alone,
            "< 0.2 s",
            statistics.median(threaded) < 0.2,
        ),
        Result(
            "domain isolation",
            f"one domain's tick ({products} assets), slow domain in another process; {busy}",
            isolated,
            baseline,
            alone,
            "< 0.2 s",
            isolated < 0.2,
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--assets", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_results(run(args.assets, args.repeat))
