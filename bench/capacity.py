"""Capacity: the per-unit costs a large deployment multiplies, measured on a Postgres instance at three sizes.

A throwaway Postgres server (tests/services/postgres.py, as the suite starts it) holds a Dagster instance as
``mesh setup --instance postgres`` writes it. The event log is filled the way runs fill it: real runs first
(``dg.materialize`` of a daily asset with a blocking check, on that instance, counting the rows and bytes one
run writes), then their rows copied in bulk with SQL (new run ids, 1,000 other assets, three years of days)
up to each size of the whole log. Three hourly external tables of one domain each hold one month, one year
and three years of partitions (their reports copied in SQL from one the instance API wrote, the body's
partition rewritten), so a query's growth with the whole log and with one table's history are told apart.

At each log size the queries Mesh's sensors and commands issue are timed (median of 5): the latest report of
a table (the observer's ``through``, readiness), one partition's latest report (the observer's row counts),
every published partition of a table (readiness, ``mesh stale``, the deadline sensor), the latest report of a
few named partitions, and one domain's deadline-sensor tick (10 hourly consumers of one input with
``freshness_hours``) over each history. The database's size per row is read from Postgres. A code server's
memory is measured apart: a fresh interpreter loading one location of 67, 500 and 2,000 products; and the
daemon's tick of one domain's automation sensor (as bench/automation_tick.py ticks it) for domains of 20, 67
and 200 products among 1,000.
Run alone: ``python -m bench.capacity --sizes 100000 1000000``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg

from bench.common import ROOT, Result, print_results
from bench.definitions_load import write_mesh

sys.path[:0] = [str(ROOT / "tests" / "services")]

SIZES = (100_000, 1_000_000, 10_000_000)
HISTORIES = {"h1m": 30 * 24, "h1y": 365 * 24, "h3y": 3 * 365 * 24}
"""Hourly external tables (domain -> partitions published): a month, a year and three years of hours."""
CONSUMERS = 10
SEED_RUNS = 40
BACKGROUND_ASSETS = 1000
NOW = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)
LAST_HOUR = NOW.replace(minute=0) - timedelta(hours=1)
LOCATION_SIZES = (67, 500, 2000)
DOMAIN_SIZES = (20, 67, 200)
DOMAIN_TICK_ASSETS = 1000
RSS = (
    "import re, pathlib\n"
    "print(int(re.search(r'VmRSS:\\s+(\\d+)', pathlib.Path('/proc/self/status').read_text())[1]) / 1024)\n"
)
"""What a process holds once it has loaded (resident set, MiB): what a code server keeps while it serves."""


def _median(fn: Callable[[], object], repeat: int = 5) -> float:
    fn()  # warm: the first call pays for the connection and Postgres's plan
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _write_domains(root: Path) -> None:
    """One domain per history: an hourly external ``raw`` and ten hourly consumers with a 1 h freshness."""
    start = (NOW - timedelta(days=3 * 365 + 2)).date()
    for domain in HISTORIES:
        folder = root / domain
        folder.mkdir(parents=True)
        (folder / "raw.yaml").write_text(
            f"name: raw\nowner: {domain}@example.com\ncontacts: [{{kind: chat, value: '#{domain}'}}]\n"
            f"start_date: {start}\nexternal:\n  - {{table: raw, partitioning: hourly}}\n"
        )
        for c in range(CONSUMERS):
            (folder / f"c{c:02d}.yaml").write_text(
                f"name: c{c:02d}\nowner: {domain}@example.com\ncontacts: [{{kind: chat, value: '#{domain}'}}]\n"
                f"start_date: {start}\ntables:\n  - table: t{c:02d}\n    partitioning: hourly\n"
                f"    inputs: [{{table: {domain}.raw, freshness_hours: 1}}]\n"
                f"    sql: SELECT id FROM {domain}.raw\n"
            )


def _seed_runs(instance: dg.DagsterInstance) -> None:
    """Real runs on the instance: a daily asset with Mesh-like metadata and one blocking check."""
    daily = dg.DailyPartitionsDefinition(start_date="2024-01-01")

    @dg.asset(
        key=["seed", "orders"],
        partitions_def=daily,
        check_specs=[dg.AssetCheckSpec("valid", asset=dg.AssetKey(["seed", "orders"]), blocking=True)],
    )
    def orders():
        yield dg.Output(
            None,
            metadata={
                "dagster/row_count": 1000,
                "delta_version": 7,
                "table_uri": "s3a://warehouse/seed/orders",
                "partition_rows": 1000,
            },
        )
        yield dg.AssetCheckResult(check_name="valid", passed=True, metadata={"failed_rows": 0})

    for day in range(SEED_RUNS):
        dg.materialize([orders], instance=instance, partition_key=f"{date(2024, 1, 1) + timedelta(days=day)}")


def _hot_tables(instance: dg.DagsterInstance, cursor) -> None:
    """Each history's reports: one through the instance API (the template), the rest copied in SQL."""
    for domain, hours in HISTORIES.items():
        key = dg.AssetKey([domain, "raw"])
        template = LAST_HOUR.strftime("%Y-%m-%d-%H:%M")
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                key,
                partition=template,
                metadata={"dagster/row_count": 1000, "observed_through_version": 1, "observed_through_ms": 1},
            )
        )
        cursor.execute(
            """
            INSERT INTO event_logs (run_id, event, dagster_event_type, timestamp, step_key, asset_key, partition)
            SELECT t.run_id, replace(t.event, %(template)s, to_char(h, 'YYYY-MM-DD-HH24:MI')),
                   t.dagster_event_type, t.timestamp, t.step_key, t.asset_key, to_char(h, 'YYYY-MM-DD-HH24:MI')
            FROM (SELECT * FROM event_logs WHERE asset_key = %(key)s AND partition = %(template)s LIMIT 1) t,
                 generate_series(%(first)s::timestamp, %(last)s::timestamp, interval '1 hour') h
            """,
            {
                "template": template,
                "key": key.to_string(),
                "first": (LAST_HOUR - timedelta(hours=hours - 1)).replace(tzinfo=None),
                "last": (LAST_HOUR - timedelta(hours=1)).replace(tzinfo=None),
            },
        )


