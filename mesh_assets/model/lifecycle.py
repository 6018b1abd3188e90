"""What a product's status, tier, classification and a table's major version mean to the platform.

Each is a type that carries its own effect, so no module branches on the strings a spec spells them with:
a ``draft`` is not automated and not readable by other domains, a ``retired`` table is read by no one, a
``t1`` product owes its consumers checks, a freshness expectation and two contacts, an ``l3`` table stays
inside its domain and its alerts carry no message.
"""

from __future__ import annotations

import enum


class Status(enum.StrEnum):
    """Where a product (or one output version) is in its life: ``draft`` -> ``active`` -> ``deprecated`` (with a
    ``sunset`` date consumers move by) -> ``retired``."""

    DRAFT = "draft"
    ACTIVE = "active"
    DEPRECATED = "deprecated"
    RETIRED = "retired"

    @property
    def automated(self) -> bool:
        """Whether the platform computes it on its own when inputs arrive (a draft or retired table waits for a
        manual run)."""
        return self in (Status.ACTIVE, Status.DEPRECATED)

    @property
    def readable_across_domains(self) -> bool:
        """Whether another domain may read it: a draft is its own domain's until it is active."""
        return self in (Status.ACTIVE, Status.DEPRECATED)

    @property
    def readable(self) -> bool:
        return self is not Status.RETIRED

    @property
    def deployed(self) -> bool:
        """Whether its code location builds it as an asset: a retired table has none (its table stays on disk
        until ``mesh maintain --retired`` deletes it past the retention)."""
        return self is not Status.RETIRED


class Tier(enum.StrEnum):
    """How much consumers may rely on a product: ``t1`` is business-critical."""

    T1 = "t1"
    T2 = "t2"
    T3 = "t3"

    @property
    def guaranteed(self) -> bool:
        """Whether the product must declare its guarantees: a blocking check and a freshness expectation on every
        output, and at least two contacts."""
        return self is Tier.T1


MIN_T1_CONTACTS = 2


class Classification(enum.StrEnum):
    """How sensitive a table's rows are, from ``l0`` (open) to ``l3`` (restricted)."""

    L0 = "l0"
    L1 = "l1"
    L2 = "l2"
    L3 = "l3"

    @property
    def shows_values(self) -> bool:
        """Whether row values may appear in check samples and errors (else counts and column names only)."""
        return self is Classification.L0

    def at_least(self, other: Classification) -> bool:
        """Whether this classification is ``other`` or more sensitive."""
        return int(self.value[1:]) >= int(other.value[1:])

    @property
    def publishable(self) -> bool:
        """Whether a table may be published to other domains: restricted rows stay inside their domain."""
        return self is not Classification.L3

    @property
    def alert_messages(self) -> bool:
        """Whether an alert may quote the failure's message (a Spark error can quote a row); a restricted table's
        alerts say what failed, where, and link the run, whose page is behind the UI's access control."""
        return self is not Classification.L3


def versioned_name(table: str, version: int) -> str:
    """The name a major version of ``table`` is stored and keyed under: version 1 keeps the table's own name (so
    nothing that reads it changes), a later one ``<table>_v<N>`` beside it."""
    return table if version == 1 else f"{table}_v{version}"
