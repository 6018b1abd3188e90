"""Product unit tests in the local SparkSession: the pytest helper passes on the product's own rows and fails
with expected and actual side by side; ``mesh test`` runs the example's YAML cases and dbt's unit tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mesh_assets.cli.main import main
from mesh_assets.testing import assert_product, run_product
from mesh_assets.testing.cases import Case
from mesh_assets.testing.suite import run_case

ROOT = Path(__file__).resolve().parents[2]
RAW = {
    "id": 1,
    "placed_at": "2021-06-03 12:00:00",
    "delivered_at": "2021-06-03 12:35:00",
    "customer_id": 7,
    "restaurant_id": 3,
    "menu_id": 1,
    "menu_item_id": 11,
    "quantity": 2,
    "discount_id": None,
    "courier_id": 5,
    "city": "Lisbon",
    "status": "delivered",
    "p_date": "2021-06-03",
}


def test_the_helper_runs_the_products_own_transformation(spark):
    given = {"raw_orders": [RAW, RAW, {**RAW, "id": 2, "status": "cancelled"}]}
    rows = run_product("food_delivery/orders", given, "2021-06-03", spark=spark).collect()
    assert sorted((r.id, r.status, r.delivery_minutes) for r in rows) == [
        (1, "delivered", 35.0),
        (2, "cancelled", 35.0),
    ]
    assert_product("food_delivery/orders", given, [{"id": 1}, {"id": 2}], "2021-06-03", spark=spark)


def test_a_failing_case_shows_expected_and_actual_side_by_side(spark):
    with pytest.raises(AssertionError) as failed:
        assert_product(
            "food_delivery/orders",
            {"raw_orders": [RAW]},
            [{"id": 1, "status": "delivered", "delivery_minutes": 30.0}],
            "2021-06-03",
            spark=spark,
        )
    text = str(failed.value)
    assert "expected 1 row(s), got 1" in text
    assert "expected delivery_minutes" in text and "actual delivery_minutes" in text
    assert "30.0" in text and "* 35.0" in text  # the actual value, marked as differing
    assert "differing columns (marked *): delivery_minutes" in text


def test_a_yaml_case_that_fails_is_reported_with_its_file_and_line(spark):
    case = Case(
        Path("domains/food_delivery/orders.tests.yaml"),
        4,
        "wrong_status",
        "food_delivery",
        "orders",
        "2021-06-03",
        {"raw_orders": [RAW]},
        [{"id": 1, "status": "cancelled"}],
    )
    outcome = run_case(spark, ROOT / "domains", case)
    assert outcome.status == "failed"
    assert outcome.detail.startswith("domains/food_delivery/orders.tests.yaml:4")
    assert "cancelled" in outcome.detail and "* delivered" in outcome.detail
    assert "differing columns (marked *): status" in outcome.detail


def test_mesh_test_runs_the_examples_cases_and_the_dbt_models_unit_tests(spark, capfd, monkeypatch, mesh_home):
    """The screen shows the outcomes; dbt's own lines go to the log file, as in a terminal."""
    with open(1, "w", closefd=False) as stdout:  # Python's stdout on descriptor 1, as in a `mesh` process
        monkeypatch.setattr(sys, "stdout", stdout)
        assert main(["test", "food_delivery"]) == 0
        stdout.flush()
    out = capfd.readouterr().out
    log = (mesh_home / "logs" / "test.log").read_text()
    assert "PASSED food_delivery/orders::one_row_per_order_with_delivery_minutes" in out
    assert "PASSED food_delivery/orders_7_days::delivered_orders_of_the_last_7_days" in out
    assert "PASSED dbt restaurant_daily_orders::restaurant_daily_orders_counts_by_status" in out
    assert "PASSED food_delivery/weekly_city_orders::orders_of_the_week_per_city" in out
    assert "4 passed, 0 failed" in out
    assert "Running with dbt" in log and "Running with dbt" not in out, out
    assert f"Spark's and dbt's output: {mesh_home / 'logs' / 'test.log'}" in out
    assert "PASSED food_delivery/orders::one_row_per_order_with_delivery_minutes" in out
    assert "PASSED food_delivery/orders_7_days::delivered_orders_of_the_last_7_days" in out
    assert "PASSED dbt restaurant_daily_orders::restaurant_daily_orders_counts_by_status" in out
    assert "PASSED food_delivery/weekly_city_orders::orders_of_the_week_per_city" in out
    assert "4 passed, 0 failed" in out
