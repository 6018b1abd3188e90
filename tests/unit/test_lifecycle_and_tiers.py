"""Lifecycle states, tiers, classification and major versions, each with its effect: a governance error naming
file, line and field, a warning that does not fail, a table keyed and read by version, a draft left alone by
automation (no Spark)."""

from __future__ import annotations

import warnings
from datetime import date, datetime
from pathlib import Path

import dagster as dg
import pytest
from rich.console import Console

from mesh_assets.automation.conditions import output_condition
from mesh_assets.cli import main as cli
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import DomainSpecs, load_all
from mesh_assets.graph.readers import deprecation_warnings
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.graph.validate import validate
from mesh_assets.model.errors import SpecError
from mesh_assets.model.lifecycle import Status
from mesh_assets.model.product import DataProduct, ExternalTable, Input, Output, PySparkTransformation
from mesh_assets.settings import get_settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "governance"
SUNSET = "a deprecated {} needs a sunset: the date its readers must have moved by"
T1_CHECK = (
    "a t1 product's output {} declares a blocking check or a contract, so a bad partition never reaches its readers"
)
T1_FRESH = "a t1 product's output {} declares a freshness expectation: {{kind: freshness, max_lag_hours: N}}"
L3 = "{} is classified l3 (restricted): only its own domain may read it; set published: false"
MOVE = "shop.orders is deprecated (sunset 2021-09-01): move to version 2 (shop.orders_v2)"


def domains_of(case: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, DomainSpecs]:
    monkeypatch.chdir(FIXTURES / case)
    return load_all(Path("domains"))


def E(file: str, line: int, field: str, message: str) -> SpecError:
    return SpecError(f"domains/{file}", line, field, message)


def test_a_sunset_comes_exactly_with_deprecation_and_outputs_have_a_status_only_in_active_products(monkeypatch):
    assert validate(domains_of("lifecycle_fields", monkeypatch)) == [
        E(
            "sales/defs/early/defs.yaml",
            6,
            "sunset",
            "a sunset applies only to a deprecated product (this one is active)",
        ),
        E("sales/defs/early/defs.yaml", 9, "tables.0.status", SUNSET.format("version")),
        E("sales/defs/fading/defs.yaml", 6, "status", SUNSET.format("product")),
        E(
            "sales/defs/sketch/defs.yaml",
            9,
            "tables.0.status",
            "an output declares a status of its own only in an active product (this one is draft)",
        ),
    ]


def test_t1_guarantees_and_restricted_tables(monkeypatch):
    assert validate(domains_of("tiers", monkeypatch)) == [
        E(
            "sales/defs/ledger/defs.yaml",
            7,
            "contacts",
            "a t1 product has at least 2 contacts, so an alert always reaches someone (1 declared)",
        ),
        E("sales/defs/ledger/defs.yaml", 9, "external.0.published", L3.format("raw_ledger")),
        E("sales/defs/ledger/defs.yaml", 12, "tables.0.published", L3.format("ledger")),
        E(
            "sales/defs/ledger/defs.yaml", 14, "tables.0.checks", T1_CHECK.format("ledger")
        ),  # a warn check does not block
        E("sales/defs/ledger/defs.yaml", 14, "tables.0.checks", T1_FRESH.format("ledger")),
        E("sales/refunds.py", 11, "tables.0.checks", T1_FRESH.format("refunds")),  # the decorator API's line
    ]


def test_retired_and_draft_tables_are_refused_as_inputs_and_a_deprecated_one_warns(monkeypatch):
    domains = domains_of("lifecycle_reads", monkeypatch)
    assert validate(domains) == [
        E(
            "reports/defs/reports/defs.yaml",
            14,
            "tables.2.inputs.shop__totals",
            "shop.totals is retired: nothing may read it; read another table",
        ),
        E(
            "reports/defs/reports/defs.yaml",
            17,
            "tables.3.inputs.shop__forecast",
            "shop.forecast is a draft: other domains may read it once shop makes it active",
        ),
        E(
            "reports/defs/reports/defs.yaml",
            20,
            "tables.4.inputs.shop__orders_v3",
            "unknown table shop.orders_v3 (version 3)",
        ),
        E(
            "reports/defs/reports/defs.yaml",
            23,
            "tables.5.inputs.shop__orders",
            "a query names shop.orders once, so it reads one version of it; compare versions in PySpark",
        ),
    ]  # the draft's own domain reads it, and current_report reads version 2: no error
    graph = MeshGraph(domains)
    assert deprecation_warnings(graph, today=date(2021, 8, 1)) == [
        E("reports/defs/reports/defs.yaml", 11, "tables.1.inputs.shop__orders", MOVE),
        E("reports/defs/reports/defs.yaml", 23, "tables.5.inputs.shop__orders", MOVE),
        E("shop/defs/forecasts/defs.yaml", 10, "tables.0.inputs.orders", MOVE),
    ]
    [late] = deprecation_warnings(graph, {"shop"}, today=date(2021, 9, 2))
    assert (
        late.message
        == "shop.orders is deprecated (its sunset 2021-09-01 has passed): move to version 2 (shop.orders_v2)"
    )


