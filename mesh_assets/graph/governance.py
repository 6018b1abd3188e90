"""The rules that give a product's status, tier and classification their meaning, on its own fields.

- ``sunset`` is the date a deprecated product (or output version) is gone by: required exactly when the
  status is ``deprecated``; an output declares a status of its own only within an active product.
- A ``t1`` product declares its guarantees: at least two contacts, and on every output a blocking check (or a
  contract) and a freshness expectation.
- An ``l3`` (restricted) table is not published to other domains.

Each refusal is a location in spec terms (``tables.0.checks``) and a message; :mod:`mesh_assets.graph.rules`
turns them into errors with the file and line. Who may read a table for its status is
:mod:`mesh_assets.graph.readers`.
"""

from __future__ import annotations

from datetime import date

from mesh_assets.model.checks import Freshness
from mesh_assets.model.lifecycle import MIN_T1_CONTACTS, Status
from mesh_assets.model.product import DataProduct, Output

Found = list[tuple[tuple, str]]


def _sunset(status: Status | None, sunset: date | None, at: tuple, what: str) -> Found:
    if status is Status.DEPRECATED and sunset is None:
        return [((*at, "status"), f"a deprecated {what} needs a sunset: the date its readers must have moved by")]
    if sunset is not None and status is not Status.DEPRECATED:
        return [((*at, "sunset"), f"a sunset applies only to a deprecated {what} (this one is {status or 'active'})")]
    return []


def lifecycle_errors(product: DataProduct) -> Found:
    """Sunsets where they belong, and output statuses only within an active product."""
    found = _sunset(product.status, product.sunset, (), "product")
    for i, t in enumerate(product.transformations):
        output, at = t.output, ("tables", i)
        if output.status is not None and product.status is not Status.ACTIVE:
            found.append(
                (
                    (*at, "status"),
                    f"an output declares a status of its own only in an active product (this one is {product.status})",
                )
            )
        elif output.status is not None or output.sunset is not None:
            found += _sunset(output.status, output.sunset, at, "version")
    return found


def _guarded(output: Output) -> bool:
    """Whether a bad partition of ``output`` is stopped before its readers see it: a blocking check or a contract."""
    return output.contract is not None or any(c.blocking for c in output.checks if not isinstance(c, Freshness))


def tier_errors(product: DataProduct) -> Found:
    """What a guaranteed tier (``t1``) demands: two contacts; on every output a blocking check and a freshness
    expectation."""
    if not product.tier.guaranteed:
        return []
    tier, found = product.tier, []
    if len(product.contacts) < MIN_T1_CONTACTS:
        why = f"so an alert always reaches someone ({len(product.contacts)} declared)"
        found.append((("contacts",), f"a {tier} product has at least {MIN_T1_CONTACTS} contacts, {why}"))
    for i, t in enumerate(product.transformations):
        at, name = ("tables", i, "checks"), t.output.name
        if not _guarded(t.output):
            why = "so a bad partition never reaches its readers"
            found.append((at, f"a {tier} product's output {name} declares a blocking check or a contract, {why}"))
        if not any(isinstance(c, Freshness) for c in t.output.checks):
            expectation = "{kind: freshness, max_lag_hours: N}"
            found.append((at, f"a {tier} product's output {name} declares a freshness expectation: {expectation}"))
    return found


def classification_errors(product: DataProduct) -> Found:
    """A restricted (``l3``) product publishes nothing to other domains."""
    if product.classification.publishable:
        return []
    tables = [(("tables", i), t.output) for i, t in enumerate(product.transformations)]
    tables += [(("external", i), e) for i, e in enumerate(product.external)]
    why = f"classified {product.classification} (restricted): only its own domain may read it"
    return [
        ((*at, "published"), f"{table.name} is {why}; set published: false") for at, table in tables if table.published
    ]
