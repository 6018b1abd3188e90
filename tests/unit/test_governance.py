"""Governance rules: each rule has a failing fixture; its exact error (file, line, field, message) is asserted.

Fixtures live in ``tests/fixtures/governance/<case>/domains/<domain>/``. Each test runs from the case's folder
so error paths (made relative to the working directory) are stable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.validate import validate
from mesh_assets.model.errors import SpecError, SpecValidationError
from mesh_assets.model.names import check_identifier

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "governance"

IDENT = "use lower-case letters, digits and '_', starting with a letter"
TOO_FEW = "Tuple should have at least 1 item after validation, not 0"


def errors_of(case: str, monkeypatch: pytest.MonkeyPatch, only: set[str] | None = None) -> list[SpecError]:
    monkeypatch.chdir(FIXTURES / case)
    return validate(load_all(Path("domains")), only)


def E(file: str, line: int | None, field: str, message: str) -> SpecError:
    return SpecError(f"domains/{file}", line, field, message)


def test_unknown_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("unknown_table", monkeypatch) == [
        E("sales/defs/orders/defs.yaml", 13, "tables.0.inputs.missing", "unknown table sales.missing"),
        E("sales/defs/orders/defs.yaml", 14, "tables.0.inputs.billing__invoices", "unknown table billing.invoices"),
    ]


def test_reading_another_domains_internal_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # inventory.warehouses is published and may be read; inventory.stock_levels is internal
    assert errors_of("internal_table", monkeypatch) == [
        E(
            "sales/defs/orders/defs.yaml",
            10,
            "tables.0.inputs.inventory__stock_levels",
            "inventory.stock_levels is internal to domain inventory; only published tables may be read by "
            "other domains",
        ),
    ]


def test_dependency_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("cycle", monkeypatch) == [
        E("a/defs/loop/defs.yaml", 12, "inputs", "dependency cycle: a.x -> a.y -> a.x"),
    ]


def test_duplicate_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("duplicate", monkeypatch) == [
        E(
            "sales/defs/second/defs.yaml",
            9,
            "table",
            "duplicate table sales.orders: also declared in domains/sales/defs/first/defs.yaml:8",
        ),
    ]


def test_missing_or_invalid_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("missing_owner", monkeypatch) == [
        E("sales/customers.py", 3, "owner", "String should match pattern '^[^@\\s]+@[^@\\s]+$|^team:[a-z0-9_\\-]+$'"),
        E("sales/defs/orders/defs.yaml", 2, "owner", "Field required"),
    ]


def test_missing_contacts(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("missing_contacts", monkeypatch) == [
        E("sales/defs/empty_contacts/defs.yaml", 5, "contacts", TOO_FEW),
        E("sales/defs/no_contacts/defs.yaml", 2, "contacts", "Field required"),
    ]


def test_invalid_identifiers(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("invalid_identifiers", monkeypatch) == [
        E("sales/bad_product.py", 3, "name", f"Value error, invalid identifier 'Bad-Product': {IDENT}"),
        E(
            "sales/defs/inputs/defs.yaml",
            11,
            "tables.0.inputs.____/etc__passwd.[key]",
            f"Value error, invalid identifier '____/etc__passwd': {IDENT}",
        ),
        E(
            "sales/defs/inputs/defs.yaml",
            11,
            "tables.0.inputs.____/etc__passwd.table",
            "Value error, invalid table reference '../etc.passwd': expected 'domain.table'",
        ),
        E("sales/defs/names/defs.yaml", 8, "external.0.table", f"Value error, invalid identifier '../x': {IDENT}"),
        E(
            "sales/defs/names/defs.yaml",
            9,
            "external.1.table",
            f"Value error, invalid identifier 'x; DROP TABLE y': {IDENT}",
        ),
        E("sales/defs/names/defs.yaml", 10, "external.2.table", f"Value error, invalid identifier 'Orders': {IDENT}"),
        E(
            "sales/defs/other_domain/defs.yaml",
            3,
            "domain",
            "spec says domain '../billing' but lives in domains/sales/",
        ),
    ]


@pytest.mark.parametrize("folder", ["Sales", "x; DROP TABLE y", "sales-eu", "1sales"])
def test_invalid_domain_folder_name(folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # built at test time: such folder names do not belong in the repository
    (tmp_path / "domains" / folder).mkdir(parents=True)
    (tmp_path / "domains" / folder / "p.yaml").write_text(
        "name: p\nowner: a@example.com\ncontacts: [{kind: chat, value: '#a'}]\n"
    )
    monkeypatch.chdir(tmp_path)
    domains = load_all(Path("domains"))
    assert domains[folder].products == []
    assert validate(domains) == [E(folder, None, "domain", f"invalid domain name {folder!r}")]


def test_sql_that_does_not_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("bad_sql", monkeypatch) == [
        E("sales/defs/orders/defs.yaml", 13, "tables.0.sql", "SQL does not parse (line 3, col 4): Expecting )"),
    ]


def test_sql_reading_undeclared_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    # the CTE name "recent" is not a table; an unqualified table name is rejected
    # each at the line of its query's field (sql, sql_file), not of the table's entry
    assert errors_of("undeclared_sql", monkeypatch) == [
        E("sales/defs/from_file/defs.yaml", 12, "tables.0.inputs.customerz", "unknown table sales.customerz"),
        E(
            "sales/defs/from_file/defs.yaml",
            13,
            "tables.0.sql_file",
            "SQL reads sales.customers, which is not a declared input",
        ),
        E(
            "sales/defs/orders/defs.yaml",
            14,
            "tables.0.sql",
            "SQL reads sales.raw_customers, which is not a declared input",
        ),
        E(
            "sales/defs/orders/defs.yaml",
            20,
            "tables.1.sql",
            "table 'raw_customers' must be qualified as <domain>.raw_customers",
        ),
    ]


def test_windows_that_do_not_fit_the_partitioning(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("windows", monkeypatch) == [
        E(
            "sales/defs/windows/defs.yaml",
            18,
            "tables.0.inputs.raw_menus.window",
            "sales.raw_menus is not partitioned; use window 'all'",
        ),
        E(
            "sales/defs/windows/defs.yaml",
            22,
            "tables.1.inputs.raw_clicks.window",
            "sales.raw_clicks is weekly and clicks_monthly is monthly: its partitions do not fit whole in "
            "clicks_monthly's, so a rollup would read some twice; read a finer table (daily) or use window 'all'",
        ),
        E(
            "sales/defs/windows/defs.yaml",
            29,
            "tables.2.inputs.raw_orders.window",
            "output order_snapshot is not partitioned, so it reads whole tables; use window 'all'",
        ),
        E(
            "sales/defs/windows/defs.yaml",
            33,
            "tables.3.inputs.raw_shifts.window",
            "sales.raw_shifts is partitioned by date and region; a daily output reads it by 'same' "
            "(a day's regions) or 'all'",
        ),
        E(
            "sales/defs/windows/defs.yaml",
            37,
            "tables.4.inputs.raw_menus.min_complete",
            "min_complete accepts part of a window of partitions; sales.raw_menus is read whole",
        ),
    ]


def test_deadlines_on_what_has_no_partitions_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A timeout waits for the input partitions a consumer partition reads: an unpartitioned input or output
    has none, so ``timeout_hours`` there would never be evaluated; a watermark must reach an output partition's
    end, of a table read whole. ``freshness_hours`` on a table read whole is its maximum age: accepted."""
    assert errors_of("deadlines", monkeypatch) == [
        E(
            "sales/defs/deadlines/defs.yaml",
            14,
            "tables.0.inputs.raw_orders.watermark",
            "sales.raw_orders is read by partition: a watermark applies to a table read whole ('all')",
        ),
        E(
            "sales/defs/deadlines/defs.yaml",
            21,
            "tables.1.inputs.raw_orders.timeout_hours",
            "output order_snapshot is not partitioned: timeout_hours applies to partitioned inputs of partitioned "
            "outputs (a table read whole takes freshness_hours: the oldest it may be)",
        ),
        E(
            "sales/defs/deadlines/defs.yaml",
            21,
            "tables.1.inputs.raw_orders.watermark",
            "output order_snapshot is not partitioned: a watermark must reach a partition's end",
        ),
    ]


