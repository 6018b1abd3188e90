"""The example mesh end to end: `make demo`'s materialization versus the same Spark jobs run raw.

Both sides start from the same landed sources (landing is not timed). Mesh materializes the Spark and SQL
products the way the demo does (one run for the unpartitioned products, one single-run range for the
rest), with readiness checks, staging, quality checks, events and lineage. Raw runs each product's own
transformation over the same range in dependency order and writes it with the same ``replaceWhere``,
with nothing else. The dbt models are left out of both (their raw equivalent would be dbt itself).
Run alone: ``python -m bench.demo_end_to_end --days 14``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import date
from functools import reduce
from pathlib import Path

import dagster as dg

from bench.common import ROOT, Result, print_results
from mesh_assets import MeshResource, executable_assets, get_spark, mesh_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.model.partitions import PartitionRange, ranges_of_regions
from mesh_assets.run.compute import transform
from mesh_assets.storage.writer import replace_predicate
from mesh_examples.generator import days
from mesh_examples.landing import land_all
from mesh_examples.run import DEMO_START, materialize_mesh, plan

DOMAINS = ROOT / "domains"


def raw_mesh(mesh: MeshResource, defs: dg.Definitions, first: str, last: str) -> None:
    """Every product's transformation over the partitions the demo plans for ``first``..``last`` (a date-by-region
    table's dates region by region, the weeks and months the days hold), written straight to Delta, upstream
    first."""
    spark, registry = mesh.spark, mesh.registry
    graph = MeshGraph(load_all(DOMAINS))
    log = dg.get_dagster_logger()
    planned = {
        p.key: p.partitions for p in plan(executable_assets(defs), date.fromisoformat(first), date.fromisoformat(last))
    }
    for key in defs.resolve_asset_graph().toposorted_asset_keys:
        node = graph.nodes.get((key.path[0], key.path[-1])) if len(key.path) == 2 else None
        if node is None:
            continue
        out, grain = node.output, node.table.grain
        location = registry.location(node.domain, out.table)
        if not grain.partitioned:
            df = transform(spark, registry, node, None, log, "raw", {})
            df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(location)
            registry.register(spark, node.domain, out.table)
            continue
        keys = [k for k in planned.get(key, ()) if k is not None]
        if node.table.regions:
            parts = ranges_of_regions(grain, node.table.regions, node.table.zones, keys)
        else:
            parts = [PartitionRange.from_keys(grain, keys[0], keys[-1])] if keys else []
        for part in parts:
            if node.transformation.range_aware:
                df = transform(spark, registry, node, part, log, "raw", {})
            else:
                frames = [transform(spark, registry, node, part.single(v), log, "raw", {}) for v in part.values()]
                df = reduce(lambda a, b: a.unionByName(b), frames)
            columns = [out.partition_column, out.region_column] if node.table.regions else [out.partition_column]
            predicate = replace_predicate(out.partition_column, part, region_column=out.region_column)
            df.write.format("delta").mode("overwrite").partitionBy(*columns).option("replaceWhere", predicate).save(
                location
            )
        registry.register(spark, node.domain, out.table)


def run(day_count: int = 14) -> list[Result]:
    spark = get_spark()
    window = days(DEMO_START, day_count)
    first, last = window[0].isoformat(), window[-1].isoformat()
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-demo-"))
    defs = mesh_definitions(DOMAINS, dbt=False)

    warm = MeshResource(warehouse=str(base / "warm-up"))
    land_all(spark, warm.registry, window[:1])
    raw_mesh(warm, defs, first, first)  # JIT and caches warm for both sides, not timed

    raw = MeshResource(warehouse=str(base / "raw"))
    land_all(spark, raw.registry, window)
    start = time.perf_counter()
    raw_mesh(raw, defs, first, last)
    raw_seconds = time.perf_counter() - start

    mesh = MeshResource(warehouse=str(base / "mesh"))
    land_all(spark, mesh.registry, window)
    with dg.DagsterInstance.ephemeral() as instance:
        start = time.perf_counter()
        keys = materialize_mesh(defs, instance, mesh, window[0], window[-1])
        mesh_seconds = time.perf_counter() - start
    return [
        Result(
            "demo end to end",
            f"{len(keys)} products x {day_count} days, materialized as the demo does",
            mesh_seconds,
            "the same transformations and writes, raw, upstream first",
            raw_seconds,
            notes="dbt models excluded from both sides",
            extra={"overhead_seconds": mesh_seconds - raw_seconds},
        )
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=14)
    print_results(run(parser.parse_args().days))
