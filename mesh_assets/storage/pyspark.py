"""dagster-pyspark's resource over Mesh's one SparkSession, for plain Dagster assets kept beside Mesh products.

A team's assets written the way Dagster's docs show take a ``PySparkResource`` or ``LazyPySparkResource``
parameter and read ``.spark_session``. In a domain's code location that parameter gets this resource: an
instance of both classes whose session is the process's own (:func:`~mesh_assets.engine.session.get_spark`,
created on first use), the one Mesh's products, dbt, checks and the observer share, so a plain asset and a
product in one run start one driver, see one configuration (``mesh.yaml``'s Spark settings, Spark Connect,
s3a credentials) and read Mesh's tables as ``<domain>.<table>``. Only a location with such an asset imports
this module, and dagster-pyspark with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dagster_pyspark import LazyPySparkResource, PySparkResource
from pydantic import field_validator

from mesh_assets.storage.resource import MeshResource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PYSPARK_KEYS = ("pyspark", "lazy_pyspark")
"""The resource keys Dagster's docs give the two resources: what a plain asset's parameter is usually called."""


class MeshPySparkResource(PySparkResource, LazyPySparkResource):
    """Mesh's SparkSession as dagster-pyspark's resource (either class, as the asset's annotation says).

    ``spark_config`` is refused unless empty: the session is shared by every asset of the process and
    configured once, by Mesh's settings. ``warehouse`` overrides the settings' warehouse, as on ``MeshResource``.
    """

    spark_config: dict[str, Any] = {}
    warehouse: str | None = None

    @field_validator("spark_config")
    @classmethod
    def _shared_session(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value:
            raise ValueError(
                "Mesh's SparkSession is shared by every asset of the process and configured by Mesh's settings "
                "(mesh.yaml `spark:` or MESH_SPARK__*), not per resource: remove spark_config"
            )
        return value

    def setup_for_execution(self, context: Any) -> None:
        """Nothing to start: the session is created the first time an asset asks for it."""

    @property
    def spark_session(self) -> SparkSession:
        return MeshResource(warehouse=self.warehouse).spark

    @property
    def spark_context(self) -> Any:
        return self.spark_session.sparkContext

    def table(self, ref: str) -> DataFrame:
        """A Mesh table by its ``<domain>.<table>`` name, registered in the session's catalog and read as it
        stands (its latest Delta version)."""
        mesh = MeshResource(warehouse=self.warehouse)
        return mesh.spark.table(mesh.registry.register(mesh.spark, *_parts(ref)))

    def location(self, ref: str) -> str:
        """Where the table ``<domain>.<table>`` lives in Mesh's warehouse: where an asset writes a table that
        Mesh products read (declared to Mesh as an ``ExternalTable`` of the domain)."""
        return MeshResource(warehouse=self.warehouse).registry.location(*_parts(ref))


def _parts(ref: str) -> tuple[str, str]:
    domain, dot, name = ref.partition(".")
    if not dot:
        raise ValueError(f"{ref!r} is not a <domain>.<table> name")
    return domain, name