def test_validate_prints_deprecation_warnings_without_failing(monkeypatch, capsys):
    root = FIXTURES / "lifecycle_reads"
    monkeypatch.chdir(root)
    monkeypatch.setattr(cli, "console", Console(width=250, no_color=True, highlight=False))
    monkeypatch.setenv("MESH_PROJECT_ROOT", str(root))
    monkeypatch.setenv("MESH_DOMAINS_DIR", str(root / "domains"))
    get_settings.cache_clear()
    try:
        assert cli.main(["validate", "--domain", "shop"]) == 0
    finally:
        get_settings.cache_clear()
    out = capsys.readouterr().out
    assert (
        "warning domains/shop/defs/forecasts/defs.yaml:10: tables.0.inputs.orders: shop.orders is deprecated (" in out
    )
    assert "ok: 2 product(s)" in out


def test_versions_are_tables_of_their_own_and_inputs_read_the_version_they_pin(monkeypatch):
    domains = domains_of("lifecycle_reads", monkeypatch)
    graph = MeshGraph(domains)
    v1, v2 = graph.get("shop", "orders"), graph.get("shop", "orders_v2")
    assert (v1.version, v1.status, v1.sunset) == (1, Status.DEPRECATED, date(2021, 9, 1))
    assert (v2.version, v2.status, v2.sunset) == (2, Status.ACTIVE, None)
    assert [r.table.ref for r in graph.node("reports", "current_report").reads] == ["shop.orders_v2"]
    assert [r.table.ref for r in graph.node("reports", "legacy_report").reads] == ["shop.orders"]
    assert graph.consumers("shop", "orders_v2") == ("reports.compare_report", "reports.current_report")

    defs = build_definitions({"shop": domains["shop"]}, only={"shop"}, extra=[])
    asset_graph = defs.resolve_asset_graph()
    assert dg.AssetKey(["shop", "orders"]) in asset_graph.get_all_asset_keys()  # version 1 keeps its key
    assert asset_graph.get(dg.AssetKey(["shop", "orders_v2"])).tags["status"] == "active"
    assert asset_graph.get(dg.AssetKey(["shop", "orders"])).tags["status"] == "deprecated"


def test_the_decorator_api_declares_status_and_versions(tmp_path, monkeypatch):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "orders.py").write_text(
        """\
from mesh_assets import Input, Output, Product, chat

orders = Product("orders", owner="shop@example.com", contacts=[chat("#shop")], status="deprecated",
                 sunset="2030-01-01", external=[{"table": "raw", "published": False}])


@orders.transformation(Output(table="orders", version=2, published=True), inputs={"raw": Input(table="raw")})
def orders_v2(raw):
    return raw


@orders.transformation(Output(table="summary"), inputs={"orders": Input(table="orders", version=2)})
def summary(orders):
    return orders
"""
    )
    domains = load_all(tmp_path)
    assert validate(domains) == []
    graph = MeshGraph(domains)
    assert graph.get("shop", "orders_v2").lifecycle() == "deprecated (sunset 2030-01-01)"
    assert [r.table.name for r in graph.node("shop", "summary").reads] == ["orders_v2"]


def _product(name: str, status: str, table: str) -> DataProduct:
    return DataProduct(
        domain="down",
        name=name,
        owner="team:data",
        contacts=[{"kind": "chat", "value": "#data"}],
        start_date=date(2024, 1, 1),
        status=status,
        transformations=[
            PySparkTransformation(
                output=Output(table=table), inputs={"raw": Input(table="down.raw")}, fn=lambda raw: raw
            )
        ],
        external=[ExternalTable(table="raw")] if name == "report" else [],
    )


def test_draft_and_retired_products_are_not_automated():
    domains = {
        "down": DomainSpecs(
            "down",
            Path("."),
            [
                _product("report", "active", "report"),
                _product("sketch", "draft", "sketch"),
                _product("old", "retired", "old"),
            ],
        )
    }
    graph = MeshGraph(domains)
    assert output_condition(graph.node("down", "sketch")) is None
    assert output_condition(graph.node("down", "old")) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        defs = build_definitions(domains, extra=[])
    instance = dg.DagsterInstance.ephemeral()
    now = datetime(2024, 1, 10, 1, 0)
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=now).cursor
    instance.report_runless_asset_event(dg.AssetMaterialization(dg.AssetKey(["down", "raw"]), partition="2024-01-05"))
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor, evaluation_time=now)
    requested = {
        r.key.to_user_string(): set(result.get_requested_partitions(r.key))
        for r in result.results
        if r.true_subset.size
    }
    assert requested == {"down/report": {"2024-01-05"}}  # the draft and the retired twins wait for a manual run
