"""The Dagster resource every Mesh asset uses: the process's SparkSession and the table registry."""

from __future__ import annotations

from functools import lru_cache

import dagster as dg
from pyspark.sql import SparkSession

from mesh_assets.engine.session import get_spark
from mesh_assets.settings import get_settings
from mesh_assets.storage.tables import TableRegistry


@lru_cache(maxsize=8)
def _registry(warehouse: str) -> TableRegistry:
    return TableRegistry(warehouse)


class MeshResource(dg.ConfigurableResource):
    """Spark and storage for products; ``warehouse`` overrides the settings' warehouse (tests, tools)."""

    warehouse: str | None = None

    @property
    def spark(self) -> SparkSession:
        return get_spark()

    @property
    def registry(self) -> TableRegistry:
        return _registry(self.warehouse or get_settings().warehouse_uri)
