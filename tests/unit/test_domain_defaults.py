"""Domain defaults (``domains/<domain>/domain.yaml``): every product of the domain, YAML component or Python,
inherits owner, contacts, tier, classification and partition range unless it sets its own; a broken defaults
file is reported with its file, line and field, and nothing of the domain loads."""

from __future__ import annotations

import ast
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
import yaml

from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.validate import validate

DEFAULTS = """\
owner: sales-data@example.com
contacts:
  - {kind: chat, value: "#sales-data"}
tier: t2
classification: l2
start_date: 2022-03-01
end_date: 2022-04-01
"""

COMPONENT = """\
type: mesh_assets.DataProduct
attributes:
  name: daily_sales
  external:
    - {table: raw_sales, published: false}
  tables:
    - table: sales
      published: true
      inputs: [{table: raw_sales}]
      sql: SELECT * FROM sales.raw_sales
"""

PYTHON = """\
from mesh_assets import Input, Output, Product

report = Product("report", owner="finance@example.com", tier="t3")


@report.transformation(Output(table="sales_report"), inputs={"sales": Input(table="sales")})
def sales_report(sales):
    return sales
"""


def domain(root: Path, defaults: str | None = DEFAULTS, component: str = COMPONENT) -> Path:
    folder = root / "domains" / "sales"
    (folder / "defs" / "daily_sales").mkdir(parents=True)
    (folder / "defs" / "daily_sales" / "defs.yaml").write_text(component)
    (folder / "report.py").write_text(PYTHON)
    if defaults is not None:
        (folder / "domain.yaml").write_text(defaults)
    return root / "domains"


def test_products_inherit_the_domains_defaults_and_keep_what_they_set(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    domains = load_all(domain(tmp_path).relative_to(tmp_path))
    assert validate(domains) == []
    products = {p.name: p for p in domains["sales"].products}
    inherited = products["daily_sales"]
    assert (inherited.owner, inherited.tier, inherited.classification) == ("sales-data@example.com", "t2", "l2")
    assert [c.value for c in inherited.contacts] == ["#sales-data"] and inherited.start_date == date(2022, 3, 1)
    own = products["report"]  # sets owner and tier, inherits the rest
    assert (own.owner, own.tier, own.classification) == ("finance@example.com", "t3", "l2")
    assert [c.value for c in own.contacts] == ["#sales-data"] and own.start_date == date(2022, 3, 1)

    graph = build_definitions(domains, extra=[]).resolve_asset_graph()
    sales, report = graph.get(dg.AssetKey(["sales", "sales"])), graph.get(dg.AssetKey(["sales", "sales_report"]))
    assert (list(sales.owners), sales.tags["tier"]) == (["sales-data@example.com"], "t2")
    assert (list(report.owners), report.tags["tier"], report.tags["classification"]) == (
        ["finance@example.com"],
        "t3",
        "l2",
    )
    assert sales.partitions_def.get_first_partition_key() == "2022-03-01"
    assert report.partitions_def.get_first_partition_key() == "2022-03-01"
    # March 2022 only: the UI lists the domain's 31 days, not every day since to today
    assert sales.partitions_def.get_last_partition_key() == report.partitions_def.get_last_partition_key()
    assert report.partitions_def.get_last_partition_key() == "2022-03-31"
    assert len(report.partitions_def.get_partition_keys()) == 31


@pytest.mark.parametrize(
    ("defaults", "expected"),
    [
        ("tier: t9\n", ("domains/sales/domain.yaml", 1, "tier")),
        ("owner: someone\n", ("domains/sales/domain.yaml", 1, "owner")),
        ("owner: a@example.com\nschedule: daily\n", ("domains/sales/domain.yaml", 2, "schedule")),
        ("contacts: []\n", ("domains/sales/domain.yaml", 1, "contacts")),
        ("start_date: someday\n", ("domains/sales/domain.yaml", 1, "start_date")),
        ("end_date: someday\n", ("domains/sales/domain.yaml", 1, "end_date")),
    ],
)
def test_a_broken_defaults_file_is_reported_with_file_line_and_field_alone(
    tmp_path: Path, monkeypatch, defaults: str, expected: tuple
) -> None:
    monkeypatch.chdir(tmp_path)
    domains = load_all(domain(tmp_path, defaults).relative_to(tmp_path))
    errors = validate(domains)
    assert [(e.file, e.line, e.field) for e in errors] == [expected]
    assert domains["sales"].products == []  # nothing inherits from a file that does not validate


def test_without_defaults_a_product_names_its_own_owner(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    errors = validate(load_all(domain(tmp_path, defaults=None).relative_to(tmp_path)))
    assert sorted((e.file, e.field, e.message) for e in errors) == [
        ("domains/sales/defs/daily_sales/defs.yaml", "contacts", "Field required"),
        ("domains/sales/defs/daily_sales/defs.yaml", "owner", "Field required"),
        ("domains/sales/report.py", "contacts", "Field required"),
    ]


def test_the_example_domains_state_each_shared_value_once() -> None:
    """Every example domain has defaults, and no product repeats one of them."""
    root = Path(__file__).resolve().parents[2] / "domains"
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        defaults = yaml.safe_load((folder / "domain.yaml").read_text())
        repeated = []
        for path in folder.glob("defs/*/defs.yaml"):
            attributes = yaml.safe_load(path.read_text())["attributes"]
            repeated += [f"{path}: {k}" for k, v in defaults.items() if attributes.get(k) == v]
        for path in folder.glob("*.py"):
            calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)]
            given = {k.arg: k.value for c in calls if getattr(c.func, "id", None) == "Product" for k in c.keywords}
            repeated += [
                f"{path}: {k}"
                for k, v in given.items()
                if isinstance(v, ast.Constant) and str(defaults.get(k)) == str(v.value)
            ]
        assert repeated == [], folder.name


