"""Definitions load: a synthetic mesh versus the same graph written by hand in plain Dagster.

Each case runs in a fresh interpreter and times import -> Definitions -> repository snapshot, i.e. what
a code location server does before it can serve the graph. The plain baseline is the graph a team would
write by hand to show the same things: per asset its owners, tags, description, SQL, code reference and two
blocking partitioned checks; per domain an automation sensor over its assets and an observer sensor; one
resource. Mesh additionally reads and validates the YAML specs, which the hand-written graph has no need of.
Run alone: ``python -m bench.definitions_load --sizes 100 1000``.
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import date, timedelta
from pathlib import Path

from bench.common import Result, print_results, python_seconds

PRODUCTS_PER_DOMAIN = 20
PARTITIONS = 730
START = (date.today() - timedelta(days=PARTITIONS)).isoformat()
"""Both meshes' daily partitions are open-ended, like every Mesh product's: 730 of them as of today."""


def write_mesh(root: Path, assets: int) -> None:
    """``assets`` SQL products in up to 50 domains of 20, each reading the previous one, with two checks."""
    domains = max(1, assets // PRODUCTS_PER_DOMAIN)
    for d in range(domains):
        folder = root / f"d{d:02d}"
        folder.mkdir(parents=True)
        for p in range(min(PRODUCTS_PER_DOMAIN, assets - d * PRODUCTS_PER_DOMAIN)):
            source = f"d{d:02d}.t{p - 1:02d}" if p else f"d{d:02d}.raw"
            lines = [
                f"name: p{p:02d}",
                f"owner: team{d}@example.com",
                f'contacts: [{{kind: chat, value: "#d{d}"}}]',
                f"start_date: {START}",
            ]
            if p == 0:
                lines += ["external:", "  - {table: raw, partitioning: daily}"]
            lines += [
                "tables:",
                f"  - table: t{p:02d}",
                "    published: true",
                f"    inputs: [{{table: {source}}}]",
                f"    sql: SELECT id, amount FROM {source}",
                "    checks:",
                "      - {kind: not_null, columns: [id]}",
                "      - {kind: unique, keys: [id]}",
            ]
            (folder / f"p{p:02d}.yaml").write_text("\n".join(lines) + "\n")


MESH_CODE = """
import time; t0 = time.perf_counter()
import warnings; warnings.filterwarnings("ignore")
from pathlib import Path
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from dagster._core.remote_representation.external_data import RepositorySnap
defs = build_definitions(load_all(Path({root!r})), extra=[])
repo = defs.get_repository_def()
RepositorySnap.from_def(repo)
assert len(repo.asset_graph.get_all_asset_keys()) >= {assets}
print(time.perf_counter() - t0)
"""

PLAIN_CODE = """
import time; t0 = time.perf_counter()
import warnings; warnings.filterwarnings("ignore")
import json
import dagster as dg
from dagster._core.remote_representation.external_data import RepositorySnap
daily = dg.DailyPartitionsDefinition(start_date={start!r})
assets = []
sensors = []

class Engine(dg.ConfigurableResource):
    warehouse: str = ".mesh/warehouse"

