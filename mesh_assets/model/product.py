"""The data-product model: what a domain team declares, validated before anything runs.

A data product is a set of tables that share an owner, a tier and a classification. Each output table is
produced by one transformation (PySpark or SQL); external tables are landed by someone else and only
observed. The Python decorator API and the YAML specs both build these same objects.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from mesh_assets.model.access import Grant
from mesh_assets.model.checks import CheckSpec, Freshness, SchemaContract, Valid
from mesh_assets.model.grain import Grain, GrainField
from mesh_assets.model.kinds import Full, Kind, KindSpec, Partitions, default_kind
from mesh_assets.model.lifecycle import Classification, Status, Tier, versioned_name
from mesh_assets.model.names import Identifier, split_table_ref
from mesh_assets.model.regions import RegionsField
from mesh_assets.model.windows import Window
from mesh_assets.settings import EngineMode

OWNER_PATTERN = r"^[^@\s]+@[^@\s]+$|^team:[a-z0-9_\-]+$"
"""An owner as Dagster accepts one: an email address or ``team:<name>``."""
DEFAULT_START = date(2021, 1, 1)
"""The first partition of a table whose product, domain defaults and dbt config name none."""
WriteMode = Literal["overwrite_partition", "full"]
SchemaPolicy = Literal["additive", "strict"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class Contact(Strict):
    kind: Literal["email", "chat"]
    value: str = Field(min_length=1)


class Column(Strict):
    """One column of an output's contract."""

    name: Identifier
    type: str = Field(min_length=1)
    nullable: bool = True
    pii: bool = False
    """Personal data: readers outside the producer's domain see it masked unless their grant clears it."""
    mask: Literal["hash", "null"] = "hash"
    """How a ``pii`` column is masked: its SHA-256 as hex (joins still match), or null."""


class Input(Strict):
    """A table a transformation reads: its own domain's (``table``) or a published one (``domain.table``)."""

    table: str
    version: int | None = Field(default=None, ge=1, le=99)
    """The major version read (default: 1, the table's own name), so a new version never changes a reader."""
    window: Window = Field(default_factory=Window)
    ignore_quality: bool = False
    freshness_hours: float | None = Field(default=None, gt=0)
    """Read partition by partition: how long after the output's partition closed its input partitions are late.
    Read whole (``window: all``, an unpartitioned table): the oldest the table may be, counted from when it was
    last published (or observed, for an external table); an older one refuses the run."""
    timeout_hours: float | None = Field(default=None, gt=0)
    """Read partition by partition: how long after the output's partition closed a missing input partition has
    timed out (its owners and the reader's are told)."""
    on_timeout: Literal["wait", "fail"] = "wait"
    """What a partition whose input timed out does: ``wait`` for the input (automation runs it once it lands), or
    ``fail``: a run of it is launched, refused for the missing input, and the partition shows failed."""
    min_complete: float | None = Field(default=None, gt=0, le=1)
    """Read partition by partition: the share of the window's input partitions (published, blocking checks
    passed) that lets a partition be computed without the rest (``0.95``: a rollup of 96 quarter hours runs with
    92); the missing keys are recorded on its materialization. Unset: every partition of the window."""
    watermark: Identifier | None = None
    """Read whole: a column whose maximum must reach the end of the output partition being computed (a date
    column its last day, a timestamp its end), or the run is refused: a snapshot landed on time but behind."""
    region: Identifier | None = None
    """Of a table partitioned by date and region, read this region's partitions alone (else: a regional output
    reads its own region's, any other output every region of a date, waiting for all of them)."""
    line: SkipJsonSchema[int | None] = None

    @field_validator("table")
    @classmethod
    def _ref(cls, value: str) -> str:
        split_table_ref(value, default_domain="x")
        return value

    @field_validator("on_timeout")
    @classmethod
    def _fails_only_after_a_timeout(cls, value: str, info: ValidationInfo) -> str:
        if value == "fail" and info.data.get("timeout_hours") is None:
            raise ValueError("on_timeout: fail needs timeout_hours (how long after its partition closed to fail)")
        return value

    def ref(self, domain: str) -> tuple[str, str]:
        """``(domain, table)`` as written: what a SQL product's query names."""
        return split_table_ref(self.table, default_domain=domain)

    def target(self, domain: str) -> tuple[str, str]:
        """``(domain, table)`` of the version read: the table it resolves to."""
        domain, table = self.ref(domain)
        return domain, versioned_name(table, self.version or 1)


