"""``mesh plan`` and ``mesh apply`` on a temporary git repository: a spec change against the committed base (or
what the instance last published), its schema change classified, its readers named, the partitions it makes
stale listed with their rows; exit 1 on a breaking change to a published table until it is a new version; one
backfill launched with exactly the plan's partitions (no Spark: publications are reported to a temporary
instance, as the runs would record them)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import dagster as dg
import pytest
from planning import planning_instance
from rich.console import Console

from mesh_assets import definitions
from mesh_assets.change import git_entries
from mesh_assets.cli import main
from mesh_assets.cli.commands import mesh_catalog
from mesh_assets.compat import CODE_VERSION_TAG
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "change" / "domains"
REAL_DEFINITIONS = definitions.mesh_definitions
DAYS = ["2021-06-01", "2021-06-02", "2021-06-03"]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


class Repo:
    """A git checkout of a mesh, ``mesh`` pointed at it, and the instance ``mesh plan`` reads what is published from."""

    def __init__(self, root: Path, domains: Path, instance: dg.DagsterInstance):
        self.root, self.domains, self.instance = root, domains, instance
        self.graph = MeshGraph(load_all(domains))  # as committed: what the runs recorded

    def edit(self, file: str, old: str, new: str) -> None:
        path = self.domains / file
        assert old in path.read_text(), old
        path.write_text(path.read_text().replace(old, new))

    def publish(self, domain: str, table: str, rows: dict[str | None, int], *, code_version: str | None = None) -> None:
        """Report ``rows`` per partition (``None``: the unpartitioned table) of ``domain.table`` published, with
        what its runs record."""
        info = self.graph.get(domain, table)
        columns = [dg.TableColumn(c.name, c.type) for c in info.contract or ()] + [dg.TableColumn("p_date", "date")]
        for day, count in rows.items():
            metadata = {"dagster/row_count": count, "dagster/column_schema": dg.TableSchema(columns=columns)}
            tags = {CODE_VERSION_TAG: code_version or info.code_version} if info.code_version else {}
            if info.revision:
                metadata["mesh/revision"] = info.revision
            event = dg.AssetMaterialization(asset_key=info.key, partition=day, metadata=metadata, tags=tags)
            self.instance.report_runless_asset_event(event)


def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, domains: list[Path]) -> Repo:
    """``domains`` copied into a new git repository's ``domains/`` and committed."""
    root = tmp_path / "repo"
    for folder in domains:
        shutil.copytree(folder, root / "domains" / folder.name, ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=Mesh", "-c", "user.email=mesh@example.com", "commit", "-q", "-m", "base")
    monkeypatch.setenv("MESH_DOMAINS_DIR", str(root / "domains"))
    monkeypatch.setattr(main, "console", Console(width=250, no_color=True, highlight=False))
    get_settings.cache_clear()
    instance = planning_instance(monkeypatch, tmp_path, lambda: REAL_DEFINITIONS(root / "domains"))
    return Repo(root, root / "domains", instance)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The ``shop`` mesh committed: shop.orders (published, with a contract) read by reports and finance, and its
    publications: raw_orders 06-01..04, orders 06-01..03 (10, 20, 30 rows), daily_revenue 06-01..03, ledger
    06-02..03."""
    checked_out = checkout(tmp_path, monkeypatch, sorted(FIXTURE.iterdir()))
    checked_out.publish("shop", "raw_orders", dict.fromkeys([*DAYS, "2021-06-04"], 5))
    checked_out.publish("shop", "orders", dict(zip(DAYS, [10, 20, 30], strict=True)))
    checked_out.publish("reports", "daily_revenue", dict.fromkeys(DAYS, 1))
    checked_out.publish("finance", "ledger", {"2021-06-02": 30, "2021-06-03": 50})
    yield checked_out
    get_settings.cache_clear()


def plan_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main.main(["plan", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def partitions(plan: dict) -> dict[str, tuple]:
    return {p["asset"]: (p["partitions"], p["count"], p["rows"], p["reason"]) for p in plan["partitions"]}


def test_an_additive_change_plans_its_published_partitions_and_every_reader_downstream(repo, capsys):
    repo.edit("shop/defs/orders/defs.yaml", "SELECT id, amount FROM", "SELECT id, amount, 'EUR' AS currency FROM")
    repo.edit(
        "shop/defs/orders/defs.yaml",
        "{name: amount, type: double}",
        "{name: amount, type: double}\n        - {name: currency, type: string}",
    )

    code, plan = plan_json(capsys, "--base", "HEAD")
    assert code == 0
    assert plan["base"] == "HEAD" and plan["refused"] == [] and plan["exit_code"] == 0
    assert plan["products"] == [{"product": "shop/orders", "change": "changed", "fields": ["tables"]}]
    [orders] = plan["tables"]
    assert orders == {
        "table": "shop.orders",
        "version": 1,
        "change": "changed",
        "fields": ["contract"],
        "code": "sql",
        "schema": {
            "against": "published table",
            "added": ["added column currency (string)"],
            "dropped": [],
            "retyped": [],
            "additive": True,
        },
        "breaking": [],
        "published": True,
        "consumers": [
            {"table": "finance.ledger", "owner": "team:finance", "contacts": ["#finance", "finance@example.com"]},
            {"table": "reports.daily_revenue", "owner": "reports@example.com", "contacts": ["#reports"]},
        ],
    }
    assert partitions(plan) == {
        "shop/orders": (["2021-06-01..2021-06-03"], 3, 60, "sql changed"),
        "finance/ledger": (["2021-06-02..2021-06-03"], 2, 80, "reads shop/orders"),  # its last_2 windows read them
        "reports/daily_revenue": (["2021-06-01..2021-06-03"], 3, 3, "reads shop/orders"),
    }
    assert plan["left_out"] == []


def test_a_breaking_change_names_its_readers_and_fails_until_it_is_a_new_version(repo, capsys):
    repo.edit("shop/defs/orders/defs.yaml", "SELECT id, amount FROM", "SELECT id FROM")
    repo.edit("shop/defs/orders/defs.yaml", "        - {name: amount, type: double}\n", "")

    assert main.main(["plan", "--base", "HEAD"]) == 1
    out = capsys.readouterr().out
    assert "~ shop.orders: contract, sql changed" in out
    assert "schema against the published table: dropped column amount (double) (BREAKING)" in out
    assert "breaking (published): dropped column amount (double)" in out
    assert "read by finance.ledger (team:finance, #finance, finance@example.com)" in out
    assert "read by reports.daily_revenue (reports@example.com, #reports)" in out
    assert "shop.orders: publish the change as version 2 beside it (version: 2)" in out

    # The same change as version 2 beside version 1, which is deprecated: nothing published breaks.
    git(repo.root, "checkout", "--", "domains")
    repo.edit(
        "shop/defs/orders/defs.yaml",
        "      published: true\n",
        "      published: true\n      status: deprecated\n      sunset: 2021-12-31\n",
    )
    (repo.domains / "shop" / "defs" / "orders" / "defs.yaml").write_text(
        (repo.domains / "shop" / "defs" / "orders" / "defs.yaml").read_text()
        + "    - table: orders\n      version: 2\n      published: true\n      inputs: [{table: raw_orders}]\n"
        "      contract: [{name: id, type: bigint}]\n      sql: SELECT id FROM shop.raw_orders\n"
    )
    code, plan = plan_json(capsys, "--base", "HEAD")
    assert code == 0 and plan["refused"] == []
    changes = {t["table"]: (t["change"], t["fields"], t["code"], t["breaking"]) for t in plan["tables"]}
    assert changes == {
        "shop.orders": ("changed", ["status: active -> deprecated (sunset 2021-12-31)"], None, []),
        "shop.orders_v2": ("added", [], None, []),
    }
    # Version 1 recomputes nothing (its code did not change); version 2 is filled where raw_orders is published.
    assert partitions(plan) == {"shop/orders_v2": (["2021-06-01..2021-06-04"], 4, None, "new table")}


def test_the_readme_shows_a_breaking_plan_as_it_prints(repo, monkeypatch, capsys):
    """README, Changing a product: its example of a breaking plan is this one, in a 120-column terminal."""
    readme = (ROOT / "README.md").read_text()
    shown = readme.split("<!-- readme-output from tests/unit/test_change_plan.py -->\n```\n", 1)[1].split("```", 1)[0]
    git(repo.root, "branch", "main")
    repo.edit("shop/defs/orders/defs.yaml", "SELECT id, amount FROM", "SELECT id, amount AS total FROM")
    repo.edit("shop/defs/orders/defs.yaml", "{name: amount, type: double}", "{name: total, type: double}")
    monkeypatch.setattr(main, "console", Console(width=120, no_color=True, highlight=False))

    assert main.main(["plan", "--base", "main"]) == 1
    assert "".join(f"{line.rstrip()}\n" for line in capsys.readouterr().out.splitlines()) == shown


def test_without_a_contract_a_sql_products_query_names_its_columns(repo, capsys):
    repo.edit(
        "shop/defs/orders/defs.yaml",
        "      contract:\n        - {name: id, type: bigint}\n        - {name: amount, type: double}\n",
        "",
    )
    repo.edit("shop/defs/orders/defs.yaml", "SELECT id, amount FROM", "SELECT id, amount AS total FROM")

    code, plan = plan_json(capsys, "--base", "HEAD")
    assert code == 1 and plan["refused"] == ["shop.orders"]
    [orders] = plan["tables"]
    assert orders["schema"]["dropped"] == ["dropped column amount (double)"]
    assert orders["schema"]["added"] == ["added column total (type unknown)"]  # a rename is a drop and an add
    assert orders["breaking"] == ["dropped column amount (double)"]


def test_without_a_base_the_plan_compares_with_what_the_instance_published(repo, capsys):
    repo.publish("shop", "orders", {"2021-06-01": 12}, code_version="0123456789abcdef")  # an older code's run

    code, plan = plan_json(capsys)
    assert code == 0 and plan["base"] == "instance"
    [orders] = plan["tables"]
    assert orders["table"] == "shop.orders" and orders["change"] == "changed"
    assert orders["fields"][0].endswith("(1 published partition(s) computed by another)")
    assert partitions(plan) == {
        "shop/orders": (["2021-06-01"], 1, 12, "code version changed"),
        "finance/ledger": (["2021-06-02"], 1, 30, "reads shop/orders"),
        "reports/daily_revenue": (["2021-06-01"], 1, 1, "reads shop/orders"),
    }

    repo.edit(
        "finance/defs/ledger/defs.yaml", "start_date:", "status: retired\n  start_date:"
    )  # a retired reader is left alone
    code, plan = plan_json(capsys)
    [ledger] = plan["products"]  # its revision changed, not its code: the instance's partitions are not stale
    assert ledger["product"] == "finance/ledger"
    assert ledger["fields"][0].startswith(f"revision {repo.graph.get('finance', 'ledger').revision} -> ")
    assert set(partitions(plan)) == {"shop/orders", "reports/daily_revenue"}


def test_a_base_that_cannot_be_read_plans_nothing(repo, capsys):
    assert main.main(["plan", "--base", "no-such-ref"]) == 2
    assert f"unknown git ref 'no-such-ref' in {repo.root}" in capsys.readouterr().out
    repo.edit("finance/defs/ledger/defs.yaml", "{table: shop.orders, window: last_2}", "{table: shop.missing}")
    code, plan = plan_json(capsys, "--base", "HEAD")
    assert code == 2 and plan["exit_code"] == 2
    assert any(
        "ledger/defs.yaml:9: tables.0.inputs.shop__missing: unknown table shop.missing" in e for e in plan["errors"]
    )
    assert plan["errors"][-1] == "the working tree does not pass governance (mesh validate): nothing planned"


def test_apply_dry_run_and_a_refused_plan_launch_nothing(repo, capsys, no_webserver):
    repo.edit("shop/defs/orders/defs.yaml", "SELECT id, amount FROM", "SELECT id, amount * 2 AS amount FROM")
    assert main.main(["apply", "--base", "HEAD", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Partitions to recompute (`mesh apply`): 8 of 3 table(s)" in out
    assert "Dry run: nothing launched." in out and no_webserver not in out
    assert main.main(["apply", "--base", "HEAD"]) == 1
    assert f"no Dagster webserver answers at {no_webserver}" in " ".join(capsys.readouterr().out.split())

    repo.edit(
        "shop/defs/orders/defs.yaml",
        "        - {name: amount, type: double}\n",
        "        - {name: amount, type: string}\n",
    )
    assert main.main(["apply", "--base", "HEAD"]) == 1
    out = capsys.readouterr().out
    assert "retyped column amount (double -> string)" in out
    assert "a breaking change to a published table: nothing launched" in out and no_webserver not in out


@pytest.mark.slow
@pytest.mark.e2e
def test_apply_launches_the_plans_partitions_as_one_backfill(tmp_path, monkeypatch, capsys, cli_webserver):
    repo = checkout(tmp_path, monkeypatch, [ROOT / "domains" / "food_delivery"])  # what the webserver serves
    days = [f"2021-06-{d:02d}" for d in range(1, 10)]
    repo.publish("food_delivery", "orders", dict.fromkeys(days, 100))
    repo.publish("food_delivery", "orders_7_days", dict.fromkeys(days[6:], 7))
    for dimension in ("menus", "menu_items", "categories"):
        repo.publish("food_delivery", dimension, {None: 3})
    repo.edit(
        "food_delivery/defs/weekly_orders/orders_7_days.sql",
        "SELECT",
        "SELECT /* reviewed */",
    )

    code, plan = plan_json(capsys, "--base", "HEAD")
    assert code == 0
    assert partitions(plan) == {
        "food_delivery/orders_7_days": (["2021-06-07..2021-06-09"], 3, 21, "sql changed"),
    }
    assert plan["left_out"] == []
    before = cli_webserver.backfill_ids()
    assert main.main(["apply", "--base", "HEAD"]) == 0
    [launched] = cli_webserver.backfill_ids() - before
    out = capsys.readouterr().out
    assert f"{cli_webserver.url}/runs/b/{launched}" in out
    backfill = cli_webserver.instance.get_backfill(launched)
    target = backfill.asset_backfill_data.target_subset
    graph = REAL_DEFINITIONS(repo.domains).resolve_asset_graph()
    launched_partitions = {
        k.to_user_string(): [
            f"{r.start}..{r.end}"
            for r in target.get_partitions_subset(k).get_partition_key_ranges(graph.get(k).partitions_def)
        ]
        for k in target.asset_keys
    }
    assert launched_partitions == {p["asset"]: p["partitions"] for p in plan["partitions"]}
    assert backfill.tags["mesh/launched_by"] == "mesh apply" and backfill.tags["mesh/plan_base"] == "HEAD"


def test_against_a_git_base_only_the_domains_whose_files_changed_are_discovered_again(repo, capsys):
    working = mesh_catalog()
    unchanged = git_entries("HEAD", repo.domains, 60, working=working)
    assert unchanged.keys() == working.keys() == {"finance", "reports", "shop"}
    assert all(unchanged[name] is working[name] for name in working)  # taken as they are: nothing discovered

    repo.edit("shop/defs/orders/defs.yaml", "SELECT id, amount FROM", "SELECT id, amount * 2 AS amount FROM")
    edited = mesh_catalog()
    base = git_entries("HEAD", repo.domains, 60, working=edited)
    assert base["finance"] is edited["finance"] and base["reports"] is edited["reports"]
    assert base["shop"] is not edited["shop"]  # discovered from HEAD's files: the committed SQL
    [committed] = [t for t in base["shop"].tables if t.name == "orders"]
    [now] = [t for t in edited["shop"].tables if t.name == "orders"]
    assert committed.code_version == repo.graph.get("shop", "orders").code_version != now.code_version
    assert main.main(["plan", "--base", "HEAD"]) == 0
    assert "~ shop.orders" in capsys.readouterr().out


def test_another_kind_or_unique_key_is_a_breaking_change_to_a_published_table(repo, capsys):
    """Issue 41: readers of a table rely on what its runs do to its rows; a merge table is another table than a
    replaced one, and another key matches other rows."""
    repo.edit(
        "shop/defs/orders/defs.yaml",
        "      published: true\n",
        "      published: true\n      kind: {name: merge, unique_key: id}\n",
    )
    code, plan = plan_json(capsys, "--base", "HEAD")
    breaking = {t["table"]: t["breaking"] for t in plan["tables"]}
    assert code == 1 and breaking["shop.orders"] == ["kind partitions -> merge"]

    git(repo.root, "add", ".")
    git(repo.root, "-c", "user.name=Mesh", "-c", "user.email=mesh@example.com", "commit", "-q", "-m", "merge")
    repo.edit("shop/defs/orders/defs.yaml", "unique_key: id}", "unique_key: [id, amount]}")
    code, plan = plan_json(capsys, "--base", "HEAD")
    breaking = {t["table"]: t["breaking"] for t in plan["tables"]}
    assert code == 1 and breaking["shop.orders"] == ["unique_key id -> id, amount"]
