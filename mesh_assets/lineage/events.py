"""OpenLineage events for product runs, built with the openlineage-python client's own facet classes.

A product run is one OpenLineage run: job namespace = the domain (after ``lineage.namespace_prefix``), job
name = ``<domain>.<table>``, run id a UUID derived from the Dagster run id and the asset (so START and
COMPLETE/FAIL of one run agree without shared state, and a retry of the Dagster run maps to the same
OpenLineage run), with a parent run facet pointing at the Dagster run. Datasets are named by their Delta
locations (namespace ``file`` for local paths, ``<scheme>://<authority>`` otherwise, name = the path), as the
OpenLineage naming spec has it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlparse

import attr
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    DatasetFacet,
    OutputDatasetFacet,
    RunFacet,
    error_message_run,
    job_type_job,
    output_statistics_output_dataset,
    parent_run,
    processing_engine_run,
    schema_dataset,
    sql_job,
    test_run,
)

from mesh_assets.engine.identity import RunIdentity
from mesh_assets.lineage import facets as std
from mesh_assets.lineage.plan import ColumnSources, normalize

PRODUCER = "https://github.com/mesh-platform/mesh/tree/main/mesh_assets/lineage"
SCHEMA_BASE = "https://github.com/mesh-platform/mesh/tree/main/docs/lineage-facets.json"
RUN_NAMESPACE = uuid.UUID("6f1b0c1e-2b1e-4c55-9a77-5d0c3c2f8e41")
DAGSTER_NAMESPACE = "dagster"


def run_uuid(dagster_run_id: str, asset: str) -> str:
    """The OpenLineage run id of ``asset`` in Dagster run ``dagster_run_id``: stable, a valid UUID."""
    return str(uuid.uuid5(RUN_NAMESPACE, f"{dagster_run_id}/{asset}"))


def dataset_name(location: str) -> tuple[str, str]:
    """(namespace, name) of a table location: ``("file", "/wh/d/t")`` or ``("s3a://bucket", "/wh/d/t")``."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file") or len(parsed.scheme) == 1:  # one letter: a Windows drive
        return "file", normalize(location)
    return f"{parsed.scheme}://{parsed.netloc}", parsed.path.rstrip("/") or "/"


@attr.define
class MeshPartitionsRunFacet(RunFacet):
    """The partitions a run processed (custom facet): kind, first and last key, and every key."""

    kind: str
    start: str
    end: str
    keys: list[str] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_BASE}#/$defs/MeshPartitionsRunFacet"


@attr.define
class MeshUndeclaredReadsRunFacet(RunFacet):
    """Tables the run read without declaring them as inputs (custom facet), as ``namespace``/``name``."""

    datasets: list[dict[str, str]] = attr.field(factory=list)
    tables: list[str] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_BASE}#/$defs/MeshUndeclaredReadsRunFacet"


@attr.define
class MeshIdentityRunFacet(RunFacet):
    """Whose identity ran the run (custom facet): the domain, and whose storage keys it wrote with (``domain``:
    its own, read from the variable ``accessKeyVariable``; ``deployment``: the deployment's). Never a key."""

    domain: str
    storage: str
    accessKeyVariable: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_BASE}#/$defs/MeshIdentityRunFacet"


@attr.define
class MeshTableKindDatasetFacet(DatasetFacet):
    """How the run's rows reach the table (custom facet): the kind's name and what it does, in Mesh's words."""

    name: str
    description: str

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_BASE}#/$defs/MeshTableKindDatasetFacet"


@attr.define
class MeshRowsChangedOutputDatasetFacet(OutputDatasetFacet):
    """What a keyed kind's ``MERGE`` did to the table's rows (custom facet); ``committed`` false: nothing
    differed, no commit was made."""

    inserted: int
    updated: int
    deleted: int
    committed: bool

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_BASE}#/$defs/MeshRowsChangedOutputDatasetFacet"


@dataclass
class RunDescription:
    """Everything a product run's events say; filled in as the run goes."""

    domain: str
    table: str
    dagster_run_id: str
    dagster_job: str
    output_location: str | None
    """The table the run writes; ``None`` for a run with no output to name (a plain Dagster asset's START, or
    a run of one that wrote no Mesh table)."""
    declared_inputs: list[str]
    sql: str | None = None
    partitions: tuple[str, str, str, list[str]] | None = None  # kind, start, end, keys
    reads: list[str] | None = None
    undeclared: list[str] = field(default_factory=list)
    undeclared_names: list[str] = field(default_factory=list)
    schema: list[tuple[str, str]] | None = None
    rows: int | None = None
    tests: list[test_run.TestExecution] = field(default_factory=list)
    """The run's checks, one per check and partition: the ``test`` run facet."""
    engine_version: str | None = None
    window: tuple[datetime, datetime] | None = None
    """The partition window (start included, end excluded): the ``nominalTime`` facet."""
    version: int | None = None
    """The Delta version the run published."""
    kind: tuple[str, str] | None = None
    """The output's table kind: (name, description)."""
    changes: dict[str, int] | None = None
    """A keyed kind's rows inserted, updated and deleted; ``committed`` says whether it made a commit."""
    committed: bool = True
    owner: str | None = None
    source: tuple[str, str] | None = None
    """(language, code) of the transformation."""
    source_file: Path | None = None
    columns: ColumnSources | None = None
    null_counts: dict[str, int] = field(default_factory=dict)
    table_names: dict[str, str] = field(default_factory=dict)
    """``<domain>.<table>`` of the locations read, for their ``symlinks`` facets."""
    job_type: tuple[str, str] = ("MESH", "ASSET")
    """The ``jobType`` facet's integration and job type: ``("DBT", "MODEL")`` for a dbt model, ``("DAGSTER",
    "ASSET")`` for a plain Dagster asset."""
    namespace_prefix: str = ""
    """``lineage.namespace_prefix``: before the namespaces Mesh names (jobs, the Dagster parent, symlinks)."""
    identity: RunIdentity | None = None
    """Whose identity ran the run: the ``mesh_identity`` facet."""

    STATES: ClassVar[dict[str, RunState]] = {
        "START": RunState.START,
        "COMPLETE": RunState.COMPLETE,
        "FAIL": RunState.FAIL,
    }

    @property
    def job_name(self) -> str:
        return f"{self.domain}.{self.table}"

    @property
    def job_namespace(self) -> str:
        return self.namespace_prefix + self.domain

    @property
    def run_id(self) -> str:
        return run_uuid(self.dagster_run_id, self.job_name)


