"""Definitions load: a synthetic mesh versus the same graph written by hand in plain Dagster.

Each case runs in a fresh interpreter and times import -> Definitions -> repository snapshot, i.e. what a code
location server does before it can serve the graph. The plain baseline is the graph a team would write by hand
to show the same things: per asset its owners, tags, description, SQL, code reference, code version, revision,
each dependency's time-window partition mapping, the same automation condition (written with Dagster's own
operators) and three blocking partitioned checks (Mesh's two and its ``valid``); per domain an automation
sensor over its assets, an observer sensor, a run-failure sensor, and the checks and invalidation jobs (one op
each); one resource. Mesh additionally reads and validates the YAML specs (cold) or takes them from what it kept
(warm), which the hand-written graph has no need of.

Two kinds of case, each through Mesh's public face: the whole mesh (``mesh_definitions``: every domain in one
``Definitions``, domains of 20 products, as the demo, tests and ``mesh`` commands load it), and one code
location holding all the products in one domain (``domain_definitions``, as Dagster loads a domain); each cold
(a new Mesh home: the specs read, validated and kept) and warm (an unchanged mesh reloaded from what was
kept). These meshes are YAML alone, so a location's cold load reads no other domain's code; a third case is
one domain's location among domains whose PySpark products are code, which a cold load runs in child
processes to learn the other domains' tables and a warm one reads from the catalog; the fourth, each of the
example's locations as it is (PySpark, YAML, components and dbt models).
Run alone: ``python -m bench.definitions_load --sizes 100 1000`` (or ``python -m bench --only
definitions_load``)."""

from __future__ import annotations

import argparse
import tempfile
from datetime import date, timedelta
from pathlib import Path

from bench.common import ROOT, Result, print_results, python_seconds

PRODUCTS_PER_DOMAIN = 20
CHAIN = 20
"""Products read each other in chains of this length (the first of each reads the domain's raw table): a
location of 2000 products is many pipelines, not one 2000-deep chain, which Dagster's own job building walks
recursively."""
PARTITIONS = 730
START = (date.today() - timedelta(days=PARTITIONS)).isoformat()
"""Both meshes' daily partitions are open-ended, like every Mesh product's: 730 of them as of today."""


REGIONS = "{eu: Europe/Madrid, latam: America/Sao_Paulo, apac: Asia/Singapore}"
"""Three regions, each day from its own local midnight (``write_mesh(..., regions=True)``)."""


