"""The one place that reads configuration.

Local and production differ by values only: ``mesh.yaml`` (or the file named by ``MESH_CONFIG``) and
``MESH_*`` environment variables (nested with ``__``, e.g. ``MESH_SPARK__MASTER``) fill the same object.
Environment variables win over the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)


def project_root() -> Path:
    """The checkout (or deployment) root: ``MESH_PROJECT_ROOT`` or the current directory."""
    return Path(os.environ.get("MESH_PROJECT_ROOT", Path.cwd())).resolve()


class Jit(StrEnum):
    """How a driver's JVM compiles Spark's code (:mod:`mesh_assets.engine.jvm`)."""

    TIERED = "tiered"
    """The JVM's default, C1 then C2 for hot code: for long jobs over large data."""
    QUICK = "quick"
    """C1 only, and Spark's per-operator projections interpreted, not generated: a third or more less CPU for a
    short-lived driver on small data (a demo, tests, a CI pipeline's fixtures), for slower code in long hot
    loops."""


class Section(BaseModel):
    """A part of ``mesh.yaml``: a key Mesh does not know is refused by name, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


class SparkSettings(Section):
    """How Mesh reaches Spark. ``master`` may be ``local[*]``, ``spark://host:7077`` or ``sc://host:15002``."""

    master: str = "local[*]"
    app_name: str = "mesh"
    driver_memory: str = "2g"
    shuffle_partitions: int = 4
    ui_enabled: bool = False
    log_level: str = "ERROR"
    jit: Jit = Jit.TIERED
    conf: dict[str, str] = Field(default_factory=dict)


class EngineMode(StrEnum):
    """Where a product's stage -> audit -> publish runs."""

    SESSION = "session"
    """In the Dagster step's own process, on its SparkSession (``spark.master``: local, ``spark://``, ``sc://``)."""
    SUBMIT = "submit"
    """As a Spark application launched through Dagster Pipes; the step only gates, launches and records."""


class Launcher(StrEnum):
    """How a ``submit`` run's Spark application is launched."""

    SPARK_SUBMIT = "spark-submit"
    """``spark-submit --deploy-mode client`` at ``spark.master`` (standalone, Kubernetes, YARN, local)."""
    EMR_SERVERLESS = "emr-serverless"
    """A job run of an EMR Serverless application (dagster-aws), Pipes context and messages on S3."""


class EmrServerlessSettings(Section):
    """The EMR Serverless application runs are launched on; no secrets (AWS credentials come from the
    environment or the instance's role)."""

    application_id: str | None = None
    execution_role_arn: str | None = None
    bucket: str | None = None
    """Where each run's Pipes context and messages, entry point, domain files and EMR's own logs go."""
    prefix: str = "mesh"
    region: str | None = None
    spark_submit_parameters: str = ""
    """Added to each job's: how the application finds a Python with Mesh installed, and Delta's jars
    (docs/deployment.md)."""


class EngineSettings(Section):
    """Where products run (``mode``, overridable per product by its ``engine`` field) and how ``submit`` runs
    are launched."""

    mode: EngineMode = EngineMode.SESSION
    launcher: Launcher = Launcher.SPARK_SUBMIT
    spark_submit: str | None = None
    """The ``spark-submit`` to run; default: the one PySpark ships (``pyspark/bin/spark-submit``)."""
    emr_serverless: EmrServerlessSettings = Field(default_factory=EmrServerlessSettings)

    @model_validator(mode="after")
    def _launchable(self) -> Self:
        emr = self.emr_serverless
        if self.launcher is Launcher.EMR_SERVERLESS:
            missing = [name for name in ("application_id", "execution_role_arn", "bucket") if not getattr(emr, name)]
            if missing:
                raise ValueError(f"engine.launcher emr-serverless needs engine.emr_serverless.{', '.join(missing)}")
        return self


UndeclaredReads = Literal["warn", "error"]


class DomainLineageSettings(Section):
    """One domain's lineage rules, over the mesh-wide ones."""

    undeclared_reads: UndeclaredReads | None = None


