"""The files of a Delta table's ``_delta_log``, on a local disk or in an S3-compatible bucket.

An idle observer tick asks each table two cheap questions: is there a commit after the cursor (it is not),
and is the cursor's own commit still there (it is, unless the log was cleaned up past it; then the newest
checkpoint's version, in ``_last_checkpoint``, says where to resume). Only the answers it needs are read,
without a JVM: local paths with the file system, ``s3://`` / ``s3a://`` locations through delta-rs's own object
store (:class:`deltalake.fs.DeltaStorageHandler`), configured like Spark's s3a (``s3.*`` settings for the
endpoint, region and path-style access; credentials from the environment or the default AWS chain), so one
library reads both the commits and the snapshots. Snapshots (checkpoint plus commits) are delta-rs's to read.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import TYPE_CHECKING

from mesh_assets.settings import S3Settings
from mesh_assets.storage.lake import is_object_store, local_path, open_table, storage_options

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from deltalake.fs import DeltaStorageHandler

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"


@lru_cache(maxsize=1024)
def _handler(location: str, options: tuple[tuple[str, str], ...]) -> DeltaStorageHandler:
    from deltalake.fs import DeltaStorageHandler

    return DeltaStorageHandler(location, dict(options))


def _store(location: str, s3: S3Settings) -> DeltaStorageHandler:
    """delta-rs's object store rooted at the table's location (one per table and settings, kept between ticks)."""
    return _handler(location, tuple(sorted(storage_options(s3).items())))


class LogFiles:
    """Reads the ``_delta_log`` of tables on the local disk, or in the bucket the ``s3`` settings describe."""

    def __init__(self, s3: S3Settings):
        self.s3 = s3

    def _read(self, location: str, name: str) -> str | None:
        """The text of ``_delta_log/<name>``; None when the file does not exist (yet, or any more)."""
        try:
            if not is_object_store(location):
                with open(f"{local_path(location)}/{LOG_DIR}/{name}") as file:
                    return file.read()
            return _store(location, self.s3).open_input_file(f"{LOG_DIR}/{name}").read().decode()
        except FileNotFoundError:
            return None

    def has_commit(self, location: str, version: int) -> bool:
        """Whether commit ``version`` is still in the log (one stat, or one HEAD request)."""
        name = f"{LOG_DIR}/{version:020d}.json"
        if not is_object_store(location):
            return os.path.exists(f"{local_path(location)}/{name}")
        from pyarrow.fs import FileType

        return _store(location, self.s3).get_file_info([name])[0].type != FileType.NotFound

    def read_commit(self, location: str, version: int) -> str | None:
        """The JSON text of commit ``version`` of the table at ``location``; None when it does not exist."""
        return self._read(location, f"{version:020d}.json")

    def last_checkpoint(self, location: str) -> int | None:
        """The version of the newest checkpoint Delta wrote; None when there is none (or no table)."""
        text = self._read(location, LAST_CHECKPOINT)
        return None if text is None else int(json.loads(text)["version"])

    def snapshot(self, location: str) -> DeltaTable | None:
        """The table's latest snapshot with its files (checkpoint plus later commits); None without a table."""
        return open_table(location, self.s3, files=True)
