"""What happens around every run, in one place: its OpenLineage events.

Owners hear of a failed run from their domain's run-failure sensor (:mod:`mesh_assets.alerts.sensor`), which
also sees the runs that die before any of this code can react.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from mesh_assets.graph.resolve import Node
from mesh_assets.lineage.capture import Reads
from mesh_assets.lineage.run import ProductLineage, product_lineage
from mesh_assets.run.outcome import RunOutcome
from mesh_assets.storage.resource import MeshResource


class RunHooks:
    """Told when the run has an outcome; the context manager sends the rest."""

    def __init__(self, lineage: ProductLineage):
        self.lineage = lineage

    def finished(self, outcome: RunOutcome) -> None:
        reads = Reads(outcome.reads, outcome.undeclared_reads, outcome.undeclared_names, outcome.column_lineage)
        self.lineage.record(reads, outcome.outcomes, outcome.result)


@contextmanager
def run_hooks(context: dg.AssetExecutionContext, mesh: MeshResource, node: Node) -> Iterator[RunHooks]:
    """Lineage START now and COMPLETE or FAIL at the end."""
    with product_lineage(context, mesh, node) as lineage:
        yield RunHooks(lineage)