def test_retries_and_input_freshness_are_inherited_and_reach_dagster(tmp_path: Path, monkeypatch) -> None:
    """A domain's retry policy becomes Dagster's ``RetryPolicy`` of every product that sets none; a product's own
    wins; ``input_freshness_hours`` is inherited like the other fields."""
    monkeypatch.chdir(tmp_path)
    defaults = DEFAULTS + "input_freshness_hours: 26\nretries: {count: 3, delay_seconds: 30, backoff: exponential}\n"
    python = PYTHON.replace('tier="t3")', 'tier="t3", retries={"count": 1})')
    folder = domain(tmp_path, defaults)
    (folder / "sales" / "report.py").write_text(python)
    domains = load_all(folder.relative_to(tmp_path))
    assert validate(domains) == []
    products = {p.name: p for p in domains["sales"].products}
    assert products["daily_sales"].input_freshness_hours == products["report"].input_freshness_hours == 26

    defs = build_definitions(domains, extra=[])
    policies = retry_policies(defs)
    assert policies["sales"] == dg.RetryPolicy(max_retries=3, delay=30, backoff=dg.Backoff.EXPONENTIAL)
    assert policies["sales_report"] == dg.RetryPolicy(max_retries=1)


def retry_policies(defs: dg.Definitions) -> dict[str, dg.RetryPolicy | None]:
    """Each executable table's retry policy, by table name."""
    return {
        key.path[-1]: assets.op.retry_policy
        for assets in defs.resolve_asset_graph().assets_defs
        if assets.is_executable
        for key in assets.keys
    }


TIERS = """\
t2:
  input_freshness_hours: 12
  retries: {count: 2, delay_seconds: 10, backoff: linear}
t3:
  retries: {count: 1}
"""


def test_the_platforms_tier_defaults_apply_beneath_the_domains_and_the_products(tmp_path: Path, monkeypatch) -> None:
    """``domains/tiers.yaml`` gives each tier's products a retry policy and an input freshness; the domain's own
    value wins over its tier's, a product's own over both."""
    monkeypatch.chdir(tmp_path)
    folder = domain(tmp_path, DEFAULTS + "input_freshness_hours: 26\n")  # tier t2 for the component's product
    (folder / "tiers.yaml").write_text(TIERS)
    python = PYTHON.replace('tier="t3")', 'tier="t3", input_freshness_hours=4)')
    (folder / "sales" / "report.py").write_text(python)
    domains = load_all(folder.relative_to(tmp_path))
    assert validate(domains) == []
    products = {p.name: p for p in domains["sales"].products}
    assert products["daily_sales"].input_freshness_hours == 26  # the domain's, over t2's 12
    assert products["report"].input_freshness_hours == 4  # its own

    defs = build_definitions(domains, extra=[])
    policies = retry_policies(defs)
    assert policies["sales"] == dg.RetryPolicy(max_retries=2, delay=10, backoff=dg.Backoff.LINEAR)  # t2's
    assert policies["sales_report"] == dg.RetryPolicy(max_retries=1)  # t3's

    (folder / "sales" / "domain.yaml").write_text(DEFAULTS)  # no freshness of its own: t2's applies
    products = {p.name: p for p in load_all(folder.relative_to(tmp_path))["sales"].products}
    assert products["daily_sales"].input_freshness_hours == 12


def test_a_broken_tiers_file_is_reported_with_file_line_and_field(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    folder = domain(tmp_path)
    (folder / "tiers.yaml").write_text("t1:\n  retries: {count: 1}\nt2:\n  retries: {count: many}\n")
    errors = validate(load_all(folder.relative_to(tmp_path)))
    assert [(e.file, e.line, e.field) for e in errors] == [("domains/tiers.yaml", 4, "t2.retries.count")]
