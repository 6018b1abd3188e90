"""The table registry: ``(domain, table)`` -> Delta location, and ``<domain>.<table>`` names in Spark SQL.

There is no shared metastore: each session registers the tables it touches in its own in-memory catalog,
pointing at the Delta location, so any process reads ``central.order_descriptors`` the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from mesh_assets.spec.names import check_identifier


class TableNotFoundError(LookupError):
    """A registered name whose Delta table has never been written."""


@dataclass
class TableRegistry:
    warehouse: str
    _registered: dict[int, set[tuple[str, str]]] = field(default_factory=dict, repr=False)

    def location(self, domain: str, table: str) -> str:
        return f"{self.warehouse.rstrip('/')}/{check_identifier(domain)}/{check_identifier(table)}"

    def exists(self, spark: SparkSession, domain: str, table: str) -> bool:
        return DeltaTable.isDeltaTable(spark, self.location(domain, table))

    def register(self, spark: SparkSession, domain: str, table: str) -> str:
        """Make ``<domain>.<table>`` resolvable in ``spark``; returns the qualified name."""
        name = f"{check_identifier(domain)}.{check_identifier(table)}"
        seen = self._registered.setdefault(id(spark), set())
        if (domain, table) in seen and spark.catalog.tableExists(name):
            return name
        location = self.location(domain, table)
        if not DeltaTable.isDeltaTable(spark, location):
            raise TableNotFoundError(f"table {name} has no Delta table at {location} yet")
        if not spark.catalog.databaseExists(domain):
            spark.sql(f"CREATE DATABASE IF NOT EXISTS `{domain}`")
        if not spark.catalog.tableExists(name):
            spark.catalog.createTable(name, path=location, source="delta")
        seen.add((domain, table))
        return name