class LineageSettings(Section):
    """Where OpenLineage events go; unset, the OpenLineage client's own configuration (``OPENLINEAGE_URL``,
    ``openlineage.yml``) decides, and without one the file transport is used."""

    transport: Literal["file", "http", "console", "none"] | None = None
    url: str | None = None
    timeout_seconds: float = Field(default=2.0, gt=0)
    """How long one event may wait for the lineage server: one attempt, no retry; an event it does not take
    is kept under ``<home>/lineage/undelivered/`` and delivered later."""
    namespace_prefix: str = ""
    """Put before the namespaces Mesh names in its events (each job's, ``<domain>``; the Dagster parent job's,
    ``dagster``; the ``<domain>.<table>`` symlinks', ``mesh``), so that two deployments sharing one lineage
    server stay apart: ``prod.`` gives ``prod.food_delivery``. Datasets keep the namespace of their location
    (``file``, ``s3a://bucket``), as the OpenLineage naming spec and every other producer name them."""
    undeclared_reads: UndeclaredReads = "warn"
    """A run that reads a table it does not declare (seen in Spark's plan): ``warn`` in its log, or ``error``:
    the run fails and publishes nothing. Per domain: ``domains: {<domain>: {undeclared_reads: error}}``."""
    domains: dict[str, DomainLineageSettings] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _prefix_ends_with_a_separator(self) -> Self:
        if self.namespace_prefix and self.namespace_prefix[-1] not in "._-/:":
            raise ValueError(
                f"lineage.namespace_prefix {self.namespace_prefix!r} must end with one of . _ - / : "
                f"(e.g. {self.namespace_prefix + '.'!r}, giving {self.namespace_prefix + '.food_delivery'!r})"
            )
        return self

    def undeclared_reads_for(self, domain: str) -> UndeclaredReads:
        own = self.domains.get(domain)
        return own.undeclared_reads if own and own.undeclared_reads else self.undeclared_reads


class SmtpSettings(Section):
    """The mail server that delivers alerts to a table's ``email`` contacts; none (no ``host``): no mail. Its
    password is a secret: it comes from ``MESH_ALERT_SMTP_PASSWORD`` alone, never from ``mesh.yaml``."""

    host: str | None = None
    port: int = Field(default=25, gt=0, lt=65536)
    user: str | None = None
    sender: str = "mesh@localhost"
    starttls: bool = False


class AlertSettings(Section):
    """Where owners hear about failures. Webhook URLs are secrets: they come from the environment only,
    one variable per domain (``MESH_ALERT_WEBHOOK_<DOMAIN>``, e.g. ``MESH_ALERT_WEBHOOK_FOOD_DELIVERY``)."""

    enabled: bool = True
    webserver_url: str = "http://127.0.0.1:3000"
    timeout_seconds: float = 5.0
    smtp: SmtpSettings = Field(default_factory=SmtpSettings)
    attempts: int = Field(default=5, ge=1, le=100)
    """How many times an alert is tried in all: one send, then a retry per tick of its domain's alert sensor
    while its webhook or mail server does not take it."""
    interval_seconds: int = Field(default=60, ge=5)
    """How often each domain's alert sensor judges freshness and external checks, and retries what waits."""


class DagsterSettings(Section):
    """The Dagster webserver Mesh talks to: ``mesh backfill`` and ``mesh rebuild`` launch and follow backfills
    through its GraphQL API, as the UI does (``make dev`` serves it on this address)."""

    url: str = "http://127.0.0.1:3000"
    timeout_seconds: float = Field(default=30.0, gt=0)


class AutomationSettings(Section):
    """Data-dependency-driven runs: each domain's automation sensor and external-table observer."""

    enabled: bool = True
    """Whether the sensors start running (false: they exist but are stopped until started in the UI)."""
    interval_seconds: int = Field(default=30, ge=5)
    observer_interval_seconds: int = Field(default=60, ge=5)
    engine_tag: str | None = "spark"
    """Runs the sensors start carry ``mesh/engine=<engine_tag>``; limit them per engine with the instance's
    ``run_queue.tag_concurrency_limits`` (each table already has its own pool)."""


MIN_RETENTION_HOURS = 168
"""Seven days: no clean-up keeps less (Delta's own default and the shortest ``mesh restore`` window Mesh offers)."""


