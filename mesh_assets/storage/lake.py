"""Delta tables read through delta-rs (``deltalake``): versions, commit metadata and snapshots without a JVM.

The same reader serves every engine (a classic or a Spark Connect session, or none, as in the observer) and
every place a table lives: a local path or an ``s3://`` / ``s3a://`` location in the bucket the ``s3``
settings describe. Credentials are never options here: delta-rs takes ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``) from the environment, or the default AWS chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mesh_assets.settings import S3Settings

if TYPE_CHECKING:
    from deltalake import DeltaTable

OBJECT_STORES = ("s3", "s3a")


def is_object_store(location: str) -> bool:
    return location.startswith(tuple(f"{scheme}://" for scheme in OBJECT_STORES))


def local_path(location: str) -> str:
    """A local location without its ``file:`` scheme (Spark accepts both spellings)."""
    return location.removeprefix("file://") if location.startswith("file://") else location.removeprefix("file:")


def storage_options(s3: S3Settings) -> dict[str, str]:
    """delta-rs's object-store options from the ``s3`` settings (endpoint, region, path-style; no secrets)."""
    options = {"AWS_VIRTUAL_HOSTED_STYLE_REQUEST": str(not s3.path_style_access).lower()}
    if s3.endpoint:
        options["AWS_ENDPOINT_URL"] = s3.endpoint
        options["AWS_ALLOW_HTTP"] = str(s3.endpoint.startswith("http://")).lower()
    if s3.region:
        options["AWS_REGION"] = s3.region
    return options


def open_table(location: str, s3: S3Settings, version: int | None = None, files: bool = False) -> DeltaTable | None:
    """The table at ``location`` (at ``version``, else the latest); None when there is no Delta table there.

    Without ``files`` only the log's metadata is loaded (version, history), which is what most callers need.
    delta-rs is imported here, on first use: loading definitions must not pay for it.
    """
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    if is_object_store(location):
        uri, options = location, storage_options(s3)
    else:
        uri, options = local_path(location), None
    try:
        return DeltaTable(uri, version=version, storage_options=options, without_files=not files)
    except TableNotFoundError:
        return None


def history(table: DeltaTable, limit: int) -> list[dict]:
    """The table's newest ``limit`` commits, newest first. A shallow clone's first commit (``CLONE``, which an
    environment starts from) records ``readVersion: -1``, which delta-rs cannot parse: such a table's history is
    read without it (it wrote no rows of its own, so no caller looks for it)."""
    from deltalake.exceptions import DeltaProtocolError

    try:
        return table.history(limit)
    except DeltaProtocolError:
        newest = min(limit, table.version())
        return table.history(newest) if newest > 0 else []
