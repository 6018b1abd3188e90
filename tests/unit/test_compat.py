"""Each private Dagster and dagster-dbt use in ``mesh_assets/compat.py``, imported and doing what Mesh relies on:
an upgrade that moves or changes one fails here, by name, rather than somewhere in a run. And no other module
of the platform reaches into either library's internals."""

from __future__ import annotations

import ast
import importlib
import inspect
import warnings
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import compat

ROOT = Path(__file__).resolve().parents[2]
DAILY = dg.DailyPartitionsDefinition(start_date="2021-06-01", end_date="2021-06-15")
RAW, WEEKLY = dg.AssetKey(["shop", "raw"]), dg.AssetKey(["shop", "weekly"])


def test_check_evaluation_targets_a_materialization_and_is_current_until_the_next_one():
    with dg.DagsterInstance.ephemeral() as instance:
        instance.report_runless_asset_event(dg.AssetMaterialization(RAW, partition="2021-06-01"))
        [record] = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=RAW), limit=1).records
        target = compat.AssetCheckEvaluationTargetMaterializationData(
            storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
        )
        check = dg.AssetCheckKey(RAW, "ids_present")
        instance.report_runless_asset_event(
            dg.AssetCheckEvaluation(
                asset_key=RAW,
                check_name=check.name,
                passed=True,
                partition="2021-06-01",
                target_materialization_data=target,
            )
        )
        [info] = instance.event_log_storage.get_asset_check_partition_info([check], partition_keys=["2021-06-01"])
        assert info.is_current
        instance.report_runless_asset_event(dg.AssetMaterialization(RAW, partition="2021-06-01"))
        [info] = instance.event_log_storage.get_asset_check_partition_info([check], partition_keys=["2021-06-01"])
        assert not info.is_current


def test_check_execution_status_tells_passed_from_failed():
    Status = compat.AssetCheckExecutionRecordStatus
    assert {Status.SUCCEEDED, Status.FAILED, Status.PLANNED} <= set(Status)
    with dg.DagsterInstance.ephemeral() as instance:
        for day, passed in (("2021-06-01", True), ("2021-06-02", False)):
            instance.report_runless_asset_event(dg.AssetMaterialization(RAW, partition=day))
            evaluation = dg.AssetCheckEvaluation(asset_key=RAW, check_name="c", passed=passed, partition=day)
            instance.report_runless_asset_event(evaluation)
        infos = instance.event_log_storage.get_asset_check_partition_info(
            [dg.AssetCheckKey(RAW, "c")], partition_keys=["2021-06-01", "2021-06-02"]
        )
    assert {i.partition_key: i.latest_execution_status for i in infos} == {
        "2021-06-01": Status.SUCCEEDED,
        "2021-06-02": Status.FAILED,
    }


@pytest.mark.parametrize(
    ("cron", "valid"),
    [("0 6 * * *", True), ("30 */2 * * 1-5", True), ("0 6 * *", False), ("61 * * * *", False), ("daily", False)],
)
def test_cron_validation_is_dagsters(cron, valid):
    assert compat.is_valid_cron_schedule(cron) is valid


def weekly_mesh() -> dg.Definitions:
    """A daily asset, a 7-day window over it, and an external table: the shapes backfill planning walks."""

    @dg.asset(key=RAW, partitions_def=DAILY)
    def raw() -> None: ...

    @dg.asset(
        key=WEEKLY,
        partitions_def=DAILY,
        ins={"raw": dg.AssetIn(RAW, partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-6))},
        deps=[dg.AssetKey(["shop", "landed"])],
    )
    def weekly(raw) -> None: ...

    return dg.Definitions(assets=[raw, weekly, dg.AssetSpec(["shop", "landed"])])


def test_the_asset_graph_is_what_definitions_resolve_and_answers_what_plans_ask():
    graph = weekly_mesh().resolve_asset_graph()
    assert isinstance(graph, compat.AssetGraph)
    landed = dg.AssetKey(["shop", "landed"])
    assert graph.has(WEEKLY) and not graph.has(dg.AssetKey(["shop", "nope"]))
    assert list(graph.toposorted_asset_keys).index(RAW) < list(graph.toposorted_asset_keys).index(WEEKLY)
    assert graph.get(RAW).child_keys == {WEEKLY} and graph.get(WEEKLY).parent_keys == {RAW, landed}
    assert graph.get(WEEKLY).is_executable and not graph.get(landed).is_executable
    assert graph.get(WEEKLY).partitions_def == DAILY and graph.get(landed).partitions_def is None
    assert isinstance(graph.get_partition_mapping(WEEKLY, RAW), dg.TimeWindowPartitionMapping)