class Output(Strict):
    """One Delta table a product writes."""

    model_config = ConfigDict(populate_by_name=True)

    table: Identifier
    description: str = ""
    published: bool = False
    partitioning: GrainField = Field(default=Grain.DAILY, json_schema_extra={"default": "daily"})
    partition_column: Identifier = "p_date"
    regions: RegionsField = None
    """Partitioned by region as well as by day, each region's day from its own local midnight to the next
    (``{eu: Europe/Madrid}``; a list of names: UTC days). See :mod:`mesh_assets.model.regions`."""
    region_column: Identifier = "region"
    kind: KindSpec | None = None
    """What a run does to the table (:mod:`mesh_assets.model.kinds`); unset: ``partitions`` for a partitioned
    output, ``full`` for an unpartitioned one. Read it as :attr:`table_kind`."""
    change_feed: bool = False
    """Keep the table's Delta Change Data Feed (``delta.enableChangeDataFeed``), so a ``changes`` output may read
    what each commit changed (``window: changes``); turning it on later sets it on the existing table."""
    write_mode: WriteMode | None = None
    """The older name of two kinds: ``overwrite_partition`` (``kind: partitions``) and ``full``."""
    contract: tuple[Column, ...] | None = None
    checks: tuple[CheckSpec, ...] = ()
    schema_policy: SchemaPolicy = Field(default="additive", alias="schema")
    """How the published table's schema may change: ``additive`` adds new columns (Delta's ``mergeSchema``),
    ``strict`` refuses any change; dropped, renamed or retyped columns always need a rebuild. Written
    ``schema`` in specs (a field of that name would shadow pydantic's ``BaseModel.schema``)."""
    version: int = Field(default=1, ge=1, le=99)
    """The major version: a breaking change is published as a new version beside the old one, which its
    readers keep reading until its sunset."""
    status: Status | None = None
    """This version's own status (default: its product's)."""
    sunset: date | None = None
    grants: tuple[Grant, ...] = ()
    """Readers in other domains granted this table beyond its domain's grants (see :mod:`~mesh_assets.model.access`)."""
    zorder: tuple[Identifier, ...] = ()
    """Columns compaction clusters each partition's files by (Delta's Z-order), for reads that filter on them."""

    @property
    def name(self) -> str:
        """The table this version is stored, keyed and read as: ``orders``, ``orders_v2``."""
        return versioned_name(self.table, self.version)

    @property
    def table_kind(self) -> Kind:
        """The declared kind, or the one its ``write_mode`` or partitioning implies."""
        if self.kind is not None:
            return self.kind
        if self.write_mode is not None:
            return Full() if self.write_mode == "full" else Partitions()
        return default_kind(self.partitioning)

    @field_validator("write_mode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("write_mode")
    @classmethod
    def _partitions_are_overwritten(cls, value: WriteMode | None, info: ValidationInfo) -> WriteMode | None:
        """A partitioned output's run replaces the partitions it computed, whatever the mode said; ``full``
        there was once accepted and ignored, so it is refused rather than half honoured."""
        grain = info.data.get("partitioning")
        if value == "full" and grain is not None and grain.partitioned:
            raise ValueError(
                f"write_mode: full is for unpartitioned outputs; a {grain} output overwrites the partitions "
                "it computes: remove write_mode, or set partitioning: none to rewrite the whole table"
            )
        if value == "overwrite_partition" and grain is not None and not grain.partitioned:
            raise ValueError("an unpartitioned output (partitioning: none) must use write_mode: full")
        return value

    @field_validator("kind")
    @classmethod
    def _kind_fits(cls, value: Kind | None, info: ValidationInfo) -> Kind | None:
        grain = info.data.get("partitioning")
        if value is not None and grain is not None:
            value.check_grain(grain)
        if value is not None and info.data.get("partition_column") in value.extra_columns:
            raise ValueError(f"the partition column {info.data['partition_column']} is one of the kind's columns")
        return value

    @model_validator(mode="after")
    def _zorder_columns(self) -> Output:
        """Z-order by data columns, each once: the partition column is already each file's only value."""
        if len(set(self.zorder)) != len(self.zorder):
            raise ValueError(f"zorder names a column twice: {', '.join(self.zorder)}")
        if self.partitioning.partitioned and self.partition_column in self.zorder:
            raise ValueError(f"zorder: {self.partition_column} is the partition column; Z-order by data columns")
        if self.contract is not None:
            missing = sorted(set(self.zorder) - {c.name for c in self.contract})
            if missing:
                raise ValueError(f"zorder: {', '.join(missing)} not in the contract's columns")
        return self

    @model_validator(mode="after")
    def _regions_fit(self) -> Output:
        regions_are_daily(self.regions, self.partitioning)
        if self.regions is not None and self.region_column == self.partition_column:
            raise ValueError(f"region_column {self.region_column} is the partition column")
        if self.regions is not None and not isinstance(self.table_kind, Partitions):
            raise ValueError(f"a table partitioned by region is of kind partitions, not {self.table_kind.name}")
        return self

    @model_validator(mode="after")
    def _one_name_for_the_kind(self) -> Output:
        if self.kind is not None and self.write_mode is not None:
            raise ValueError(f"give kind: {self.kind.name} alone: write_mode is an older name for two kinds")
        return self


class PySparkTransformation(Strict):
    kind: Literal["pyspark"] = "pyspark"
    output: Output
    inputs: dict[Identifier, Input] = Field(default_factory=dict)
    fn: Callable[..., Any]
    range_aware: bool = False
    line: SkipJsonSchema[int | None] = None


def _input_key(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item).replace(".", "__")
    version = item.get("version")
    return str(item.get("table", "")).replace(".", "__") + (f"_v{version}" if version not in (None, 1) else "")


class SqlTransformation(Strict):
    """SQL reading ``<domain>.<table>`` names; ``:partition_start`` / ``:partition_end`` (the partition values) and
    ``:starts_at`` / ``:ends_at`` (the UTC instants the partitions start and end at) are bound, and ``:region``
    for a table partitioned by date and region."""

    kind: Literal["sql"] = "sql"
    output: Output
    inputs: dict[Identifier, Input] = Field(default_factory=dict)
    sql: str | None = None
    sql_file: str | None = None
    range_aware: bool = False
    line: SkipJsonSchema[int | None] = None
    sql_line: SkipJsonSchema[int | None] = None
    """The line of its ``sql`` or ``sql_file`` field, where an error in the query is reported."""

    @field_validator("inputs", mode="before")
    @classmethod
    def _list_of_inputs(cls, value: Any) -> Any:
        """YAML lists inputs; they are keyed by table name like the Python API's parameters (``shop__orders``, and
        ``shop__orders_v2`` for a pinned version)."""
        if isinstance(value, list):
            return {_input_key(item): item for item in value}
        return value

    @model_validator(mode="after")
    def _one_source(self) -> SqlTransformation:
        if (self.sql is None) == (self.sql_file is None):
            raise ValueError("give exactly one of 'sql' or 'sql_file'")
        return self


Transformation = Annotated[PySparkTransformation | SqlTransformation, Field(discriminator="kind")]


class ExternalTable(Strict):
    """A table landed outside the platform: observed from its Delta log, never written by Mesh."""

    table: Identifier
    description: str = ""
    published: bool = True
    partitioning: GrainField = Field(default=Grain.DAILY, json_schema_extra={"default": "daily"})
    partition_column: Identifier = "p_date"
    regions: RegionsField = None
    """Landed per region as well as per day (``{eu: Europe/Madrid}``: each region's local day; a list of names:
    UTC days): a day is complete only when every region's partition is published."""
    region_column: Identifier = "region"
    contract: tuple[Column, ...] | None = None
    checks: tuple[CheckSpec, ...] = ()
    grants: tuple[Grant, ...] = ()
    """Readers in other domains granted this table beyond its domain's grants (see :mod:`~mesh_assets.model.access`)."""
    line: SkipJsonSchema[int | None] = None

    @property
    def name(self) -> str:
        return self.table

    @model_validator(mode="after")
    def _regions_are_daily(self) -> ExternalTable:
        regions_are_daily(self.regions, self.partitioning)
        return self


def regions_are_daily(regions: tuple[Any, ...] | None, grain: Grain) -> None:
    """A table partitioned by region is partitioned by day too: a region's partition is one of its local days."""
    if regions is not None and grain is not Grain.DAILY:
        raise ValueError("a table partitioned by region must also be partitioned daily")


class Retries(Strict):
    """A product's retry policy for transient failures: Dagster's ``RetryPolicy`` (count, delay, backoff)."""

    count: int = Field(ge=0, le=10)
    delay_seconds: float = Field(default=0, ge=0)
    backoff: Literal["none", "linear", "exponential"] = "none"


class DataProduct(Strict):
    """A domain's unit of ownership: tables with one owner, tier and classification."""

    domain: Identifier
    name: Identifier
    description: str = ""
    owner: str = Field(pattern=OWNER_PATTERN)
    tier: Tier = Tier.T3
    classification: Classification = Classification.L1
    restricted_from: Classification = Classification.L2
    """The classification from which another domain reads a published table only by grant."""
    grants: tuple[Grant, ...] = ()
    """Who in other domains may read its tables classified ``restricted_from`` or above (the domain's grants)."""
    status: Status = Status.ACTIVE
    sunset: date | None = None
    """The day a ``deprecated`` product's readers must have moved by; required exactly when deprecated."""
    contacts: tuple[Contact, ...] = Field(min_length=1)
    tags: dict[str, str] = Field(default_factory=dict)
    cron: str | None = None
    """Earliest start: a partition is requested only after a tick of this cron since it was last handled."""
    rerun_history: bool = True
    """Re-request historical partitions when an input re-publishes them (false: only the latest window)."""
    start_date: date = DEFAULT_START
    engine: EngineMode | None = None
    """Where the product's runs compute and publish (``session`` or ``submit``); unset, the deployment's
    ``engine.mode``."""
    end_date: date | None = None
    """The first day with no partitions (excluded, as Dagster's ``end_date``): a feed that stopped, or a fixed
    history. None: partitions go on to the present."""
    input_freshness_hours: float | None = Field(default=None, gt=0)
    """The oldest a table its outputs read whole may be, for inputs that set no ``freshness_hours`` of their own
    (a domain sets it for all its products in ``domain.yaml``)."""
    retries: Retries | None = None
    """How a run that failed for a transient reason (Spark, storage, network) is retried; Mesh's refusals (inputs
    not ready, a failed blocking check, bad rows) are never retried."""
    transformations: tuple[Transformation, ...] = ()
    external: tuple[ExternalTable, ...] = ()
    source_file: Path | None = None
    line: SkipJsonSchema[int | None] = None

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is None:
            return value
        from mesh_assets.compat import is_valid_cron_schedule  # Dagster's rule; imported only when one is set

        if not is_valid_cron_schedule(value):
            raise ValueError(f"not a valid cron schedule: {value!r}")
        return value

    @field_validator("end_date")
    @classmethod
    def _end_after_start(cls, value: date | None, info: ValidationInfo) -> date | None:
        start = info.data.get("start_date")
        if value is not None and start is not None and value <= start:
            raise ValueError(f"end_date {value} must be after start_date {start} (it is the first day left out)")
        return value

    @property
    def tables(self) -> list[Output | ExternalTable]:
        return [t.output for t in self.transformations] + list(self.external)


def status_of(product: DataProduct, table: Output | ExternalTable) -> tuple[Status, date | None]:
    """A table's status and sunset: its own when an output version declares one, else its product's."""
    if isinstance(table, Output) and table.status is not None:
        return table.status, table.sunset
    return product.status, product.sunset


def checks_of(table: Output | ExternalTable) -> list[CheckSpec]:
    """The table's checks as they run and show in Dagster: the declared ones but ``freshness`` (Dagster's
    freshness policy judges that), plus a blocking schema contract when a contract is declared, and an output's
    built-in ``valid`` check (what invalidation fails)."""
    checks = [c for c in table.checks if not isinstance(c, Freshness)]
    if isinstance(table, Output):
        named = {c.check_name for c in checks}
        checks += [c for c in table.table_kind.implied_checks() if c.check_name not in named]
    if table.contract is not None and not any(isinstance(c, SchemaContract) for c in checks):
        checks.append(SchemaContract())
    if isinstance(table, Output) and not any(isinstance(c, Valid) for c in checks):
        checks.append(Valid())
    return checks


def blocking_checks(table: Output | ExternalTable) -> tuple[str, ...]:
    """Names of the checks that refuse a partition when they fail: what consumers wait for."""
    return tuple(c.check_name for c in checks_of(table) if c.blocking)
