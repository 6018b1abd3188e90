"""What happens around every run, in one place: its OpenLineage events and the owners' alerts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dagster as dg

from mesh_assets.alerts.notify import Alert, AlertNotSent, run_url, send
from mesh_assets.graph.resolve import Node
from mesh_assets.lineage.capture import Reads
from mesh_assets.lineage.run import ProductLineage, product_lineage
from mesh_assets.run.publish import RunOutcome
from mesh_assets.run.record import PartitionsRefused
from mesh_assets.storage.resource import MeshResource


class RunHooks:
    """Told when the run has an outcome; the context manager sends the rest."""

    def __init__(self, lineage: ProductLineage):
        self.lineage = lineage

    def finished(self, outcome: RunOutcome) -> None:
        reads = Reads(outcome.reads, outcome.undeclared_reads, outcome.undeclared_names)
        self.lineage.record(reads, outcome.outcomes, outcome.result)


def _alert(context: dg.AssetExecutionContext, node: Node, message: str, **fields: Any) -> None:
    """Tell the product's chat channel; an unreachable webhook is logged, never fails the run further."""
    product = node.product
    channel = next((c.value for c in product.contacts if c.kind == "chat"), "")
    alert = Alert(
        kind=fields.pop("kind"),
        domain=product.domain,
        product=product.name,
        table=node.table.name,
        owner=product.owner,
        channel=channel,
        message=message,
        run_id=context.run.run_id,
        run_url=run_url(context.run.run_id),
        **fields,
    )
    try:
        send(alert)
    except AlertNotSent as exc:
        context.log.warning(f"alert to {product.domain}'s channel failed: {exc}")


@contextmanager
def run_hooks(context: dg.AssetExecutionContext, mesh: MeshResource, node: Node) -> Iterator[RunHooks]:
    """Lineage START now and COMPLETE or FAIL at the end; an alert to the owner when the run fails."""
    try:
        with product_lineage(context, mesh, node) as lineage:
            yield RunHooks(lineage)
    except PartitionsRefused as exc:
        kind = "blocking check failed" if exc.checks else "inputs not ready"
        _alert(context, node, str(exc), kind=kind, partitions=exc.partitions, checks=exc.checks)
        raise
    except Exception as exc:
        keys = list(context.partition_keys) if context.has_partition_key_range or context.has_partition_key else []
        _alert(context, node, str(exc)[:2000], kind="run failed", partitions=keys)
        raise
