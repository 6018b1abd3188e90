"""The raw baseline of ``bench.submit_mode``: the benchmark product's work as a plain Spark application, in the
session spark-submit configured. ``spark-submit bench/submit_raw.py <events> <out> <first> <last>``."""

import sys

from pyspark.sql import SparkSession

from bench.workload import raw_work

if __name__ == "__main__":
    raw_work(SparkSession.builder.getOrCreate(), *sys.argv[1:5])
