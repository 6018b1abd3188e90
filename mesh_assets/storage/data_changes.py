"""Whether a Delta table's data changed after a version, maintenance aside.

Compaction (``OPTIMIZE``, Z-order), clean-up (``VACUUM``) and setting table properties commit new versions
without changing a row (their files carry ``dataChange: false``): a table Mesh last wrote at version 7 and then
compacted at 8 still holds what Mesh wrote. Read from the log's commit information through delta-rs.
"""

from __future__ import annotations

from mesh_assets.settings import S3Settings
from mesh_assets.storage.lake import open_table

MAINTENANCE_OPERATIONS = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES"})
"""Delta's operation names of commits that change no data."""


def data_changed_after(location: str, version: int, s3: S3Settings) -> bool:
    """Whether a commit after ``version`` changed data (True also when the table is gone or its log no longer
    holds every commit since: unknown is not unchanged)."""
    table = open_table(location, s3)
    if table is None:
        return True
    latest = table.version()
    if latest < version:
        return True  # a table written again from scratch
    if latest == version:
        return False
    history = [entry for entry in table.history(latest - version) if entry["version"] > version]
    if len(history) != latest - version:
        return True
    return any(entry.get("operation") not in MAINTENANCE_OPERATIONS for entry in history)
