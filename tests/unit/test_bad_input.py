"""Bad input is refused before anything is written, with a message naming the file, field or value.

The governance rules have their own tests (``test_governance.py``); these are the cases they do not cover:
SQL that writes instead of reading, products writing another domain's table, malformed check and window
declarations, bad values given to ``mesh backfill`` and ``mesh ingest``, and an outside writer's partition
values that are not dates. ``docs/reliability.md`` maps every case to its test.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import dagster as dg
import pytest
from zones import local_time_zone

from mesh_assets import definitions
from mesh_assets.automation.observer import observe
from mesh_assets.cli import commands, main
from mesh_assets.definitions import mesh_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.queries import NotAQuery, rewrite_tables
from mesh_assets.graph.resolve import Table, tables_of
from mesh_assets.graph.validate import validate
from mesh_assets.model.errors import SpecError
from mesh_assets.model.product import DataProduct, ExternalTable
from mesh_assets.settings import get_settings
from mesh_assets.storage.tables import TableRegistry

ROOT = Path(__file__).resolve().parents[2]
BAD_SPECS = ROOT / "tests" / "fixtures" / "reliability" / "bad_specs"
IDENT = "use lower-case letters, digits and '_', starting with a letter"
INJECTIONS = ["2024-02-30", "'; DROP TABLE x", "../x", "2021-06-01' OR '1'='1"]


def E(file: str, line: int, field: str, message: str) -> SpecError:
    return SpecError(f"domains/sales/{file}", line, field, message)


@pytest.fixture(scope="module")
def errors() -> list[SpecError]:
    import os

    cwd = os.getcwd()
    os.chdir(BAD_SPECS)
    try:
        return validate(load_all(Path("domains")))
    finally:
        os.chdir(cwd)


def test_sql_that_writes_is_refused(errors):
    assert [e for e in errors if e.file.endswith("/writes/defs.yaml")] == [
        E("defs/writes/defs.yaml", 10, "tables.0.sql", "SQL must be a single read-only query (SELECT ...), not DELETE"),
        E("defs/writes/defs.yaml", 13, "tables.1.sql", "SQL must be a single query, found 2 statements"),
        E("defs/writes/defs.yaml", 16, "tables.2.sql", "SQL must be a single read-only query (SELECT ...), not INSERT"),
    ]


def test_sql_checks_read_only_the_staged_rows(errors):
    # the first check (a query over staged) is fine
    assert [e for e in errors if e.file.endswith("/sql_checks/defs.yaml")] == [
        E(
            "defs/sql_checks/defs.yaml",
            8,
            "tables.0.checks.1.sql",
            "SQL must be a single read-only query (SELECT ...), not DROP",
        ),
        E(
            "defs/sql_checks/defs.yaml",
            8,
            "tables.0.checks.2.sql",
            "a sql check reads only 'staged', not billing.invoices",
        ),
        E("defs/sql_checks/defs.yaml", 8, "tables.0.checks.3.sql", "SQL must be a single query, found 2 statements"),
    ]


def test_a_product_cannot_write_another_domains_table(errors):
    assert [e for e in errors if "billing" in e.file or "other_domain" in e.file] == [
        E("billing_invoices.py", 7, "domain", "product says domain 'billing' but lives in domains/sales/"),
        E(
            "defs/other_domain/defs.yaml",
            8,
            "tables.0.table",
            f"Value error, invalid identifier 'billing.invoices': {IDENT}",
        ),
    ]


def test_malformed_checks_windows_and_columns_are_refused(errors):
    injected = "DROP TABLE sales.orders"
    assert [e for e in errors if e.file.endswith("/checks/defs.yaml")] == [
        E(
            "defs/checks/defs.yaml",
            8,
            "tables.0.inputs.orders.window.kind",
            "Input should be 'same', 'last', 'previous', 'all' or 'changes'",
        ),
        E(
            "defs/checks/defs.yaml",
            9,
            "tables.0.partition_column",
            f"Value error, invalid identifier 'p_date; {injected}': {IDENT}",
        ),
        E(
            "defs/checks/defs.yaml",
            12,
            "tables.0.checks.0.column",
            f"Value error, invalid identifier 'kind; DROP TABLE x': {IDENT}",
        ),
        E("defs/checks/defs.yaml", 13, "tables.0.checks.1.columns", "Field required"),
        E("defs/checks/defs.yaml", 13, "tables.0.checks.1.colums", "unknown field 'colums'"),
        E(
            "defs/checks/defs.yaml",
            14,
            "tables.0.checks.2.min",
            "Input should be a valid integer, unable to parse string as an integer",
        ),
        E("defs/checks/defs.yaml", 16, "tables.1.inputs.orders.window.n", "Input should be less than or equal to 3660"),
    ]


def test_the_valid_product_next_to_the_bad_ones_is_not_reported(errors):
    assert not [e for e in errors if e.file.endswith("/orders/defs.yaml")]


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM food_delivery.orders",
        "DROP TABLE food_delivery.orders",
        "SELECT 1; DROP TABLE food_delivery.orders",
        "SET spark.sql.ansi.enabled=false",
        "CREATE TABLE x.y AS SELECT 1",
    ],
)
def test_runtime_refuses_sql_that_is_not_one_query(sql):
    # a spec that skipped validation still cannot reach Spark with a statement that writes
    with pytest.raises(NotAQuery):
        rewrite_tables(sql, {("food_delivery", "orders"): "v"})


@pytest.mark.parametrize("domain, table", [("../x", "t"), ("sales", "a/b"), ("sales", "x; DROP TABLE y"), ("", "t")])
def test_table_locations_refuse_path_separators_and_sql(domain, table):
    with pytest.raises(ValueError, match="invalid identifier"):
        TableRegistry("/warehouse").location(domain, table)


@pytest.fixture(scope="module")
def example_mesh() -> dg.Definitions:
    return mesh_definitions(ROOT / "domains")


@pytest.fixture
def cli_instance(monkeypatch, example_mesh, no_webserver):
    """``mesh backfill`` planning on a throwaway instance, over the example mesh loaded once for the module; a
    launch would need the webserver, and none answers: a refusal must come before any attempt to launch."""
    instance = dg.DagsterInstance.ephemeral()
    monkeypatch.setattr(commands, "persistent_instance", lambda: contextlib.nullcontext(instance))
    monkeypatch.setattr(definitions, "mesh_definitions", lambda: example_mesh)
    return instance


@pytest.mark.parametrize("key", INJECTIONS)
def test_backfill_refuses_bad_partition_keys_and_launches_nothing(cli_instance, no_webserver, capsys, key):
    for start, end in ((key, "2021-06-06"), ("2021-06-04", key)):
        assert main.main(["backfill", "food_delivery.orders", "--start", start, "--end", end]) == 2
        out = capsys.readouterr().out
        assert f"invalid daily partition key {key!r}" in out and no_webserver not in out  # no launch attempted


@pytest.mark.parametrize("asset", ["../x/orders", "food_delivery/orders; DROP TABLE x", "billing.invoices"])
def test_backfill_refuses_unknown_assets(cli_instance, no_webserver, capsys, asset):
    assert main.main(["backfill", asset, "--start", "2021-06-04", "--end", "2021-06-04"]) == 2
    out = capsys.readouterr().out
    assert f"unknown asset {asset!r}" in out and no_webserver not in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--start", "2021-06-01T00'; DROP TABLE x"], "expected YYYY-MM-DDTHH"),
        (["--start", "../x"], "expected YYYY-MM-DDTHH"),
        (["--start", "2024-02-30T00"], "expected YYYY-MM-DDTHH"),
        (["--start", "2021-06-01T00", "--hours", "0"], "expected 1..8784"),
        (["--start", "2021-06-01T00", "--hours", "100000"], "expected 1..8784"),
    ],
)
def test_ingest_refuses_bad_hours_before_writing(monkeypatch, tmp_path, capfd, args, message):
    warehouse = tmp_path / "warehouse"
    monkeypatch.setenv("MESH_WAREHOUSE", str(warehouse))
    get_settings.cache_clear()
    try:
        assert main.main(["ingest", *args]) == 2
    finally:
        get_settings.cache_clear()
    assert message in capfd.readouterr().out
    assert not warehouse.exists()


def _landed(tmp_path: Path, table: ExternalTable) -> tuple[Table, TableRegistry, Path]:
    """An outside writer's table ``central.raw``: as the graph resolves it, a registry, and its ``_delta_log``."""
    product = DataProduct(
        domain="central",
        name="landing",
        owner="team:central",
        contacts=[{"kind": "chat", "value": "#central"}],
        external=(table,),
    )
    registry = TableRegistry(str(tmp_path))
    [resolved] = tables_of(product)
    return resolved, registry, Path(registry.location("central", "raw")) / "_delta_log"


