"""The demo: land 14 days of source data and materialize the example mesh on a persistent instance."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from graphlib import TopologicalSorter
from typing import TYPE_CHECKING

import dagster as dg
from pyspark.sql import functions as F

from mesh_assets import RESOURCE_KEY, MeshResource, executable_assets, observe_now
from mesh_assets.assets.specs import MIN_COMPLETE_KEY
from mesh_assets.engine.session import scoped_conf
from mesh_assets.model.grain import DATE, midnight
from mesh_examples.generator import days
from mesh_examples.landing import land_all

if TYPE_CHECKING:
    from mesh_examples.current import Published

DEMO_START = date(2021, 6, 1)
DEMO_DAYS = 14
HISTORY_DAYS = 30
"""The example's history, June 2021: its domains' tables end there (``end_date: 2021-07-01`` in each
``domain.yaml``), so that Dagster's UI lists its 30 days rather than every day since."""
DEMO_JOB = "mesh_demo"


@dataclass(frozen=True)
class AssetSummary:
    asset: str
    partitions: list[str]
    rows: dict[str, int]


@dataclass(frozen=True)
class Planned:
    """One table the demo materializes: where it belongs and the partitions it should publish."""

    key: dg.AssetKey
    domain: str
    product: str
    partitions: tuple[str | None, ...]
    """``(None,)`` for an unpartitioned table, published whole."""


class DemoListener:
    """What the demo reports while it runs; the CLI draws it. The base class ignores everything."""

    def stage(self, text: str) -> None:
        """A step of the demo begins (landing, observing, materializing)."""

    def planned(self, tables: list[Planned]) -> None:
        """The tables about to be materialized, before the first one starts."""

    def materialized(self, key: dg.AssetKey, partition: str | None) -> None:
        """One partition of ``key`` (``None``: the whole unpartitioned table) was published."""

    def failed(self, message: str) -> None:
        """A step of a run failed; ``message`` names the table and its refused partitions."""


def run_demo(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    mesh: MeshResource,
    start: date = DEMO_START,
    count: int = DEMO_DAYS,
    listener: DemoListener | None = None,
    engine: Callable[[], object] | None = None,
) -> list[AssetSummary]:
    """Land the sources, materialize the mesh over them, and summarize what was published; what is already
    landed or current is left as it is (:mod:`mesh_examples.current`). ``engine`` starts the Spark session the
    demo uses, called only when there is Spark work: a run with nothing to do starts none."""
    from mesh_examples.current import MARK_CONF, already_landed, landing_mark

    listener = listener or DemoListener()
    window = days(start, count)
    mark = landing_mark(window)
    if already_landed(mesh, mark):
        listener.stage(f"example data for {window[0]} .. {window[-1]} already landed")
    else:
        listener.stage(f"landing {count} days of example data ({window[0]} .. {window[-1]})")
        if engine is not None:
            engine()
        with scoped_conf(mesh.spark, {MARK_CONF: mark}):
            land_all(mesh.spark, mesh.registry, window)
    listener.stage("observing the landed sources and running their checks")
    observe_now(defs, instance, mesh)  # what the observers report before anything reads the landed data
    listener.stage("materializing the mesh")
    return publish(defs, instance, mesh, window[0], window[-1], listener, engine)


def publish(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    mesh: MeshResource,
    first: date,
    last: date,
    listener: DemoListener | None = None,
    engine: Callable[[], object] | None = None,
) -> list[AssetSummary]:
    """Materialize what is not current of the mesh over ``first``..``last``, and summarize every table: a table
    current afterwards from what its materializations recorded, any other by counting its Delta table."""
    from mesh_examples.current import current_tables

    assets = executable_assets(defs)
    planned = {p.key: p.partitions for p in plan(assets, first, last)}
    current = current_tables(assets, instance, mesh, planned)
    if engine is not None and set(planned) - set(current):
        engine()
    keys = materialize_mesh(defs, instance, mesh, first, last, listener, current)
    if set(planned) - set(current):
        current = current_tables(assets, instance, mesh, planned)
    return summarize(instance, keys, mesh, current, partition_columns(assets))


