"""An operator in the Dagster UI: the mesh's code locations, a product's partitions and checks, a backfill.

The webserver and the daemon serve ``workspace.yaml`` (one code location per domain) over a throwaway
instance. ``food_delivery.orders`` has three published days, one day refused by its blocking not-null
check, and three landed days that the operator backfills from the launch dialog; the daemon runs the
range as one run and the rows land in Delta. Last, a published day is invalidated.
"""

from __future__ import annotations

import re
import runpy
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
import yaml
from playwright.sync_api import Page, expect
from pyspark.sql import functions as F

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.backfill import BackfillProgress, Webserver, backfill_progress
from mesh_assets.cli.main import main
from mesh_assets.model.checks import VALID
from mesh_assets.settings import get_settings
from mesh_assets.storage.tables import TableRegistry
from mesh_examples import generator
from mesh_examples.landing import land_raw_orders

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
ORDERS = dg.AssetKey(["food_delivery", "orders"])
PUBLISHED = generator.days(date(2021, 6, 1), 3)
REFUSED = date(2021, 6, 4)
BACKFILLED = generator.days(date(2021, 6, 5), 3)
FIRST_WEEKS = generator.days(date(2021, 6, 1), 14)
LOAD_TIMEOUT = 420
BACKFILL_TIMEOUT = 480
"""Generous: the backfill's run starts its own Python process and Spark JVM on a shared two-core machine."""


@dataclass
class OperatorWorld:
    instance: dg.DagsterInstance
    url: str
    warehouse: Path
    failed_run_id: str
    failed_checks: list[str]
    partition_count: int
    check_names: list[str]
    check_alive: Callable[[], None]


def export_with_a_bad_day() -> list[tuple]:
    """The app's export of 06-01..06-07; on 06-04 one extra order arrives with a status the app does not know.

    The export's own checks (ids, times, restaurants present) pass it, so the observer's check run lets
    ``orders`` read the day, and ``orders``' accepted-values check refuses it."""
    rows = [row for day in [*PUBLISHED, REFUSED, *BACKFILLED] for row in generator.raw_orders(day)]
    sample = next(row for row in rows if row[-1] == REFUSED)
    orphan = list(sample)
    orphan[0] = max(row[0] for row in rows) + 1
    orphan[12] = "lost"  # status
    return [*rows, tuple(orphan)]


def orders_per_day(day: date) -> int:
    """What ``orders`` publishes for a good day: the export deduplicated on the order id."""
    return len({row[0] for row in generator.raw_orders(day)})


@pytest.fixture(scope="module")
def world(dagster_services, spark) -> OperatorWorld:
    """Land the export and materialize 06-01..06-04 in one run while the code locations load."""
    warehouse = dagster_services.warehouse
    land_raw_orders(spark, TableRegistry(str(warehouse)), PUBLISHED[0], BACKFILLED[-1], export_with_a_bad_day())
    instance = dagster_services.instance
    defs = mesh_definitions(ROOT / "domains")
    observe_now(defs, instance, MeshResource(warehouse=str(warehouse)))  # the observer's report and check run
    assets = executable_assets(defs)
    result = dg.materialize(
        assets,
        instance=instance,
        resources={"mesh": MeshResource(warehouse=str(warehouse))},
        selection=[ORDERS],
        tags={
            "dagster/asset_partition_range_start": PUBLISHED[0].isoformat(),
            "dagster/asset_partition_range_end": REFUSED.isoformat(),
        },
        raise_on_error=False,
    )
    assert not result.success
    published = {e.materialization.partition for e in result.get_asset_materialization_events()}
    assert published == {d.isoformat() for d in PUBLISHED}
    evaluations = result.get_asset_check_evaluations()
    failed_checks = sorted({e.check_name for e in evaluations if not e.passed and e.partition == REFUSED.isoformat()})
    orders = next(a for a in assets if ORDERS in a.keys)
    dagster_services.start(LOAD_TIMEOUT)
    return OperatorWorld(
        instance=instance,
        url=dagster_services.url,
        warehouse=warehouse,
        failed_run_id=result.run_id,
        failed_checks=failed_checks,
        partition_count=len(orders.partitions_def.get_partition_keys()),
        check_names=sorted(spec.name for spec in orders.check_specs),
        check_alive=dagster_services.check_alive,
    )


