"""The step's dbt models through the gate, in dbt's order, and what Dagster records of each.

Per model: a materialization per published partition (``dagster/row_count``, schema, Delta version and
location) and one check evaluation per dbt test and partition, pointing at the materialization it judged.
A model's refused partitions do not stop the others or the models that do not read them; the step fails
at the end naming every refused partition with the dbt test that refused it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import dagster as dg

from mesh_assets.checks.results import run_targets
from mesh_assets.compat import add_partitions_metadata
from mesh_assets.dbt.access import Tables
from mesh_assets.dbt.audit import TestOutcome
from mesh_assets.dbt.catalog import dbt_tables
from mesh_assets.dbt.compiled import DbtModel
from mesh_assets.dbt.gate import ModelRun, gate_model
from mesh_assets.dbt.lineage import model_lineage
from mesh_assets.dbt.nodes import DBT_GRAIN
from mesh_assets.model.kinds import Replay
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.run.readiness import observe_hint
from mesh_assets.run.record import published_metadata
from mesh_assets.run.replay import OutOfOrder, refuse_out_of_order
from mesh_assets.storage.resource import MeshResource


def _evaluation(outcome: TestOutcome, target: Any) -> dg.AssetCheckEvaluation:
    metadata: dict[str, Any] = {"dbt_status": outcome.status}
    if isinstance(outcome.failures, int | float):
        metadata["failing_rows"] = outcome.failures
    if outcome.sample:
        metadata["failing_sample"] = dg.MetadataValue.json(outcome.sample)
    test = outcome.test
    error = test.severity == "error" and outcome.status != "warn"
    return dg.AssetCheckEvaluation(
        asset_key=test.check.asset_key,
        check_name=test.check.name,
        passed=outcome.passed,
        metadata=metadata,
        severity=dg.AssetCheckSeverity.ERROR if error else dg.AssetCheckSeverity.WARN,
        blocking=test.blocking,
        partition=outcome.partition,
        description=None if outcome.passed else outcome.describe(),
        target_materialization_data=target,
    )


def problems(run: ModelRun) -> list[str]:
    """Why each withheld partition of ``run`` was not published, one line per partition and reason."""
    ref = run.model.ref
    lines = [f"{ref} {key}: not computed, {why}" for key, whys in sorted(run.blocked.items()) for why in whys]
    lines += [f"{ref}: {o.describe()}" for outcomes in run.refused.values() for o in outcomes]
    if run.held_back:
        lines.append(
            f"{ref} {', '.join(run.held_back)}: not published, {ref} ({run.model.kind.describe()}) applies its days "
            "in order and an earlier one was refused"
        )
    rest = [k for k in run.withheld if k not in run.blocked and k not in run.refused and k not in run.held_back]
    if rest:
        lines.append(f"{ref} {', '.join(rest)}: not published, the whole table is replaced at once or not at all")
    return lines


def model_events(context: dg.AssetExecutionContext, run: ModelRun, window: str) -> Iterator[Any]:
    """The model's materializations (all partitions at once when nothing was withheld), then its checks."""
    key, result = run.model.key, run.result
    common: dict[str, Any] = {}
    if result is not None:
        common = {**published_metadata(result, run.model.revision), "partition_window": window}
    if result is not None and not run.withheld:
        if run.published:
            rows_of = {partition: {"dagster/row_count": rows} for partition, rows in run.published.items()}
            add_partitions_metadata(context, key, rows_of)
        if len(run.published) > 1:
            common["run_row_count"] = result.rows
        elif not run.published:
            common["dagster/row_count"] = result.rows
        yield dg.MaterializeResult(asset_key=key, metadata=common)
    elif result is not None:
        for partition, rows in run.published.items():
            yield dg.AssetMaterialization(
                asset_key=key, partition=partition, metadata={**common, "dagster/row_count": rows}
            )
    judged = [k for k in run.keys if k not in run.withheld] if result is not None else []
    targets = run_targets(context.instance, key, context.run.run_id, judged) if judged else {}
    for outcome in run.outcomes:
        context.log_event(_evaluation(outcome, targets.get(outcome.partition)))
    if run.withheld:
        # Yielding (not only logging) flushes the check evaluations before the step fails.
        yield dg.AssetObservation(
            asset_key=key,
            metadata={"refused_partitions": run.withheld, "problems": dg.MetadataValue.json(problems(run))},
        )


