"""``mesh diff``'s core on real Delta tables: exact counts of a known change, per column, with example keys,
schema differences, and no key value for a classified table."""

from __future__ import annotations

from datetime import date

import pytest
from pyspark.sql import functions as F

from mesh_assets.datadiff import PartitionSpan, diff_tables, table_key, withheld_reason
from mesh_assets.graph.resolve import declared_table
from mesh_assets.model.checks import Unique
from mesh_assets.model.lifecycle import Classification


def orders(spark, n: int):
    return spark.range(n).select(
        F.col("id"),
        (F.col("id") % 7).alias("restaurant_id"),
        F.when(F.col("id") % 3 == 0, "cancelled").otherwise("delivered").alias("status"),
        (F.col("id") * 1.5).alias("amount"),
        F.when(F.col("id") % 2 == 0, F.lit("2021-06-03")).otherwise(F.lit("2021-06-04")).cast("date").alias("p_date"),
    )


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory) -> tuple[str, str]:
    """Production: 1000 orders over two days, one outside the range (2021-06-05). The other side: ids 0-9
    removed, 1000-1004 added, status flipped for ids 10-29 (20), amount changed for ids 20-49 (30), and a
    column ``note`` added; its 2021-06-05 rows differ entirely but fall outside the compared range."""
    base = tmp_path_factory.mktemp("diff")
    left, right = str(base / "left"), str(base / "right")
    prod = orders(spark, 1000).unionByName(
        spark.range(5).select(
            (F.col("id") + 5000).alias("id"),
            F.lit(1).cast("long").alias("restaurant_id"),
            F.lit("delivered").alias("status"),
            F.lit(1.0).alias("amount"),
            F.lit("2021-06-05").cast("date").alias("p_date"),
        )
    )
    prod.write.format("delta").partitionBy("p_date").save(left)
    changed = (
        orders(spark, 1005)
        .where(F.col("id") >= 10)
        .withColumn(
            "status",
            F.when(F.col("id").between(10, 29), F.lit("refunded")).otherwise(F.col("status")),
        )
        .withColumn("amount", F.when(F.col("id").between(20, 49), F.col("amount") + 1).otherwise(F.col("amount")))
        .withColumn("note", F.lit("x"))
    )
    changed.write.format("delta").partitionBy("p_date").save(right)
    return left, right


def test_a_known_change_is_counted_exactly_per_key_and_column(spark, tables):
    left, right = tables
    diff = diff_tables(spark, left, right, ["id"], PartitionSpan("p_date", "2021-06-03", "2021-06-04"))
    assert (diff.left_rows, diff.right_rows) == (1000, 995)
    assert (diff.only_left, diff.only_right) == (10, 5)
    assert diff.changed == 40  # ids 10-49: status for 10-29, amount for 20-49
    assert diff.column_changes == {"restaurant_id": 0, "status": 20, "amount": 30, "p_date": 0}
    assert diff.schema.only_right == ["note"] and diff.schema.only_left == [] and not diff.schema.retyped
    assert {e["id"] for e in diff.examples["only_left"]} <= set(range(10))
    assert {e["id"] for e in diff.examples["only_right"]} <= set(range(1000, 1005))
    assert {e["id"] for e in diff.examples["status"]} <= set(range(10, 30))
    assert 1 <= len(diff.examples["amount"]) <= 3
    assert not diff.same


def test_without_a_key_whole_rows_are_compared(spark, tables):
    left, right = tables
    diff = diff_tables(spark, left, right, (), PartitionSpan("p_date", "2021-06-03", "2021-06-04"))
    # 10 removed and 40 changed rows are only on the left; 5 added and the same 40 changed only on the right
    assert (diff.only_left, diff.only_right, diff.changed) == (50, 45, 0)
    assert diff.key == ()


def test_a_diff_of_a_table_with_itself_is_the_same(spark, tables):
    left, _ = tables
    diff = diff_tables(spark, left, left, ["id"], None)
    assert diff.same and diff.left_rows == diff.right_rows == 1005 and diff.examples == {}


def table_of(classification: Classification):
    from mesh_assets.graph.resolve import Owner
    from mesh_assets.model.product import Output

    spec = Output(table="orders", checks=[Unique(keys=["id"])])
    owner = Owner("food_delivery", "orders", "a@example.com", date(2021, 6, 1), None, (), classification)
    return declared_table(spec, owner, None)


def test_a_classified_table_shows_counts_and_no_key(spark, tables):
    left, right = tables
    table = table_of(Classification.L2)
    reason = withheld_reason(table)
    assert reason is not None and "l2" in reason
    diff = diff_tables(
        spark, left, right, table_key(table), PartitionSpan("p_date", "2021-06-03", "2021-06-04"), withheld=reason
    )
    assert diff.changed == 40 and diff.examples == {}
    assert diff.to_json()["examples"] == {} and diff.to_json()["withheld"] == reason
    assert withheld_reason(table_of(Classification.L1)) is None


def test_the_text_names_counts_columns_schema_and_example_keys(spark, tables):
    from io import StringIO

    from rich.console import Console

    from mesh_assets.cli.datadiff import print_diff

    left, right = tables
    span = PartitionSpan("p_date", "2021-06-03", "2021-06-04")
    out = StringIO()
    print_diff(diff_tables(spark, left, right, ["id"], span), "food_delivery.orders", Console(file=out, width=200))
    text = out.getvalue()
    assert "food_delivery.orders p_date 2021-06-03..2021-06-04" in text
    assert "schema: column note only on the right" in text
    assert "the tables differ" in text
    status_line = next(line for line in text.splitlines() if "status" in line)
    assert "20" in status_line and "id=" in status_line
    out = StringIO()
    reason = withheld_reason(table_of(Classification.L3))
    print_diff(diff_tables(spark, left, right, ["id"], span, withheld=reason), "t", Console(file=out, width=200))
    assert "id=" not in out.getvalue() and "example keys withheld" in out.getvalue()
