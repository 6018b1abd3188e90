"""Promotion against recomputation: a change to a daily table built into an environment over 30 days, then
published to production by ``mesh apply --from-env`` (:func:`mesh_assets.cli.environments.promote_from`: the plan,
then one Delta commit of the environment's files per table, no Spark job), against recomputing the same 30
partitions in production with the changed code (one run over the range, the way ``mesh apply`` would).

The promotion is timed whole, its planning included; the recomputation is the run alone. Each is measured once:
a promotion publishes, so a second one would have nothing left to do.
Run alone: ``python -m bench.promotion --days 30 --rows 20000``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from bench.common import Result, print_results

START = date(2021, 6, 1)
SALES = """
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mesh_assets import ExternalTable, Input, Output, Product, chat

sales = Product(
    "sales",
    owner="sales@example.com",
    contacts=[chat("#sales")],
    start_date="2021-06-01",
    external=[ExternalTable(table="raw_sales", published=True)],
)


@sales.transformation(Output(table="sales_by_store", published=True), inputs={"raw": Input(table="raw_sales")})
def sales_by_store(raw: DataFrame) -> DataFrame:
    return raw.groupBy("store").agg(F.sum("amount").alias("amount"), F.count("*").alias("sales"))
"""
CHANGED = 'F.sum("amount").alias("amount")', '(F.sum("amount") * 10).alias("amount")'


def run(days: int = 30, rows: int = 20_000) -> list[Result]:
    import dagster as dg
    from pyspark.sql import functions as F
    from rich.console import Console

    from mesh_assets import MeshResource, executable_assets, get_spark, mesh_definitions
    from mesh_assets.automation.observe_now import observe_now
    from mesh_assets.cli.commands import persistent_instance
    from mesh_assets.cli.environments import promote_from
    from mesh_assets.cli.main import main
    from mesh_assets.settings import get_settings

    base = Path(tempfile.mkdtemp(prefix="mesh-bench-promotion-"))
    domain = base / "domains" / "tr"
    domain.mkdir(parents=True)
    (domain / "definitions.py").write_text(
        "from mesh_assets import domain_definitions\n\ndefs = domain_definitions(__file__)\n"
    )
    (domain / "sales.py").write_text(SALES)
    saved = dict(os.environ)
    os.environ.update(
        MESH_DOMAINS_DIR=str(base / "domains"), MESH_WAREHOUSE=str(base / "warehouse"), MESH_HOME=str(base / "home")
    )
    os.environ.pop("DAGSTER_HOME", None)
    os.environ.pop("MESH_ENVIRONMENT", None)
    get_settings.cache_clear()
    first, last = START.isoformat(), (START + timedelta(days=days - 1)).isoformat()
    span = {"dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": last}
    key = dg.AssetKey(["tr", "sales_by_store"])
    try:
        spark, mesh, instance = get_spark(), MeshResource(), persistent_instance()
        raw = spark.range(days * rows).select(
            (F.col("id") % 50).alias("store"),
            (F.col("id") % 997).alias("amount"),
            F.date_add(F.lit(START), (F.col("id") / rows).cast("int")).alias("p_date"),
        )
        raw.write.format("delta").partitionBy("p_date").save(mesh.registry.location("tr", "raw_sales"))

        def recompute() -> float:
            defs = mesh_definitions()
            observe_now(defs, instance, mesh, {})
            started = time.perf_counter()
            done = dg.materialize(
                executable_assets(defs), instance=instance, resources={"mesh": mesh}, selection=[key], tags=span
            )
            assert done.success
            return time.perf_counter() - started

        recompute()  # production, before the change
        sales = domain / "sales.py"
        sales.write_text(SALES.replace(*CHANGED))
        assert main(["apply", "--env", "bench", "--from", first, "--to", last]) == 0
        args = argparse.Namespace(from_env="bench", base=None, dry_run=False)
        started = time.perf_counter()
        assert promote_from(args, Console(quiet=True), instance) is None
        promoted = time.perf_counter() - started
        published = spark.read.format("delta").load(mesh.registry.location("tr", "sales_by_store"))
        assert published.agg(F.sum("amount")).first()[0] == raw.agg(F.sum("amount")).first()[0] * 10
        recomputed = recompute()  # the same change recomputed in production instead
        instance.dispose()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        get_settings.cache_clear()
        shutil.rmtree(base, ignore_errors=True)
    return [
        Result(
            "promotion",
            f"promote a {days}-day change built in an environment (mesh apply --from-env, planning included)",
            promoted,
            f"recompute the {days} days in production (one run)",
            recomputed,
            "<= 0.2x recompute (5x faster)",
            promoted <= 0.2 * recomputed,
            notes=f"{days * rows:,} input rows",
        )
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rows", type=int, default=20_000)
    options = parser.parse_args()
    print_results(run(options.days, options.rows))