def write_mesh(root: Path, assets: int, per_domain: int = PRODUCTS_PER_DOMAIN, regions: bool = False) -> None:
    """``assets`` SQL products in domains of ``per_domain``, each reading the previous one (chains of
    ``CHAIN``), with two checks; each domain a code location of its own (``definitions.py``). With ``regions``,
    every table (the raw external one too) is partitioned by date and :data:`REGIONS`."""
    domains = max(1, -(-assets // per_domain))
    for d in range(domains):
        folder = root / f"d{d:02d}"
        folder.mkdir(parents=True)
        (folder / "definitions.py").write_text(LOCATION_FILE)
        for p in range(min(per_domain, assets - d * per_domain)):
            source = f"d{d:02d}.t{p - 1:02d}" if p % CHAIN else f"d{d:02d}.raw"
            lines = [
                f"name: p{p:02d}",
                f"owner: team{d}@example.com",
                f'contacts: [{{kind: chat, value: "#d{d}"}}]',
                f"start_date: {START}",
            ]
            if p == 0:
                raw = f"  - {{table: raw, partitioning: daily, regions: {REGIONS}}}" if regions else None
                lines += ["external:", raw or "  - {table: raw, partitioning: daily}"]
            lines += [
                "tables:",
                f"  - table: t{p:02d}",
                *([f"    regions: {REGIONS}"] if regions else []),
                "    published: true",
                f"    inputs: [{{table: {source}}}]",
                f"    sql: SELECT id, amount FROM {source}",
                "    checks:",
                "      - {kind: not_null, columns: [id]}",
                "      - {kind: unique, keys: [id]}",
            ]
            (folder / f"p{p:02d}.yaml").write_text("\n".join(lines) + "\n")


LOCATION_FILE = "from mesh_assets import domain_definitions\n\ndefs = domain_definitions(__file__)\n"

PYSPARK_PRODUCT = """from pyspark.sql import DataFrame

from mesh_assets import Input, Output, Product

summary = Product("summary", owner="{owner}", contacts=[{{"kind": "chat", "value": "#{domain}"}}], start_date="{start}")


@summary.transformation(Output(table="summary", published=True), inputs={{"source": Input(table="{source}")}})
def summary_of(source: DataFrame) -> DataFrame:
    return source.groupBy("id").count()
"""


def add_pyspark_products(root: Path) -> None:
    """One PySpark product in every domain under ``root``, reading the domain's last table: a domain whose
    products are code, which another domain's location learns by running it in a child process (cold) or
    from the catalog (warm)."""
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        last = max(p.stem for p in folder.glob("p*.yaml")).replace("p", "t", 1)
        code = PYSPARK_PRODUCT.format(
            owner=f"team{int(folder.name[1:])}@example.com", domain=folder.name, start=START, source=last
        )
        (folder / "summary.py").write_text(code)


LOCATION_CODE = """
import time; t0 = time.perf_counter()
import warnings; warnings.filterwarnings("ignore")
import dagster  # a code server has imported it before it loads a location's file
from mesh_assets import domain_definitions
from dagster._core.remote_representation.external_data import RepositorySnap
repo = domain_definitions({definitions!r}).get_repository_def()
RepositorySnap.from_def(repo)
assert len(repo.asset_graph.get_all_asset_keys()) >= {assets}
print(time.perf_counter() - t0)
"""

MESH_CODE = """
import time; t0 = time.perf_counter()
import warnings; warnings.filterwarnings("ignore")
import dagster  # first, as in the location case: its import is not Mesh's
from pathlib import Path
from mesh_assets import mesh_definitions
from dagster._core.remote_representation.external_data import RepositorySnap
defs = mesh_definitions(Path({root!r}), dbt=False)
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
jobs = []
AC = dg.AutomationCondition
updated = (AC.newly_updated() & ~AC.executed_with_root_target()).with_label("newly_updated") | AC.will_be_requested()
unpassed = ~AC.all_checks_match(AC.check_passed() | AC.will_be_requested(), blocking_only=True)
unpublished = (AC.missing() & ~AC.will_be_requested()).with_label("unpublished")
trigger = AC.any_deps_match(updated).since_last_handled().with_label("input_published_since_last_handled")
not_ready = AC.any_deps_match(AC.in_progress() | unpublished | unpassed).with_label("an_input_not_ready")
held = (AC.in_progress() | not_ready).with_label("held_back")
condition = (trigger & (~held).with_label("inputs_ready")).with_label("dependencies")

same_day = dg.TimeWindowPartitionMapping(start_offset=0, end_offset=0, allow_nonexistent_upstream_partitions=True)

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
        "mesh/revision": f"{{domain}}{{index:02d}}r1",
    }}
    @dg.multi_asset(
        name=f"{{domain}}__t{{index:02d}}",
        specs=[dg.AssetSpec(key, deps=[dg.AssetDep(source, partition_mapping=same_day)], group_name=f"p{{index:02d}}",
                            owners=[f"team{{domain}}@example.com"], code_version=f"{{domain}}{{index:02d}}v1",
                            description=f"t{{index:02d}} of {{domain}}", metadata=metadata,
                            kinds={{"spark", "delta", "sql"}}, partitions_def=daily,
                            tags={{"domain": domain, "product": f"p{{index:02d}}", "tier": "t3",
                                  "classification": "l1", "published": "true", "status": "active", "version": "1"}},
                            automation_condition=condition)],
        check_specs=[dg.AssetCheckSpec("not_null_id", asset=key, blocking=True, partitions_def=daily,
                                       description="not_null (error)",
                                       metadata={{"rule": json.dumps({{"columns": ["id"]}})}}),
                     dg.AssetCheckSpec("unique_id", asset=key, blocking=True, partitions_def=daily,
                                       description="unique (error)",
                                       metadata={{"rule": json.dumps({{"keys": ["id"]}})}}),
                     dg.AssetCheckSpec("valid", asset=key, blocking=True, partitions_def=daily,
                                       description="not invalidated")],
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

def failures(domain):
    @dg.run_failure_sensor(name=f"{{domain}}__failure_alerts", monitor_all_code_locations=False)
    def _alert(context):
        pass
    return _alert

def op_job(domain, name):
    optional = {{"start": dg.Field(str, is_required=False), "end": dg.Field(str, is_required=False)}}
    config = {{"table": str, **optional}}
    @dg.op(name=f"{{domain}}__{{name}}_op", config_schema=config, required_resource_keys={{"engine"}})
    def _op(context):
        pass
    @dg.job(name=f"{{domain}}__{{name}}")
    def _job():
        _op()
    return _job

for d in range({domains}):
    domain = f"d{{d:02d}}"
    assets.append(dg.AssetSpec([domain, "raw"], partitions_def=daily))
    keys = []
    for p in range(min({per}, {assets} - d * {per})):
        source = dg.AssetKey([domain, f"t{{p - 1:02d}}"]) if p % {chain} else dg.AssetKey([domain, "raw"])
        assets.append(make(domain, p, source))
        keys.append(dg.AssetKey([domain, f"t{{p:02d}}"]))
    sensors.append(
        dg.AutomationConditionSensorDefinition(f"{{domain}}__automation", target=dg.AssetSelection.assets(*keys))
    )
    sensors.append(observer(domain))
    sensors.append(failures(domain))
    jobs += [op_job(domain, "checks"), op_job(domain, "invalidate")]
defs = dg.Definitions(
    assets=assets, sensors=sensors, jobs=jobs, resources={{"engine": Engine()}}, executor=dg.in_process_executor
)
repo = defs.get_repository_def()
RepositorySnap.from_def(repo)
print(time.perf_counter() - t0)
"""


def _plain(assets: int, per_domain: int) -> str:
    domains = max(1, -(-assets // per_domain))
    return PLAIN_CODE.format(start=START, domains=domains, per=per_domain, assets=assets, chain=CHAIN)


def _cold_warm_plain(
    tmp: str, code: str, plain_code: str | None, repeat: int, *, dbt: bool = False
) -> tuple[float, float, float]:
    """Best of ``repeat`` fresh processes each, alternating so a busy moment hits all three (plain: none without
    ``plain_code``). Cold loads with a new Mesh home every time; warm with the home the first cold load filled.
    Without ``dbt``, no dbt project: the example's models are not in the graph."""
    alone, warm_home = ({} if dbt else {"MESH_DBT_PROJECT_DIR": tmp}), str(Path(tmp) / "warm")
    python_seconds(code, {**alone, "MESH_HOME": warm_home})  # fills the warm home
    runs = []
    for i in range(repeat):
        cold = python_seconds(code, {**alone, "MESH_HOME": str(Path(tmp) / f"cold-{i}")})
        warm = python_seconds(code, {**alone, "MESH_HOME": warm_home})
        runs.append((cold, warm, python_seconds(plain_code) if plain_code else 0.0))
    return min(c for c, _, _ in runs), min(w for _, w, _ in runs), min(p for _, _, p in runs)


def measure(assets: int, repeat: int = 5) -> tuple[float, float, float]:
    """The whole mesh (``mesh_definitions``, domains of 20 products): (cold, warm, plain)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, assets)
        code = MESH_CODE.format(root=str(root), assets=assets)
        return _cold_warm_plain(tmp, code, _plain(assets, PRODUCTS_PER_DOMAIN), repeat)


def measure_location(assets: int, repeat: int = 5) -> tuple[float, float, float]:
    """One code location of ``assets`` products (``domain_definitions``): (cold, warm, plain)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, assets, per_domain=assets)
        code = LOCATION_CODE.format(definitions=str(root / "d00" / "definitions.py"), assets=assets)
        return _cold_warm_plain(tmp, code, _plain(assets, assets), repeat)


def measure_among_code(domains: int = 10, repeat: int = 5) -> tuple[float, float]:
    """One domain's location (20 products) among ``domains`` domains that each have a PySpark product: (cold,
    warm). Cold runs every other domain's files in a child process to learn its tables; warm reads them from
    the catalog."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, domains * PRODUCTS_PER_DOMAIN)
        add_pyspark_products(root)
        code = LOCATION_CODE.format(definitions=str(root / "d00" / "definitions.py"), assets=PRODUCTS_PER_DOMAIN)
        cold, warm, _ = _cold_warm_plain(tmp, code, None, repeat)
        return cold, warm


def measure_example(repeat: int = 5) -> dict[str, tuple[float, float]]:
    """Each of the example's domain locations (its dbt models included): (cold, warm)."""
    out = {}
    for folder in sorted(p for p in (ROOT / "domains").iterdir() if (p / "definitions.py").is_file()):
        with tempfile.TemporaryDirectory() as tmp:
            code = LOCATION_CODE.format(definitions=str(folder / "definitions.py"), assets=1)
            cold, warm, _ = _cold_warm_plain(tmp, code, None, repeat, dbt=True)
            out[folder.name] = (cold, warm)
    return out


def run(sizes: list[int] | None = None, repeat: int = 5) -> list[Result]:
    results = []
    times = {}
    for size in sizes or [100, 500, 1000, 2000]:
        cold, mesh, plain = measure(size, repeat)
        times[size] = mesh
        target = "Mesh/plain <= 1.10" + ("; <= 2 s" if size == 1000 else "")
        met = mesh / plain <= 1.10 and (size != 1000 or mesh <= 2.0)
        case = f"whole mesh, {size} assets x 730 partitions, warm (unchanged mesh)"
        results.append(Result("definitions load", case, mesh, "plain Dagster, same graph", plain, target, met))
        case = f"whole mesh, {size} assets, warm vs cold"
        results.append(Result("definitions load", case, mesh, "cold (new home)", cold, "<= 0.5", mesh / cold <= 0.5))
        cold, warm, plain = measure_location(size, repeat)
        case = f"one location of {size} assets, warm (unchanged domain)"
        results.append(
            Result("definitions load", case, warm, "plain Dagster, same graph", plain, "<= 1.10", warm / plain <= 1.10)
        )
        case = f"one location of {size} assets, warm vs cold"
        results.append(Result("definitions load", case, warm, "cold (new home)", cold, "<= 0.5", warm / cold <= 0.5))
    cold, warm = measure_among_code(repeat=repeat)
    case = "one location of 20 products among 10 domains with PySpark products, warm vs cold"
    results.append(Result("definitions load", case, warm, "cold (new home)", cold, "<= 0.5", warm / cold <= 0.5))
    for domain, (cold, warm) in measure_example(repeat).items():
        case = f"the example's {domain} location, warm vs cold"
        results.append(Result("definitions load", case, warm, "cold (new home)", cold, "<= 0.5", warm / cold <= 0.5))
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
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per case (the best is kept)")
    args = parser.parse_args()
    print_results(run(args.sizes, args.repeat))
