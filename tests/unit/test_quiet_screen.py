"""What reaches a user's screen: Mesh's own lines, not what libraries print or warn.

The pseudo-terminal run of the whole demo is ``tests/e2e/test_first_run.py``; these are the two mechanisms,
each in isolation.
"""

from __future__ import annotations

import io
import sys
import warnings
from pathlib import Path

import dagster as dg
from rich.console import Console
from terminal import screen_lines

from mesh_assets.cli.capture import warnings_to_log
from mesh_examples.progress import DemoProgress
from mesh_examples.run import Planned


def test_the_live_display_leaves_what_libraries_print_where_the_cli_sent_it(capsys):
    """rich's live display redirects ``sys.stdout``/``sys.stderr`` onto its console by default: on a terminal,
    every Dagster record and dbt line then scrolled over the bars instead of going to the demo's log file."""
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80)
    with DemoProgress(console, live=True) as progress:
        progress.stage("materializing the mesh")
        progress.planned([Planned(dg.AssetKey(["shop", "orders"]), "shop", "orders", ("2021-06-01",))])
        print("2021-06-01 - dagster - DEBUG - RUN_START")
        print("Running with dbt=1.10", file=sys.stderr)
        progress.materialized(dg.AssetKey(["shop", "orders"]), "2021-06-01")
    captured = capsys.readouterr()
    assert "RUN_START" in captured.out and "Running with dbt" in captured.err
    assert screen_lines(screen.getvalue()) == ["✓ materializing the mesh", f"✓ shop orders {'━' * 20} 1/1 partitions"]


def test_a_library_warning_goes_to_the_log_file_not_the_screen(mesh_home: Path, capfd):
    log = mesh_home / "logs" / "mesh.log"
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with warnings_to_log():
            warnings.warn("Parameter `execution_type` is currently in beta", dg.BetaWarning, stacklevel=1)
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
    assert "BetaWarning: Parameter `execution_type` is currently in beta" in log.read_text()
    assert "test_quiet_screen.py" in log.read_text()  # with the line that raised it, for whoever reads the log
