"""Rolling 7-day delivery times per restaurant: what the operations team watches every morning."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mesh_assets import Input, Output, Product, chat, last

delivery_times = Product(
    "delivery_times",
    description="Delivery performance over rolling 7-day windows.",
    owner="food-ops@example.com",  # the operations team's, not the domain's data team
    contacts=[chat("#food-ops")],
)


@delivery_times.transformation(
    Output(
        table="delivery_times_7_days",
        published=True,
        description="For day D and each restaurant: delivered orders and delivery minutes over the 7 days ending on D.",
    ),
    inputs={"orders": Input(table="orders", window=last(7))},
)
def delivery_times_7_days(orders: DataFrame) -> DataFrame:
    delivered = orders.where(F.col("status") == "delivered")
    return delivered.groupBy("restaurant_id", "city").agg(
        F.count("*").alias("delivered_orders"),
        F.round(F.avg("delivery_minutes"), 3).alias("avg_delivery_minutes"),
        F.max("delivery_minutes").alias("max_delivery_minutes"),
    )
