"""A domain's defaults: what every product of the domain inherits unless it says otherwise.

Like dbt's defaults by folder (``+meta`` in ``dbt_project.yml``), ``domains/<domain>/domain.yaml`` says once
what a domain's products share (owner, contacts, tier, classification, the first partition and the first day
with none), so products stop repeating it; a product that sets a field keeps its own. dbt models of the domain
take their partition range from it too, unless their own config names one.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from pydantic import Field

from mesh_assets.model.access import Grant
from mesh_assets.model.lifecycle import Classification, Tier
from mesh_assets.model.product import OWNER_PATTERN, Contact, Retries, Strict

INHERITED = (
    "owner",
    "contacts",
    "tier",
    "classification",
    "start_date",
    "end_date",
    "input_freshness_hours",
    "retries",
    "restricted_from",
    "grants",
)
"""The product fields a domain may set for all its products."""


class DomainDefaults(Strict):
    """The fields of ``domain.yaml``: each optional, each validated as the product field it stands for."""

    owner: str | None = Field(default=None, pattern=OWNER_PATTERN)
    contacts: tuple[Contact, ...] | None = Field(default=None, min_length=1)
    tier: Tier | None = None
    classification: Classification | None = None
    start_date: date | None = None
    """The first partition of the domain's tables, dbt models included."""
    end_date: date | None = None
    """The first day with no partitions (excluded, as Dagster's ``end_date``) of the domain's tables, dbt models
    included: a domain whose data is a fixed history (the example's June 2021) lists only those days."""
    input_freshness_hours: float | None = Field(default=None, gt=0)
    """The oldest a table the domain's products read whole may be, unless an input sets ``freshness_hours``."""
    retries: Retries | None = None
    """The retry policy for transient failures of the domain's products' runs."""

    restricted_from: Classification | None = None
    """The classification from which other domains read the domain's published tables only by grant (``l2``)."""
    grants: tuple[Grant, ...] | None = None
    """Who in other domains may read the domain's restricted tables (see :mod:`mesh_assets.model.access`)."""

    def under(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """A product's ``fields`` with every default it does not set itself (a field set to null is not set)."""
        inherited = {k: getattr(self, k) for k in INHERITED if getattr(self, k) is not None}
        return {**inherited, **{k: v for k, v in fields.items() if not (k in INHERITED and v is None)}}
