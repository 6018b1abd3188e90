"""The Dagster resource every Mesh asset uses: the process's SparkSession, the table registry and the settings.

Definitions hold this resource, so it imports Spark only when a run first asks for it: a code location
loads without PySpark. Run-time code reaches configuration through it, not by reading settings itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg

from mesh_assets.settings import MeshSettings, get_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mesh_assets.storage.environment import Environment
    from mesh_assets.storage.tables import TableRegistry


class MeshResource(dg.ConfigurableResource):
    """Spark and storage for products; ``warehouse`` overrides the settings' warehouse (tests, tools)."""

    warehouse: str | None = None

    @property
    def spark(self) -> SparkSession:
        from mesh_assets.engine.session import get_spark

        return get_spark(self.settings)

    @property
    def settings(self) -> MeshSettings:
        return get_settings()

    @property
    def registry(self) -> TableRegistry:
        from mesh_assets.storage.tables import TableRegistry

        settings = self.settings
        return TableRegistry(self.warehouse or settings.warehouse_uri, settings.s3, self.environment)

    @property
    def environment(self) -> Environment | None:
        """The environment runs are in (the ``environment`` setting), read from its manifest; None in production."""
        from mesh_assets.storage.environment import load

        folder = self.settings.environment_dir
        return None if folder is None else load(folder)


def get_spark() -> SparkSession:
    """The process's SparkSession with the configured settings (a run's is ``MeshResource.spark``, the same)."""
    return MeshResource().spark
