"""Reads across domains by grant, on resolved tables: whether a reader may read a restricted table, what grant
its producer would add, and which ``pii`` columns reach the reader masked (see :mod:`mesh_assets.model.access`).

The same answers serve ``mesh validate`` and the code location (an ungranted input is refused at its line),
the run (an input is masked as it is read; a table read without being declared, restricted or masked for the
reader, fails the run before anything is published) and the docs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from mesh_assets.graph.defaults import DEFAULTS_FILE
from mesh_assets.model.access import Grant
from mesh_assets.model.errors import relative
from mesh_assets.model.lifecycle import Classification
from mesh_assets.model.product import Column


class Table(Protocol):
    """What these rules read of a resolved table (:class:`mesh_assets.graph.resolve.Table`, which asks them of
    every product as it resolves)."""

    @property
    def domain(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def ref(self) -> str: ...
    @property
    def restricted(self) -> bool: ...
    @property
    def classification(self) -> Classification: ...
    @property
    def restricted_from(self) -> Classification: ...
    @property
    def grants(self) -> tuple[Grant, ...]: ...
    @property
    def contract(self) -> tuple[Column, ...] | None: ...
    @property
    def source_file(self) -> Path | None: ...
    @property
    def published(self) -> bool: ...


def grant_of(domain: str, product: str, table: Table) -> Grant | None:
    """The first of ``table``'s grants that lets ``domain``'s ``product`` read it."""
    return next((g for g in table.grants if g.covers(domain, product, table.name)), None)


def may_read(domain: str, product: str, table: Table) -> bool:
    """Whether ``domain``'s ``product`` may read ``table``: its own domain's, an unrestricted one, or granted."""
    return domain == table.domain or not table.restricted or grant_of(domain, product, table) is not None


def masks(domain: str, product: str, table: Table) -> dict[str, str]:
    """The ``pii`` columns of ``table`` that ``domain``'s ``product`` reads masked, with their mask (``hash`` or
    ``null``): none in the producer's domain, and none a grant to the reader clears."""
    if domain == table.domain or not table.contract:
        return {}
    grant = grant_of(domain, product, table)
    clear = set(grant.clear) if grant is not None else set()
    return {c.name: c.mask for c in table.contract if c.pii and c.name not in clear}


def guarded(table: Table) -> bool:
    """Whether some domain may not read ``table`` undeclared: it is internal, restricted or has ``pii`` columns."""
    return not table.published or table.restricted or any(c.pii for c in table.contract or ())


def withheld(domain: str, product: str, table: Table) -> bool:
    """Whether reading ``table`` without declaring it would give ``domain``'s ``product`` what it may not see:
    another domain's internal table, an ungranted restricted one, or ``pii`` columns unmasked."""
    if domain == table.domain:
        return False
    return not table.published or not may_read(domain, product, table) or bool(masks(domain, product, table))


def grant_refusal(domain: str, product: str, table: Table) -> str | None:
    """Why ``domain``'s ``product`` may not read ``table``, naming both sides and the grant to add; None if it may."""
    if may_read(domain, product, table):
        return None
    spec = f" or on table {table.name} in {relative(table.source_file)}" if table.source_file else ""
    return (
        f"{table.ref} is classified {table.classification} (domain {table.domain} restricts {table.restricted_from} "
        f"and above): {domain}/{product} may read it only by {table.domain}'s grant; {table.domain} adds "
        f"'grants: [{{to: {domain}}}]' (or {{to: {domain}/{product}}}) in {_domain_file(table)}{spec}"
    )


def _domain_file(table: Table) -> str:
    """The producer's ``domain.yaml``, found above its spec's file (``domains/<domain>/domain.yaml``)."""
    if table.source_file is not None:
        for parent in table.source_file.resolve().parents:
            if parent.name == table.domain:
                return relative(parent / DEFAULTS_FILE)
    return f"domains/{table.domain}/{DEFAULTS_FILE}"