def refuse_past_ranges(
    context: dg.AssetExecutionContext, manifest: dict[str, Any], models: list[DbtModel], *, full_refresh: bool
) -> None:
    """Refuse the run, before anything is computed, when it would apply a past range of a model whose days are
    applied in order (a ``merge`` model) without the later days, as a product's run is refused
    (:mod:`mesh_assets.run.replay`); a full refresh recreates the table from its window and is never refused."""
    tables = {table.key: table for table in dbt_tables(manifest)}
    keys = context.partition_key_range
    part = PartitionRange.from_keys(DBT_GRAIN, keys.start, keys.end)
    for model in models:
        if model.sql is None or model.kind.replay is Replay.ANY or model.key not in tables:
            continue
        applied = context.instance.get_materialized_partitions(model.key)
        try:
            refuse_out_of_order(tables[model.key], part, applied, full_refresh)
        except OutOfOrder as exc:
            raise dg.Failure(description=f"dbt model {model.ref}: {exc.description}") from None


def publish_models(
    context: dg.AssetExecutionContext,
    mesh: MeshResource,
    models: list[DbtModel],
    *,
    full_refresh: bool,
    unready: Mapping[dg.AssetKey, Mapping[str | None, list[str]]],
    nodes: Mapping[str, Mapping[str, Any]],
    tables: Tables | None = None,
) -> Iterator[Any]:
    """Gate and publish ``models`` (in dbt's order) for the run's partitions; fail naming what was refused.

    ``unready`` holds, per model, the partitions whose inputs from outside the run are not ready; ``nodes`` the
    manifest's nodes by unique id (owner and file of each model's lineage events); ``tables`` the mesh's, whose
    grants and masks the models' reads of other domains follow."""
    keys = context.partition_key_range
    part = PartitionRange.from_keys(DBT_GRAIN, keys.start, keys.end)
    window = f"{keys.start}..{keys.end}"
    runs: dict[str, ModelRun] = {}
    for model in models:
        with model_lineage(context, mesh, model, nodes.get(model.unique_id, {})) as record:
            try:
                run = gate_model(
                    mesh.spark,
                    mesh.registry,
                    model,
                    part,
                    [runs[uid] for uid in model.parents],
                    full_refresh=full_refresh,
                    commit_info={"dagster_run_id": context.run.run_id},
                    unready=unready.get(model.key),
                    tables=tables,
                )
            except Exception as exc:
                earlier = [line for done in runs.values() for line in problems(done)]
                why = exc.description if isinstance(exc, dg.Failure) else f"{type(exc).__name__}: {str(exc)[:2000]}"
                raise dg.Failure(
                    description=f"dbt model {model.ref} failed: {why}"
                    + (f"; before it: {'; '.join(earlier)}" if earlier else ""),
                    metadata={"not_run": [m.ref for m in models[len(runs) + 1 :]]},
                ) from exc
            record(run)
        runs[model.unique_id] = run
        yield from model_events(context, run, window)
    refused = [line for run in runs.values() for line in problems(run)]
    if hint := observe_hint(why for run in runs.values() for whys in run.blocked.values() for why in whys):
        refused.append(hint)
    if refused:
        withheld = any(run.withheld for run in runs.values())
        raise dg.Failure(
            description=("dbt models not published: " if withheld else "dbt tests failed: ") + "; ".join(refused),
            metadata={
                "refused_partitions": {run.model.ref: run.withheld for run in runs.values() if run.withheld},
                "checks": sorted(
                    {o.test.check.name for run in runs.values() for os in run.refused.values() for o in os}
                ),
            },
        )
