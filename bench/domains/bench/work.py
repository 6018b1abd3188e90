"""The benchmark product: a daily aggregation with about a second of Spark work per partition."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mesh_assets import ExternalTable, Input, Output, Product, chat

work = Product(
    "work",
    owner="bench@example.com",
    contacts=[chat("#bench")],
    start_date="2024-01-01",
    external=[ExternalTable(table="events")],
)


def aggregate(events: DataFrame) -> DataFrame:
    """Shared with the raw baseline so both do exactly the same Spark work."""
    return events.groupBy("p_date", (F.col("id") % 97).alias("bucket")).agg(
        F.count("*").alias("events"), F.sum("amount").alias("amount"), F.countDistinct("user").alias("users")
    )


@work.transformation(Output(table="daily_work"), inputs={"events": Input(table="events")}, range_aware=True)
def daily_work(events: DataFrame) -> DataFrame:
    return aggregate(events)
