"""The standard OpenLineage facets a product run carries, built with the client's own generated classes.

A consumer such as Marquez reads these without knowing Mesh: ``nominalTime`` (the partition window),
``datasetVersion`` (the Delta version published), ``ownership``, ``symlinks`` (``<domain>.<table>``),
``dataQualityMetrics``, ``columnLineage``, and the job's ``sourceCode`` / ``sourceCodeLocation``.
"""

from __future__ import annotations

import configparser
from datetime import datetime
from pathlib import Path

from openlineage.client.facet_v2 import (
    column_lineage_dataset,
    data_quality_metrics_dataset,
    dataset_version_dataset,
    nominal_time_run,
    ownership_dataset,
    ownership_job,
    source_code_job,
    source_code_location_job,
    symlinks_dataset,
)

from mesh_assets.lineage.plan import ColumnSources

TABLE_NAMESPACE = "mesh"
"""Namespace of the ``<domain>.<table>`` symlink: the name every product's SQL and inputs use."""


def iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def nominal_time(start: datetime, end: datetime) -> nominal_time_run.NominalTimeRunFacet:
    """The window a run covers: start included, end excluded (the next partition's start)."""
    return nominal_time_run.NominalTimeRunFacet(nominalStartTime=iso(start), nominalEndTime=iso(end))


def dataset_version(version: int) -> dataset_version_dataset.DatasetVersionDatasetFacet:
    return dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(version))


def owner_urn(owner: str) -> str:
    """``team:x`` stays as it is; an e-mail address becomes ``user:<address>`` (the spec recommends URNs)."""
    return owner if ":" in owner else f"user:{owner}"


def ownership(owner: str) -> ownership_dataset.OwnershipDatasetFacet:
    return ownership_dataset.OwnershipDatasetFacet(owners=[ownership_dataset.Owner(name=owner_urn(owner))])


def job_ownership(owner: str) -> ownership_job.OwnershipJobFacet:
    return ownership_job.OwnershipJobFacet(owners=[ownership_job.Owner(name=owner_urn(owner))])


def symlinks(table_ref: str, prefix: str = "") -> symlinks_dataset.SymlinksDatasetFacet:
    """The table's ``<domain>.<table>`` name beside its location (namespace ``<prefix>mesh``)."""
    return symlinks_dataset.SymlinksDatasetFacet(
        identifiers=[symlinks_dataset.Identifier(namespace=prefix + TABLE_NAMESPACE, name=table_ref, type="TABLE")]
    )


def quality_metrics(
    rows: int, null_counts: dict[str, int]
) -> data_quality_metrics_dataset.DataQualityMetricsDatasetFacet:
    return data_quality_metrics_dataset.DataQualityMetricsDatasetFacet(
        rowCount=rows,
        columnMetrics={c: data_quality_metrics_dataset.ColumnMetrics(nullCount=n) for c, n in null_counts.items()},
    )


def source_code(language: str, code: str) -> source_code_job.SourceCodeJobFacet:
    return source_code_job.SourceCodeJobFacet(language=language, sourceCode=code)


def _git_dirs(path: Path) -> tuple[Path, Path, Path] | None:
    """(work tree root, the git dir holding HEAD, the common dir holding config and refs) of ``path``."""
    for folder in path.parents:
        marker = folder / ".git"
        if marker.is_dir():
            return folder, marker, marker
        if marker.is_file() and marker.read_text().startswith("gitdir: "):  # a linked work tree
            own = (folder / marker.read_text().strip().removeprefix("gitdir: ")).resolve()
            common = own / "commondir"
            return folder, own, (own / common.read_text().strip()).resolve() if common.exists() else own
    return None


def _head(own: Path, common: Path) -> str | None:
    head = (own / "HEAD").read_text().strip() if (own / "HEAD").exists() else ""
    if not head.startswith("ref: "):
        return head or None
    ref = head.removeprefix("ref: ")
    if (common / ref).exists():
        return (common / ref).read_text().strip()
    packed = common / "packed-refs"
    for line in packed.read_text().splitlines() if packed.exists() else []:
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return None


def source_location(source_file: Path | None) -> source_code_location_job.SourceCodeLocationJobFacet | None:
    """Where the product's code lives in its git repository: ``None`` unless the origin remote is known."""
    if source_file is None:
        return None
    source_file = source_file.resolve()
    found = _git_dirs(source_file)
    if found is None:
        return None
    root, own, common = found
    config = configparser.RawConfigParser(strict=False)
    config.read(common / "config")
    url = config.get('remote "origin"', "url", fallback=None)
    if url is None:
        return None
    return source_code_location_job.SourceCodeLocationJobFacet(
        type="git",
        url=url,
        repoUrl=url,
        path=str(source_file.relative_to(root)),
        version=_head(own, common),
    )


def column_lineage(sources: ColumnSources, namespace_of) -> column_lineage_dataset.ColumnLineageDatasetFacet:
    """The ``columnLineage`` facet of an output; ``namespace_of`` gives (namespace, name) of a location."""
    fields = {}
    for column, inputs in sorted(sources.items()):
        fields[column] = column_lineage_dataset.Fields(
            inputFields=[
                column_lineage_dataset.InputField(*namespace_of(location), field=name)
                for location, name in sorted(set(inputs))
            ]
        )
    return column_lineage_dataset.ColumnLineageDatasetFacet(fields=fields)
