"""One Delta-enabled SparkSession per process, created on first use.

Starting a JVM costs seconds; every asset, check and test in a process shares the same session. The
master comes from settings, so product code never knows whether it runs on ``local[*]``, a standalone
cluster or Spark Connect. PySpark itself is imported by the first session, not by importing Mesh: code
locations load definitions without it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from mesh_assets.engine.jars import cached, cached_extra
from mesh_assets.engine.jvm import QUICK_CONF, java_options
from mesh_assets.settings import Jit, MeshSettings, scoped_environ

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOG4J = Path(__file__).with_name("log4j2.properties")
_lock = threading.Lock()
_session: SparkSession | None = None

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Delta's SQL parser drops bound parameters under Spark 4.1+ (delta-io/delta#7640); the analyzer-side
    # substitution keeps ``spark.sql(query, args=...)`` working, which SQL products rely on.
    "spark.sql.legacy.parameterSubstitution.constantsOnly": "true",
}


def s3a_conf(settings: MeshSettings) -> dict[str, str]:
    """Hadoop's s3a file system from settings (no secrets: these may show on a process's command line)."""
    s3 = settings.s3
    conf = {"spark.hadoop.fs.s3a.path.style.access": str(s3.path_style_access).lower()}
    if s3.endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = s3.endpoint
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(s3.endpoint.startswith("https://")).lower()
    if s3.region:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = s3.region
    return conf


def s3a_credentials() -> dict[str, str]:
    """s3a credentials from the environment only, for a running session's Hadoop configuration.

    Set there rather than as Spark configuration, they never appear on the JVM's command line, and tasks on a
    cluster's executors receive them with the job's Hadoop configuration. Without them Hadoop's default AWS
    chain applies (environment, instance profile, web identity).
    """
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not (key and secret):
        return {}
    credentials = {"fs.s3a.access.key": key, "fs.s3a.secret.key": secret}
    if token := os.environ.get("AWS_SESSION_TOKEN"):
        credentials["fs.s3a.session.token"] = token
        credentials["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    return credentials


def application_conf(settings: MeshSettings) -> dict[str, str]:
    """What every Spark application of Mesh needs wherever it runs (this process, spark-submit, EMR): Delta, its
    sizes, UTC; the settings' own ``spark.conf`` over it, but never over the time zone."""
    spark = settings.spark
    conf = {
        **DELTA_CONF,
        "spark.sql.shuffle.partitions": str(spark.shuffle_partitions),
        "spark.default.parallelism": str(spark.shuffle_partitions),
        # Spark's default, 10,000, is how many tasks Delta's VACUUM lists a table's files with: half a minute
        # for a table of four files on two cores.
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(spark.shuffle_partitions),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.sources.partitionOverwriteMode": "static",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.databricks.delta.stalenessLimit": "0",
        **(QUICK_CONF if spark.jit is Jit.QUICK else {}),
        **spark.conf,
    }
    # Partition keys, Delta's partition values and date_format keys are UTC: a setting may not move them.
    conf["spark.sql.session.timeZone"] = "UTC"
    return conf


def spark_conf(settings: MeshSettings) -> dict[str, str]:
    """The Spark configuration of a driver on this machine, from settings: sized for a small machine by default,
    Delta's jars from ``mesh setup``'s cache."""
    spark = settings.spark
    conf = {
        "spark.driver.memory": spark.driver_memory,
        "spark.ui.enabled": str(spark.ui_enabled).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": str(settings.home / "spark-warehouse"),
    }
    if spark.master.startswith("local"):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    if not spark.master.startswith("sc://"):
        conf["spark.jars"] = ",".join(str(j) for j in cached(settings.jars_path))
        if settings.uses_s3a:
            s3a = [str(j) for j in cached_extra(settings.jars_path, "s3a")]
            if spark.master.startswith("local"):
                # one JVM: on its class path as they are (spark.jars would copy the 650 MB AWS bundle per session)
                conf["spark.driver.extraClassPath"] = os.pathsep.join(s3a)
            else:
                conf["spark.jars"] += "," + ",".join(s3a)  # shipped to the executors
            conf.update(s3a_conf(settings))
    java = [f"-Dderby.system.home={settings.home / 'derby'}", f"-Dlog4j.configurationFile={LOG4J}"]
    conf["spark.driver.extraJavaOptions"] = " ".join([*java, *java_options(settings, conf)])
    return {**conf, **application_conf(settings)}


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client (no JVM handle in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def get_spark(settings: MeshSettings) -> SparkSession:
    """The process's SparkSession, created on first call with the settings' master and configuration."""
    global _session
    with _lock:
        if _session is None:
            from pyspark.sql import SparkSession

            builder = SparkSession.builder.appName(settings.spark.app_name)
            # Spark's web UI binds to SPARK_LOCAL_IP, or to every interface without it; in local mode nothing
            # outside this machine needs the driver (set SPARK_LOCAL_IP to override). The JVM reads it when
            # it starts, so it is set only while the session starts the JVM.
            local = {"SPARK_LOCAL_IP": "127.0.0.1"} if settings.spark.master.startswith("local") else {}
            if settings.spark.master.startswith("sc://"):
                builder = builder.remote(settings.spark.master)
            else:
                builder = builder.master(settings.spark.master)
            for key, value in spark_conf(settings).items():
                builder = builder.config(key, value)
            with scoped_environ(local, keep=True):
                _session = builder.getOrCreate()
            if not settings.spark.master.startswith("sc://"):
                _configure(_session, settings.spark.log_level, settings.uses_s3a)
        return _session


def submitted_spark(log_level: str, s3a: bool) -> SparkSession:
    """The session of a Spark application that spark-submit (or EMR) started: its master, Delta and jars came
    with the submission; ``s3a``: the warehouse is on object storage, credentials from the environment."""
    global _session
    with _lock:
        if _session is None:
            from pyspark.sql import SparkSession

            _session = SparkSession.builder.getOrCreate()
            _configure(_session, log_level, s3a)
        return _session


def _configure(session: SparkSession, log_level: str, s3a: bool) -> None:
    session.sparkContext.setLogLevel(log_level)
    if s3a:
        hadoop = session.sparkContext._jsc.hadoopConfiguration()
        for key, value in s3a_credentials().items():
            hadoop.set(key, value)


@contextmanager
def scoped_conf(spark: SparkSession, values: Mapping[str, str]) -> Iterator[None]:
    """Runtime SQL configuration set for the block and put back as it was, whoever changes it inside."""
    saved = {key: spark.conf.get(key, None) for key in values}
    for key, value in values.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def stop_spark() -> None:
    """Stop the process's session (tests and CLI exit)."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
