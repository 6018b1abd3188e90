"""The version a write recorded is the one its own commit got, found by the commit's metadata, or an error:
never the latest version taken on trust (a materialization's ``delta_version`` and data version rest on it)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import CommitProperties, write_deltalake

from mesh_assets.settings import S3Settings
from mesh_assets.storage.delta import CommitNotFound, committed_version

S3 = S3Settings()


def test_a_write_finds_its_own_commit_and_a_missing_one_is_an_error(tmp_path) -> None:
    location = str(tmp_path / "orders")
    ours, other = (json.dumps({"dagster_run_id": run}) for run in ("run-1", "run-2"))
    for metadata in (ours, other):  # this write's commit, then another writer's
        meta = CommitProperties(custom_metadata={"userMetadata": metadata})
        write_deltalake(location, pa.table({"id": [1]}), mode="append", commit_properties=meta)

    assert committed_version(location, ours, S3, after=None) == 0  # not the latest, 1
    assert committed_version(location, other, S3, after=0) == 1
    with pytest.raises(CommitNotFound, match=r"run-1.*not in the log of .*orders after version 0 \(latest 1\)"):
        committed_version(location, ours, S3, after=0)  # its commit is older than the version before the write