def groups_per_location() -> dict[str, set[str]]:
    """Each code location of ``workspace.yaml`` and the asset groups of its own domain."""
    workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text())
    out = {}
    for entry in workspace["load_from"]:
        target = entry["python_file"]
        defs = runpy.run_path(str(ROOT / target["relative_path"]))["defs"]
        location = target["location_name"]
        out[location] = {n.group_name for n in defs.resolve_asset_graph().asset_nodes if n.key.path[0] == location}
    return out


def shoot(page: Page, folder: Path, name: str, dialogs: int = 0) -> None:
    """A screenshot for the operator guide, with no dialog over the page but the one the step opened: Dagster's
    first-visit pop-up is dismissed before any page loads (``UI_PREFERENCES`` in ``tests/e2e/conftest.py``)."""
    expect(page.get_by_role("dialog")).to_have_count(dialogs)
    page.screenshot(path=str(folder / f"{name}.png"))


def test_lineage_shows_every_domain_as_a_code_location_with_its_groups(world, browser_page, screenshots):
    page = browser_page
    expected = groups_per_location()
    assert len(expected) == 5
    page.goto("/asset-groups")
    for location in expected:
        page.get_by_title(location, exact=True).dblclick()  # open the location's folder in the sidebar
    for groups in expected.values():
        for group in groups:
            expect(page.get_by_title(group, exact=True).first).to_be_visible()
    shown: dict[str, set[str]] = {}
    for title in page.locator("[title]").evaluate_all("els => els.map(e => e.title)"):
        if title in expected:
            location = title
            shown[location] = set()
        elif shown:
            shown[location].add(title)
    assert shown == expected
    shoot(page, screenshots, "asset-graph")


def test_partitions_view_shows_published_refused_and_missing_days(world, browser_page, screenshots):
    page = browser_page
    page.goto("/assets/food_delivery/orders?view=partitions")
    missing = world.partition_count - len(PUBLISHED) - 1
    expect(page.get_by_text(f"Materialized ({len(PUBLISHED)})")).to_be_visible()
    expect(page.get_by_text("Failed (1)")).to_be_visible()
    expect(page.get_by_text(f"Missing ({missing})")).to_be_visible()

    selector = page.get_by_placeholder(re.compile(r"^ex: "))
    selector.fill(f"[{FIRST_WEEKS[0]}...{FIRST_WEEKS[-1]}]")
    selector.press("Enter")
    expect(page.get_by_text(f"Missing ({len(FIRST_WEEKS) - len(PUBLISHED) - 1})")).to_be_visible()
    page.get_by_title(REFUSED.isoformat(), exact=True).click()
    failure = f"Run {world.failed_run_id[:8]} failed, and did not materialize this asset."
    expect(page.get_by_text(failure)).to_be_visible()
    shoot(page, screenshots, "partitions-failed")


def test_checks_tab_lists_the_checks_and_explains_the_failure(world, browser_page, screenshots):
    page = browser_page
    assert world.failed_checks == [c for c in world.check_names if c.startswith("accepted_values")]  # the order
    page.goto("/assets/food_delivery/orders?view=partitions")
    page.get_by_role("tab", name="Checks").click()
    expect(page.get_by_text(f"Checks ({len(world.check_names)})")).to_be_visible()
    for name in world.check_names:
        status = page.get_by_title(name, exact=True).first.locator("xpath=following-sibling::span")
        expect(status).to_have_text("Failed" if name in world.failed_checks else "Succeeded")
    failed = world.failed_checks[0]
    page.get_by_title(failed, exact=True).first.click()
    expect(page.get_by_text(f"check {failed} on partition {REFUSED} failed (1 failing rows)")).to_be_visible()
    shoot(page, screenshots, "failed-check")


