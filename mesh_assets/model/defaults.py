"""A domain's defaults: what every product of the domain inherits unless it says otherwise.

Like dbt's defaults by folder (``+meta`` in ``dbt_project.yml``), ``domains/<domain>/domain.yaml`` says once
what a domain's products share (owner, contacts, tier, classification, the first partition and the first day
with none), so products stop repeating it; a product that sets a field keeps its own. dbt models of the domain
take their partition range from it too, unless their own config names one.

Beneath the domain's defaults, the platform's per tier (``domains/tiers.yaml``): how often a ``t1`` product's runs
are retried, how old a table it reads whole may be. A product's own value wins, then its domain's, then its tier's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from pydantic import Field, PrivateAttr

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
TIER_INHERITED = ("input_freshness_hours", "retries")
"""The product fields the platform may set for every product of a tier."""


class TierDefaults(Strict):
    """One tier's entry of ``domains/tiers.yaml``, each field validated as the product field it stands for."""

    input_freshness_hours: float | None = Field(default=None, gt=0)
    """The oldest a table the tier's products read whole may be, unless their domain or input says otherwise."""
    retries: Retries | None = None
    """The retry policy for transient failures of the tier's products' runs, unless their domain sets one."""


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

    _tiers: Mapping[Tier, TierDefaults] = PrivateAttr(default_factory=dict)

    def with_tiers(self, tiers: Mapping[Tier, TierDefaults]) -> DomainDefaults:
        """These defaults over the platform's per tier."""
        self._tiers = dict(tiers)
        return self

    def under(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """A product's ``fields`` with every default it does not set itself (a field set to null is not set):
        its domain's, then its tier's."""
        inherited = {k: getattr(self, k) for k in INHERITED if getattr(self, k) is not None}
        merged = {**inherited, **{k: v for k, v in fields.items() if not (k in INHERITED and v is None)}}
        try:
            tier = self._tiers.get(Tier(merged.get("tier") or Tier.T3))
        except ValueError:  # an unknown tier is the product's validation error to report
            tier = None
        for key in TIER_INHERITED if tier is not None else ():
            if merged.get(key) is None and getattr(tier, key) is not None:
                merged[key] = getattr(tier, key)
        return merged