class MaintenanceSettings(Section):
    """Compaction and clean-up of Mesh's own tables (``mesh maintain``, each domain's maintenance schedule)."""

    scheduled: bool = False
    """Whether each domain's ``<domain>__maintenance`` schedule starts running (false: started in the UI)."""
    cron: str = "0 3 * * *"
    """When the schedule compacts and cleans up the domain's tables (UTC)."""
    small_file_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    """A data file smaller than this is small."""
    small_files: int = Field(default=8, ge=2)
    """A partition is compacted once it holds at least this many small files."""
    retention_hours: dict[Literal["t1", "t2", "t3"], int] = Field(
        default_factory=lambda: {"t1": 720, "t2": 336, "t3": MIN_RETENTION_HOURS}
    )
    """Per tier, how long files a newer version replaced are kept (VACUUM's ``RETAIN``), which is also how far
    back ``mesh restore`` reaches; a tier left out keeps the minimum."""

    @model_validator(mode="after")
    def _never_shorter_than_a_week(self) -> Self:
        short = {tier: hours for tier, hours in self.retention_hours.items() if hours < MIN_RETENTION_HOURS}
        if short:
            tiers = ", ".join(f"{tier}: {hours}" for tier, hours in sorted(short.items()))
            raise ValueError(
                f"maintenance.retention_hours ({tiers}) is shorter than {MIN_RETENTION_HOURS} hours: runs pinned "
                "to an older version and mesh restore need the files that long"
            )
        return self


ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class DomainKeys(Section):
    """One domain's own S3 keys, named by the environment variables that hold them (never the keys themselves):
    its runs write the warehouse's bucket with them, so a bucket policy per key confines each domain to its
    prefix (:mod:`mesh_assets.engine.identity`)."""

    access_key_env: str = Field(pattern=ENV_NAME)
    """The variable holding the domain's access key id, e.g. ``CENTRAL_AWS_ACCESS_KEY_ID``."""
    secret_key_env: str = Field(pattern=ENV_NAME)
    """The variable holding the domain's secret access key."""
    session_token_env: str | None = Field(default=None, pattern=ENV_NAME)
    """The variable holding a session token, for temporary keys."""


class S3Settings(Section):
    """S3-compatible object storage for ``s3a://`` warehouses (AWS S3, MinIO, Ceph ...).

    Credentials are secrets: Mesh passes ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (and
    ``AWS_SESSION_TOKEN``) from the environment only; without them Hadoop's default AWS chain applies (instance
    profiles, web identity ...). Unknown fields are refused, so a key pasted into ``mesh.yaml`` fails loudly.
    ``domains`` gives a domain keys of its own, by the names of the variables holding them.
    """

    endpoint: str | None = None
    """``http(s)://host:port`` of an S3-compatible service; unset for AWS S3 itself."""
    region: str | None = None
    path_style_access: bool = False
    """``https://endpoint/bucket/key`` rather than ``https://bucket.endpoint/key`` (MinIO, most on-premise stores)."""
    domains: dict[str, DomainKeys] = Field(default_factory=dict)
    """Per domain, the variables holding its own keys: its runs write the warehouse's bucket with those; a domain
    not listed uses the deployment's (``AWS_*``)."""


class ComputeLogSettings(Section):
    """Where runs' stdout and stderr are kept (a launched application's driver output among them): Dagster's
    files under ``dagster_home``, or, with a ``bucket``, S3 through dagster-aws's ``S3ComputeLogManager``, so the UI
    shows them whichever machine ran the step. ``mesh setup`` writes it into the instance; the endpoint and
    region are the ``s3`` settings', credentials the environment's."""

    bucket: str | None = None
    prefix: str = "dagster/compute-logs"
    upload_interval_seconds: int = Field(default=30, ge=1)
    """How often a running step's output is uploaded (it is uploaded whole when the step ends)."""


