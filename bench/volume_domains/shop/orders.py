"""The volume benchmark's products: a day's clean orders behind two blocking checks, and a 7-day window."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mesh_assets import AcceptedValues, ExternalTable, Input, NotNull, Output, Product, chat

orders = Product(
    "orders",
    owner="bench@example.com",
    contacts=[chat("#bench")],
    start_date="2021-06-01",
    external=[ExternalTable(table="raw_orders", partition_column="p_date")],
)


def clean_orders(raw_orders: DataFrame) -> DataFrame:
    """Shared with the raw baseline so both do exactly the same Spark work."""
    return raw_orders.select(
        "order_id",
        "store_id",
        "customer_id",
        "status",
        "amount",
        (F.col("amount") * (1 - F.col("discount"))).alias("paid"),
        "placed_at",
        "p_date",
    )


@orders.transformation(
    Output(
        table="orders",
        published=True,
        checks=[
            NotNull(columns=["order_id", "store_id", "placed_at"]),
            AcceptedValues(column="status", values=["delivered", "cancelled", "refunded"]),
        ],
    ),
    inputs={"raw_orders": Input(table="raw_orders")},
    range_aware=True,
)
def build_orders(raw_orders: DataFrame) -> DataFrame:
    return clean_orders(raw_orders)