def test_operator_backfills_a_range_from_the_launch_dialog(world, browser_page, screenshots, spark):
    page = browser_page
    page.goto("/assets/food_delivery/orders")
    page.get_by_role("button", name="Materialize…").click()
    dialog = page.get_by_role("dialog")
    selector = dialog.get_by_role("textbox")
    expect(selector).to_be_visible()
    if dialog.get_by_text("Show all partitions").count():  # the dialog opens on the last 90 days, if older exist
        dialog.get_by_text("Show all partitions").click()
    selector.fill(f"[{BACKFILLED[0]}...{BACKFILLED[-1]}]")
    selector.press("Enter")
    expect(dialog.get_by_text(f"{len(BACKFILLED)} partitions", exact=True)).to_be_visible()
    expect(dialog.get_by_text("Backfills all partitions in a single run.")).to_be_visible()
    shoot(page, screenshots, "backfill-dialog", dialogs=1)
    dialog.get_by_role("button", name="Launch backfill").click()

    toast = page.get_by_text(re.compile(r"Created backfill \w+"))
    expect(toast).to_be_visible()
    backfill_id = toast.inner_text().split()[-1]
    progress = wait_for_backfill(world, backfill_id)
    assert progress.status == "COMPLETED_SUCCESS", progress
    runs = world.instance.get_runs(filters=dg.RunsFilter.for_backfill(backfill_id))
    assert len(runs) == 1  # a single-run backfill policy: the whole range in one Spark job
    assert (runs[0].tags["dagster/asset_partition_range_start"], runs[0].tags["dagster/asset_partition_range_end"]) == (
        BACKFILLED[0].isoformat(),
        BACKFILLED[-1].isoformat(),
    )

    orders = spark.read.format("delta").load(str(world.warehouse / "food_delivery" / "orders"))
    counts = {r["day"]: r["count"] for r in orders.groupBy(F.col("p_date").alias("day")).count().collect()}
    assert counts == {day: orders_per_day(day) for day in [*PUBLISHED, *BACKFILLED]}

    page.goto(f"/runs/b/{backfill_id}")
    expect(page.get_by_text("Status", exact=True).locator("xpath=..")).to_contain_text("Succeeded")
    expect(page.get_by_text("100% completed")).to_be_visible()
    shoot(page, screenshots, "backfill-completed")
    page.goto("/assets/food_delivery/orders?view=partitions")
    expect(page.get_by_text(f"Materialized ({len(PUBLISHED) + len(BACKFILLED)})")).to_be_visible()


def wait_for_backfill(world: OperatorWorld, backfill_id: str) -> BackfillProgress:
    deadline = time.monotonic() + BACKFILL_TIMEOUT
    while True:
        world.check_alive()
        progress = backfill_progress(Webserver(world.url), backfill_id)
        if progress.finished:
            return progress
        assert time.monotonic() < deadline, f"backfill {backfill_id} not finished after {BACKFILL_TIMEOUT}s: {progress}"
        time.sleep(1)


def test_an_invalidated_day_shows_its_failed_valid_check(world, browser_page, screenshots, monkeypatch, capsys):
    """``mesh invalidate`` on a published day, as an operator types it; the UI shows why consumers now wait."""
    day, reason = PUBLISHED[1].isoformat(), "refunds counted twice"
    for name, value in {"DAGSTER_HOME": world.instance.root_directory, "MESH_HOME": world.warehouse.parent}.items():
        monkeypatch.setenv(name, str(value))
    get_settings.cache_clear()
    try:
        assert main(["invalidate", "food_delivery/orders", "--start", day, "--reason", reason]) == 0
    finally:
        get_settings.cache_clear()
    assert f"food_delivery/orders {day}: invalid" in capsys.readouterr().out

    page = browser_page
    page.goto("/assets/food_delivery/orders?view=partitions")
    page.get_by_role("tab", name="Checks").click()
    status = page.get_by_title(VALID, exact=True).first.locator("xpath=following-sibling::span")
    expect(status).to_have_text("Failed")
    page.get_by_title(VALID, exact=True).first.click()
    expect(page.get_by_text(f"invalidated: {reason}")).to_be_visible()
    shoot(page, screenshots, "invalidated-partition")