BEFORE_FIRST_COMMIT = {"central.raw": {"version": -1}}
"""A cursor that reads these hand-written logs commit by commit (they have no protocol for a snapshot)."""


def _commit(log: Path, version: int, values: list[str], column: str = "p_date") -> None:
    log.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"add": {"path": f"{column}={v}/part-{i}.parquet", "partitionValues": {column: v}}})
        for i, v in enumerate(values)
    ]
    (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


def test_observer_skips_partition_values_that_are_not_dates(tmp_path):
    # an outside writer with a string partition column: its values never become partition keys
    product, registry, log = _landed(tmp_path, ExternalTable(table="raw"))
    _commit(log, 0, ["2021-06-01", "2021-06-01'; DROP TABLE x", "../x"])
    _commit(log, 1, ["2024-02-30", "2021-06-02", "2999-01-01"])
    warnings: list[str] = []

    events, cursor = observe([product], registry, BEFORE_FIRST_COMMIT, warnings.append)

    assert [e.partition for e in events] == ["2021-06-01", "2021-06-02"]
    assert cursor["central.raw"]["version"] == 1  # the bad commits do not stop the observer
    assert sorted(warnings) == sorted(
        [
            f"central.raw version {v}: partition value {value!r} of p_date is not a daily partition; skipped"
            for v, value in [(0, "../x"), (0, "2021-06-01'; DROP TABLE x"), (1, "2024-02-30")]
        ]
        + ["central.raw version 1: partition value '2999-01-01' of p_date is in the future; skipped"]
    )


def test_observer_skips_hourly_values_off_the_hour_or_in_the_future(tmp_path):
    # the key names the UTC hour: an offset is converted, a half hour or a far-future hour is no partition
    product, registry, log = _landed(
        tmp_path, ExternalTable(table="raw", partitioning="hourly", partition_column="p_hour")
    )
    good = ["2021-06-01T01:00:00.000000Z", "2021-06-01 02:00:00", "2021-06-01T05:00:00+02:00"]
    _commit(log, 0, [*good, "2021-06-01 01:30:00", "2999-01-01T00:00:00.000000Z"], column="p_hour")
    warnings: list[str] = []

    with local_time_zone("Asia/Tokyo"):
        events, cursor = observe([product], registry, BEFORE_FIRST_COMMIT, warnings.append)

    assert [e.partition for e in events] == ["2021-06-01-01:00", "2021-06-01-02:00", "2021-06-01-03:00"]
    assert cursor["central.raw"]["version"] == 0
    assert sorted(warnings) == [
        "central.raw version 0: partition value '2021-06-01 01:30:00' of p_hour is not on the hour (UTC); skipped",
        "central.raw version 0: partition value '2999-01-01T00:00:00.000000Z' of p_hour is in the future; skipped",
    ]
