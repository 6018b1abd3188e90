"""Clean, deduplicated orders: one row per order and day, with its delivery time."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mesh_assets import AcceptedValues, Freshness, Input, NotNull, Output, Product, Unique, VolumeAnomaly

orders = Product(
    "orders",
    description="Orders placed in the app, one row per order, partitioned by the day it was placed.",
    tier="t1",  # what the whole mesh reads: above the domain's t2, and it holds customers' orders (l2)
    classification="l2",
)


@orders.transformation(
    Output(
        table="orders",
        published=True,
        description="One row per order placed on p_date.",
        checks=[
            NotNull(columns=["id", "placed_at", "restaurant_id"]),
            Unique(keys=["id"]),
            AcceptedValues(column="status", values=["delivered", "cancelled"]),
            VolumeAnomaly(k=4, trailing=14, severity="warn"),
            Freshness(max_lag_hours=30),  # a t1 product's promise: yesterday's orders by 06:00 UTC
        ],
    ),
    inputs={"raw_orders": Input(table="raw_orders")},
)
def build_orders(raw_orders: DataFrame) -> DataFrame:
    return raw_orders.dropDuplicates(["id"]).select(
        "id",
        "placed_at",
        "customer_id",
        "restaurant_id",
        "menu_id",
        "menu_item_id",
        "quantity",
        "discount_id",
        "courier_id",
        "city",
        "status",
        ((F.unix_timestamp("delivered_at") - F.unix_timestamp("placed_at")) / 60)
        .cast("double")
        .alias("delivery_minutes"),
        "p_date",
    )
