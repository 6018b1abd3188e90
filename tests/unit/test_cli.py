"""``mesh validate`` and ``mesh list`` on fixture meshes and on the real ``domains/`` folder (``cross_domain``: a
product declared as a Dagster component feeds a Python product of another domain); what ``mesh invalidate``
marks, records and refuses, on partitions recorded as published."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from rich.console import Console
from runless import report_checks

from mesh_assets.cli import main as cli
from mesh_assets.definitions import domain_definitions
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
        "error domains/sales/defs/orders/defs.yaml:15: tables.0.inputs.missing: unknown table sales.missing",
        "error domains/sales/defs/orders/defs.yaml:16: tables.0.inputs.raw_menus.window: "
        "sales.raw_menus is not partitioned; use window 'all'",
        "error domains/sales/defs/orders/defs.yaml:17: tables.0.sql: "
        "SQL reads sales.raw_refunds, which is not a declared input",
        "error domains/sales/defs/orders/defs.yaml:21: tables.1.sql: SQL does not parse (line 1, col 15): Expecting )",
        "error domains/sales/refunds.py:6: tables.0.inputs: "
        "function build_refunds() takes ['order_rows'] but inputs are ['orders']",
    ]
    assert "7 error(s) in 1 domain(s)" in out


def test_validate_refuses_write_mode_full_on_partitioned_outputs(
    use_domains, capsys: pytest.CaptureFixture[str]
) -> None:
    use_domains("write_mode")
    assert cli.main(["validate"]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("error ")]
    why = "write_mode: full is for unpartitioned outputs; a {} output overwrites the partitions it computes"
    assert [line.split(" Value error, ")[0] for line in lines] == [
        "error domains/sales/defs/snapshots/defs.yaml:11: tables.0.write_mode:",
        "error domains/sales/hourly.py:6: write_mode:",
    ]
    assert why.format("daily") in lines[0] and why.format("hourly") in lines[1]


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
    assert capsys.readouterr().out.splitlines() == [
        "table                                      kind     grain  tier published status",
        "catalog / products (catalog@example.com)",
        "  products                                 product  none   t3   yes       active",
        "  raw_products                             external none   t3   no        active",
        "sales / sales (team:sales)",
        "  raw_sales                                external daily  t3   no        active",
        "  sales_by_product                         product  daily  t3   yes       active",
        "4 table(s) of 2 product(s) in 2 domain(s)",
        "Cross-domain edges:",
        "  catalog.products -> sales.sales_by_product",
        "No dbt edges.",
    ]


def test_list_without_cross_domain_edges(use_domains, capsys: pytest.CaptureFixture[str]) -> None:
    use_domains("partition_counts")
    assert cli.main(["list"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["No cross-domain edges.", "No dbt edges."]


def mesh_list(*options: str) -> str:
    """``mesh list`` on the example mesh as a user's terminal of 80 columns shows it."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "mesh"), "list", *options],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "80", "MESH_PROJECT_ROOT": str(ROOT), "MESH_DOMAINS_DIR": str(ROOT / "domains")},
        timeout=300,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def test_list_of_the_example_fits_80_columns_and_names_dbt_models_their_domains_and_edges() -> None:
    out = mesh_list()
    lines = out.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    assert "analytics / city_kpis (analytics@example.com)" in lines  # the domain of dbt models alone
    models = {line.split()[0]: line.split()[1:] for line in lines if line.startswith("  ") and " dbt " in line}
    assert models == {
        "city_daily_kpis": ["dbt", "daily", "t3", "yes", "active"],
        "stg_orders": ["dbt", "daily", "t3", "no", "active"],
        "restaurant_daily_orders": ["dbt", "daily", "t3", "yes", "active"],
    }
    assert "food_delivery / restaurant_orders (food-delivery-data@example.com)" in lines  # a domain's own model
    dbt_edges = lines[lines.index("dbt edges:") + 1 :]
    assert "  food_delivery.delivery_times_7_days -> analytics.city_daily_kpis" in dbt_edges
    assert "  food_delivery.orders -> food_delivery.restaurant_daily_orders" in dbt_edges
    assert "  central.order_descriptors -> courier.courier_distances_points_intermediate" in lines


