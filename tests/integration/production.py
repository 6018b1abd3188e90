"""Production as the environment tests see it: a copy of a fixture's domains over an on-disk instance and its own
warehouse, with what they compare an environment against (tables' Delta versions, the instance's events).

``mesh apply --env`` reads production's settings from the environment, as the CLI does, so the home is entered
with ``MESH_*`` set for the module (``DAGSTER_HOME`` unset: the instance is ``MESH_HOME``'s, on disk)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import SparkSession

from mesh_assets import MeshResource, executable_assets
from mesh_assets.settings import get_settings
from mesh_assets.storage.lake import open_table


@dataclass
class Production:
    home: Path
    domains: Path
    mesh: MeshResource
    instance: dg.DagsterInstance
    tables: list[tuple[str, str]] = field(default_factory=list)
    """The (domain, table) pairs whose versions production must keep."""

    def versions(self) -> dict[tuple[str, str], int]:
        return {t: open_table(self.mesh.registry.location(*t), self.mesh.settings.s3).version() for t in self.tables}

    def events(self) -> int:
        return self.instance.event_log_storage.get_maximum_record_id() or 0

    def read(self, location: str, column: str) -> dict[str, int]:
        """``column`` of a daily table by day."""
        rows = self.mesh.spark.read.format("delta").load(location).collect()
        return {r["p_date"].isoformat(): r[column] for r in rows}

    def materialize(
        self, defs: dg.Definitions, keys: list[dg.AssetKey], first: str, last: str, resources: Mapping | None = None
    ) -> None:
        """Each of ``keys`` over the range, one run each, as production computed them."""
        tags = {"dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": last}
        for key in keys:
            dg.materialize(
                executable_assets(defs),
                instance=self.instance,
                resources={"mesh": self.mesh, **(resources or {})},
                selection=[key],
                tags=tags,
            )


@contextmanager
def production_home(base: Path, domains: Path, tables: list[tuple[str, str]], **settings: str) -> Iterator[Production]:
    """Production over ``domains`` under ``base``, with the ``MESH_*`` settings beside it set while it is used."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MESH_DOMAINS_DIR", str(domains))
        patch.setenv("MESH_WAREHOUSE", str(base / "warehouse"))
        patch.setenv("MESH_HOME", str(base / "home"))
        for name, value in settings.items():
            patch.setenv(name, value)
        patch.delenv("DAGSTER_HOME")
        get_settings.cache_clear()
        from mesh_assets.cli.commands import persistent_instance

        try:
            yield Production(base / "home", domains, MeshResource(), persistent_instance(), tables)
        finally:  # a failed test must not leave the next one with this home's settings
            get_settings.cache_clear()


def land_sales(spark: SparkSession, location: str, amounts: dict[str, list[int]]) -> None:
    """``raw_sales``: one row per amount, ids counted from 0 each day."""
    rows = [(i, a, date.fromisoformat(d)) for d, day in amounts.items() for i, a in enumerate(day)]
    spark.createDataFrame(rows, "id bigint, amount bigint, p_date date").write.format("delta").partitionBy(
        "p_date"
    ).save(location)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
