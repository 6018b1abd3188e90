"""Unit tests of data products: a product's transformation run on rows a test gives, in the local SparkSession,
no warehouse, no Dagster instance, no network. From pytest::

    from mesh_assets.testing import assert_product

    def test_orders_drops_duplicates():
        assert_product(
            "food_delivery/orders",
            partition="2021-06-03",
            given={"raw_orders": [{"id": 1, ...}, {"id": 1, ...}]},
            expect=[{"id": 1}],
        )

and from ``<product>.tests.yaml`` files beside the specs, run by ``mesh test``.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Rows = list[dict[str, Any]]


def run_product(
    table: str,
    given: dict[str, Rows | DataFrame],
    partition: str | date | None = None,
    *,
    spark: SparkSession | None = None,
    domains_dir: str | Path | None = None,
) -> DataFrame:
    """The rows ``table`` (``<domain>/<table>``) computes from ``given`` (each input's rows or DataFrame, by
    input name) for ``partition``, by its product's own transformation."""
    from mesh_assets.storage.resource import MeshResource
    from mesh_assets.testing.runner import Given, run

    domain, _, name = table.replace(".", "/", 1).partition("/")
    key = partition.isoformat() if isinstance(partition, date) else partition
    resource = MeshResource()
    folder = Path(domains_dir) if domains_dir is not None else resource.settings.domains_dir
    return run(spark or resource.spark, folder, Given(domain, name, key, dict(given)))


def assert_product(
    table: str,
    given: dict[str, Rows | DataFrame],
    expect: Rows,
    partition: str | date | None = None,
    *,
    spark: SparkSession | None = None,
    domains_dir: str | Path | None = None,
) -> None:
    """Fail with expected and actual rows side by side, differing columns marked, unless ``table`` computes
    exactly ``expect``'s rows (any order) on the columns they name."""
    from mesh_assets.testing.rows import compare, render

    actual = [
        r.asDict(recursive=True)
        for r in run_product(table, given, partition, spark=spark, domains_dir=domains_dir).collect()
    ]
    mismatch = compare(expect, actual)
    if mismatch is not None:
        raise AssertionError(render(table, mismatch, len(expect), len(actual)))


__all__ = ["assert_product", "run_product"]