def materialize_mesh(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    mesh: MeshResource,
    first: date,
    last: date,
    listener: DemoListener | None = None,
    current: dict[dg.AssetKey, Published] | None = None,
) -> list[dg.AssetKey]:
    """Unpartitioned products in one run, then one single-run range per partitions definition (a job runs one;
    a product with an ``end_date`` has its own), producers' runs first. Tables in ``current`` (already current,
    with what they published) are reported as published and left out of the runs; a run left with no table
    is not launched."""
    listener = listener or DemoListener()
    current = current or {}
    assets = executable_assets(defs)
    unpartitioned = [k for a in assets for k in a.keys if a.partitions_def is None]
    listener.planned(plan(assets, first, last))
    for key, found in current.items():
        for partition in found.records:
            listener.materialized(key, partition)
    resources = {**(defs.resources or {}), RESOURCE_KEY: mesh}
    tags = {"mesh/launched_by": "demo"}
    runs: list[tuple[list[dg.AssetKey], dict[str, str]]] = [(unpartitioned, tags)]
    planned = {p.key: set(p.partitions) for p in plan(assets, first, last)}
    for partitions, selection in by_partitions(assets):
        wanted = set().union(*(planned[k] for k in selection))
        covered = [k for k in partitions.get_partition_keys() if k in wanted]  # Dagster's order: a range of them
        if covered:
            span = {"dagster/asset_partition_range_start": covered[0], "dagster/asset_partition_range_end": covered[-1]}
            runs.append((selection, {**tags, **span}))
    for selection, run_tags in runs:
        left = [k for k in selection if k not in current]
        if not left:
            continue
        job = demo_job(assets, resources, left, listener)
        result = job.execute_in_process(instance=instance, run_config=LOGGERS, tags=run_tags, raise_on_error=False)
        for event in result.get_step_failure_events():
            listener.failed(root_cause(event.step_failure_data.error))
    return [k for selection, _ in runs for k in selection]


def by_partitions(assets: list[dg.AssetsDefinition]) -> list[tuple[dg.PartitionsDefinition, list[dg.AssetKey]]]:
    """The partitioned keys grouped by partitions definition, each group after the groups it reads from."""
    groups: list[tuple[dg.PartitionsDefinition, list[dg.AssetKey]]] = []
    for a in assets:
        if a.partitions_def is None:
            continue
        group = next((g for g in groups if g[0] == a.partitions_def), None)
        if group is None:
            group = (a.partitions_def, [])
            groups.append(group)
        group[1].extend(a.keys)
    index = {key: i for i, (_, keys) in enumerate(groups) for key in keys}
    reads: dict[int, set[int]] = {i: set() for i in range(len(groups))}
    for a in assets:
        for key, deps in a.asset_deps.items():
            if key in index:
                reads[index[key]] |= {index[d] for d in deps if d in index and index[d] != index[key]}
    return [groups[i] for i in TopologicalSorter(reads).static_order()]


LOGGERS = {"loggers": {"console": {"config": {"log_level": "DEBUG"}}, "progress": {}}}
"""Dagster's own log in full on stderr (the CLI sends it to the demo's log file), and the progress events."""


def demo_job(
    assets: list[dg.AssetsDefinition],
    resources: dict[str, object],
    selection: list[dg.AssetKey],
    listener: DemoListener,
) -> dg.JobDefinition:
    """``dg.materialize``'s job, with a logger that forwards each published partition to ``listener``."""
    defs = dg.Definitions(
        assets=assets,
        resources=resources,
        jobs=[dg.define_asset_job(DEMO_JOB, selection=selection)],
        loggers={"console": dg.colored_console_logger, "progress": progress_logger(listener)},
    )
    return defs.resolve_job_def(DEMO_JOB)