def test_partition_subsets_map_through_partition_mappings_and_list_their_ranges():
    day = DAILY.empty_subset().with_partition_key_range(DAILY, dg.PartitionKeyRange("2021-06-04", "2021-06-04"))
    assert isinstance(day, compat.PartitionsSubset) and isinstance(
        DAILY.subset_with_all_partitions(), compat.PartitionsSubset
    )
    mapping = dg.TimeWindowPartitionMapping(start_offset=-6)
    readers = mapping.get_downstream_partitions_for_partitions(day, DAILY, downstream_partitions_def=DAILY)
    assert isinstance(readers, compat.PartitionsSubset) and len(readers) == 7
    assert readers.get_partition_key_ranges(DAILY) == [dg.PartitionKeyRange("2021-06-04", "2021-06-10")]
    both = readers | DAILY.empty_subset().with_partition_keys(["2021-06-14"])
    assert [(r.start, r.end) for r in both.get_partition_key_ranges(DAILY)] == [
        ("2021-06-04", "2021-06-10"),
        ("2021-06-14", "2021-06-14"),
    ]
    assert DAILY.empty_subset().is_empty and not both.is_empty


def test_the_executor_logs_its_check_gating_notice_on_the_named_logger():
    module = importlib.import_module(compat.EXECUTOR_LOGGER)
    assert module.logger.name == compat.EXECUTOR_LOGGER
    assert "will proceed without gating on it" in inspect.getsource(module)


def test_dbt_specs_carry_the_node_unique_id_and_a_subset_selects_its_model():
    from dagster_dbt import DagsterDbtTranslator, dbt_assets
    from dagster_dbt.asset_utils import DAGSTER_DBT_UNIQUE_ID_METADATA_KEY

    from mesh_assets.dbt.project import load_manifest

    assert compat.DBT_UNIQUE_ID_METADATA_KEY == DAGSTER_DBT_UNIQUE_ID_METADATA_KEY
    manifest = load_manifest()
    selected: list[list[str]] = []

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @dbt_assets(manifest=manifest)
        def models(context):  # no annotation: postponed, Dagster would read a string
            selected.append(
                list(compat.dbt_invocation_params(context, manifest, DagsterDbtTranslator()).selection_args)
            )
            for key in context.selected_asset_keys:
                yield dg.MaterializeResult(asset_key=key)

    by_id = {models.specs_by_key[k].metadata[compat.DBT_UNIQUE_ID_METADATA_KEY]: k for k in models.keys}
    model_ids = {n for n, node in manifest["nodes"].items() if node["resource_type"] == "model"}
    assert set(by_id) == model_ids
    model = min(model_ids)
    assert dg.materialize([models], selection=[by_id[model]], instance=dg.DagsterInstance.ephemeral()).success
    assert selected == [["--select", ".".join(manifest["nodes"][model]["fqn"])]]


PRIVATE = ("dagster._", "dagster_dbt.", "dagster_graphql", "dagster_webserver")


def test_no_module_but_compat_uses_dagster_internals():
    found = []
    for path in sorted((ROOT / "mesh_assets").rglob("*.py")):
        if path == ROOT / "mesh_assets" / "compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.append(node.value)
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.startswith(PRIVATE)]
    assert found == []


def test_the_data_version_tag_is_dagsters():
    from dagster._core.definitions.data_version import DATA_VERSION_TAG

    assert compat.DATA_VERSION_TAG == DATA_VERSION_TAG
    with dg.DagsterInstance.ephemeral() as instance:
        event = dg.AssetMaterialization(RAW, partition="2021-06-01", tags={compat.DATA_VERSION_TAG: "delta-v3"})
        instance.report_runless_asset_event(event)
        [record] = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=RAW), limit=1).records
        assert record.asset_materialization.tags[DATA_VERSION_TAG] == "delta-v3"


def test_a_materialization_carries_its_code_version_under_dagsters_tag():
    from dagster._core.definitions.data_version import CODE_VERSION_TAG

    assert compat.CODE_VERSION_TAG == CODE_VERSION_TAG

    @dg.asset(code_version="abc123")
    def versioned() -> None:
        return None

    with dg.DagsterInstance.ephemeral() as instance:
        dg.materialize([versioned], instance=instance)
        [record] = instance.fetch_materializations(versioned.key, limit=1).records
        assert record.asset_materialization.tags[compat.CODE_VERSION_TAG] == "abc123"


def test_a_step_that_opened_a_pipes_session_may_record_partitioned_check_evaluations(tmp_path):
    """Without ``end_typed_event_stream`` the step fails for not yielding its checks as ``AssetCheckResult``s,
    which carry no partition; with it, the step's per-partition evaluations are what Dagster records."""
    partitions = dg.DailyPartitionsDefinition(start_date="2021-06-01")

    def build(end_stream: bool) -> dg.AssetsDefinition:
        @dg.multi_asset(  # as Mesh builds an output (mesh_assets/assets/outputs.py)
            name="piped",
            specs=[dg.AssetSpec("piped")],
            partitions_def=partitions,
            check_specs=[dg.AssetCheckSpec("ok", asset="piped", partitions_def=partitions)],
            can_subset=True,
        )
        def piped(context):  # unannotated: Dagster cannot read a postponed annotation here
            with dg.open_pipes_session(
                context=context,
                context_injector=dg.PipesTempFileContextInjector(),
                message_reader=dg.PipesTempFileMessageReader(),
            ):
                pass  # what a launched application would report comes back as custom messages
            if end_stream:
                compat.end_typed_event_stream(context)
            yield dg.MaterializeResult(asset_key="piped")
            context.log_event(dg.AssetCheckEvaluation(dg.AssetKey("piped"), "ok", True, partition="2021-06-01"))

        return piped

    with dg.DagsterInstance.ephemeral() as instance:
        typed = dg.materialize([build(False)], instance=instance, partition_key="2021-06-01", raise_on_error=False)
        ended = dg.materialize([build(True)], instance=instance, partition_key="2021-06-01")
    assert not typed.success
    assert ended.success
    assert [(e.check_name, e.partition, e.passed) for e in ended.get_asset_check_evaluations()] == [
        ("ok", "2021-06-01", True)
    ]


