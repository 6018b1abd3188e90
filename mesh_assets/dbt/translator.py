"""dbt nodes -> Mesh asset keys: models are ``[domain, model]``; sources are the platform's own tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings, DbtProject

from mesh_assets.automation.conditions import DBT_LABEL, dbt_model_condition
from mesh_assets.automation.pause import NotPaused
from mesh_assets.dbt.nodes import is_model, model_code_version, model_domain, model_kind, node_meta, partition_column
from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.kinds import REPLAY, Replay

DBT_KINDS = {"dbt", "spark", "delta"}


def _kind_metadata(config: Mapping[str, Any]) -> dict[str, str]:
    """The Mesh kind a model is published as (``merge on order_id``), and how a backfill may replay its past
    (:mod:`mesh_assets.backfill.in_order`), as a product's asset shows them."""
    try:
        kind = model_kind(config)
    except ValueError:
        return {"kind": "-"}
    return {"kind": kind.describe(), **({REPLAY: kind.replay.value} if kind.replay is not Replay.ANY else {})}


class MeshDbtTranslator(DagsterDbtTranslator):
    """Mesh's standard asset shape for dbt models; dbt tests become (blocking on ``error``) asset checks,
    partitioned like the models (``partitions_def``), since Mesh runs each test on each partition's rows before
    publishing it. A model whose meta names no owner has its domain's (``defaults``)."""

    def __init__(
        self,
        partitions_def: dg.PartitionsDefinition | None,
        defaults: Mapping[str, DomainDefaults] | None = None,
        settings: DagsterDbtTranslatorSettings | None = None,
    ):
        super().__init__(settings or DagsterDbtTranslatorSettings(enable_asset_checks=True))
        self.partitions_def = partitions_def
        self.defaults = defaults or {}

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        if dbt_resource_props["resource_type"] == "source":
            # The source's schema is the owning domain and its name the table: food_delivery.orders is
            # [food_delivery, orders], the key the Mesh product writing it already has.
            domain = node_meta(dbt_resource_props).get("domain") or dbt_resource_props["schema"]
            return dg.AssetKey([str(domain), dbt_resource_props["name"]])
        table = dbt_resource_props["alias"] or dbt_resource_props["name"]
        return dg.AssetKey([model_domain(dbt_resource_props), table])

    def get_code_version(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        return model_code_version(dbt_resource_props)  # the catalog's table carries the same (mesh plan)

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        meta = node_meta(dbt_resource_props)
        return str(meta.get("product") or model_domain(dbt_resource_props))

    def get_owners(self, dbt_resource_props: Mapping[str, Any]) -> Sequence[str] | None:
        owner = node_meta(dbt_resource_props).get("owner")
        if not owner and (domain := self.defaults.get(model_domain(dbt_resource_props))) is not None:
            owner = domain.owner
        if owner:
            return [owner] if isinstance(owner, str) else list(owner)
        return super().get_owners(dbt_resource_props)

    def get_tags(self, dbt_resource_props: Mapping[str, Any]) -> Mapping[str, str]:
        meta = node_meta(dbt_resource_props)
        tags = {
            "domain": model_domain(dbt_resource_props),
            "product": str(meta.get("product") or model_domain(dbt_resource_props)),
            "published": str(bool(meta.get("published", False))).lower(),
            "tool": "dbt",
        }
        return {**super().get_tags(dbt_resource_props), **tags}

    def get_automation_condition(self, dbt_resource_props: Mapping[str, Any]) -> dg.AutomationCondition | None:
        return dbt_model_condition() if is_model(dbt_resource_props) else None

    def get_metadata(self, dbt_resource_props: Mapping[str, Any]) -> Mapping[str, Any]:
        config = dbt_resource_props.get("config") or {}
        return {
            **super().get_metadata(dbt_resource_props),
            "partition_column": partition_column(config) or "-",
            "write_mode": config.get("incremental_strategy") or config.get("materialized") or "-",
            **_kind_metadata(config),
            "source_file": str(dbt_resource_props.get("original_file_path", "")),
        }

    def get_asset_spec(self, manifest: Mapping[str, Any], unique_id: str, project: DbtProject | None) -> dg.AssetSpec:
        spec = super().get_asset_spec(manifest, unique_id, project)
        props = self.get_resource_props(manifest, unique_id)
        if is_model(props):
            own = (model_domain(props), str(node_meta(props).get("product") or model_domain(props)))
            held = NotPaused(own, (), tables=(dep.asset_key for dep in spec.deps))  # mesh pause, as products
            condition = (spec.automation_condition & held).with_label(DBT_LABEL) if spec.automation_condition else None
            spec = spec.replace_attributes(kinds=DBT_KINDS, automation_condition=condition)
        return spec

    def get_asset_check_spec(
        self, asset_spec: dg.AssetSpec, manifest: Mapping[str, Any], unique_id: str, project: DbtProject | None
    ) -> dg.AssetCheckSpec | None:
        spec = super().get_asset_check_spec(asset_spec, manifest, unique_id, project)
        if spec is None:
            return None
        return dg.AssetCheckSpec(
            spec.name,
            asset=spec.asset_key,
            description=spec.description,
            additional_deps=spec.additional_deps,
            blocking=spec.blocking,
            metadata=spec.metadata,
            automation_condition=spec.automation_condition,
            partitions_def=self.partitions_def,
        )
