"""Order descriptors: the company-wide daily view of each order, the one other domains build on.

Python rather than SQL: the status is the last event of the day, which reads more plainly as a
``max_by`` over a struct than as a window query.
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mesh_assets import Freshness, Input, NotNull, Output, Product, Unique, same

order_descriptors = Product(
    "order_descriptors",
    description="One row per order and day, describing the order as of that day's events.",
)


def at(event_type: str) -> F.Column:
    """When the order's ``event_type`` event happened on this day (null if it happened another day)."""
    return F.max(F.when(F.col("event_type") == event_type, F.col("event_at")))


@order_descriptors.transformation(
    Output(
        table="order_descriptors",
        published=True,
        description="For day D, every order with an event on D: its payload, status at the end of D and event times.",
        checks=[NotNull(columns=["order_id"]), Unique(keys=["order_id"]), Freshness(max_lag_hours=30)],
    ),
    inputs={"raw_order_events": Input(table="raw_order_events", window=same())},
)
def build_order_descriptors(raw_order_events: DataFrame) -> DataFrame:
    # A daily output reading an hourly input with window ``same`` receives exactly D's 24 hours.
    events = raw_order_events.dropDuplicates(["event_id"])
    return events.groupBy("order_id").agg(
        F.first("city").alias("city"),
        F.first("customer_id").alias("customer_id"),
        F.first("store_id").alias("store_id"),
        F.max("courier_id").alias("courier_id"),
        F.first("placed_at").alias("placed_at"),
        F.max_by("event_type", "event_at").alias("status"),
        at("picked_up").alias("picked_up_at"),
        at("delivered").alias("delivered_at"),
        at("cancelled").alias("cancelled_at"),
        F.max("event_at").alias("last_event_at"),
        F.count("*").cast("int").alias("events"),
        F.first("pickup_lat").alias("pickup_lat"),
        F.first("pickup_lon").alias("pickup_lon"),
        F.first("dropoff_lat").alias("dropoff_lat"),
        F.first("dropoff_lon").alias("dropoff_lon"),
    )
