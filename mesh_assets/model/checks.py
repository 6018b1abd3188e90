"""Declarations of data-quality checks, attached to an output next to its definition."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mesh_assets.model.names import Identifier

Severity = Literal["error", "warn"]


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    severity: Severity = "error"
    name: Identifier | None = None

    @property
    def blocking(self) -> bool:
        return self.severity == "error"

    @property
    def check_name(self) -> str:
        return self.name or self.default_name()

    def default_name(self) -> str:
        return self.kind  # type: ignore[attr-defined]


class NotNull(_Check):
    kind: Literal["not_null"] = "not_null"
    columns: tuple[Identifier, ...] = Field(min_length=1)

    def default_name(self) -> str:
        return "not_null_" + "_".join(self.columns)


class Unique(_Check):
    kind: Literal["unique"] = "unique"
    keys: tuple[Identifier, ...] = Field(min_length=1)

    def default_name(self) -> str:
        return "unique_" + "_".join(self.keys)


class RowCount(_Check):
    kind: Literal["row_count"] = "row_count"
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)


class AcceptedValues(_Check):
    kind: Literal["accepted_values"] = "accepted_values"
    column: Identifier
    values: tuple[str | int | float | bool, ...] = Field(min_length=1)

    def default_name(self) -> str:
        return f"accepted_values_{self.column}"


class SqlAssertion(_Check):
    """SQL over ``staged`` (the data about to be published); every row it returns is a failure."""

    kind: Literal["sql"] = "sql"
    sql: str = Field(min_length=1)

    def default_name(self) -> str:
        return "sql_assertion"


class Freshness(_Check):
    kind: Literal["freshness"] = "freshness"
    max_lag_hours: float = Field(gt=0)
    warn_lag_hours: float | None = Field(default=None, gt=0)


class VolumeAnomaly(_Check):
    kind: Literal["volume_anomaly"] = "volume_anomaly"
    k: float = Field(default=3.0, gt=0)
    trailing: int = Field(default=14, ge=3)


class SchemaContract(_Check):
    """Checks the staged schema against the output's ``contract``."""

    kind: Literal["schema_contract"] = "schema_contract"


class Valid(_Check):
    """Every product output's built-in blocking check: the partition may be trusted.

    Each run passes it on the partitions it computes; ``mesh invalidate`` fails it on published partitions
    (and on the partitions computed from them), so their consumers wait until a run publishes them again."""

    kind: Literal["valid"] = "valid"


VALID = "valid"
"""The name of the :class:`Valid` check."""

CheckSpec = Annotated[
    NotNull | Unique | RowCount | AcceptedValues | SqlAssertion | Freshness | VolumeAnomaly | SchemaContract | Valid,
    Field(discriminator="kind"),
]


def checked_columns(check: CheckSpec) -> tuple[str, ...]:
    """The columns a check names in its declaration (a ``sql`` check's are only known to Spark)."""
    if isinstance(check, NotNull):
        return check.columns
    if isinstance(check, Unique):
        return check.keys
    if isinstance(check, AcceptedValues):
        return (check.column,)
    return ()


COLUMNS_FIELD = {NotNull: "columns", Unique: "keys", AcceptedValues: "column"}
"""The field of each kind of check that names its columns."""
