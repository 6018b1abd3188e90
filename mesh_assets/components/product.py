"""A data product as a Dagster component: ``defs/<name>/defs.yaml`` with ``type: mesh_assets.DataProduct``.

The attributes are a product spec, field for field the YAML spec. Mesh validates them (with the file, line and
field of every error) when it discovers the domain, before Dagster loads the component; the fields here give
``dg check yaml`` and editors their schema. The assets come from the mesh resolved once, so a component's
product reads and is read by other domains like any other product.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

import dagster as dg

from mesh_assets.definitions import component_definitions


class ContactSpec(dg.Model):
    kind: Literal["email", "chat"]
    value: str


class ProductScaffolder(dg.Scaffolder):
    """``dg scaffold defs mesh_assets.DataProduct <name>``: a product that passes validation as it is, owned by
    the domain's team, for its tables to be added."""

    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        domain = request.project_root.name if request.project_root else request.target_path.parent.parent.name
        dg.scaffold_component(
            request,
            {
                "name": request.target_path.name,
                "description": "",
                "owner": f"team:{domain}",
                "tier": "t3",
                "classification": "l1",
                "contacts": [{"kind": "chat", "value": f"#{domain}"}],
                "tables": [],
            },
        )


@dg.scaffold_with(ProductScaffolder)
class DataProduct(dg.Component, dg.Model, dg.Resolvable):
    """A domain's data product: tables with one owner, tier and classification, each produced by SQL or landed
    outside Mesh (``external``)."""

    name: str
    owner: str
    contacts: list[ContactSpec]
    description: str = ""
    tier: Literal["t1", "t2", "t3"] = "t3"
    classification: Literal["l0", "l1", "l2", "l3"] = "l1"
    tags: dict[str, str] = {}
    cron: str | None = None
    rerun_history: bool = True
    start_date: Annotated[date | None, dg.Resolver.default(model_field_type=date | None)] = None
    """The first partition (default 2021-01-01)."""
    end_date: Annotated[date | None, dg.Resolver.default(model_field_type=date | None)] = None
    """The first day with no partitions (excluded); unset, partitions go on to the present."""
    domain: str | None = None
    tables: list[dict[str, Any]] = []
    """Output tables: ``table``, ``published``, ``inputs``, ``sql`` or ``sql_file``, ``checks``, ``contract``, ..."""
    external: list[dict[str, Any]] = []
    """Tables landed outside Mesh, observed from their Delta log."""

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return component_definitions(context.path / "defs.yaml")
