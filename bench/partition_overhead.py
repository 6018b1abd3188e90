"""Per-partition overhead: one partition with about a second of Spark work, raw versus through Mesh.

Raw is the same read-aggregate-replaceWhere in a warm SparkSession; ``materialize`` runs the product
in-process (readiness, staging, checks, commit, events). Run alone:
``python -m bench.partition_overhead --rows-per-day 400000``.
"""

from __future__ import annotations

import argparse

from bench.common import Result, median_of, print_results
from bench.workload import Workload
from mesh_assets.engine.session import get_spark


def run(rows_per_day: int = 400_000, repeat: int = 5) -> list[Result]:
    work = Workload(get_spark(), days=3, rows_per_day=rows_per_day)
    work.raw(1, 1)
    work.materialize(1)
    raw = median_of(lambda: work.raw(1, 1), repeat)
    mesh = median_of(lambda: work.materialize(1), repeat)
    return [
        Result(
            "per-partition overhead",
            f"materialize in-process, {rows_per_day:,} rows",
            mesh,
            "raw Spark job, warm session",
            raw,
            "<= 1.15x raw",
            mesh <= 1.15 * raw,
            extra={"overhead_seconds": mesh - raw},
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows-per-day", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_results(run(args.rows_per_day, args.repeat))
