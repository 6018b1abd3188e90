"""Grants and masks on resolved tables, and what they change of a product's versions: a grant or a ``pii`` mask
changes who reads the rows, not the rows, so no code version moves; a product that declares neither keeps the
revision it had before they existed."""

from __future__ import annotations

from mesh_assets.graph import access
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.access import Grant
from mesh_assets.model.product import Column, DataProduct, ExternalTable

STAFF = (Column(name="id", type="bigint"), Column(name="email", type="string", pii=True))


def _staff(classification: str = "l2", grants: tuple[dict, ...] = (), contract=STAFF) -> DataProduct:
    return DataProduct(
        domain="ha",
        name="people",
        owner="ha@example.com",
        contacts=[{"kind": "chat", "value": "#ha"}],
        classification=classification,
        grants=grants,
        external=[ExternalTable(table="staff", contract=contract)],
    )


def test_a_grant_names_a_domain_or_one_of_its_products_and_may_clear_masks() -> None:
    [staff] = tables_of(_staff(grants=({"to": "hb/payroll", "clear": ["email"]}, {"to": "hc"})))
    assert access.may_read("hb", "payroll", staff) and not access.may_read("hb", "other", staff)
    assert access.may_read("hc", "any", staff) and access.may_read("ha", "own", staff)
    assert not access.may_read("hd", "any", staff)
    assert access.masks("hb", "payroll", staff) == {} and access.masks("hc", "any", staff) == {"email": "hash"}
    assert access.masks("ha", "own", staff) == {}
    assert "'grants: [{to: hd}]'" in (access.grant_refusal("hd", "any", staff) or "")


def test_below_the_threshold_anyone_reads_and_only_pii_is_withheld_undeclared() -> None:
    [open_staff] = tables_of(_staff(classification="l1"))
    assert access.may_read("hd", "any", open_staff) and access.grant_refusal("hd", "any", open_staff) is None
    assert access.withheld("hd", "any", open_staff)  # its email would be unmasked
    [plain] = tables_of(_staff(classification="l1", contract=(Column(name="id", type="bigint"),)))
    assert not access.withheld("hd", "any", plain)
    assert Grant(to="hb", tables=("other",)).covers("hb", "p", "staff") is False


def test_grants_and_masks_move_no_code_version_and_an_undeclared_one_no_revision() -> None:
    [bare] = tables_of(_staff(contract=(Column(name="id", type="bigint"),)))
    [explicit] = tables_of(_staff(grants=(), contract=(Column(name="id", type="bigint", pii=False),)))
    assert bare.revision == explicit.revision
    [granted] = tables_of(_staff(grants=({"to": "hb"},), contract=(Column(name="id", type="bigint"),)))
    assert granted.revision != bare.revision


def _report(pii: bool, grants: tuple[dict, ...]) -> str | None:
    output = {"table": "report", "contract": [{"name": "id", "type": "bigint", "pii": pii}], "grants": list(grants)}
    product = DataProduct(
        domain="ha",
        name="reports",
        owner="ha@example.com",
        contacts=[{"kind": "chat", "value": "#ha"}],
        transformations=[{"kind": "sql", "output": output, "sql": "SELECT 1 AS id"}],
    )
    return next(iter(tables_of(product))).code_version


def test_an_outputs_code_version_ignores_its_grants_and_masks() -> None:
    assert _report(False, ()) == _report(True, ({"to": "hb"},))
