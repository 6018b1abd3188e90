"""Who may read a classified table: grants from its producer, and the masks on its ``pii`` columns.

A published table classified at or above its domain's ``restricted_from`` (default ``l2``) is read by another
domain only when its producer grants it, in ``domain.yaml`` (``grants: [{to: courier}]``, optionally for some
``tables``) or on the table itself. A grant names a domain (``courier``) or one product (``courier/deliveries``).
A column declared ``pii: true`` in a contract reaches a reader outside the producer's domain masked (its
``mask``: ``hash`` or ``null``) unless the reader's grant lists it under ``clear``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mesh_assets.model.names import Identifier

GRANTEE_PATTERN = r"^[a-z][a-z0-9_]{0,62}(/[a-z][a-z0-9_]{0,62})?$"


class Grant(BaseModel):
    """Read access to a producer's classified tables for a domain or one of its products."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    to: str = Field(pattern=GRANTEE_PATTERN)
    """A consuming domain (``courier``) or one product of it (``courier/deliveries``)."""
    tables: tuple[Identifier, ...] | None = None
    """In ``domain.yaml``: the tables granted (default: every table of the domain). Ignored on a table."""
    clear: tuple[Identifier, ...] = ()
    """``pii`` columns this reader sees unmasked."""

    def covers(self, domain: str, product: str, table: str) -> bool:
        """Whether this grant lets ``domain``'s ``product`` read ``table``."""
        grantee, _, only = self.to.partition("/")
        if grantee != domain or (only and only != product):
            return False
        return self.tables is None or table in self.tables
