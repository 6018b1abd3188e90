"""A year's backfill: raw Spark over the range (the floor) versus a single-run backfill and per-partition runs.

Raw and single-run are timed alternately ``repeat`` times and compared by their medians, so a busy moment
of a shared machine does not land on one side only. Per-partition runs are timed on a sample of days and
extrapolated to the year (a full sequential year takes far too long to be worth measuring every time).
Run alone: ``python -m bench.backfill --days 365``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import Result, print_results, timed
from bench.workload import Workload
from mesh_assets import get_spark


def run(days: int = 365, rows_per_day: int = 20_000, sample: int = 5, repeat: int = 3) -> list[Result]:
    work = Workload(get_spark(), days=days, rows_per_day=rows_per_day)
    work.raw(0, 0)
    work.materialize(0)
    raws, singles = [], []
    for _ in range(repeat):
        raws.append(timed(lambda: work.raw(0, days - 1)))
        singles.append(timed(lambda: work.materialize(0, days - 1)))
    raw, single = statistics.median(raws), statistics.median(singles)
    start = time.perf_counter()
    for day in range(sample):
        work.materialize(day)
    per_partition = (time.perf_counter() - start) / sample * days
    return [
        Result(
            "backfill",
            f"{days} daily partitions, single run",
            single,
            "raw Spark over the range",
            raw,
            "<= 1.2x raw",
            single <= 1.2 * raw,
        ),
        Result(
            "backfill",
            f"{days} daily partitions, one run per partition (extrapolated from {sample})",
            per_partition,
            "raw Spark over the range",
            raw,
            "",
            None,
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--rows-per-day", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print_results(run(args.days, args.rows_per_day, repeat=args.repeat))
