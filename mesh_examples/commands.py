"""The example's own commands, which ``mesh`` offers on the example mesh: ``mesh ingest``.

They land the example's sources the way its outside writers would; a real mesh's sources are landed by writers
Mesh does not own, so these belong with the example, and the command line imports them only when run.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from rich.console import Console

from mesh_assets import MeshResource
from mesh_examples.landing import ingest_hours

MAX_HOURS = 24 * 366


def ingest(args: argparse.Namespace, console: Console) -> int:
    """``mesh ingest --start 2021-06-15T00 --hours 3``: land ``central.raw_order_events`` hour by hour."""
    try:
        start = datetime.strptime(args.start, "%Y-%m-%dT%H").replace(tzinfo=UTC)
    except ValueError:
        console.print(f"[red]error[/red] --start {args.start!r}: expected YYYY-MM-DDTHH", highlight=False)
        return 2
    if not 1 <= args.hours <= MAX_HOURS:
        console.print(f"[red]error[/red] --hours {args.hours}: expected 1..{MAX_HOURS}", highlight=False)
        return 2
    mesh = MeshResource()
    for hour in ingest_hours(mesh.spark, mesh.registry, start, args.hours):
        console.print(f"landed central.raw_order_events {hour:%Y-%m-%d %H}:00 UTC")
    return 0
