"""OpenLineage events for plain Dagster assets that use dagster-pyspark's resource over Mesh's session.

Mesh does not run such an asset, so its events come from two public Dagster mechanisms. The resource a plain
asset gets (:class:`TracedPySparkResource`) sends START the first time the asset asks it for the session (the
step is ``AssetExecutionContext.get()``) and records each Mesh table the asset reads through ``table()``, as a
product run's reads are captured: the locations at the leaves of the DataFrame's plan. A success hook sends
COMPLETE and a failure hook FAIL (with the error), both with those reads as inputs (the Mesh tables the asset
depends on when it read none through ``table()``) and, when the run committed a new Delta version of the table
its key names (``<domain>.<table>``), that table as the output: its version, schema and rows written. The
events go through the client, transport and spool of product runs (:mod:`mesh_assets.lineage.emit`).

A read through ``spark_session`` itself (``spark.table``, ``spark.read``) is not seen: no plan of it reaches
Mesh. An asset that never asks for the session sends nothing: it did nothing in Spark to describe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import dagster as dg

from mesh_assets.engine.identity import identify_run, run_identity, use_identity
from mesh_assets.lineage.capture import read_locations, table_name
from mesh_assets.lineage.emit import emit, make_client
from mesh_assets.lineage.events import RunDescription, build_event
from mesh_assets.lineage.plan import normalize
from mesh_assets.lineage.run import spark_version
from mesh_assets.model.errors import Refused
from mesh_assets.model.grain import Grain
from mesh_assets.storage.delta import version_or_none
from mesh_assets.storage.lake import open_table
from mesh_assets.storage.pyspark import MeshPySparkResource
from mesh_assets.storage.resource import MeshResource

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient
    from pyspark.sql import DataFrame, SparkSession

    from mesh_assets.storage.tables import TableRegistry

JOB_TYPE = ("DAGSTER", "ASSET")


@dataclass
class PlainRun:
    """One plain asset's step: what its events say, filled in as the step goes."""

    description: RunDescription
    client: OpenLineageClient | None
    mesh: MeshResource
    outputs: dict[str, int | None]
    """The location of each table the asset's keys name, with its Delta version when the step began."""
    reads: dict[str, str] = field(default_factory=dict)
    """Each location read through ``table()``, with its ``<domain>.<table>`` name."""


_OPEN: dict[tuple[str, str], PlainRun] = {}
"""The steps of this process whose START was sent, by (Dagster run id, op name), until their hook closes them."""


def _location(registry: TableRegistry, key: dg.AssetKey) -> str | None:
    return registry.location(*key.path) if len(key.path) == 2 else None


def _kind(partitions: dg.PartitionsDefinition | None) -> str:
    """Mesh's name of a plain asset's partitions (its grain's: ``daily``, ``15min``), else Dagster's."""
    if isinstance(partitions, dg.TimeWindowPartitionsDefinition):
        try:
            return Grain.of_partitions(partitions).name
        except ValueError:  # a schedule no grain has
            return partitions.cron_schedule
    return type(partitions).__name__


def _describe(context: dg.AssetExecutionContext, mesh: MeshResource) -> tuple[RunDescription, dict[str, int | None]]:
    registry, s3 = mesh.registry, mesh.settings.s3
    keys = sorted(context.selected_asset_keys, key=lambda k: k.path)
    specs = [context.assets_def.specs_by_key[k] for k in keys]
    deps = {d.asset_key for spec in specs for d in spec.deps} - set(keys)
    located = {loc: ".".join(k.path) for k in deps if (loc := _location(registry, k))}
    inputs = {loc: ref for loc, ref in located.items() if version_or_none(loc, s3) is not None}  # Mesh's tables
    outputs = {loc: version_or_none(loc, s3) for k in keys if (loc := _location(registry, k))}
    single = len(keys) == 1 and len(keys[0].path) > 1
    own = keys[0].path if single else [keys[0].path[0], context.op_def.name]  # <domain>.<table>, else its op
    partitions, span = None, None
    if context.has_partition_key or context.has_partition_key_range:
        rng = context.partition_key_range
        partitions = (_kind(context.assets_def.partitions_def), rng.start, rng.end, list(context.partition_keys))
        if isinstance(context.assets_def.partitions_def, dg.TimeWindowPartitionsDefinition):
            window = context.partition_time_window
            span = (window.start, window.end)
    description = RunDescription(
        domain=own[0],
        table=".".join(own[1:]),
        dagster_run_id=context.run.run_id,
        dagster_job=context.run.job_name,
        output_location=None,
        declared_inputs=sorted(inputs),
        partitions=partitions,
        engine_version=spark_version(),
        window=span,
        owner=next((o for spec in specs for o in spec.owners), None),
        table_names={normalize(loc): ref for loc, ref in inputs.items()},
        job_type=JOB_TYPE,
        namespace_prefix=mesh.settings.lineage.namespace_prefix,
        identity=run_identity(mesh.settings, own[0]),
    )
    return description, outputs


