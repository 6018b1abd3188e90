"""``dagster-daemon`` for tests: the backfill daemon and the run queue look for work every second rather than
every 30 and every 5.

Dagster's backfill loop waits a fixed ``DEFAULT_DAEMON_INTERVAL_SECONDS`` between iterations, with no setting
to change it; a test's backfill would wait up to half a minute to be picked up and as long again to be seen
finished. Each run a backfill submits then waits in the run queue for the queue's next pass, every
``dequeue_interval_seconds`` (5 unless the instance sets it; Mesh's instance does not, as ``make dev`` needs no
faster). This sets both, which the loops read at each iteration, and runs the real command line:

    python tests/quick_daemon.py run -w workspace.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

import dagster._daemon.controller as controller
from dagster._core.run_coordinator.queued_run_coordinator import QueuedRunCoordinator
from dagster._daemon.cli import main

INTERVAL_SECONDS = 1

COMMAND = [sys.executable, str(Path(__file__).resolve())]
"""The ``dagster-daemon`` command line to start: append ``run -w <workspace>``."""

if __name__ == "__main__":
    if not hasattr(controller, "DEFAULT_DAEMON_INTERVAL_SECONDS"):
        raise SystemExit(f"{__file__}: this Dagster has no DEFAULT_DAEMON_INTERVAL_SECONDS to shorten")
    if not isinstance(getattr(QueuedRunCoordinator, "dequeue_interval_seconds", None), property):
        raise SystemExit(f"{__file__}: this Dagster's run queue has no dequeue_interval_seconds to shorten")
    controller.DEFAULT_DAEMON_INTERVAL_SECONDS = INTERVAL_SECONDS
    QueuedRunCoordinator.dequeue_interval_seconds = property(lambda _self: INTERVAL_SECONDS)
    sys.exit(main())
