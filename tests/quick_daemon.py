"""``dagster-daemon`` for tests: the backfill daemon looks for work every second rather than every 30.

Dagster's backfill loop waits a fixed ``DEFAULT_DAEMON_INTERVAL_SECONDS`` between iterations, with no setting
to change it; a test's backfill would wait up to half a minute to be picked up and as long again to be seen
finished. This sets the constant, which the loop reads at each iteration, and runs the real command line:

    python tests/quick_daemon.py run -w workspace.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

import dagster._daemon.controller as controller
from dagster._daemon.cli import main

INTERVAL_SECONDS = 1

COMMAND = [sys.executable, str(Path(__file__).resolve())]
"""The ``dagster-daemon`` command line to start: append ``run -w <workspace>``."""

if __name__ == "__main__":
    if not hasattr(controller, "DEFAULT_DAEMON_INTERVAL_SECONDS"):
        raise SystemExit(f"{__file__}: this Dagster has no DEFAULT_DAEMON_INTERVAL_SECONDS to shorten")
    controller.DEFAULT_DAEMON_INTERVAL_SECONDS = INTERVAL_SECONDS
    sys.exit(main())
