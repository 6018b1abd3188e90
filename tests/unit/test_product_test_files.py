"""A product's test file that cannot be run is reported with its file, line and field; discovery never takes
it for a product spec."""

from __future__ import annotations

from pathlib import Path

from mesh_assets.graph.discovery import load_domain
from mesh_assets.testing.cases import read_cases

ROOT = Path(__file__).resolve().parents[2]


def test_a_bad_test_file_names_file_line_and_field(tmp_path: Path):
    path = tmp_path / "orders.tests.yaml"
    path.write_text(
        "tests:\n"
        "  - name: dedup\n"
        "    table: orders\n"
        "    given:\n"
        "      raw_orders: {id: 1}\n"  # line 5: a mapping, not a list of rows
        "    expect: [{id: 1}]\n"
        "  - name: typo\n"
        "    table: orders\n"
        "    expected: [{id: 1}]\n"  # line 9: unknown field
    )
    cases, errors = read_cases(path, "food_delivery")
    assert cases == []
    found = {(e.line, e.field) for e in errors}
    assert (5, "tests.0.given.raw_orders") in found
    assert (9, "tests.1.expected") in found
    text = "\n".join(str(e) for e in errors)
    assert "orders.tests.yaml" in text and "must be a list of rows" in text and "missing field 'expect'" in text


def test_the_example_test_files_are_valid_and_not_product_specs():
    folder = ROOT / "domains" / "food_delivery"
    cases, errors = read_cases(folder / "orders.tests.yaml", "food_delivery")
    assert errors == [] and [c.table for c in cases] == ["orders"] and cases[0].partition == "2021-06-03"
    specs = load_domain(folder)
    assert specs.errors == []