def test_the_stub_marker_is_the_one_dagster_puts_on_an_undefined_upstream():
    from dagster._core.definitions.assets.definition.asset_spec import SYSTEM_METADATA_KEY_AUTO_CREATED_STUB_ASSET

    assert compat.STUB_ASSET_METADATA_KEY == SYSTEM_METADATA_KEY_AUTO_CREATED_STUB_ASSET
    defs = dg.Definitions(assets=[dg.AssetSpec(WEEKLY, deps=[RAW])])
    assert defs.resolve_asset_graph().get(RAW).metadata[compat.STUB_ASSET_METADATA_KEY] is True


class _AllBut(dg.AutomationCondition):
    """True for every candidate partition but 2021-06-02, seen through the compat helpers."""

    seen: list = []

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        keys = compat.subset_partition_keys(context.candidate_subset)
        self.seen.append((compat.automation_instance(context), keys))
        return dg.AutomationResult(context, compat.subset_without(context.candidate_subset, {"2021-06-02"}))


def test_a_custom_condition_reads_its_instance_and_partitions_and_drops_some():
    asset = dg.AssetSpec(RAW, partitions_def=DAILY, automation_condition=_AllBut())
    with dg.DagsterInstance.ephemeral() as instance, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = dg.evaluate_automation_conditions(defs=[asset], instance=instance)
        [(seen_instance, keys)] = _AllBut.seen
    assert seen_instance is instance and keys == set(DAILY.get_partition_keys())
    assert set(result.get_requested_partitions(RAW)) == keys - {"2021-06-02"}


def test_the_instance_keeps_values_by_key_across_instances_of_one_home(tmp_path: Path):
    """``mesh pause`` writes a product's state where the daemon's automation reads it: one home, many processes."""
    with dg.instance_for_test(temp_dir=str(tmp_path)) as writer:
        compat.kv_set(writer, {"mesh/paused/sales/orders": '{"reason": "r", "since": "s"}'})
        compat.kv_set(writer, {"mesh/paused/sales/orders": "resumed"})
    with dg.instance_for_test(temp_dir=str(tmp_path)) as reader:
        assert compat.kv_get(reader, {"mesh/paused/sales/orders", "mesh/paused/x/y"}) == {
            "mesh/paused/sales/orders": "resumed"
        }


def test_partition_metadata_added_at_once_lands_on_each_partitions_materialization():
    """``add_partitions_metadata`` does what ``add_asset_metadata`` per partition does (merging with metadata
    added before, beside the output's own), and refuses a key outside the run's range, as Dagster does."""
    keys = ["2021-06-01", "2021-06-02", "2021-06-03"]

    def build(extra: str | None) -> dg.AssetsDefinition:
        @dg.asset(name="counted", partitions_def=DAILY)
        def counted(context):
            context.add_asset_metadata({"source": "first"}, partition_key="2021-06-01")
            rows = {key: {"dagster/row_count": i} for i, key in enumerate(keys, 1)}
            compat.add_partitions_metadata(context, dg.AssetKey("counted"), rows | ({extra: {}} if extra else {}))
            return dg.MaterializeResult(metadata={"delta_version": 7})

        return counted

    with dg.DagsterInstance.ephemeral() as instance:
        tags = {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
        dg.materialize([build(None)], instance=instance, tags=tags)
        outside = dg.materialize([build("2021-06-04")], instance=instance, tags=tags, raise_on_error=False)
        records = instance.fetch_materializations(dg.AssetKey("counted"), limit=10).records
    seen = {r.partition_key: {k: v.value for k, v in r.asset_materialization.metadata.items()} for r in records}
    assert seen == {
        "2021-06-01": {"source": "first", "dagster/row_count": 1, "delta_version": 7},
        "2021-06-02": {"dagster/row_count": 2, "delta_version": 7},
        "2021-06-03": {"dagster/row_count": 3, "delta_version": 7},
    }
    assert not outside.success
    failure = next(e for e in outside.all_events if e.event_type_value == "STEP_FAILURE")
    assert "partition key '2021-06-04' that is not being targeted" in failure.event_specific_data.error.to_string()
