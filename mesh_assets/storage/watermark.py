"""A column's maximum in a Delta table, without Spark: what an input's ``watermark`` compares with the end of
the partition a run computes (a snapshot landed on time but behind is not ready).

The maximum comes from the log's per-file statistics (Delta writers keep ``maxValues`` for the first columns);
when a file has none for the column, the column alone is scanned."""

from __future__ import annotations

from datetime import date, datetime

from mesh_assets.settings import S3Settings
from mesh_assets.storage.lake import open_table


def column_max(location: str, s3: S3Settings, column: str) -> date | datetime | None:
    """The maximum of ``column`` in the table at ``location``; None when there is no table or no value.
    An unknown column raises ``KeyError`` naming it."""
    table = open_table(location, s3, files=True)
    if table is None:
        return None
    if column not in {f.name for f in table.schema().fields}:
        raise KeyError(f"no column {column!r}")
    files = table.get_add_actions(flatten=True)
    stat = f"max.{column}"
    if stat in files.column_names:
        values = files.column(stat).to_pylist()
        if all(v is not None for v in values):
            return max(values, default=None)
    import pyarrow.compute as pc

    scanned = table.to_pyarrow_dataset().to_table(columns=[column]).column(column)
    return pc.max(scanned).as_py()
