"""The simulated outside writer: lands the source tables the way an app export would, into Delta."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from pyspark.sql import SparkSession

from mesh_assets.demo import generator
from mesh_assets.storage.partitions import PartitionRange
from mesh_assets.storage.tables import TableRegistry
from mesh_assets.storage.writer import replace_predicate


def land_food_delivery(spark: SparkSession, registry: TableRegistry, days: Iterable[date], seed: int = 7) -> None:
    """Write ``food_delivery``'s raw exports for ``days`` (each day replaced, so landing twice is harmless)."""
    cat = generator.catalogue(seed)
    for table, rows, schema in (
        ("raw_menus", cat.menus, generator.MENUS_SCHEMA),
        ("raw_menu_items", cat.menu_items, generator.MENU_ITEMS_SCHEMA),
        ("raw_categories", cat.categories, generator.CATEGORIES_SCHEMA),
    ):
        spark.createDataFrame(rows, schema).write.format("delta").mode("overwrite").save(
            registry.location("food_delivery", table)
        )
    days = sorted(days)
    rows = [row for day in days for row in generator.raw_orders(day, seed)]
    land_raw_orders(spark, registry, days[0], days[-1], rows)


def land_raw_orders(spark: SparkSession, registry: TableRegistry, first: date, last: date, rows: list[tuple]) -> None:
    """Replace the days ``first``..``last`` of ``food_delivery.raw_orders`` with ``rows`` in one commit."""
    rng = PartitionRange.from_keys("daily", first.isoformat(), last.isoformat())
    (
        spark.createDataFrame(rows, generator.RAW_ORDERS_SCHEMA)
        .write.format("delta")
        .mode("overwrite")
        .partitionBy("p_date")
        .option("replaceWhere", replace_predicate("p_date", rng))
        .save(registry.location("food_delivery", "raw_orders"))
    )