def opened(mesh: MeshResource) -> PlainRun | None:
    """The step's run, its START sent now if this is the first time it asks; ``None`` outside an asset's step."""
    try:
        context = dg.AssetExecutionContext.get()
    except dg.DagsterInvariantViolationError:
        return None
    key = (context.run.run_id, context.op_def.name)
    if key in _OPEN or not context.selected_asset_keys:
        return _OPEN.get(key)
    try:
        description, outputs = _describe(context, mesh)
        client = make_client(mesh.settings)
    except Exception as exc:  # lineage never fails the asset's run
        context.log.warning(f"OpenLineage disabled for this run: {type(exc).__name__}: {exc}")
        return None
    try:  # the run names its domain, whose storage keys the session writes with
        identify_run(context, mesh.settings, description.domain)
        use_identity(mesh.spark, mesh.settings, description.domain)
    except Refused as exc:
        raise dg.Failure(description=exc.description) from None
    run = _OPEN[key] = PlainRun(description, client, mesh, outputs)
    emit(client, build_event("START", description), context.log.warning)
    return run


def closed(context: dg.HookContext, error: BaseException | None) -> None:
    """Send the step's COMPLETE, or FAIL with ``error``, with what it read and wrote; nothing if it sent no START."""
    run = _OPEN.pop((context.run_id, context.step_key.rsplit(".", 1)[-1]), None)  # a graph's op: its own name
    if run is None:
        return
    d = run.description
    if run.reads:
        d.reads = sorted(run.reads)
        d.table_names.update(run.reads)
        declared = {normalize(p) for p in d.declared_inputs}
        d.undeclared = [p for p in d.reads if p not in declared]
        d.undeclared_names = [run.reads[p] for p in d.undeclared]
    if error is None:
        try:
            _record_output(run)
        except Exception as exc:  # the event goes without its output rather than not at all
            context.log.warning(f"OpenLineage: the output of {d.job_name} is not named ({type(exc).__name__}: {exc})")
    emit(run.client, build_event("FAIL" if error else "COMPLETE", d, error=error), context.log.warning)


def _record_output(run: PlainRun) -> None:
    """The first of the asset's tables the step committed a new Delta version of, with that version's facts."""
    s3 = run.mesh.settings.s3
    for location, before in run.outputs.items():
        table = open_table(location, s3)
        if table is None or table.version() == before:
            continue
        d = run.description
        d.output_location, d.version = location, table.version()
        rows = (table.history(1)[0].get("operationMetrics") or {}).get("numOutputRows")
        d.rows = int(rows) if rows is not None else None
        schema = run.mesh.spark.read.format("delta").load(location).schema
        d.schema = [(f.name, f.dataType.simpleString()) for f in schema.fields]
        return


@dg.success_hook(name="mesh_plain_asset_lineage_complete")
def lineage_complete(context: dg.HookContext) -> None:
    closed(context, None)


@dg.failure_hook(name="mesh_plain_asset_lineage_fail")
def lineage_fail(context: dg.HookContext) -> None:
    closed(context, context.op_exception)


LINEAGE_HOOKS = frozenset({lineage_complete, lineage_fail})
"""The hooks a plain asset that asks for dagster-pyspark's resource is given: its COMPLETE and FAIL events."""


class TracedPySparkResource(MeshPySparkResource):
    """Mesh's session as dagster-pyspark's resource, whose asset's runs take part in the domain's lineage."""

    @property
    def spark_session(self) -> SparkSession:
        session = super().spark_session  # first: START names the session's Spark version
        opened(MeshResource(warehouse=self.warehouse))
        return session

    def table(self, ref: str) -> DataFrame:
        mesh = MeshResource(warehouse=self.warehouse)
        df = super().table(ref)
        run = opened(mesh)
        if run is not None:
            found = read_locations(df) or [mesh.registry.location(*ref.split(".", 1))]
            run.reads.update({normalize(loc): table_name(loc, mesh.registry.warehouse) for loc in found})
        return df