class MeshSettings(BaseSettings):
    """Everything that differs between a laptop and production."""

    model_config = SettingsConfigDict(env_prefix="MESH_", env_nested_delimiter="__", extra="forbid")

    home: Path = Field(default_factory=lambda: project_root() / ".mesh")
    warehouse: str | None = None
    domains_dir: Path = Field(default_factory=lambda: project_root() / "domains")
    jars_dir: Path | None = None
    spark: SparkSettings = Field(default_factory=SparkSettings)
    engine: EngineSettings = Field(default_factory=EngineSettings)
    lineage: LineageSettings = Field(default_factory=LineageSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    dagster: DagsterSettings = Field(default_factory=DagsterSettings)
    automation: AutomationSettings = Field(default_factory=AutomationSettings)
    maintenance: MaintenanceSettings = Field(default_factory=MaintenanceSettings)
    instance: Literal["sqlite", "postgres"] = "sqlite"
    """The Dagster instance ``mesh setup`` writes: SQLite files under ``dagster_home``, or Postgres (dagster-postgres)
    reached through ``DAGSTER_PG_HOST``, ``DAGSTER_PG_PORT``, ``DAGSTER_PG_USER``, ``DAGSTER_PG_PASSWORD`` and
    ``DAGSTER_PG_DB``, read by Dagster when the instance loads."""
    s3: S3Settings = Field(default_factory=S3Settings)
    compute_logs: ComputeLogSettings = Field(default_factory=ComputeLogSettings)
    environment: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")
    """A named environment (``MESH_ENVIRONMENT``, set by ``mesh apply --env``): the tables it computes are read and
    written under ``<home>/envs/<name>/warehouse``, every other table is read in place from this warehouse, and its
    runs are recorded on its own instance (``<home>/envs/<name>/dagster``), with automation, alerts, scheduled
    maintenance and lineage delivery off, so it never writes, records or triggers anything in production."""
    discovery_timeout_seconds: float = Field(default=60.0, gt=0)
    """How long one domain's Python files may take to load in their own process before the domain is reported
    as hanging (its tables unknown to the others; see ``mesh_assets/graph/isolate.py``)."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        config = Path(os.environ.get("MESH_CONFIG", project_root() / "mesh.yaml"))
        return (init_settings, env_settings, YamlConfigSettingsSource(settings_cls, yaml_file=config))

    @model_validator(mode="after")
    def _submit_needs_a_master(self) -> Self:
        engine = self.engine
        if engine.mode is EngineMode.SUBMIT and engine.launcher is Launcher.SPARK_SUBMIT and self.connect:
            raise ValueError(
                "engine.mode submit launches Spark applications with spark-submit, which needs a cluster's "
                f"master (spark://, k8s://, yarn, local[*]), not Spark Connect's {self.spark.master}"
            )
        return self

    @model_validator(mode="after")
    def _an_environment_stays_apart(self) -> Self:
        if self.environment is not None:
            self.automation.enabled = False
            self.alerts.enabled = False
            self.maintenance.scheduled = False
            self.lineage.transport = "none"
        return self

    @property
    def environment_dir(self) -> Path | None:
        """The environment's own folder (its tables, instance and manifest); None in production."""
        return None if self.environment is None else self.home / "envs" / self.environment

    @property
    def connect(self) -> bool:
        """Whether Spark is reached through Spark Connect (``sc://``)."""
        return self.spark.master.startswith("sc://")

    @property
    def warehouse_uri(self) -> str:
        """Root of every Delta table: a local path or an object-store URI such as ``s3a://bucket/wh``."""
        return self.warehouse or str(self.home / "warehouse")

    @property
    def uses_s3a(self) -> bool:
        """Whether Spark needs the s3a file system: an ``s3a://`` warehouse or a configured S3 endpoint."""
        return self.warehouse_uri.startswith("s3a://") or self.s3.endpoint is not None

    @property
    def jars_path(self) -> Path:
        """Jars belong to the checkout (fetched by ``make setup``), whatever ``home`` a run uses."""
        return self.jars_dir or project_root() / ".mesh" / "jars"

    @property
    def dagster_home(self) -> Path:
        return (self.environment_dir or self.home) / "dagster"

    @property
    def lineage_dir(self) -> Path:
        return (self.environment_dir or self.home) / "lineage"


@lru_cache(maxsize=1)
def get_settings() -> MeshSettings:
    """The process-wide settings, read once: by the composition root, the resource and the command line, which
    pass them (or the part a module needs) to everything else."""
    return MeshSettings()


@contextmanager
def scoped_environ(values: Mapping[str, str], *, keep: bool = False) -> Iterator[None]:
    """Environment variables set for the block only, for tools that read them when they start (dbt, Spark's
    JVM launcher, Dagster's instance); ``keep`` leaves a variable already set as it is."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update({k: v for k, v in values.items() if not (keep and saved[k] is not None)})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