def _grow(cursor, rows: int) -> None:
    """Copy the seed runs' rows until the log holds ``rows``: new run ids, 1,000 assets, 1,095 days."""
    cursor.execute("SELECT count(*) FROM event_logs")
    have = cursor.fetchone()[0]
    cursor.execute(
        """
        CREATE TEMP TABLE IF NOT EXISTS tmpl AS
        SELECT row_number() OVER (ORDER BY id) - 1 AS slot, * FROM event_logs WHERE run_id IN (
            SELECT DISTINCT run_id FROM event_logs WHERE asset_key = '["seed", "orders"]')
        """
    )
    cursor.execute("SELECT count(*), count(DISTINCT run_id) FROM tmpl")
    templates, runs = cursor.fetchone()
    per_run = templates // runs
    step = 1_000_000
    while have < rows:
        n = min(step, rows - have)
        cursor.execute(
            """
            INSERT INTO event_logs (run_id, event, dagster_event_type, timestamp, step_key, asset_key, partition)
            SELECT md5((%(have)s + g) / %(per_run)s || ''), t.event, t.dagster_event_type,
                   t.timestamp + ((%(have)s + g) / %(per_run)s) * interval '20 seconds', t.step_key,
                   CASE WHEN t.asset_key IS NULL THEN NULL
                        ELSE '["bg", "a' || (((%(have)s + g) / %(per_run)s) %% %(assets)s) || '"]' END,
                   CASE WHEN t.partition IS NULL THEN NULL
                        ELSE to_char(date '2024-01-01' + (((%(have)s + g) / %(per_run)s / %(assets)s) %% 1095)::int,
                                     'YYYY-MM-DD') END
            FROM generate_series(0, %(n)s - 1) g JOIN tmpl t ON t.slot = (%(have)s + g) %% %(templates)s
            """,
            {"have": have, "n": n, "per_run": per_run, "assets": BACKGROUND_ASSETS, "templates": templates},
        )
        have += n
    cursor.execute("ANALYZE event_logs")


def _deadline_tick(instance: dg.DagsterInstance, nodes: list) -> Callable[[], object]:
    from mesh_assets.automation.deadlines import evaluate_deadlines

    def tick() -> None:
        result = evaluate_deadlines(instance, nodes, None, NOW)
        assert not result.asset_events, "every needed hour is published: nothing may be flagged"

    return tick


