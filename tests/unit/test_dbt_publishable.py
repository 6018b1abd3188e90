"""dbt models Mesh cannot publish through its gate are refused by name before a row is computed; so is a dbt
target on which nothing could be tested before it is published."""

from __future__ import annotations

import copy
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets.dbt.compiled import check_publishable, relation_of
from mesh_assets.dbt.project import load_manifest
from mesh_assets.model.kinds import Full, History, Merge, Partitions

STG = "model.mesh_dbt.stg_orders"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def stg_node() -> dict:
    return load_manifest()["nodes"][STG]


def with_config(node: dict, **config) -> dict:
    changed = copy.deepcopy(node)
    changed["config"].update(config)
    return changed


def test_the_example_models_are_publishable(stg_node):
    assert check_publishable(stg_node) == Partitions()
    assert check_publishable(with_config(stg_node, materialized="table", partition_by=None)) == Full()
    assert relation_of(stg_node, dg.AssetKey(["analytics", "stg_orders"])) == ("analytics", "stg_orders")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"materialized": "view"}, "materialized 'view'; Mesh publishes incremental or table models"),
        ({"materialized": "ephemeral"}, "materialized 'ephemeral'"),
        ({"incremental_strategy": "insert_overwrite"}, "(incremental_strategy 'replace_where' and exactly one"),
        ({"partition_by": ["p_date", "city"]}, "exactly one partition_by column"),
        ({"partition_by": None}, "exactly one partition_by column"),
        ({"incremental_strategy": "merge"}, "incremental_strategy 'merge' needs a unique_key"),
        (
            {"incremental_strategy": "merge", "unique_key": "order_id", "merge_update_columns": ["status"]},
            "merge_update_columns of incremental_strategy 'merge' are not supported by Mesh",
        ),
        (
            {"incremental_strategy": "merge", "unique_key": "order_id", "incremental_predicates": ["p_date > x"]},
            "incremental_predicates of incremental_strategy 'merge' are not supported",
        ),
        ({"incremental_strategy": "merge", "unique_key": "lower(order_id)"}, "unique_key 'lower(order_id)': "),
        ({"materialized": "snapshot", "strategy": "timestamp"}, "a snapshot needs a unique_key"),
        (
            {"materialized": "snapshot", "unique_key": "order_id", "strategy": "check", "check_cols": "all"},
            "check_cols must list the columns to compare ('all' is not supported by Mesh)",
        ),
        (
            {"materialized": "snapshot", "unique_key": "order_id", "strategy": "timestamp", "updated_at": None},
            "strategy 'timestamp' needs updated_at",
        ),
        (
            {"materialized": "snapshot", "unique_key": "order_id", "strategy": "timestamp", "updated_at": "at"}
            | {"hard_deletes": "new_record"},
            "hard_deletes 'new_record' is not supported by Mesh",
        ),
        (
            {"incremental_strategy": "merge", "unique_key": "order_id", "partition_by": ["p_date", "city"]},
            "a merge model may have at most one partition_by column",
        ),
    ],
)
def test_models_mesh_cannot_publish_are_refused_by_name(stg_node, config, message):
    with pytest.raises(dg.Failure) as refused:
        check_publishable(with_config(stg_node, **config))
    assert refused.value.description.startswith(f"dbt model {STG}: ")
    assert message in refused.value.description
    assert refused.value.description.endswith("nothing was run")


@pytest.mark.parametrize(
    ("config", "kind"),
    [
        ({"unique_key": "order_id"}, Merge(unique_key=("order_id",))),
        ({"unique_key": ["order_id", "city"], "partition_by": None}, Merge(unique_key=("order_id", "city"))),
    ],
)
def test_a_merge_model_is_published_as_kind_merge_by_its_unique_key(stg_node, config, kind):
    assert check_publishable(with_config(stg_node, incremental_strategy="merge", **config)) == kind


@pytest.mark.parametrize(
    ("config", "kind"),
    [
        (
            {"strategy": "timestamp", "updated_at": "updated_at"},
            History(unique_key=("order_id",), updated_at="updated_at", deletes="keep"),
        ),
        (
            {"strategy": "check", "check_cols": ["status", "city"], "hard_deletes": "invalidate"},
            History(unique_key=("order_id",), check_columns=("status", "city"), deletes="close"),
        ),
        (
            {"strategy": "check", "check_cols": ["status"], "invalidate_hard_deletes": True}
            | {"snapshot_meta_column_names": {"dbt_valid_from": "valid_since"}},
            History(unique_key=("order_id",), check_columns=("status",), valid_from="valid_since"),
        ),
    ],
)
def test_a_snapshot_is_published_as_kind_history(stg_node, config, kind):
    """dbt's validity columns keep their names (dbt_valid_from, dbt_valid_to); Mesh adds dbt_is_current."""
    defaults = {"valid_from": "dbt_valid_from", "valid_to": "dbt_valid_to", "is_current": "dbt_is_current"}
    expected = kind.model_copy(update={k: v for k, v in defaults.items() if k not in kind.model_fields_set})
    snapshot = with_config(stg_node, materialized="snapshot", unique_key="order_id", partition_by=None, **config)
    assert check_publishable(snapshot) == expected


def test_a_model_whose_relation_is_not_its_table_is_refused(stg_node):
    moved = dict(stg_node, relation_name="staging.stg_orders")
    with pytest.raises(dg.Failure, match=r"its relation staging.stg_orders is not analytics.stg_orders"):
        relation_of(moved, dg.AssetKey(["analytics", "stg_orders"]))


def test_a_dbt_target_that_would_publish_before_testing_is_refused_when_the_project_loads(monkeypatch):
    from mesh_assets.dbt.project import DbtTargetRefused
    from mesh_assets.definitions import domain_definitions

    monkeypatch.setenv("MESH_DBT_TARGET", "thrift")  # a Spark Thrift Server: dbt would write, then test
    with pytest.raises(DbtTargetRefused) as refused:
        domain_definitions(ROOT / "domains" / "analytics" / "definitions.py")  # as its code server loads it
    assert str(refused.value).startswith(
        "MESH_DBT_TARGET=thrift is refused: on that target dbt writes each model itself and runs its tests after "
        "the write, so rows failing a blocking test would be published."
    )
    assert "MESH_DBT_TARGET=session, the default" in str(refused.value)