def make(domain, index, source):
    key = dg.AssetKey([domain, f"t{{index:02d}}"])
    sql = f"SELECT id, amount FROM {{source.path[0]}}.{{source.path[1]}}"
    metadata = {{
        "contacts": dg.MetadataValue.json([{{"kind": "chat", "value": f"#{{domain}}"}}]),
        "dagster/code_references": dg.CodeReferencesMetadataValue(
            code_references=[
                dg.LocalFileCodeReference(file_path=f"/specs/{{domain}}/p{{index:02d}}.yaml", line_number=5)
            ]
        ),
        "source_file": f"domains/{{domain}}/p{{index:02d}}.yaml",
        "sql": dg.MetadataValue.md(f"```sql\\n{{sql}}\\n```"),
        "partition_column": "p_date",
        "write_mode": "replace_partitions",
    }}
    @dg.multi_asset(
        name=f"{{domain}}__t{{index:02d}}",
        specs=[dg.AssetSpec(key, deps=[source], group_name=f"p{{index:02d}}", owners=[f"team{{domain}}@example.com"],
                            description=f"t{{index:02d}} of {{domain}}", metadata=metadata,
                            kinds={{"spark", "delta", "sql"}}, partitions_def=daily,
                            tags={{"domain": domain, "product": f"p{{index:02d}}", "tier": "bronze",
                                  "classification": "internal", "published": "true"}},
                            automation_condition=dg.AutomationCondition.eager())],
        check_specs=[dg.AssetCheckSpec("not_null_id", asset=key, blocking=True, partitions_def=daily,
                                       description="not_null (error)",
                                       metadata={{"rule": json.dumps({{"columns": ["id"]}})}}),
                     dg.AssetCheckSpec("unique_id", asset=key, blocking=True, partitions_def=daily,
                                       description="unique (error)",
                                       metadata={{"rule": json.dumps({{"keys": ["id"]}})}})],
        partitions_def=daily, backfill_policy=dg.BackfillPolicy.single_run(), pool=f"{{domain}}/t{{index}}",
        required_resource_keys={{"engine"}}, can_subset=True,
    )
    def _asset(context):
        yield dg.MaterializeResult(asset_key=key)
    return _asset

def observer(domain):
    @dg.sensor(name=f"{{domain}}__observer", minimum_interval_seconds=60)
    def _observe(context, engine: Engine):
        return dg.SensorResult()
    return _observe

for d in range({domains}):
    domain = f"d{{d:02d}}"
    assets.append(dg.AssetSpec([domain, "raw"], partitions_def=daily))
    keys = []
    for p in range(min({per}, {assets} - d * {per})):
        source = dg.AssetKey([domain, f"t{{p - 1:02d}}"]) if p else dg.AssetKey([domain, "raw"])
        assets.append(make(domain, p, source))
        keys.append(dg.AssetKey([domain, f"t{{p:02d}}"]))
    sensors.append(
        dg.AutomationConditionSensorDefinition(f"{{domain}}__automation", target=dg.AssetSelection.assets(*keys))
    )
    sensors.append(observer(domain))
defs = dg.Definitions(assets=assets, sensors=sensors, resources={{"engine": Engine()}}, executor=dg.in_process_executor)
repo = defs.get_repository_def()
RepositorySnap.from_def(repo)
print(time.perf_counter() - t0)
"""


def measure(assets: int, repeat: int = 5) -> tuple[float, float]:
    """Best of ``repeat`` fresh processes each, Mesh and plain alternating so a busy moment hits both."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, assets)
        mesh_code = MESH_CODE.format(root=str(root), assets=assets)
        plain_code = PLAIN_CODE.format(
            start=START, domains=max(1, assets // PRODUCTS_PER_DOMAIN), per=PRODUCTS_PER_DOMAIN, assets=assets
        )
        runs = [(python_seconds(mesh_code, {"MESH_HOME": tmp}), python_seconds(plain_code)) for _ in range(repeat)]
    return min(m for m, _ in runs), min(p for _, p in runs)


def run(sizes: list[int] | None = None) -> list[Result]:
    results = []
    times = {}
    for size in sizes or [100, 500, 1000, 2000]:
        mesh, plain = measure(size)
        times[size] = mesh
        target = "Mesh/plain <= 1.2" + ("; <= 2 s" if size == 1000 else "")
        met = mesh / plain <= 1.2 and (size != 1000 or mesh <= 2.0)
        results.append(
            Result(
                "definitions load",
                f"{size} assets x 730 partitions",
                mesh,
                "plain Dagster, same graph",
                plain,
                target,
                met,
            )
        )
    if 1000 in times and 2000 in times:
        growth = times[2000] / times[1000]
        results.append(
            Result(
                "definitions load",
                "scaling 2000 vs 1000 assets",
                times[2000],
                "Mesh at 1000 assets",
                times[1000],
                "<= 2.2",
                growth <= 2.2,
            )
        )
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 1000, 2000])
    print_results(run(parser.parse_args().sizes))
