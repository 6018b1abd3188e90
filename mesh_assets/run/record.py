"""What a run records in Dagster: the materializations it published, then check results pointing at them,
and, when partitions were refused, an observation naming them and a failure naming each reason.

Each materialization carries its partition's data version: the Delta commit that published it. Dagster
compares it with what each consumer partition read (its provenance) to tell which partitions are stale."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import dagster as dg

from mesh_assets.checks.results import evaluation, run_targets
from mesh_assets.compat import DATA_VERSION_TAG, add_partitions_metadata
from mesh_assets.graph.revisions import REVISION_KEY
from mesh_assets.run.readiness import observe_hint

COLUMNS = "dagster/column_schema"

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from mesh_assets.graph.resolve import Node
    from mesh_assets.run.outcome import RunOutcome
    from mesh_assets.storage.writer import WriteResult


class PartitionsRefused(dg.Failure):
    """Some partitions were refused (a blocking check failed, or an input was not ready); the rest of the
    run's partitions were published. Never retried: a retry would read the same inputs."""

    def __init__(self, description: str, partitions: list[str], checks: list[str]):
        super().__init__(
            description=description,
            metadata={"failed_partitions": partitions, "checks": checks},
            allow_retries=False,
        )
        self.partitions, self.checks = partitions, checks


def table_schema(schema: StructType) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                f.name, f.dataType.simpleString(), constraints=dg.TableColumnConstraints(nullable=f.nullable)
            )
            for f in schema.fields
        ]
    )


def published_metadata(result: WriteResult, revision: str | None) -> dict[str, Any]:
    """What every materialization of a commit carries: the table's columns (in a range run, only the newest
    partition's: :func:`_schema_carrier`), the Delta version, the location, and the revision of the product (or
    dbt model) that computed it."""
    metadata: dict[str, Any] = {
        COLUMNS: table_schema(result.schema),
        "delta_version": result.version,
        "location": result.location,
    }
    for change, rows in result.changes.items():  # a keyed kind's MERGE: what it did to the table's rows
        metadata[f"rows_{change}"] = rows
    if not result.committed:
        metadata["unchanged"] = True  # nothing differed: no commit, the table stays at delta_version
    if result.written_again_after:  # another writer created the table first; this write went into it
        metadata["written_again_after"] = result.written_again_after
    if revision is not None:
        metadata[REVISION_KEY] = revision
    return metadata


def data_version(version: int) -> dg.DataVersion:
    """The version of the partitions a Delta commit published (by Mesh, or by an external table's writer)."""
    return dg.DataVersion(f"delta-v{version}")


def incomplete_metadata(outcome: RunOutcome, partition: str | None) -> dict[str, Any]:
    """``incomplete_inputs``: the input partitions a partition was computed without (accepted by
    ``min_complete``), by input table; nothing for a partition computed from its whole window."""
    missing = outcome.incomplete.get(partition)
    return {"incomplete_inputs": dg.MetadataValue.json(missing)} if missing else {}


def refusals(outcome: RunOutcome) -> tuple[list[str], list[str]]:
    """(the refused partitions, ``-`` for an unpartitioned table; why, one line per check or partition)."""
    problems = [o.describe() for failed in outcome.failed.values() for o in failed]
    problems += [
        f"{f'partition {p}' if p else 'table'} not computed: {', '.join(why)}"
        for p, why in sorted(outcome.blocked.items(), key=lambda item: item[0] or "")
    ]
    if hint := observe_hint(why for whys in outcome.blocked.values() for why in whys):
        problems.append(hint)
    return sorted(p or "-" for p in {*outcome.failed, *outcome.blocked}), problems


def _schema_carrier(context: dg.AssetExecutionContext, node: Node, result: WriteResult) -> str | None:
    """The one partition whose materialization carries the table's columns in a range run of a time-partitioned
    table: its last, which Dagster stores last, so the newest materialization (the UI's, ``mesh plan``'s) still
    has them. The columns are the commit's, the same for every partition; stored once instead of once per
    partition they no longer weigh on a backfill of thousands of partitions. None (every partition carries them):
    a single partition, or a table partitioned by date and region, whose keys Dagster stores in no set order."""
    if len(result.partition_rows) < 2 or node.table.regions:
        return None
    return context.partition_keys[-1]


def record(context: dg.AssetExecutionContext, node: Node, outcome: RunOutcome) -> Iterator[Any]:
    """The run's events: the materialization (or the refusal), then check results pointing at it."""
    key, result, run_id = node.table.key, outcome.result, context.run.run_id
    common: dict[str, Any] = {}
    if result is not None:
        common = published_metadata(result, node.table.revision)
    if outcome.undeclared_names:
        common["undeclared_reads"] = dg.MetadataValue.json(list(outcome.undeclared_names))
    if outcome.failed or outcome.blocked:
        refused, problems = refusals(outcome)
        published = list(result.partition_rows.items()) if result else []
        tags = {DATA_VERSION_TAG: data_version(result.version).value} if result else {}
        for partition, rows in published:
            metadata = {**common, "dagster/row_count": rows, **incomplete_metadata(outcome, partition)}
            yield dg.AssetMaterialization(asset_key=key, partition=partition, metadata=metadata, tags=tags)
        targets = run_targets(context.instance, key, run_id, [p for p, _ in published]) if published else {}
        for check_outcome in outcome.outcomes:
            context.log_event(evaluation(key, check_outcome, targets.get(check_outcome.partition)))
        # Yielding (not only logging) flushes the check evaluations before the step fails.
        yield dg.AssetObservation(
            asset_key=key, metadata={"refused_partitions": refused, "problems": dg.MetadataValue.json(problems)}
        )
        raise PartitionsRefused(
            f"{node.table.ref}: not published: " + "; ".join(problems),
            refused,
            sorted({o.name for failed in outcome.failed.values() for o in failed}),
        )
    assert result is not None
    per_partition: dict[str, dict[str, Any]] = {
        partition: {"dagster/row_count": rows, **incomplete_metadata(outcome, partition)}
        for partition, rows in result.partition_rows.items()
    }
    if (newest := _schema_carrier(context, node, result)) is not None:
        per_partition.setdefault(newest, {})[COLUMNS] = common.pop(COLUMNS)
    if per_partition:
        add_partitions_metadata(context, key, per_partition)
    if outcome.part is None:
        common["dagster/row_count"] = result.rows
    elif len(result.partition_rows) > 1:
        common["run_row_count"] = result.rows
    yield dg.MaterializeResult(asset_key=key, metadata=common, data_version=data_version(result.version))
    targets = run_targets(context.instance, key, run_id, list(result.partition_rows) or [None])
    for check_outcome in outcome.outcomes:
        context.log_event(evaluation(key, check_outcome, targets.get(check_outcome.partition)))
