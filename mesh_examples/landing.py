"""The simulated outside writer: lands the source tables the way an app export would, into Delta."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, timedelta

from pyspark.sql import SparkSession

from mesh_assets.model.grain import Grain, utc
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.model.regions import local_day
from mesh_assets.storage.tables import TableRegistry
from mesh_assets.storage.writer import replace_predicate
from mesh_examples import generator

SEED = 7
LANDED = (
    ("food_delivery", "raw_menus"),
    ("food_delivery", "raw_menu_items"),
    ("food_delivery", "raw_categories"),
    ("food_delivery", "raw_orders"),
    ("central", "raw_order_events"),
    ("central", "raw_app_events"),
    ("growth", "google_search_console"),
    ("growth", "raw_customer_changes"),
)
"""The tables :func:`land_all` writes, as (domain, table)."""


def land_food_delivery(spark: SparkSession, registry: TableRegistry, days: Iterable[date], seed: int = SEED) -> None:
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
    rng = PartitionRange.from_keys(Grain.DAILY, first.isoformat(), last.isoformat())
    (
        spark.createDataFrame(rows, generator.RAW_ORDERS_SCHEMA)
        .write.format("delta")
        .mode("overwrite")
        .partitionBy("p_date")
        .option("replaceWhere", replace_predicate("p_date", rng))
        .save(registry.location("food_delivery", "raw_orders"))
    )


def land_central(spark: SparkSession, registry: TableRegistry, days: Iterable[date], seed: int = SEED) -> None:
    """Backfill ``central.raw_order_events`` for ``days`` in one commit.

    The live ingestion commits every hour (:func:`land_order_events_hour`, :func:`ingest_hours`); a
    history load is one commit, while each hourly partition holds exactly what the hourly writer lands.
    """
    hours = [hour for day in sorted(days) for hour in generator.hours(day)]
    rows = [row for hour in hours for row in generator.raw_order_events(hour, seed)]
    land_raw_order_events(spark, registry, hours[0], hours[-1], rows)


def land_order_events_hour(spark: SparkSession, registry: TableRegistry, hour: datetime, seed: int = SEED) -> None:
    """The ingestion's hourly commit: replace one hour of ``central.raw_order_events``."""
    land_raw_order_events(spark, registry, hour, hour, generator.raw_order_events(hour, seed))


def ingest_hours(
    spark: SparkSession, registry: TableRegistry, start_hour: datetime, hours: int, seed: int = SEED
) -> list[datetime]:
    """Run the live ingestion for ``hours`` hours from ``start_hour``: one Delta commit per hour, in order.

    What ``mesh ingest`` does; the observer then reports each hour and the automation takes it from there.
    ``start_hour`` is an instant (a naive value is read as UTC); the hours landed are UTC hours.
    """
    if hours < 1:
        raise ValueError("hours must be at least 1")
    first = utc(start_hour).replace(minute=0, second=0, microsecond=0)
    landed = [first + timedelta(hours=i) for i in range(hours)]
    for hour in landed:
        land_order_events_hour(spark, registry, hour, seed)
    return landed


def land_raw_order_events(
    spark: SparkSession, registry: TableRegistry, first: datetime, last: datetime, rows: list[tuple]
) -> None:
    """Replace the hours ``first``..``last`` of ``central.raw_order_events`` with ``rows`` in one commit."""
    rng = PartitionRange(Grain.HOURLY, first, last)
    (
        spark.createDataFrame(rows, generator.RAW_ORDER_EVENTS_SCHEMA)
        .coalesce(1)  # one file per hour, not one per hour and task: an hour holds a few dozen rows
        .write.format("delta")
        .mode("overwrite")
        .partitionBy("p_hour")
        .option("replaceWhere", replace_predicate("p_hour", rng))
        .save(registry.location("central", "raw_order_events"))
    )


def land_app_events(spark: SparkSession, registry: TableRegistry, days: Iterable[date], seed: int = SEED) -> None:
    """Backfill ``central.raw_app_events`` with every 15-minute batch of each region's local ``days`` in one
    commit: from the earliest region's first local midnight (Singapore's, the day before in UTC) to the latest
    region's last (São Paulo's, the day after)."""
    days = sorted(days)
    zones = generator.APP_REGIONS.values()
    first = min(local_day(days[0], zone)[0] for zone in zones)
    last = max(local_day(days[-1], zone)[1] for zone in zones) - generator.BATCH
    rows = [row for batch in generator.batches(first, last) for row in generator.raw_app_events(batch, seed)]
    (
        spark.createDataFrame(rows, generator.RAW_APP_EVENTS_SCHEMA)
        .coalesce(1)  # one file per batch: a batch holds a few rows
        .write.format("delta")
        .mode("overwrite")
        .partitionBy("p_batch")
        .option("replaceWhere", replace_predicate("p_batch", PartitionRange(Grain.minutes(15), first, last)))
        .save(registry.location("central", "raw_app_events"))
    )


def land_growth(spark: SparkSession, registry: TableRegistry, days: Iterable[date], seed: int = SEED) -> None:
    """Write Google Search Console's daily exports and the accounts app's change exports (CDC rows) for ``days``
    into ``growth``, one commit each."""
    days = sorted(days)
    rng = PartitionRange.from_keys(Grain.DAILY, days[0].isoformat(), days[-1].isoformat())
    rows = [row for day in days for row in generator.google_search_console(day, seed)]
    (
        spark.createDataFrame(rows, generator.GOOGLE_SEARCH_CONSOLE_SCHEMA)
        .coalesce(1)
        .write.format("delta")
        .mode("overwrite")
        .partitionBy("p_date")
        .option("replaceWhere", replace_predicate("p_date", rng))
        .save(registry.location("growth", "google_search_console"))
    )
    changes = [row for day in days for row in generator.customer_changes(day, seed)]
    (
        spark.createDataFrame(changes, generator.CUSTOMER_CHANGES_SCHEMA)
        .coalesce(1)
        .write.format("delta")
        .mode("overwrite")
        .partitionBy("p_date")
        .option("replaceWhere", replace_predicate("p_date", rng))
        .save(registry.location("growth", "raw_customer_changes"))
    )


def land_all(spark: SparkSession, registry: TableRegistry, days: Iterable[date], seed: int = SEED) -> None:
    """Land every domain's sources for ``days``: what the outside writers of the example mesh produce."""
    days = sorted(days)
    land_food_delivery(spark, registry, days, seed)
    land_central(spark, registry, days, seed)
    land_app_events(spark, registry, days, seed)
    land_growth(spark, registry, days, seed)