def progress_logger(listener: DemoListener) -> dg.LoggerDefinition:
    class Forward(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            event = getattr(record, "dagster_event", None)
            if event is not None and event.is_step_materialization:
                listener.materialized(event.asset_key, event.partition)

    @dg.logger
    def progress(_context: dg.InitLoggerContext) -> logging.Logger:
        log = logging.Logger("mesh.demo.progress", logging.DEBUG)
        log.addHandler(Forward())
        return log

    return progress


def root_cause(error: object) -> str:
    """The innermost error's own message (the table and partitions Mesh refused), not Dagster's wrapping."""
    while getattr(error, "cause", None) is not None:
        error = error.cause
    message = str(getattr(error, "message", error)).strip()
    name = getattr(error, "cls_name", None)
    return message.split(f"{name}: ", 1)[-1] if name else message


def plan(assets: list[dg.AssetsDefinition], first: date, last: date) -> list[Planned]:
    """Every executable table with its domain, product (its asset group) and the partitions the demo covers."""
    planned = [
        Planned(
            key,
            key.path[0],
            a.group_names_by_key[key],
            covered(a.partitions_def, first, last, needed_share(a, key)) if a.partitions_def else (None,),
        )
        for a in assets
        for key in a.keys
    ]
    return sorted(planned, key=lambda p: (p.domain, p.product, p.key.to_user_string()))


def covered(partitions: dg.PartitionsDefinition, first: date, last: date, share: float) -> tuple[str, ...]:
    """The partitions of ``first``..``last``: a date-by-region table's (date, region) pairs of those dates; a
    time partition inside the days, or one the days cover ``share`` of (a month's first 14 days, where the
    table may read part of its window); a week or month reaching past the days would wait for them."""
    start, end = midnight(first), midnight(last + timedelta(days=1))
    if isinstance(partitions, dg.MultiPartitionsDefinition):
        return tuple(
            str(key)
            for key in partitions.get_partition_keys()
            if first <= date.fromisoformat(key.keys_by_dimension[DATE]) <= last  # type: ignore[attr-defined]
        )
    assert isinstance(partitions, dg.TimeWindowPartitionsDefinition), partitions
    out = []
    for key in partitions.get_partition_keys_in_time_window(dg.TimeWindow(start, end)):
        window = partitions.time_window_for_partition_key(key)
        inside = min(window.end, end) - max(window.start, start)
        if window.start >= start and inside / (window.end - window.start) >= share:
            out.append(key)
    return tuple(out)


def needed_share(asset: dg.AssetsDefinition, key: dg.AssetKey) -> float:
    """The share of a partition's window its inputs need: 1 unless every input it reads accepts part of its window
    (``min_complete``, recorded in the table's metadata), then the largest share they name."""
    declared = asset.metadata_by_key[key].get(MIN_COMPLETE_KEY)
    shares = getattr(declared, "value", declared) or {}
    deps = [".".join(dep.path) for dep in asset.asset_deps[key]]
    return max((shares.get(dep, 1.0) for dep in deps), default=1.0)


def summarize(
    instance: dg.DagsterInstance,
    keys: list[dg.AssetKey],
    mesh: MeshResource,
    current: dict[dg.AssetKey, Published] | None = None,
    columns: dict[dg.AssetKey, tuple[str, ...]] | None = None,
) -> list[AssetSummary]:
    """Per asset: the partitions materialized (from the instance) and their rows (from the Delta table, by the
    table's ``columns``, default ``p_date``; for a table left as it was because it was current, from its
    materializations, which recorded what it holds)."""
    out = []
    for key in sorted(keys, key=lambda k: k.to_user_string()):
        if key in (current or {}):
            rows = current[key].rows()  # type: ignore[index]
            out.append(AssetSummary(key.to_user_string(), sorted(rows), rows))
            continue
        records = instance.fetch_materializations(key, limit=10_000).records
        partitions = sorted({(r.asset_materialization.partition or "-") for r in records if r.asset_materialization})
        by = (columns or {}).get(key) or ("p_date",)
        out.append(AssetSummary(key.to_user_string(), partitions, delta_rows(mesh, key, partitions, by)))
    return out


def delta_rows(
    mesh: MeshResource, key: dg.AssetKey, partitions: list[str], columns: tuple[str, ...] = ("p_date",)
) -> dict[str, int]:
    """Rows per partition as readers see them now (grouped by ``columns``, the partition column and a date-by-region
    table's region column, as Dagster spells its keys), or of the whole table."""
    if not partitions:
        return {}
    table = mesh.spark.read.format("delta").load(mesh.registry.location(*key.path))
    if partitions == ["-"]:
        return {"-": table.count()}
    spelled = F.concat_ws("|", *(F.col(c).cast("string") for c in columns)).alias("p")
    counts = {str(r["p"]): r["count"] for r in table.groupBy(spelled).count().collect()}
    return {p: counts.get(p, 0) for p in partitions}


def partition_columns(assets: list[dg.AssetsDefinition]) -> dict[dg.AssetKey, tuple[str, ...]]:
    """Each partitioned table's partition column, and its region column when it has one (from its metadata)."""
    out = {}
    for a in assets:
        for key in a.keys:
            metadata = a.metadata_by_key[key]
            columns = (metadata.get("partition_column"), metadata.get("region_column"))
            out[key] = tuple(str(c) for c in columns if c not in (None, "-"))
    return out
