"""The README's operator guide ("Read a failed check"), on the example's own ``food_delivery.orders``: what a
refused day's check result shows for a classified table, and where its failing rows are instead."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from mesh_assets.checks.evaluate import evaluate
from mesh_assets.checks.results import evaluation
from mesh_assets.graph.discovery import load_domain
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.grain import Grain
from mesh_assets.model.lifecycle import Classification
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.tables import TableRegistry
from mesh_examples import generator
from mesh_examples.landing import land_raw_orders

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def test_the_operator_guide_of_orders_finds_a_refused_days_rows_where_it_says(spark, tmp_path) -> None:
    """README, "Read a failed check": ``food_delivery.orders`` is classified ``l2``, so its failed
    ``accepted_values_status`` shows ``failing_rows`` and ``failing_columns``, no ``failing_sample``; the rows
    are found in the refused day of ``food_delivery.raw_orders`` by the check's condition."""
    day = date(2021, 6, 4)
    raw = generator.raw_orders(day)
    lost = (max(r[0] for r in raw) + 1, *raw[0][1:12], "lost", day)  # a status the app does not know
    registry = TableRegistry(str(tmp_path / "warehouse"))
    land_raw_orders(spark, registry, day, day, [*raw, lost])

    product = next(p for p in load_domain(ROOT / "domains" / "food_delivery").products if p.name == "orders")
    orders = next(tables_of(product))
    assert (orders.ref, orders.classification) == ("food_delivery.orders", Classification.L2)
    landed = spark.read.format("delta").load(registry.location("food_delivery", "raw_orders"))
    staged = product.transformations[0].fn(landed)  # the product's own transformation, as a run computes it
    part = PartitionRange.from_keys(Grain.DAILY, day.isoformat(), day.isoformat())
    failed = [o for o in evaluate(spark, orders, staged, part) if not o.passed]
    assert [o.describe() for o in failed] == [
        f"check accepted_values_status on partition {day} failed (1 failing rows)"
    ]
    metadata = {k: v.value for k, v in evaluation(orders.key, failed[0]).metadata.items()}
    assert "failing_sample" not in metadata
    assert metadata["failing_rows"] == 1 and "status" in metadata["failing_columns"].split(", ")

    where_it_says = landed.where(f"p_date = DATE'{day}' AND status NOT IN ('delivered', 'cancelled')")
    assert [(r["id"], r["status"]) for r in where_it_says.collect()] == [(lost[0], "lost")]