def test_list_json_and_wide_give_every_tables_status_and_tier() -> None:
    listing = json.loads(mesh_list("--json"))
    tables = {(t["domain"], t["table"]): t for t in listing["tables"]}
    assert ("analytics", "city_daily_kpis") in tables and ("growth", "summary_gsc") in tables
    assert all(t["status"] and t["tier"] for t in tables.values())
    assert tables["central", "raw_order_events"] | {"owner": "-"} == {
        "domain": "central",
        "product": "order_events",
        "table": "raw_order_events",
        "version": 1,
        "status": "active",
        "tier": "t1",
        "owner": "-",
        "published": False,
        "partitioning": "hourly",
        "kind": "external",
        "table_kind": "-",
        "regions": [],
    }
    assert tables["food_delivery", "orders"]["table_kind"] == "partitions"
    assert tables["growth", "summary_gsc"]["table_kind"] == "full"  # declared with write_mode: full
    assert {"from": "food_delivery.orders", "to": "analytics.stg_orders", "cross_domain": True, "dbt": True} in (
        listing["edges"]
    )
    wide = mesh_list("--wide").splitlines()
    assert wide[0].split() == [
        "domain",
        "product",
        "table",
        "version",
        "status",
        "tier",
        "owner",
        "published",
        "partitioning",
        "kind",
        "table_kind",
        "regions",
    ]
    rows = {(line.split()[0], line.split()[2]): line.split() for line in wide[1 : len(tables) + 1]}
    assert rows.keys() == tables.keys()
    assert rows["analytics", "city_daily_kpis"][3:6] == ["v1", "active", "t3"]


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
    assert warnings[0].startswith(
        "warning domains/clicks/defs/clicks/defs.yaml:9: start_date: clicks.raw_clicks has "
    ), warnings
    assert "hourly partitions since 2020-01-01, more than the 25,000 Dagster's UI lists quickly" in warnings[0]


def test_validate_warns_about_hourly_tables_declared_in_python_and_in_yaml(
    use_domains, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Python product's external table has no line of its own: its warning names the file alone and sorts
    before the same file's output, which has its transformation's line (a TypeError comparing no line with a line
    before), and both before the YAML product's."""
    use_domains("partition_counts_mixed")
    assert cli.main(["validate"]) == 0
    out = capsys.readouterr().out
    assert "Traceback" not in out
    warnings = [line for line in out.splitlines() if line.startswith("warning ")]
    assert [w.split(" has ")[0] for w in warnings] == [
        "warning domains/clicks/app_events.py: start_date: clicks.raw_app_events",
        "warning domains/clicks/app_events.py:17: start_date: clicks.app_events",
        "warning domains/clicks/defs/clicks/defs.yaml:9: start_date: clicks.raw_clicks",
    ], out


def published(instance, key: list[str], days: list[str]) -> None:
    """``key``'s ``days`` recorded as published (as a run's materializations are), without computing them."""
    for day in days:
        instance.report_runless_asset_event(dg.AssetMaterialization(dg.AssetKey(key), partition=day))


@pytest.fixture
def instance_of(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator:
    """``instance_of(domains)``: the CLI pointed at ``domains`` (the dbt models too, for the example mesh) and at
    a throwaway instance, which it returns."""

    def use(domains: Path) -> dg.DagsterInstance:
        home = tmp_path / "dagster"
        home.mkdir()
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        monkeypatch.setenv("MESH_DOMAINS_DIR", str(domains))
        if domains != ROOT / "domains":
            monkeypatch.setenv("MESH_DBT_PROJECT_DIR", str(tmp_path / "no-dbt"))
        get_settings.cache_clear()
        return dg.DagsterInstance.from_config(str(home))

    yield use
    get_settings.cache_clear()


def test_mesh_invalidate_and_the_domains_job_mark_what_read_it_anywhere_again_and_refuse_an_external_table(
    instance_of, capsys: pytest.CaptureFixture[str]
) -> None:
    domains = ROOT / "tests" / "fixtures" / "trust" / "domains"
    instance = instance_of(domains)
    published(instance, ["tr", "daily_sales"], ["2021-06-01", "2021-06-02"])
    published(instance, ["tr", "two_day_sales"], ["2021-06-02"])
    published(instance, ["ledger", "ledger_entries"], ["2021-06-02"])

    assert cli.main(["invalidate", "tr/daily_sales", "--start", "2021-06-02", "--reason", "double counted"]) == 0
    # found wrong again after a re-run, say: the same partition, from the UI (the tr location's job)
    job = domain_definitions(domains / "tr" / "definitions.py").resolve_job_def("tr__invalidate")
    config = {"table": "daily_sales", "start": "2021-06-02", "reason": "still double counted"}
    again = job.execute_in_process(run_config={"ops": {"tr__mark_invalid": {"config": config}}}, instance=instance)

    out = capsys.readouterr().out
    assert "tr/two_day_sales 2021-06-02: suspect" in out and "ledger/ledger_entries 2021-06-02: suspect" in out
    marked, _ = again.output_for_node("tr__mark_invalid")
    assert [m.describe() for m in marked] == [
        "tr/daily_sales 2021-06-02: invalid",
        "tr/two_day_sales 2021-06-02: suspect",
        "ledger/ledger_entries 2021-06-02: suspect",  # another domain's, which the tr location does not serve
    ]
    history = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey(["tr", "daily_sales"]), "valid"), 10
    )
    assert [r.event.dagster_event.event_specific_data.description for r in history] == [
        "invalidated: still double counted",
        "invalidated: double counted",
    ]
    assert {r.run_id for r in history} == {r.run_id for r in instance.get_runs()}  # each recorded by its run

    assert cli.main(["invalidate", "tr/raw_sales", "--start", "2021-06-02", "--reason", "bad export"]) == 2
    refused = capsys.readouterr().out
    assert "tr/raw_sales is an external table: Mesh did not publish it and cannot hold its readers on it" in refused
    assert "invalidate what was computed from them (readers: tr/daily_sales); nothing marked" in refused
    assert len(instance.get_runs()) == 2  # a refusal launches nothing


