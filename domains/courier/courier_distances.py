"""How far couriers travel per order: Glovo's DagFactory example, on Mesh.

Two steps, as in the original: the route points of each delivered order, then per-order attributes
computed from them. Points are kept as their own table so other courier metrics (waiting points,
multi-pickup routes) can join the same intermediate without recomputing it.
"""

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from mesh_assets import Input, Output, Product

EARTH_RADIUS_KM = 6371.0

courier_distances = Product(
    "courier_distances",
    description="Distances couriers travel per delivered order, from central's order descriptors.",
)


def haversine_km(lat1: Column, lon1: Column, lat2: Column, lon2: Column) -> Column:
    """Great-circle distance between two points in km: straight-line, since routes are not tracked."""
    a = F.pow(F.sin(F.radians(lat2 - lat1) / 2), 2) + F.cos(F.radians(lat1)) * F.cos(F.radians(lat2)) * F.pow(
        F.sin(F.radians(lon2 - lon1) / 2), 2
    )
    return 2 * EARTH_RADIUS_KM * F.asin(F.sqrt(a))


@courier_distances.transformation(
    Output(
        table="courier_distances_points_intermediate",
        description="For day D, the pickup and dropoff points of every order delivered on D, in route order.",
    ),
    inputs={
        # Another domain's table: expect it within 8 hours of the day's end, and wait at most 8 hours for it.
        "order_descriptors": Input(table="central.order_descriptors", freshness_hours=8, timeout_hours=8),
    },
)
def courier_distances_points_intermediate(order_descriptors: DataFrame) -> DataFrame:
    delivered = order_descriptors.where(F.col("status") == "delivered")
    keys = ["order_id", "courier_id", "city"]
    pickup = delivered.select(
        *keys,
        F.lit(1).alias("point_seq"),
        F.lit("pickup").alias("point_type"),
        F.col("pickup_lat").alias("latitude"),
        F.col("pickup_lon").alias("longitude"),
        F.col("picked_up_at").alias("point_at"),
    )
    dropoff = delivered.select(
        *keys,
        F.lit(2).alias("point_seq"),
        F.lit("dropoff").alias("point_type"),
        F.col("dropoff_lat").alias("latitude"),
        F.col("dropoff_lon").alias("longitude"),
        F.col("delivered_at").alias("point_at"),
    )
    return pickup.unionByName(dropoff)


@courier_distances.transformation(
    Output(
        table="courier_distances_order_level_attributes",
        published=True,
        description="For day D, one row per delivered order: distance travelled, time on the road and speed.",
    ),
    inputs={"points": Input(table="courier_distances_points_intermediate")},
)
def courier_distances_order_level_attributes(points: DataFrame) -> DataFrame:
    route = Window.partitionBy("order_id").orderBy("point_seq")
    legs = points.select(
        "order_id",
        "courier_id",
        "city",
        "point_seq",
        "point_at",
        haversine_km(
            F.lag("latitude").over(route), F.lag("longitude").over(route), F.col("latitude"), F.col("longitude")
        ).alias("leg_km"),
    )
    orders = legs.groupBy("order_id", "courier_id", "city").agg(
        F.round(F.sum("leg_km"), 3).alias("distance_km"),
        # Null when the pickup happened the day before: only D's events are in D's descriptors.
        (
            (F.unix_timestamp(F.max_by("point_at", "point_seq")) - F.unix_timestamp(F.min_by("point_at", "point_seq")))
            / 60
        )
        .cast("double")
        .alias("route_minutes"),
        F.count("*").cast("int").alias("points"),
    )
    return orders.select(
        "order_id",
        "courier_id",
        "city",
        "distance_km",
        F.round("route_minutes", 2).alias("route_minutes"),
        F.round(F.col("distance_km") / (F.col("route_minutes") / 60), 2).alias("avg_speed_kmh"),
        F.when(F.col("distance_km") < 1, "<1km")
        .when(F.col("distance_km") < 3, "1-3km")
        .when(F.col("distance_km") < 5, "3-5km")
        .otherwise(">5km")
        .alias("distance_band"),
    )