def _run_facets(d: RunDescription, error: BaseException | None) -> dict[str, Any]:
    facets: dict[str, Any] = {
        "parent": parent_run.ParentRunFacet(
            run=parent_run.Run(runId=d.dagster_run_id),
            job=parent_run.Job(namespace=d.namespace_prefix + DAGSTER_NAMESPACE, name=d.dagster_job),
            root=parent_run.Root(
                run=parent_run.RootRun(runId=d.dagster_run_id),
                job=parent_run.RootJob(namespace=d.namespace_prefix + DAGSTER_NAMESPACE, name=d.dagster_job),
            ),
        ),
    }
    if d.engine_version:
        facets["processing_engine"] = processing_engine_run.ProcessingEngineRunFacet(
            version=d.engine_version, name="spark"
        )
    if d.window:
        facets["nominalTime"] = std.nominal_time(*d.window)
    if d.partitions:
        kind, start, end, keys = d.partitions
        facets["mesh_partitions"] = MeshPartitionsRunFacet(kind=kind, start=start, end=end, keys=keys)
    if d.identity is not None:
        i = d.identity
        facets["mesh_identity"] = MeshIdentityRunFacet(
            domain=i.domain, storage=i.storage, accessKeyVariable=i.access_key_env
        )
    if d.undeclared:
        facets["mesh_undeclaredReads"] = MeshUndeclaredReadsRunFacet(
            datasets=[dict(zip(("namespace", "name"), dataset_name(p), strict=True)) for p in d.undeclared],
            tables=d.undeclared_names,
        )
    if d.tests:
        facets["test"] = test_run.TestRunFacet(tests=d.tests)
    if error is not None:
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=str(getattr(error, "description", None) or error) or type(error).__name__,
            programmingLanguage="python",
        )
    return facets


def _job_facets(d: RunDescription) -> dict[str, Any]:
    facets: dict[str, Any] = {
        "jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration=d.job_type[0], jobType=d.job_type[1]
        ),
    }
    if d.sql:
        facets["sql"] = sql_job.SQLJobFacet(query=d.sql)
    if d.source:
        facets["sourceCode"] = std.source_code(*d.source)
    location = std.source_location(d.source_file)
    if location is not None:
        facets["sourceCodeLocation"] = location
    if d.owner:
        facets["ownership"] = std.job_ownership(d.owner)
    return facets


def _output_facets(d: RunDescription, state: str) -> dict[str, Any]:
    facets: dict[str, Any] = {"symlinks": std.symlinks(d.job_name, d.namespace_prefix)}
    if d.owner:
        facets["ownership"] = std.ownership(d.owner)
    if d.schema:
        facets["schema"] = schema_dataset.SchemaDatasetFacet(
            fields=[schema_dataset.SchemaDatasetFacetFields(name=n, type=t) for n, t in d.schema]
        )
    if d.columns:
        facets["columnLineage"] = std.column_lineage(d.columns, dataset_name)
    if d.rows is not None:
        facets["dataQualityMetrics"] = std.quality_metrics(d.rows, d.null_counts)
    if d.version is not None and state == "COMPLETE":
        facets["version"] = std.dataset_version(d.version)
    if d.kind is not None:
        facets["mesh_tableKind"] = MeshTableKindDatasetFacet(name=d.kind[0], description=d.kind[1])
    return facets


def _input(location: str, d: RunDescription) -> InputDataset:
    ref = d.table_names.get(normalize(location))
    facets = {"symlinks": std.symlinks(ref, d.namespace_prefix)} if ref else {}
    return InputDataset(*dataset_name(location), facets=facets)


def build_event(state: str, d: RunDescription, *, error: BaseException | None = None) -> RunEvent:
    """The START, COMPLETE or FAIL event of the run ``d`` describes."""
    read = d.reads if d.reads is not None and state != "START" else d.declared_inputs
    out_facets: dict[str, Any] = {}
    if d.rows is not None:
        out_facets["outputStatistics"] = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=d.rows
        )
    if d.changes is not None and state == "COMPLETE":
        out_facets["mesh_rowsChanged"] = MeshRowsChangedOutputDatasetFacet(
            **{k: d.changes.get(k, 0) for k in ("inserted", "updated", "deleted")}, committed=d.committed
        )
    outputs = []
    if d.output_location is not None:
        namespace, name = dataset_name(d.output_location)
        outputs = [OutputDataset(namespace, name, facets=_output_facets(d, state), outputFacets=out_facets)]
    return RunEvent(
        eventType=d.STATES[state],
        eventTime=datetime.now(UTC).isoformat(),
        run=Run(runId=d.run_id, facets=_run_facets(d, error if state == "FAIL" else None)),
        job=Job(namespace=d.job_namespace, name=d.job_name, facets=_job_facets(d)),
        inputs=[_input(p, d) for p in sorted(set(read))],
        outputs=outputs,
        producer=PRODUCER,
    )
