"""Products declared as Dagster components (``defs/<name>/defs.yaml``, ``type: mesh_assets.DataProduct``): the
attributes are a product spec, validated and reported exactly as a product's YAML file, on the component file's
own lines; Python products next to them keep working."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.validate import validate

COMPONENT = """\
type: mesh_assets.DataProduct
attributes:
  name: daily_sales
  owner: sales@example.com
  contacts: [{kind: chat, value: "#sales"}]
  external:
    - {table: raw_sales, published: false}
  tables:
    - table: sales
      published: true
      inputs: [{table: raw_sales}]
      sql_file: sales.sql
"""

PYTHON = """\
from mesh_assets import Input, Output, Product, chat

report = Product("report", owner="sales@example.com", contacts=[chat("#sales")])


@report.transformation(Output(table="sales_report"), inputs={"sales": Input(table="sales")})
def sales_report(sales):
    return sales
"""


def domain(root: Path, component: str = COMPONENT) -> Path:
    folder = root / "domains" / "sales"
    (folder / "defs" / "daily_sales").mkdir(parents=True)
    (folder / "defs" / "daily_sales" / "defs.yaml").write_text(component)
    (folder / "defs" / "daily_sales" / "sales.sql").write_text(
        "SELECT * FROM sales.raw_sales WHERE p_date BETWEEN :partition_start AND :partition_end"
    )
    (folder / "report.py").write_text(PYTHON)
    return folder


def test_a_component_product_and_a_python_product_build_one_domain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    domain(tmp_path)
    monkeypatch.chdir(tmp_path)
    domains = load_all(Path("domains"))
    assert validate(domains) == []
    defs = build_definitions(domains, extra=[])
    graph = defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey(["sales", "sales"])).group_name == "daily_sales"
    assert graph.get(dg.AssetKey(["sales", "sales"])).owners == ["sales@example.com"]
    assert graph.get(dg.AssetKey(["sales", "sales_report"])).parent_keys == {dg.AssetKey(["sales", "sales"])}
    assert not graph.get(dg.AssetKey(["sales", "raw_sales"])).is_executable


@pytest.mark.parametrize(
    ("replace", "by", "error"),
    [
        ("sales@example.com", "nobody", (4, "owner", "String should match pattern")),
        ("      published: true", "      publish: true", (10, "tables.0.publish", "unknown field 'publish'")),
        ("sql_file: sales.sql", "sql_file: ../sales.sql", (12, "tables.0.sql_file", "SQL file '../sales.sql'")),
        (
            "inputs: [{table: raw_sales}]",
            "inputs: [{table: raw_salez}]",
            (11, "tables.0.inputs.raw_salez", "unknown table sales.raw_salez"),  # the input's own line
        ),
    ],
)
def test_a_broken_component_is_reported_with_its_file_line_and_field(
    replace: str, by: str, error: tuple[int, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    domain(tmp_path, COMPONENT.replace(replace, by))
    monkeypatch.chdir(tmp_path)
    errors = {(e.file, e.line, e.field): e.message for e in validate(load_all(Path("domains")))}
    assert errors[("domains/sales/defs/daily_sales/defs.yaml", *error[:2])].startswith(error[2])


def test_components_of_other_types_are_left_to_dagster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = domain(tmp_path)
    (folder / "defs" / "other").mkdir()
    (folder / "defs" / "other" / "defs.yaml").write_text("type: dagster.DefsFolderComponent\nattributes: {}\n")
    monkeypatch.chdir(tmp_path)
    specs = load_all(Path("domains"))["sales"]
    assert sorted(p.name for p in specs.products) == ["daily_sales", "report"]
    assert specs.errors == []


def test_a_component_file_that_is_not_yaml_is_reported_as_its_location_would_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    domain(tmp_path, "type: mesh_assets.DataProduct\nattributes: {name: [daily_sales\n")
    monkeypatch.chdir(tmp_path)
    errors = validate(load_all(Path("domains")))  # report.py's input, sales.sales, is unknown now too
    [error] = [e for e in errors if e.file == "domains/sales/defs/daily_sales/defs.yaml"]
    assert error.field == ""
    assert error.line is not None and error.message.startswith("invalid YAML")


def test_a_component_of_another_type_is_left_to_dagster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = domain(tmp_path)
    (folder / "defs" / "other").mkdir()
    (folder / "defs" / "other" / "defs.yaml").write_text("type: dagster.DefsFolderComponent\nattributes: {}\n")
    monkeypatch.chdir(tmp_path)
    assert validate(load_all(Path("domains"))) == []
