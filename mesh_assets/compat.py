"""Every private Dagster and dagster-dbt use of the platform, in one place, each with a test
(tests/unit/test_compat.py) that fails loudly when an upgrade moves or changes it.

Neither library's public API has an equivalent for these; when one gains it, the use moves there and the entry
goes. Everything else Mesh does with Dagster goes through ``dagster``'s and ``dagster_dbt``'s public names, and
backfills through the webserver's GraphQL API (:mod:`mesh_assets.backfill.launch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dagster import DagsterInvariantViolationError
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph
from dagster._core.definitions.partitions.subset import PartitionsSubset
from dagster._core.execution.context.metadata_logging import AssetMetadataHandle, OutputMetadataAccumulator
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._utils.schedules import is_valid_cron_schedule

if TYPE_CHECKING:
    import dagster as dg
    from dagster_dbt import DagsterDbtTranslator

DATA_VERSION_TAG = "dagster/data_version"
"""The tag holding an asset event's data version (``dagster._core.definitions.data_version.DATA_VERSION_TAG``):
the only way to give one to an ``AssetMaterialization`` reported outside ``MaterializeResult``."""

CODE_VERSION_TAG = "dagster/code_version"
"""The tag on each materialization naming the code version that computed it
(``dagster._core.definitions.data_version.CODE_VERSION_TAG``): what ``mesh plan`` compares with the code now."""

EXECUTOR_LOGGER = "dagster._core.execution.plan.active"
"""The logger of Dagster's step executor, whose check-gating notice Mesh filters (:mod:`mesh_assets.assets.notices`)."""

DBT_UNIQUE_ID_METADATA_KEY = "dagster_dbt/unique_id"
"""dagster-dbt's metadata key for a dbt node's unique id on its asset and check specs
(``dagster_dbt.asset_utils.DAGSTER_DBT_UNIQUE_ID_METADATA_KEY``)."""

STUB_ASSET_METADATA_KEY = "dagster/auto_created_stub_asset"
"""The metadata Dagster puts on the placeholder of an upstream key a code location does not define
(``dagster._core.definitions.assets.definition.asset_spec.SYSTEM_METADATA_KEY_AUTO_CREATED_STUB_ASSET``): where
several locations define one key, the workspace shows the producer's definition, never a placeholder's."""


def automation_instance(context: dg.AutomationContext) -> dg.DagsterInstance:
    """The instance a custom automation condition is evaluated against (the public context does not name it)."""
    return context.asset_graph_view.instance


def subset_partition_keys(subset: Any) -> set[str | None]:
    """The partition keys of an automation condition's subset; ``{None}`` for a non-empty unpartitioned one."""
    return {ap.partition_key for ap in subset.expensively_compute_asset_partitions()}


def subset_without(subset: Any, keys: set[str | None]) -> Any:
    """``subset`` less the partitions ``keys`` (``None``: an unpartitioned asset's only one)."""
    if None in keys:
        return subset.compute_difference(subset)
    return subset.compute_difference(subset.compute_intersection_with_partition_keys(keys))


def dbt_invocation_params(
    context: dg.AssetExecutionContext, manifest: Mapping[str, Any], translator: DagsterDbtTranslator
) -> Any:
    """The ``selection_args`` and ``indirect_selection`` dagster-dbt gives ``dbt.cli(..., context=context)``, for
    the in-process dbt invocations that cannot go through ``DbtCliResource.cli``. Imported when called: loading a
    code location never imports dagster-dbt."""
    from dagster_dbt.asset_utils import get_updated_cli_invocation_params_for_context

    return get_updated_cli_invocation_params_for_context(
        context=context, manifest=manifest, dagster_dbt_translator=translator
    )


__all__ = [
    "CODE_VERSION_TAG",
    "DATA_VERSION_TAG",
    "DBT_UNIQUE_ID_METADATA_KEY",
    "EXECUTOR_LOGGER",
    "STUB_ASSET_METADATA_KEY",
    "AssetCheckEvaluationTargetMaterializationData",
    "AssetCheckExecutionRecordStatus",
    "AssetGraph",
    "PartitionsSubset",
    "add_run_tags",
    "automation_instance",
    "dbt_invocation_params",
    "is_valid_cron_schedule",
    "subset_partition_keys",
    "subset_without",
]


def end_typed_event_stream(context: dg.AssetExecutionContext) -> None:
    """Return a step to Dagster's ordinary event stream after a Pipes session.

    Opening a Pipes session in an asset step makes the step require every check as an ``AssetCheckResult``
    (``StepExecutionContext._requires_typed_event_stream``, set by ``open_pipes_session``), to catch results
    left unyielded. An ``AssetCheckResult`` has no partition, and a run launched through Pipes records, like a
    local run, one ``AssetCheckEvaluation`` per check and partition from the outcome it reported; nothing is
    left in the session to yield (:mod:`mesh_assets.run.submit`). There is no public way to say so.
    """
    context.op_execution_context._step_execution_context._requires_typed_event_stream = False


def add_partitions_metadata(
    context: dg.AssetExecutionContext, key: dg.AssetKey, metadata: Mapping[str, Mapping[str, Any]]
) -> None:
    """Add each partition's metadata (``metadata``: partition key -> entries) to the materializations ``key``'s
    output records, as ``context.add_asset_metadata(entries, asset_key=key, partition_key=partition)`` would.

    That public call lists every partition of the run's range to check its key, and copies all the metadata
    added so far, at each call: a range of 8,640 quarter hours spent over a minute in it. Here the keys are
    checked against the range once and the step's accumulated metadata is rebuilt once
    (``StepExecutionContext._metadata_accumulator``). A key outside the run's range is refused as Dagster does.
    """
    targeted = set(context.partition_keys)
    if unknown := sorted(set(metadata) - targeted):
        raise DagsterInvariantViolationError(
            f"Attempted to add metadata for partition key '{unknown[0]}' that is not being targeted."
        )
    step = context.op_execution_context._step_execution_context
    merged = dict(step._metadata_accumulator.per_output_metadata)
    for partition, entries in metadata.items():
        handle = AssetMetadataHandle(asset_key=key, partition_key=partition)
        merged[handle] = {**merged.get(handle, {}), **entries}
    step._metadata_accumulator = OutputMetadataAccumulator(per_output_metadata=merged)


def kv_get(instance: dg.DagsterInstance, keys: set[str]) -> Mapping[str, str]:
    """Values the instance keeps by key (its daemon cursor storage, shared by the daemon, code servers and the
    command line); Dagster has no public key-value store. Missing keys are absent."""
    return instance.daemon_cursor_storage.get_cursor_values(keys)


def kv_set(instance: dg.DagsterInstance, pairs: Mapping[str, str]) -> None:
    """Store ``pairs`` in the instance's key-value storage (see :func:`kv_get`)."""
    instance.daemon_cursor_storage.set_cursor_values(pairs)


def add_run_tags(instance: dg.DagsterInstance, run_id: str, tags: Mapping[str, str]) -> None:
    """Add ``tags`` to a run already started (``DagsterInstance.add_run_tags``, not in Dagster's documented API):
    a step names who ran it on whatever run executes it, however the run was launched."""
    instance.add_run_tags(run_id, dict(tags))
