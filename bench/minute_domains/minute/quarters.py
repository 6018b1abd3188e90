"""The minute-backfill benchmark's PySpark product: the same aggregation as ``clicks``'s SQL, given the whole
range at once (it reads ``clicks``'s external quarter-hour batches)."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mesh_assets import Input, Output, Product, chat

quarters = Product(
    "quarters",
    owner="bench@example.com",
    contacts=[chat("#bench")],
    start_date="2024-01-01",
)


def aggregate(clicks: DataFrame) -> DataFrame:
    """Shared with the raw baseline so both do exactly the same Spark work."""
    return clicks.groupBy("p_ts", (F.col("id") % 7).alias("bucket")).agg(
        F.count("*").alias("clicks"), F.sum("amount").alias("amount")
    )


@quarters.transformation(
    Output(table="quarter_sums", partitioning="15min", partition_column="p_ts"),
    inputs={"clicks": Input(table="raw_clicks")},
    range_aware=True,
)
def quarter_sums(clicks: DataFrame) -> DataFrame:
    return aggregate(clicks)
