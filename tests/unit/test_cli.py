"""``mesh validate`` and ``mesh list`` on fixture meshes and on the real ``domains/`` folder (``cross_domain``: a
product declared as a Dagster component feeds a Python product of another domain)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from mesh_assets.cli import main as cli
from mesh_assets.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "governance"


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    # rich wraps and truncates at 80 columns when not on a terminal; tests read whole lines
    monkeypatch.setattr(cli, "console", Console(width=250, no_color=True, highlight=False))


@pytest.fixture
def use_domains(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    def use(case: str) -> None:
        root = FIXTURES / case
        monkeypatch.chdir(root)
        monkeypatch.setenv("MESH_PROJECT_ROOT", str(root))
        monkeypatch.setenv("MESH_DOMAINS_DIR", str(root / "domains"))
        get_settings.cache_clear()

    yield use
    get_settings.cache_clear()  # monkeypatch restores the environment after this; the next read re-reads it


def test_validate_fails_and_prints_every_error(use_domains, capsys: pytest.CaptureFixture[str]) -> None:
    use_domains("many_errors")
    assert cli.main(["validate"]) == 1
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("error ")]
    assert lines == [
        "error domains/sales/customers.yaml:3: contacts: Tuple should have at least 1 item after validation, not 0",
        "error domains/sales/customers.yaml:4: colour: unknown field 'colour'",
        "error domains/sales/orders.yaml:10: tables.0.sql: SQL reads sales.raw_refunds, which is not a declared input",
        "error domains/sales/orders.yaml:13: tables.0.inputs.missing: unknown table sales.missing",
        "error domains/sales/orders.yaml:14: tables.0.inputs.raw_menus.window: "
        "sales.raw_menus is not partitioned; use window 'all'",
        "error domains/sales/orders.yaml:16: tables.1.sql: SQL does not parse (line 1, col 15): Expecting )",
        "error domains/sales/refunds.py:6: tables.0.inputs: "
        "function build_refunds() takes ['order_rows'] but inputs are ['orders']",
    ]
    assert "7 error(s) in 1 domain(s)" in out


def test_validate_one_domain(use_domains, capsys: pytest.CaptureFixture[str]) -> None:
    use_domains("broken_domain")
    assert cli.main(["validate", "--domain", "good_domain"]) == 0
    assert "ok: 2 product(s) in 2 domain(s)" in capsys.readouterr().out
    assert cli.main(["validate", "--domain", "broken_domain"]) == 1
    assert "good_domain.raw_products is internal to domain good_domain" in capsys.readouterr().out


def test_validate_ok_on_a_valid_fixture(use_domains, capsys: pytest.CaptureFixture[str]) -> None:
    use_domains("cross_domain")
    assert cli.main(["validate"]) == 0
    assert "ok: 2 product(s) in 2 domain(s)" in capsys.readouterr().out


def test_validate_ok_without_warnings_on_the_real_domains(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MESH_PROJECT_ROOT", str(ROOT))
    monkeypatch.delenv("MESH_DOMAINS_DIR", raising=False)
    get_settings.cache_clear()
    try:
        assert cli.main(["validate"]) == 0, capsys.readouterr().out
    finally:
        get_settings.cache_clear()
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.startswith(("error ", "warning "))], out
    assert out.splitlines()[-1].startswith("ok: "), out


def test_list_shows_products_owners_and_cross_domain_edges(use_domains, capsys: pytest.CaptureFixture[str]) -> None:
    use_domains("cross_domain")
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.strip("│ ").split("│")] for line in out.splitlines() if line.startswith("│")]
    assert rows == [
        ["catalog", "products", "products", "catalog@example.com", "yes", "none", "product"],
        ["catalog", "products", "raw_products", "catalog@example.com", "no", "none", "external"],
        ["sales", "sales", "raw_sales", "team:sales", "no", "daily", "external"],
        ["sales", "sales", "sales_by_product", "team:sales", "yes", "daily", "product"],
    ]
    assert out.splitlines()[-2:] == ["Cross-domain edges:", "  catalog.products -> sales.sales_by_product"]


def test_list_without_cross_domain_edges(use_domains, capsys: pytest.CaptureFixture[str]) -> None:
    use_domains("windows")
    assert cli.main(["list"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "No cross-domain edges."


def test_validate_accepts_products_reading_dbt_models_as_the_location_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ROOT / "tests" / "fixtures" / "dbt_consumer"
    monkeypatch.chdir(root)
    monkeypatch.setenv("MESH_DOMAINS_DIR", str(root / "domains"))
    get_settings.cache_clear()
    try:
        assert cli.main(["validate"]) == 0, capsys.readouterr().out
    finally:
        get_settings.cache_clear()
    assert capsys.readouterr().out.startswith("ok: 1 product(s) in 1 domain(s)")


def test_validate_warns_about_an_hourly_table_going_back_years(use_domains, capsys: pytest.CaptureFixture[str]) -> None:
    use_domains("partition_counts")
    assert cli.main(["validate"]) == 0  # a warning, not an error: the mesh still loads
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if line.startswith("warning ")]
    assert len(warnings) == 1, out  # the daily table from the same date is far below the threshold
    assert warnings[0].startswith("warning domains/clicks/clicks.yaml:7: start_date: clicks.raw_clicks has "), warnings
    assert "hourly partitions since 2020-01-01, more than the 25,000 Dagster's UI lists quickly" in warnings[0]
