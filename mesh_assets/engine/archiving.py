"""The session whose JVM writes Spark's class-data archive (see :mod:`mesh_assets.engine.jvm`): it loads what
runs load, then ends its JVM, which writes the archive as it exits (``-XX:ArchiveClassesAtExit`` came with
``SPARK_SUBMIT_OPTS``).

    python -m mesh_assets.engine.archiving <scratch table>   # ``mesh setup`` runs it
"""

from __future__ import annotations

import sys

from mesh_assets.engine.jvm import ARCHIVE_SECONDS
from mesh_assets.engine.session import get_spark, stop_spark
from mesh_assets.settings import MeshSettings


def archiving_session(table: str) -> None:
    """Load what runs load: a session writing, replacing and reading partitions of a Delta table at ``table``;
    then end the JVM, which writes the archive as it exits."""
    spark = get_spark(MeshSettings())
    days = spark.range(0, 3000).selectExpr(
        "id", "cast(id % 7 as string) AS kind", "date_add(date'2021-06-01', cast(id % 3 as int)) AS p_date"
    )
    days.write.format("delta").mode("overwrite").partitionBy("p_date").save(table)
    one = days.where("p_date = date'2021-06-02'").withColumn("extra", days.id * 2)
    (
        one.write.format("delta")
        .mode("overwrite")
        .partitionBy("p_date")
        .option("replaceWhere", "p_date = date'2021-06-02'")
        .option("mergeSchema", "true")
        .save(table)
    )
    read = spark.read.format("delta").load(table)
    read.where(read.kind.isin("1", "2")).groupBy("p_date").count().collect()
    spark.sql("SELECT kind, count(*) AS n FROM range(10) JOIN VALUES ('1') AS v(kind) GROUP BY kind").collect()
    gateway = spark.sparkContext._gateway
    stop_spark()
    gateway.shutdown()
    gateway.proc.stdin.close()  # Spark's gateway exits when its parent's pipe closes
    gateway.proc.wait(ARCHIVE_SECONDS)


if __name__ == "__main__":
    archiving_session(sys.argv[1])