def _location_memory(products: int) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of a fresh interpreter loading one location of ``products``."""
    import subprocess

    from bench.definitions_load import LOCATION_CODE

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, products, per_domain=products)
        code = LOCATION_CODE.format(definitions=str(root / "d00" / "definitions.py"), assets=products)
        code += RSS
        env = {**os.environ, "MESH_DBT_PROJECT_DIR": tmp, "MESH_HOME": str(Path(tmp) / "home")}
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT, env=env
        )
        seconds, rss = out.stdout.strip().splitlines()[-2:]
        return float(seconds), float(rss)


def _domain_ticks(assets: int = DOMAIN_TICK_ASSETS) -> dict[int, tuple[float, float]]:
    """One domain's automation-sensor tick (nothing new, median of 5) among ``assets`` products, for each
    domain size: (Mesh's condition, ``AutomationCondition.eager()`` on the same products)."""
    from bench.automation_tick import Graph, with_condition
    from mesh_assets.definitions import build_definitions
    from mesh_assets.graph.discovery import load_all
    from mesh_assets.storage.resource import MeshResource

    out = {}
    for products in DOMAIN_SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "domains"
            write_mesh(root, assets, per_domain=products)
            built = build_definitions(load_all(root), extra=[])
        mesh = dg.Definitions(assets=built.assets, resources={"mesh": MeshResource()})
        selection = next(s for s in built.sensors or [] if s.name == "d01__automation").asset_selection
        ticks = {}
        for name, defs in (("mesh", mesh), ("eager", with_condition(mesh, dg.AutomationCondition.eager()))):
            graph = Graph(defs, selection)
            graph.tick()  # the first evaluation only initialises the cursor, as in bench/automation_tick.py
            graph.tick()
            ticks[name] = statistics.median(graph.tick() for _ in range(5))
        out[products] = (ticks["mesh"], ticks["eager"])
    return out


def _baseline_memory() -> float:
    import subprocess

    code = "import dagster\n" + RSS
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)
    return float(out.stdout.strip().splitlines()[-1])


