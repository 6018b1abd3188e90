"""OpenLineage for product runs: events from what Spark actually read and wrote, and the graph they form."""

from mesh_assets.lineage.capture import read_locations, undeclared_reads
from mesh_assets.lineage.events import RunDescription, build_event, dataset_name, run_uuid
from mesh_assets.lineage.graph import LineageGraph, graph_from_events, read_events
from mesh_assets.lineage.run import product_lineage

__all__ = [
    "LineageGraph",
    "RunDescription",
    "build_event",
    "dataset_name",
    "graph_from_events",
    "product_lineage",
    "read_events",
    "read_locations",
    "run_uuid",
    "undeclared_reads",
]
