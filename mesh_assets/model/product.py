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

from mesh_assets.compat import is_valid_cron_schedule
from mesh_assets.model.checks import CheckSpec, Freshness, SchemaContract, Valid
from mesh_assets.model.grain import Grain, GrainField
from mesh_assets.model.names import Identifier, split_table_ref

Tier = Literal["t1", "t2", "t3"]
Classification = Literal["l0", "l1", "l2", "l3"]
OPEN_CLASSIFICATION = "l0"
"""The lowest classification: only a table classified so may show row values in check samples and errors;
any other shows counts and column names."""
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


class Window(Strict):
    """Which input partitions one output partition reads.

    ``same``: the same partition; ``last``: the ``n`` partitions ending on it; ``previous``: the ``n``
    partitions before it (a product reading its own past); ``all``: the whole table.
    YAML accepts ``same``, ``all``, ``last_7``, ``previous_1``, ``{last: 7}`` or ``{previous: 1}``.
    """

    kind: Literal["same", "last", "previous", "all"] = "same"
    n: int = Field(default=1, ge=1, le=3660)

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, value: Any) -> Any:
        if isinstance(value, str):
            for kind in ("last", "previous"):
                if value.startswith(f"{kind}_") and value[len(kind) + 1 :].isdigit():
                    return {"kind": kind, "n": int(value[len(kind) + 1 :])}
            return {"kind": value}
        if isinstance(value, dict) and len(value) == 1 and set(value) <= {"last", "previous"}:
            [(kind, n)] = value.items()
            return {"kind": kind, "n": n}
        return value

    @property
    def lookback(self) -> int:
        """Partitions before the current one that are read too."""
        return {"last": self.n - 1, "previous": self.n}.get(self.kind, 0)

    @property
    def skips_current(self) -> bool:
        """The window ends before the partition being computed (``previous``)."""
        return self.kind == "previous"


def same() -> Window:
    return Window(kind="same")


def last(n: int) -> Window:
    return Window(kind="last", n=n)


def previous(n: int = 1) -> Window:
    """The ``n`` partitions before the one being computed: a product's own past (running totals)."""
    return Window(kind="previous", n=n)


def all_partitions() -> Window:
    return Window(kind="all")


class Input(Strict):
    """A table a transformation reads: its own domain's (``table``) or a published one (``domain.table``)."""

    table: str
    window: Window = Field(default_factory=Window)
    ignore_quality: bool = False
    freshness_hours: float | None = Field(default=None, gt=0)
    timeout_hours: float | None = Field(default=None, gt=0)
    line: int | None = None

    @field_validator("table")
    @classmethod
    def _ref(cls, value: str) -> str:
        split_table_ref(value, default_domain="x")
        return value

    def ref(self, domain: str) -> tuple[str, str]:
        return split_table_ref(self.table, default_domain=domain)


class Output(Strict):
    """One Delta table a product writes."""

    model_config = ConfigDict(populate_by_name=True)

    table: Identifier
    description: str = ""
    published: bool = False
    partitioning: GrainField = Grain.DAILY
    partition_column: Identifier = "p_date"
    write_mode: WriteMode = "overwrite_partition"
    contract: tuple[Column, ...] | None = None
    checks: tuple[CheckSpec, ...] = ()
    schema_policy: SchemaPolicy = Field(default="additive", alias="schema")
    """How the published table's schema may change: ``additive`` adds new columns (Delta's ``mergeSchema``),
    ``strict`` refuses any change; dropped, renamed or retyped columns always need a rebuild. Written
    ``schema`` in specs (a field of that name would shadow pydantic's ``BaseModel.schema``)."""

    @field_validator("write_mode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _full_when_unpartitioned(self) -> Output:
        if not self.partitioning.partitioned and self.write_mode != "full":
            raise ValueError("an unpartitioned output (partitioning: none) must use write_mode: full")
        return self


class PySparkTransformation(Strict):
    kind: Literal["pyspark"] = "pyspark"
    output: Output
    inputs: dict[Identifier, Input] = Field(default_factory=dict)
    fn: Callable[..., Any]
    range_aware: bool = False
    line: int | None = None


class SqlTransformation(Strict):
    """SQL reading ``<domain>.<table>`` names; ``:partition_start`` / ``:partition_end`` are bound."""

    kind: Literal["sql"] = "sql"
    output: Output
    inputs: dict[Identifier, Input] = Field(default_factory=dict)
    sql: str | None = None
    sql_file: str | None = None
    range_aware: bool = False
    line: int | None = None

    @field_validator("inputs", mode="before")
    @classmethod
    def _list_of_inputs(cls, value: Any) -> Any:
        """YAML lists inputs; they are keyed by table name like the Python API's parameters."""
        if isinstance(value, list):
            return {
                (item.get("table", "") if isinstance(item, dict) else str(item)).replace(".", "__"): item
                for item in value
            }
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
    partitioning: GrainField = Grain.DAILY
    partition_column: Identifier = "p_date"
    regions: tuple[Identifier, ...] | None = None
    """Landed per region as well as per day (each region at its own midnight): a day is complete only when
    every region's partition is published."""
    region_column: Identifier = "region"
    contract: tuple[Column, ...] | None = None
    checks: tuple[CheckSpec, ...] = ()
    line: int | None = None

    @model_validator(mode="after")
    def _regions_are_daily(self) -> ExternalTable:
        if self.regions is not None:
            if self.partitioning is not Grain.DAILY:
                raise ValueError("a table partitioned by region must also be partitioned daily")
            if not self.regions or len(set(self.regions)) != len(self.regions):
                raise ValueError("regions must be a non-empty list of distinct names")
        return self


class DataProduct(Strict):
    """A domain's unit of ownership: tables with one owner, tier and classification."""

    domain: Identifier
    name: Identifier
    description: str = ""
    owner: str = Field(pattern=r"^[^@\s]+@[^@\s]+$|^team:[a-z0-9_\-]+$")
    tier: Tier = "t3"
    classification: Classification = "l1"
    contacts: tuple[Contact, ...] = Field(min_length=1)
    tags: dict[str, str] = Field(default_factory=dict)
    cron: str | None = None
    """Earliest start: a partition is requested only after a tick of this cron since it was last handled."""
    rerun_history: bool = True
    """Re-request historical partitions when an input re-publishes them (false: only the latest window)."""
    start_date: date = date(2021, 1, 1)
    end_date: date | None = None
    """The first day with no partitions (excluded, as Dagster's ``end_date``): a feed that stopped, or a fixed
    history. None: partitions go on to the present."""
    transformations: tuple[Transformation, ...] = ()
    external: tuple[ExternalTable, ...] = ()
    source_file: Path | None = None
    line: int | None = None

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None and not is_valid_cron_schedule(value):
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


def checks_of(table: Output | ExternalTable) -> list[CheckSpec]:
    """The table's checks as they run and show in Dagster: the declared ones but ``freshness`` (Dagster's
    freshness policy judges that), plus a blocking schema contract when a contract is declared, and an output's
    built-in ``valid`` check (what invalidation fails)."""
    checks = [c for c in table.checks if not isinstance(c, Freshness)]
    if table.contract is not None and not any(isinstance(c, SchemaContract) for c in checks):
        checks.append(SchemaContract())
    if isinstance(table, Output) and not any(isinstance(c, Valid) for c in checks):
        checks.append(Valid())
    return checks


def blocking_checks(table: Output | ExternalTable) -> tuple[str, ...]:
    """Names of the checks that refuse a partition when they fail: what consumers wait for."""
    return tuple(c.check_name for c in checks_of(table) if c.blocking)