RECORDS_IMPORT = (
    "import os\n\nwith open(os.environ['MESH_TEST_IMPORTED'], 'a') as record:\n    record.write(f'{os.getpid()}\\n')\n"
)


def test_a_domains_invalidate_run_walks_the_catalog_and_runs_no_other_domains_code(
    instance_of, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ledger's product file records each process that imports it: its own discovery's child process may, the
    process running tr's location, its ``tr__invalidate`` run and ``mesh invalidate`` may not, and the suspect
    ledger partition is marked all the same."""
    domains = tmp_path / "domains"
    shutil.copytree(ROOT / "tests" / "fixtures" / "trust" / "domains", domains)
    ledger = domains / "ledger" / "ledger.py"
    ledger.write_text(RECORDS_IMPORT + ledger.read_text())
    imported = tmp_path / "imported"
    monkeypatch.setenv("MESH_TEST_IMPORTED", str(imported))
    monkeypatch.setenv("MESH_HOME", str(tmp_path / "home"))
    instance = instance_of(domains)
    published(instance, ["tr", "daily_sales"], ["2021-06-01", "2021-06-02"])
    published(instance, ["tr", "two_day_sales"], ["2021-06-02"])
    published(instance, ["ledger", "ledger_entries"], ["2021-06-02"])

    job = domain_definitions(domains / "tr" / "definitions.py").resolve_job_def("tr__invalidate")
    config = {"table": "daily_sales", "start": "2021-06-02", "reason": "double counted"}
    result = job.execute_in_process(run_config={"ops": {"tr__mark_invalid": {"config": config}}}, instance=instance)
    assert cli.main(["invalidate", "tr/daily_sales", "--start", "2021-06-02", "--reason", "still wrong"]) == 0

    marked, _ = result.output_for_node("tr__mark_invalid")
    assert [m.describe() for m in marked] == [
        "tr/daily_sales 2021-06-02: invalid",
        "tr/two_day_sales 2021-06-02: suspect",
        "ledger/ledger_entries 2021-06-02: suspect",
    ]
    assert "ledger/ledger_entries 2021-06-02: suspect" in capsys.readouterr().out
    history = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey(["ledger", "ledger_entries"]), "valid"), 10
    )
    assert [r.event.dagster_event.event_specific_data.description for r in history] == [
        "suspect: computed from invalid tr/daily_sales 2021-06-02 (still wrong)",
        "suspect: computed from invalid tr/daily_sales 2021-06-02 (double counted)",
    ]
    pids = imported.read_text().split()
    assert pids and str(os.getpid()) not in pids  # discovered in a child of its own, never imported here


def test_mesh_invalidate_of_a_domain_whose_location_does_not_load_names_why_and_marks_nothing(
    instance_of, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    domains = tmp_path / "domains"
    shutil.copytree(ROOT / "tests" / "fixtures" / "trust" / "domains", domains)
    (domains / "tr" / "broken.yaml").write_text("name: broken\nowner: sales@example.com\ncolour: red\n")
    monkeypatch.setenv("MESH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    instance = instance_of(domains)
    published(instance, ["tr", "daily_sales"], ["2021-06-02"])

    assert cli.main(["invalidate", "tr/daily_sales", "--start", "2021-06-02", "--reason", "double counted"]) == 2
    out = capsys.readouterr().out
    assert "error domains/tr/broken.yaml:3: colour: unknown field 'colour'" in out
    assert "tr's code location does not load: nothing marked" in out
    assert instance.get_runs() == []


def test_mesh_invalidate_refuses_a_dbt_model_and_names_the_models_it_cannot_mark(
    instance_of, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = instance_of(ROOT / "domains")
    published(instance, ["food_delivery", "delivery_times_7_days"], ["2021-06-02"])
    published(instance, ["analytics", "city_daily_kpis"], ["2021-06-02"])

    assert cli.main(["invalidate", "analytics/city_daily_kpis", "--start", "2021-06-02", "--reason", "x"]) == 2
    refused = capsys.readouterr().out
    assert "analytics/city_daily_kpis is not a Mesh product's output (a dbt model): it has no valid check" in refused
    assert "mesh backfill analytics/city_daily_kpis --start .. --end .. --downstream" in refused
    assert instance.get_runs() == []

    invalidate = ["invalidate", "food_delivery/delivery_times_7_days", "--start", "2021-06-02", "--reason", "late"]
    assert cli.main(invalidate) == 0
    out = capsys.readouterr().out
    assert "food_delivery/delivery_times_7_days 2021-06-02: invalid" in out
    assert (
        "analytics/city_daily_kpis 2021-06-02: computed from it, not marked (not a Mesh product's output: no valid "
        "check); re-run it after the fix" in out
    )


def test_mesh_health_lists_invalid_suspect_and_failed_partitions_per_table_with_reason_and_clearing_command(
    instance_of, no_webserver, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = instance_of(ROOT / "tests" / "fixtures" / "trust" / "domains")
    published(instance, ["tr", "daily_sales"], ["2021-06-01", "2021-06-02", "2021-06-03"])
    published(instance, ["tr", "two_day_sales"], ["2021-06-02", "2021-06-03"])
    assert cli.main(["health"]) == 0  # nothing to distrust yet: a check not run is not a failure
    assert "No partition is invalid, suspect or failing a check." in capsys.readouterr().out
    report_checks(instance, dg.AssetKey(["tr", "daily_sales"]), "2021-06-01", not_null_amount=False)

    invalidate = ["invalidate", "tr/daily_sales", "--start", "2021-06-02", "--end", "2021-06-03"]
    assert cli.main([*invalidate, "--reason", "refunds counted twice"]) == 0
    capsys.readouterr()

    assert cli.main(["health"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:8] == [
        "tr/daily_sales",
        "  invalid 2021-06-02..2021-06-03 (2): refunds counted twice",
        "    clear: mesh backfill tr/daily_sales --start 2021-06-02 --end 2021-06-03 --downstream",
        "  check failed 2021-06-01: not_null_amount",
        "    clear: mesh backfill tr/daily_sales --start 2021-06-01 --end 2021-06-01",
        "tr/two_day_sales",
        "  suspect 2021-06-02..2021-06-03 (2): computed from invalid tr/daily_sales 2021-06-02, tr/daily_sales "
        "2021-06-03 (refunds counted twice)",
        "    clear: mesh backfill tr/daily_sales --start 2021-06-02 --end 2021-06-03 --downstream",  # its sources
    ]
    assert f"stale partitions not listed: no Dagster webserver answers at {no_webserver}" in " ".join(lines[8:])
    assert lines[-1] == "5 partition(s) of 2 table(s) invalid, suspect or failing a check"

    assert cli.main(["health", "tr.two_day_sales"]) == 1
    one = capsys.readouterr().out.splitlines()
    assert (
        one[0] == "tr/two_day_sales" and one[-1] == "2 partition(s) of 1 table(s) invalid, suspect or failing a check"
    )
    assert cli.main(["health", "tr/nothing"]) == 2
    assert "error unknown table 'tr/nothing'" in capsys.readouterr().out


@pytest.fixture
def use_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Point the CLI at a mesh folder: ``tests/fixtures/<name>`` or a path."""

    def use(name: str | Path) -> None:
        root = name if isinstance(name, Path) else ROOT / "tests" / "fixtures" / name
        monkeypatch.chdir(root)
        monkeypatch.setenv("MESH_PROJECT_ROOT", str(root))
        monkeypatch.setenv("MESH_DOMAINS_DIR", str(root / "domains"))
        get_settings.cache_clear()

    yield use
    get_settings.cache_clear()


def test_list_shows_a_tables_regions_under_it_and_in_json_with_their_zones(use_fixture, capsys) -> None:
    use_fixture("regions")
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = lines.index(next(line for line in lines if line.startswith("  region_hours ")))
    assert lines[row].split()[1:] == ["product", "daily", "t3", "yes", "active"]
    assert lines[row + 1] == "    regions: eu, latam, apac"
    assert [line for line in lines if "regions:" in line] == [lines[row + 1]]  # a table without regions has none
    assert cli.main(["list", "--json"]) == 0
    tables = {t["table"]: t for t in json.loads(capsys.readouterr().out)["tables"]}
    assert tables["region_hours"]["regions"] == [
        {"region": "eu", "zone": "Europe/Madrid"},
        {"region": "latam", "zone": "America/Sao_Paulo"},
        {"region": "apac", "zone": "Asia/Singapore"},
    ]
    assert tables["hours_per_date"]["regions"] == []
    assert cli.main(["list", "--wide"]) == 0
    wide = capsys.readouterr().out.splitlines()
    assert wide[0].split()[-1] == "regions"
    assert next(line for line in wide if " region_hours " in line).split()[-1] == "eu,latam,apac"


def test_list_shows_minute_weekly_and_monthly_grains_in_aligned_columns(use_fixture, capsys, tmp_path) -> None:
    root = tmp_path / "grains"
    shutil.copytree(ROOT / "tests" / "fixtures" / "rollups", root)
    spec = root / "domains" / "roll" / "defs" / "rollups" / "defs.yaml"
    spec.write_text(
        spec.read_text()
        + "    - table: monthly_sales\n"
        + "      partitioning: monthly\n"
        + "      partition_column: p_month\n"
        + "      inputs: [{table: daily_sales}]\n"
        + "      sql: SELECT SUM(amount) AS amount FROM roll.daily_sales\n"
    )
    use_fixture(root)
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    grains = {line.split()[0]: line.split()[2] for line in lines if line.startswith("  ")}
    assert grains == {
        "daily_sales": "daily",
        "hourly_clicks": "hourly",
        "monthly_sales": "monthly",
        "raw_clicks": "15min",
        "raw_sales": "daily",
        "weekly_off_grid": "weekly",
        "weekly_sales": "weekly",
    }
    rows = [line for line in lines[1:] if line.startswith("  ") and not line.startswith("    ")]
    tier_column = lines[0].index("tier")
    assert {line[tier_column : tier_column + 2] for line in rows} == {"t3"}  # every column under its heading
    assert max(len(line) for line in lines) <= 80
    assert cli.main(["list", "--json"]) == 0
    tables = {t["table"]: t["partitioning"] for t in json.loads(capsys.readouterr().out)["tables"]}
    assert tables["raw_clicks"] == "15min" and tables["monthly_sales"] == "monthly"