def test_write_mode_full_on_a_partitioned_output_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A partitioned run replaces the partitions it computed; ``write_mode: full`` there was once ignored,
    so it is refused in YAML and in Python alike (``partitioning: none`` with it stays valid)."""
    why = (
        "Value error, write_mode: full is for unpartitioned outputs; a {} output overwrites the partitions it "
        "computes: remove write_mode, or set partitioning: none to rewrite the whole table"
    )
    assert errors_of("write_mode", monkeypatch) == [
        E("sales/defs/snapshots/defs.yaml", 11, "tables.0.write_mode", why.format("daily")),
        E("sales/hourly.py", 6, "write_mode", why.format("hourly")),
    ]


def test_unknown_yaml_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("unknown_field", monkeypatch) == [
        E("sales/defs/orders/defs.yaml", 7, "ownr", "unknown field 'ownr'"),
        E("sales/defs/orders/defs.yaml", 12, "tables.0.partitoning", "unknown field 'partitoning'"),
    ]


def test_python_function_parameters_must_match_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    # build_order_counts(context, orders) is fine: ``context`` is not an input
    assert errors_of("python_params", monkeypatch) == [
        E(
            "sales/orders.py",
            11,
            "tables.0.inputs",
            "function build_orders() takes ['raw'] but inputs are ['raw_orders']",
        ),
        E(
            "sales/orders.py",
            16,
            "tables.1.inputs",
            "function build_customers() takes ['raw_customers'] but inputs are ['raw_customers', 'raw_orders']",
        ),
    ]


def test_all_errors_are_reported_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("many_errors", monkeypatch) == [
        E("sales/customers.yaml", 3, "contacts", TOO_FEW),
        E("sales/customers.yaml", 4, "colour", "unknown field 'colour'"),
        E("sales/defs/orders/defs.yaml", 15, "tables.0.inputs.missing", "unknown table sales.missing"),
        E(
            "sales/defs/orders/defs.yaml",
            16,
            "tables.0.inputs.raw_menus.window",
            "sales.raw_menus is not partitioned; use window 'all'",
        ),
        E(
            "sales/defs/orders/defs.yaml",
            17,
            "tables.0.sql",
            "SQL reads sales.raw_refunds, which is not a declared input",
        ),
        E("sales/defs/orders/defs.yaml", 21, "tables.1.sql", "SQL does not parse (line 1, col 15): Expecting )"),
        E(
            "sales/refunds.py",
            6,
            "tables.0.inputs",
            "function build_refunds() takes ['order_rows'] but inputs are ['orders']",
        ),
    ]


def test_python_import_error_points_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "domains" / "sales"
    folder.mkdir(parents=True)
    (folder / "broken.py").write_text("from mesh_assets import Product\n\nraise RuntimeError('boom')\n")
    monkeypatch.chdir(tmp_path)
    assert validate(load_all(Path("domains"))) == [E("sales/broken.py", 3, "", "RuntimeError: boom")]


def test_valid_cross_domain_mesh_has_no_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("cross_domain", monkeypatch) == []


def test_a_broken_domain_fails_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES / "broken_domain")
    domains = load_all(Path("domains"))

    good = build_definitions(domains, only={"good_domain"})
    keys = {key.to_user_string() for key in good.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {"good_domain/raw_products", "good_domain/products", "good_domain/product_counts"}

    expected = [
        E(
            "broken_domain/defs/sales/defs.yaml",
            11,
            "tables.0.inputs.good_domain__raw_products",
            "good_domain.raw_products is internal to domain good_domain; only published tables may be read by "
            "other domains",
        ),
    ]
    with pytest.raises(SpecValidationError) as raised:
        build_definitions(domains, only={"broken_domain"})
    assert raised.value.errors == expected
    with pytest.raises(SpecValidationError):
        build_definitions(domains)
    assert validate(domains, only={"good_domain"}) == []


def test_check_names_are_unique_per_output_default_names_included(monkeypatch: pytest.MonkeyPatch) -> None:
    assert errors_of("check_names", monkeypatch) == [
        E(
            "sales/defs/orders/defs.yaml",
            17,
            "tables.0.checks.1",
            "check name 'row_count' is also the name of checks.0; give one a 'name'",
        ),
        E(
            "sales/defs/orders/defs.yaml",
            19,
            "tables.0.checks.3",
            "check name 'sql_assertion' is also the name of checks.2; give one a 'name'",
        ),
        E(
            "sales/defs/orders/defs.yaml",
            20,
            "tables.0.checks.4",
            "check name 'schema_contract' is the contract's own check; choose another name",
        ),
        E(
            "sales/defs/orders/defs.yaml",
            21,
            "tables.0.checks.5.columns",
            "column 'customer_id' is not in the output's contract",
        ),
    ]


def test_checks_and_contracts_name_columns_the_sql_selects(monkeypatch: pytest.MonkeyPatch) -> None:
    # known columns: the contract where declared, else the query's named columns (plus the partition column),
    # matched as Spark matches them; a star leaves them to Spark, so raw_copy's check is not judged here
    assert errors_of("check_columns", monkeypatch) == [
        E(
            "sales/orders.yaml",
            11,
            "tables.0.checks.0.columns",
            "column 'amount' is not in the columns its SQL selects (ID, total, p_date)",
        ),
        E("sales/orders.yaml", 18, "tables.1.contract.1", "contract column 'total' is not selected by the SQL"),
    ]


def test_owners_and_tags_follow_dagsters_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    allowed = "Allowed characters: alpha-numeric, '_', '-', '.'."
    owner = "is refused: Dagster takes an email address (name@host.tld) or a team name prefixed with 'team:'"
    assert errors_of("dagster_rules", monkeypatch) == [
        E("sales/defs/orders/defs.yaml", 4, "owner", f"owner 'sales@localhost' {owner}"),
        E(
            "sales/defs/orders/defs.yaml",
            7,
            "tags.cost center",
            f"Found invalid tag keys: ['cost center']. {allowed} Tag keys can also contain a namespace section, "
            "separated by a '/'. Each section must have <= 63 characters.",
        ),
        E(
            "sales/defs/orders/defs.yaml",
            8,
            "tags.team",
            f"Invalid tag value: sales and marketing, for key: team. {allowed} Must have <= 63 characters.",
        ),
        E(
            "sales/defs/orders/defs.yaml",
            9,
            "tags.note",
            f"Invalid tag value: {'x' * 65}, for key: note. {allowed} Must have <= 63 characters.",
        ),
        E(
            "sales/defs/orders/defs.yaml",
            10,
            "tags.region",
            f"Invalid tag value: köln, for key: region. {allowed} Must have <= 63 characters.",
        ),
        E("sales/refunds.py", 3, "owner", f"owner 'ops@internal' {owner}"),
        E(
            "sales/refunds.py",
            3,
            "tags.k",
            f"Invalid tag value: a b, for key: k. {allowed} Must have <= 63 characters.",
        ),
    ]


@pytest.mark.parametrize("name", ["t\n", "orders\n", "Orders", "a" * 64])
def test_identifiers_are_matched_whole(name: str) -> None:
    with pytest.raises(ValueError, match="invalid identifier"):
        check_identifier(name)


def test_end_dates_after_the_start_and_consumers_that_stop_with_their_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """A retired feed (``end_date``) has no partitions from its end on: a consumer reading it by a partitioned
    window must stop by then too, or its later partitions would wait (and alert as late) forever; reading it
    whole, or stopping with it, is accepted."""
    stops = "sales.raw_clicks has no partitions from 2022-01-01 on (its end_date), but"
    fix = "an end_date on or before 2022-01-01, or read sales.raw_clicks with window 'all'"
    assert errors_of("end_dates", monkeypatch) == [
        E(
            "sales/backwards.yaml",
            4,
            "end_date",
            "Value error, end_date 2021-06-01 must be after start_date 2021-06-01 (it is the first day left out)",
        ),
        E(
            "sales/readers.yaml",
            9,
            "tables.0.inputs.raw_clicks",
            f"{stops} sales.clicks_per_day has no end_date: give product readers {fix}",
        ),
        E(
            "sales/too_long.yaml",
            10,
            "tables.0.inputs.raw_clicks",
            f"{stops} sales.clicks_a_month_too_long ends on 2022-02-01: give product too_long {fix}",
        ),
    ]


def test_regional_reads_name_a_region_of_their_input_or_share_its_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    """A regional output reads a regional input by its own region, so the input must have it; ``region:`` names
    one of the input's regions, on a regional input. One region's dates read by ``last_7`` or alongside a UTC
    table are accepted."""
    assert errors_of("regions", monkeypatch) == [
        E(
            "sales/defs/regions/defs.yaml",
            15,
            "tables.0.inputs.raw_shifts",
            "sales.raw_shifts has no region apac of output orders_by_region: read one of its regions with region: "
            "<one of eu, latam>, or declare the same regions",
        ),
        E(
            "sales/defs/regions/defs.yaml",
            19,
            "tables.1.inputs.raw_shifts.region",
            "us is not a region of sales.raw_shifts: one of eu, latam",
        ),
        E(
            "sales/defs/regions/defs.yaml",
            23,
            "tables.2.inputs.raw_orders.region",
            "sales.raw_orders is not partitioned by region: remove region",
        ),
    ]
