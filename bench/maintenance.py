"""Maintenance: a year of a daily table after 100 replaces of every partition, read with and without
maintenance against the same year written once, and its storage after clean-up against its live data.

Each replace rewrites every partition the way a run of several tasks does, as a few small files per partition
(``--files`` of them); the fresh table holds one file per partition. The writes go through delta-rs, which writes
tiny files fast (this measures the reads and the storage, not the writes); the reads, the compaction and the
clean-up go through Spark, as Mesh's do. Maintenance is Mesh's pass
(:mod:`mesh_assets.maintenance`): the partitions holding small files compacted with ``OPTIMIZE``, then
``VACUUM``. The clean-up here keeps 0 hours, not the week Mesh keeps (a benchmark cannot wait for the
retention): it measures what remains once the replaced files are past it.
Run alone: ``python -m bench.maintenance --days 365 --replaces 100``.
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.common import Result, median_of, print_results
from mesh_assets import get_spark
from mesh_assets.maintenance.compact import compact
from mesh_assets.maintenance.files import table_files
from mesh_assets.maintenance.vacuum import vacuum
from mesh_assets.settings import S3Settings

START = date(2024, 1, 1)
SMALL = 32 * 1024 * 1024


def _year(days: int, rows_per_day: int) -> pa.Table:
    ids = list(range(days * rows_per_day))
    return pa.table(
        {
            "id": ids,
            "v": [i % 13 for i in ids],
            "p_date": [START + timedelta(days=i // rows_per_day) for i in ids],
        }
    )


def _write(location: str, year: pa.Table, rows_per_day: int, files: int) -> None:
    """Replace every partition of ``location`` with ``year``, each partition as ``files`` files (delta-rs writes
    a file per partition each time a batch of it arrives: the batches are dealt out day by day)."""
    chunk = max(rows_per_day // files, 1)
    batches = year.to_batches(max_chunksize=chunk)
    per_day = len(batches) // (year.num_rows // rows_per_day)
    order = [batches[d * per_day + k] for k in range(per_day) for d in range(len(batches) // per_day)]
    reader = pa.RecordBatchReader.from_batches(year.schema, order)
    write_deltalake(location, reader, partition_by=["p_date"], mode="overwrite", target_file_size=1)


def run(days: int = 365, replaces: int = 100, rows_per_day: int = 200, files: int = 2) -> list[Result]:
    spark = get_spark()
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-maintenance-"))
    fresh, replaced = str(base / "fresh"), str(base / "replaced")
    year = _year(days, rows_per_day)
    _write(fresh, year, rows_per_day, 1)
    for _ in range(replaces):  # every partition replaced, a few small files each
        _write(replaced, year, rows_per_day, files)

    def read(location: str) -> None:
        frame: DataFrame = spark.read.format("delta").load(location)
        frame.where(F.col("p_date").between(F.lit(START), F.date_add(F.lit(START), days - 1))).agg(F.sum("v")).collect()

    read(fresh), read(replaced)  # the JVM warmed up and both logs loaded before timing
    before, baseline_before = median_of(lambda: read(replaced)), median_of(lambda: read(fresh))
    found = table_files(replaced, S3Settings(), SMALL, "p_date")
    assert found is not None
    files_before, stored_before = found.files, found.stored_bytes or 0
    compact(spark, replaced, found, "p_date", 2)
    vacuum(spark, replaced, 0, S3Settings())
    read(replaced)
    after, baseline = median_of(lambda: read(replaced)), median_of(lambda: read(fresh))
    kept = table_files(replaced, S3Settings(), SMALL, "p_date")
    assert kept is not None
    stored, live = kept.stored_bytes or 0, kept.bytes
    case = f"read a year ({days} days) after {replaces} replaces"
    return [
        Result(
            "maintenance",
            f"{case}, no maintenance",
            before,
            "the same year written once",
            baseline_before,
            "",
            None,
            notes=f"{files_before} files against {days}",
        ),
        Result(
            "maintenance",
            f"{case}, compacted and cleaned up",
            after,
            "the same year written once",
            baseline,
            "<= 1.10x fresh",
            after <= 1.10 * baseline,
            notes=f"{kept.files} files",
        ),
        Result(
            "maintenance",
            f"storage after clean-up, {replaces} replaces (bytes as seconds)",
            float(stored),
            "live data (bytes)",
            float(live),
            "<= 1.5x live",
            stored <= 1.5 * live,
            notes=f"{stored_before} bytes before clean-up",
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--replaces", type=int, default=100)
    parser.add_argument("--rows-per-day", type=int, default=200)
    parser.add_argument("--files", type=int, default=2)
    args = parser.parse_args()
    print_results(run(args.days, args.replaces, args.rows_per_day, args.files))