def run(sizes: tuple[int, ...] = SIZES, locations: tuple[int, ...] = LOCATION_SIZES) -> list[Result]:
    warnings.filterwarnings("ignore")
    import psycopg2
    from postgres import DATABASE, USER, start_postgres, stop_postgres

    from mesh_assets.cli.commands import INSTANCE_STORAGE
    from mesh_assets.graph.discovery import load_all
    from mesh_assets.graph.resolve import MeshGraph
    from mesh_assets.settings import scoped_environ

    results: list[Result] = []
    server = start_postgres()
    home = Path(tempfile.mkdtemp(prefix="mesh-bench-capacity-"))
    try:
        # as `mesh setup --instance postgres` writes it: the file names variables, the password is in none
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n" + INSTANCE_STORAGE["postgres"])
        with scoped_environ(server.env):
            instance = dg.DagsterInstance.from_config(str(home))
        connection = psycopg2.connect(
            host=server.host, port=server.port, user=USER, password=server.password, dbname=DATABASE
        )
        connection.autocommit = True
        cursor = connection.cursor()

        start = time.perf_counter()
        _seed_runs(instance)
        seed_seconds = time.perf_counter() - start
        cursor.execute(
            "SELECT count(*), avg(length(event)) FROM event_logs WHERE run_id IN "
            '(SELECT DISTINCT run_id FROM event_logs WHERE asset_key = \'["seed", "orders"]\')'
        )
        seed_rows, seed_bytes = cursor.fetchone()
        per_run = seed_rows / SEED_RUNS
        results.append(
            Result(
                "capacity",
                f"one real run (daily asset, one blocking check) on the Postgres instance: {per_run:.0f} event rows, "
                f"{float(seed_bytes):.0f} bytes of event body each",
                seed_seconds / SEED_RUNS,
                "the instance API's runless report of one partition",
                _median(
                    lambda: instance.report_runless_asset_event(
                        dg.AssetMaterialization(["seed", "runless"], partition="x")
                    )
                ),
                extra={"rows per run": per_run, "bytes per row": float(seed_bytes)},
            )
        )
        _hot_tables(instance, cursor)
        with tempfile.TemporaryDirectory() as tmp:
            _write_domains(Path(tmp) / "domains")
            graph = MeshGraph(load_all(Path(tmp) / "domains"), [])
            nodes = {domain: graph.nodes_of(domain) for domain in HISTORIES}

        first: dict[str, float] = {}
        hot = dg.AssetKey(["h3y", "raw"])
        latest = LAST_HOUR.strftime("%Y-%m-%d-%H:%M")
        recent = {(LAST_HOUR - timedelta(hours=h)).strftime("%Y-%m-%d-%H:%M") for h in range(7)}
        for rows in sizes:
            start = time.perf_counter()
            _grow(cursor, rows)
            grow_seconds = time.perf_counter() - start
            cursor.execute("SELECT count(*), pg_total_relation_size('event_logs') FROM event_logs")
            count, size = cursor.fetchone()
            cursor.execute("SELECT pg_database_size(current_database())")
            db_size = cursor.fetchone()[0]
            label = f"{count:,} event rows"
            queries: dict[str, Callable[[], object]] = {
                "latest report of a table (get_latest_materialization_event)": lambda: (
                    instance.get_latest_materialization_event(hot)
                ),
                "one partition's latest report (fetch_materializations, 1 partition, limit 1)": lambda: (
                    instance.fetch_materializations(dg.AssetRecordsFilter(hot, asset_partitions=[latest]), limit=1)
                ),
                "7 named partitions' latest reports (get_latest_storage_id_by_partition)": lambda: (
                    instance.get_latest_storage_id_by_partition(hot, dg.DagsterEventType.ASSET_MATERIALIZATION, recent)
                ),
            }
            for domain, hours in HISTORIES.items():
                key = dg.AssetKey([domain, "raw"])
                queries[f"every published partition of a table of {hours:,} hours (get_materialized_partitions)"] = (
                    lambda key=key: instance.get_materialized_partitions(key)
                )
            for domain, hours in HISTORIES.items():
                queries[
                    f"one domain's deadline-sensor tick: {CONSUMERS} hourly consumers of a table of {hours:,} hours"
                ] = _deadline_tick(instance, nodes[domain])
            for name, fn in queries.items():
                seconds = _median(fn)
                first.setdefault(name, seconds)
                results.append(
                    Result(
                        "capacity",
                        f"{name}, {label}",
                        seconds,
                        f"the same at {sizes[0]:,} rows",
                        first[name],
                    )
                )
            results.append(
                Result(
                    "capacity",
                    f"instance size at {label} (bytes as seconds; event_logs with its indexes "
                    f"{size / count:.0f} bytes per row; database {db_size / 2**20:,.0f} MiB; "
                    f"bulk copy took {grow_seconds:.0f} s)",
                    float(size),
                    "rows",
                    float(count),
                    extra={"bytes per row": size / count, "database bytes": float(db_size)},
                )
            )
        connection.close()
        instance.dispose()
    finally:
        stop_postgres(server)
        shutil.rmtree(home, ignore_errors=True)

    plain = _baseline_memory()
    for products in locations:
        seconds, rss = _location_memory(products)
        results.append(
            Result(
                "capacity",
                f"code server: one location of {products:,} products loaded in a fresh interpreter "
                f"(RSS {rss:,.0f} MiB; import dagster alone {plain:,.0f} MiB) (RSS MiB as seconds; "
                f"load {seconds:.2f} s)",
                rss,
                "import dagster alone (MiB)",
                plain,
                extra={"load seconds": seconds, "rss MiB": rss},
            )
        )
    for products, (mesh, eager) in _domain_ticks().items():
        results.append(
            Result(
                "capacity",
                f"daemon: one domain's automation tick, its {products} products of {DOMAIN_TICK_ASSETS:,} "
                "(x 730 daily partitions), nothing new",
                mesh,
                "AutomationCondition.eager(), same products",
                eager,
            )
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--locations", type=int, nargs="*", default=list(LOCATION_SIZES))
    args = parser.parse_args()
    print_results(run(tuple(args.sizes), tuple(args.locations)))


if __name__ == "__main__":
    main()
