"""Data diff: how the rows of one Delta table differ from another's (an environment's table and production's)."""

from mesh_assets.datadiff.compare import PartitionSpan, TableDiff, diff_tables
from mesh_assets.datadiff.keys import table_key, withheld_reason
from mesh_assets.datadiff.span import partition_span

__all__ = ["PartitionSpan", "TableDiff", "diff_tables", "partition_span", "table_key", "withheld_reason"]
