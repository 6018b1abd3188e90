"""The files of a Delta table's ``_delta_log``, on a local disk or in an S3-compatible bucket.

Observing reads only the log (small JSON commits), never data files, and without a JVM: local paths with the
file system, ``s3://`` / ``s3a://`` locations with boto3, configured like Spark's s3a (``s3.*`` settings for
the endpoint, region and path-style access; credentials from the environment or the default AWS chain).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mesh_assets.settings import S3Settings

LOG_DIR = "_delta_log"
OBJECT_STORES = ("s3", "s3a")


def _is_object_store(location: str) -> bool:
    return urlparse(location).scheme in OBJECT_STORES


def _local(location: str) -> Path:
    return Path(location[len("file:") :] if location.startswith("file:") else location)


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

    def _bucket_and_log(self, location: str) -> tuple[Any, str, str]:
        parsed = urlparse(location)
        client = _s3(self.s3.endpoint, self.s3.region, self.s3.path_style_access)
        return client, parsed.netloc, f"{parsed.path.strip('/')}/{LOG_DIR}/"

    def read_commit(self, location: str, version: int) -> str | None:
        """The JSON text of commit ``version`` of the table at ``location``; None when it does not exist (yet)."""
        name = f"{version:020d}.json"
        if not _is_object_store(location):
            try:
                return (_local(location) / LOG_DIR / name).read_text()
            except FileNotFoundError:
                return None
        client, bucket, prefix = self._bucket_and_log(location)
        try:
            return client.get_object(Bucket=bucket, Key=prefix + name)["Body"].read().decode()
        except client.exceptions.NoSuchKey:
            return None

    def versions(self, location: str) -> list[int]:
        """The versions of the commit files in the log (empty when there is no table)."""
        if not _is_object_store(location):
            log = _local(location) / LOG_DIR
            return sorted(int(p.stem) for p in log.glob("*.json") if p.stem.isdigit()) if log.is_dir() else []
        client, bucket, prefix = self._bucket_and_log(location)
        versions = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                stem = item["Key"][len(prefix) :].removesuffix(".json")
                if item["Key"].endswith(".json") and stem.isdigit():
                    versions.append(int(stem))
        return sorted(versions)
