"""The files of a Delta table's ``_delta_log``, on a local disk or in an S3-compatible bucket.

An idle observer tick asks each table two cheap questions: is there a commit after the cursor (it is not),
and is the cursor's own commit still there (it is, unless the log was cleaned up past it; then the newest
checkpoint's version, in ``_last_checkpoint``, says where to resume). Only the answers it needs are read,
without a JVM: local paths with the file system, ``s3://`` / ``s3a://`` locations with boto3, configured like
Spark's s3a (``s3.*`` settings for the endpoint, region and path-style access; credentials from the environment or the
default AWS chain). Snapshots (checkpoint plus commits) are delta-rs's to read.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from mesh_assets.settings import S3Settings
from mesh_assets.storage.lake import is_object_store, local_path, open_table

if TYPE_CHECKING:
    from deltalake import DeltaTable

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"


@lru_cache(maxsize=4)
def _s3(endpoint: str | None, region: str | None, path_style: bool) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(s3={"addressing_style": "path" if path_style else "auto"})
    return boto3.client("s3", endpoint_url=endpoint, region_name=region, config=config)


class LogFiles:
    """Reads the ``_delta_log`` of tables on the local disk, or in the bucket the ``s3`` settings describe."""

    def __init__(self, s3: S3Settings):
        self.s3 = s3

    def _object(self, location: str, name: str) -> tuple[Any, str, str]:
        """The S3 client, bucket and key of ``_delta_log/<name>`` of an object-store ``location``."""
        parsed = urlparse(location)
        client = _s3(self.s3.endpoint, self.s3.region, self.s3.path_style_access)
        return client, parsed.netloc, f"{parsed.path.strip('/')}/{LOG_DIR}/{name}"

    def _read(self, location: str, name: str) -> str | None:
        """The text of ``_delta_log/<name>``; None when the file does not exist (yet, or any more)."""
        if not is_object_store(location):
            try:
                with open(f"{local_path(location)}/{LOG_DIR}/{name}") as file:
                    return file.read()
            except FileNotFoundError:
                return None
        client, bucket, key = self._object(location, name)
        try:
            return client.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
        except client.exceptions.NoSuchKey:
            return None

    def has_commit(self, location: str, version: int) -> bool:
        """Whether commit ``version`` is still in the log (one stat, or one HEAD request)."""
        name = f"{version:020d}.json"
        if not is_object_store(location):
            return os.path.exists(f"{local_path(location)}/{LOG_DIR}/{name}")
        client, bucket, key = self._object(location, name)
        try:
            client.head_object(Bucket=bucket, Key=key)
        except client.exceptions.ClientError as exc:
            if exc.response["Error"]["Code"] in ("404", "NoSuchKey"):
                return False
            raise
        return True

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
