"""A data product as a Dagster component: ``defs/<name>/defs.yaml`` with ``type: mesh_assets.DataProduct``.

The attributes are a product spec, field for field the YAML spec. Mesh validates them (with the file, line and
field of every error) when it discovers the domain, before Dagster loads the component; the fields here give
``dg check yaml`` and editors their schema. The assets come from the mesh resolved once, so a component's
product reads and is read by other domains like any other product.
"""

from __future__ import annotations

from datetime import date
from functools import cache
from typing import Annotated, Any, Literal

import dagster as dg
from pydantic import BaseModel, Field

from mesh_assets.components.schema import precise_schema
from mesh_assets.definitions import component_definitions
from mesh_assets.graph.defaults import load_defaults
from mesh_assets.model.product import ExternalTable, Input, Output


class ContactSpec(dg.Model):
    kind: Literal["email", "chat"]
    value: str


class TableSpec(Output):
    """An output table as YAML declares it: the output's fields and, beside them, how it is computed."""

    inputs: list[Input] | dict[str, Input] = Field(default_factory=list)
    """The tables it reads: ``{table: orders, window: last_7}``; a window is ``same``, ``all``, ``last_N`` or
    ``previous_N``."""
    sql: str | None = None
    """SQL over ``<domain>.<table>`` names, with ``:partition_start`` / ``:partition_end`` bound."""
    sql_file: str | None = None
    """A ``.sql`` file next to the ``defs.yaml``, instead of ``sql``."""
    range_aware: bool = False


def _as_written(_context: dg.ResolutionContext, specs: list[BaseModel]) -> list[dict[str, Any]]:
    """The nested specs as the YAML wrote them: Mesh validates them once more, with file, line and field, when
    it discovers the domain."""
    return [spec.model_dump(by_alias=True, exclude_unset=True) for spec in specs]


def _typed(spec: type[BaseModel]) -> dg.Resolver:
    """A list of ``spec`` in the component's schema (nested fields an editor completes and dg checks)."""
    return dg.Resolver(_as_written, model_field_type=list[spec])


class ProductScaffolder(dg.Scaffolder):
    """``dg scaffold defs mesh_assets.DataProduct <name>``: a product that passes validation as it is, for its
    tables to be added; owned by the domain's owner (``domain.yaml``), or by its team when the domain names none."""

    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        folder = request.project_root or request.target_path.parent.parent
        defaults, _errors = load_defaults(folder)  # a broken domain.yaml is reported by dg check defs
        attributes: dict[str, Any] = {"name": request.target_path.name, "description": ""}
        if defaults.owner is None:
            attributes["owner"] = f"team:{folder.name}"
        if defaults.contacts is None:
            attributes["contacts"] = [{"kind": "chat", "value": f"#{folder.name}"}]
        dg.scaffold_component(request, {**attributes, "tables": []})


@dg.scaffold_with(ProductScaffolder)
class DataProduct(dg.Component, dg.Model, dg.Resolvable):
    """A domain's data product: tables with one owner, tier and classification, each produced by SQL or landed
    outside Mesh (``external``)."""

    name: str
    owner: str | None = None
    """An email address or ``team:<name>`` (default: the domain's, from ``domain.yaml``)."""
    contacts: list[ContactSpec] | None = None
    """Where the owners hear of failures (default: the domain's)."""
    description: str = ""
    tier: Literal["t1", "t2", "t3"] | None = None
    """Default: the domain's, else t3."""
    classification: Literal["l0", "l1", "l2", "l3"] | None = None
    """Default: the domain's, else l1."""
    status: Literal["draft", "active", "deprecated", "retired"] = "active"
    sunset: Annotated[date | None, dg.Resolver.default(model_field_type=date | None)] = None
    """The day a deprecated product's readers must have moved by (required exactly when deprecated)."""
    tags: dict[str, str] = {}
    cron: str | None = None
    rerun_history: bool = True
    start_date: Annotated[date | None, dg.Resolver.default(model_field_type=date | None)] = None
    """The first partition (default: the domain's, else 2021-01-01)."""
    end_date: Annotated[date | None, dg.Resolver.default(model_field_type=date | None)] = None
    """The first day with no partitions (excluded); unset, partitions go on to the present."""
    domain: str | None = None
    engine: Literal["session", "submit"] | None = None
    """Where the product's runs compute and publish; default: the deployment's ``engine.mode``."""
    input_freshness_hours: float | None = None
    """The oldest a table its outputs read whole may be, unless the input sets ``freshness_hours`` (default:
    the domain's)."""
    retries: dict[str, Any] | None = None
    """``{count, delay_seconds, backoff}``: retries of a run failed for a transient reason (default: the
    domain's); Mesh's refusals are never retried."""
    tables: Annotated[list[dict[str, Any]], _typed(TableSpec)] = []
    """Output tables: ``table``, ``version``, ``published``, ``inputs``, ``sql`` or ``sql_file``, ``checks``,
    ``contract``, ``status``, ``sunset``, ..."""
    external: Annotated[list[dict[str, Any]], _typed(ExternalTable)] = []
    """Tables landed outside Mesh, observed from their Delta log."""

    @classmethod
    def get_model_cls(cls) -> type[BaseModel] | None:
        """Dagster's model of the attributes, whose JSON schema (``dg check yaml``, editors) names the field
        that is wrong rather than the top-level field that holds it (:mod:`mesh_assets.components.schema`)."""
        base = super().get_model_cls()
        return None if base is None else _precise_model(base)

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return component_definitions(context.path / "defs.yaml")


@cache
def _precise_model(base: type[BaseModel]) -> type[BaseModel]:
    class Attributes(base):  # type: ignore[valid-type, misc]
        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return precise_schema(super().model_json_schema(*args, **kwargs))

    Attributes.__name__ = Attributes.__qualname__ = base.__name__
    return Attributes
