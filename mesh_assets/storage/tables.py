"""The table registry: ``(domain, table)`` -> Delta location, and ``<domain>.<table>`` names in Spark SQL.

There is no shared metastore: each session registers the tables it touches in its own in-memory catalog,
pointing at the Delta location, so any process reads ``central.order_descriptors`` the same way. Sessions of
one Spark Connect server share that catalog; registering there tolerates another session having been first.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from mesh_assets.model.names import check_identifier
from mesh_assets.settings import S3Settings
from mesh_assets.storage.delta import is_delta_table
from mesh_assets.storage.environment import Environment


class TableNotFoundError(LookupError):
    """A registered name whose Delta table has never been written."""


_SESSION_NAMES: weakref.WeakKeyDictionary[SparkSession, dict[str, str]] = weakref.WeakKeyDictionary()
"""Per live SparkSession: registered ``domain.table`` name -> the Delta location it points at (forgotten with
the session, so a new session never inherits names it does not have)."""


def _registered_location(spark: SparkSession, domain: str, table: str) -> str | None:
    """Where the catalog's ``domain.table`` points, from its catalog entry (no read of the Delta log)."""
    rows = spark.sql(f"SHOW TABLE EXTENDED IN `{domain}` LIKE '{table}'").collect()
    for line in rows[0]["information"].splitlines() if rows else []:
        if line.startswith("Location: "):
            return line.removeprefix("Location: ")
    return None


def _table_exists(spark: SparkSession, domain: str, table: str) -> bool:
    """Whether the catalog has ``domain.table``; an entry whose Delta table was deleted since (a dropped
    environment's) is forgotten, as Spark cannot even tell it exists."""
    try:
        return spark.catalog.tableExists(f"{domain}.{table}")
    except AnalysisException as exc:
        if exc.getCondition() != "DELTA_PATH_DOES_NOT_EXIST":
            raise
    spark.sql(f"DROP TABLE IF EXISTS `{domain}`.`{table}`")
    return False


@dataclass
class TableRegistry:
    warehouse: str
    s3: S3Settings = field(default_factory=S3Settings)
    """How an object-store warehouse is reached (endpoint, region); a local one needs nothing."""
    environment: Environment | None = None
    """An environment's overlay: the tables it computes live under its own root, every other one in
    ``warehouse``, read in place."""

    def location(self, domain: str, table: str) -> str:
        if self.environment is not None and self.environment.computes(domain, table):
            return self.environment.location(domain, table)
        return f"{self.warehouse.rstrip('/')}/{check_identifier(domain)}/{check_identifier(table)}"

    def exists(self, spark: SparkSession, domain: str, table: str) -> bool:
        return is_delta_table(spark, self.location(domain, table))

    def register(self, spark: SparkSession, domain: str, table: str) -> str:
        """Make ``<domain>.<table>`` resolvable in ``spark``; returns the qualified name.

        A session holds one catalog; when another registry (another warehouse) registered the same name
        before, the name is re-pointed here rather than silently reading the other warehouse.
        """
        name = f"{check_identifier(domain)}.{check_identifier(table)}"
        location = self.location(domain, table)
        names = _SESSION_NAMES.setdefault(spark, {})
        if names.get(name) == location and _table_exists(spark, domain, table):
            return name
        if not is_delta_table(spark, location):
            raise TableNotFoundError(f"table {name} has no Delta table at {location} yet")
        if not spark.catalog.databaseExists(domain):
            spark.sql(f"CREATE DATABASE IF NOT EXISTS `{domain}`")
        if _table_exists(spark, domain, table):
            if _registered_location(spark, domain, table) in {location, f"file:{location}"}:
                names[name] = location  # a session sharing the catalog registered this very table
                return name
            spark.sql(f"DROP TABLE IF EXISTS `{domain}`.`{table}`")
        try:
            spark.catalog.createTable(name, path=location, source="delta")
        except AnalysisException as exc:  # a session sharing the catalog (Spark Connect, a metastore) was first
            if exc.getCondition() != "TABLE_OR_VIEW_ALREADY_EXISTS":
                raise
        names[name] = location
        return name
