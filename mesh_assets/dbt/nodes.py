"""What Mesh reads from dbt's manifest nodes, without dbt or dagster-dbt.

Every code location consults the manifest to let products consume dbt models; only the locations of domains
that own dbt models need dagster-dbt itself, whose import costs seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.grain import Grain
from mesh_assets.model.kinds import Full, Kind, Merge, Partitions
from mesh_assets.model.product import DEFAULT_START

DBT_GRAIN = Grain.DAILY
"""dbt models are partitioned by day: the run's days reach dbt as ``min_date`` / ``max_date``."""


def node_meta(props: Mapping[str, Any]) -> dict[str, Any]:
    """A node's meta: ``config.meta`` (dbt >= 1.10) merged over the top-level ``meta``."""
    return {**(props.get("meta") or {}), **((props.get("config") or {}).get("meta") or {})}


def model_domain(props: Mapping[str, Any]) -> str:
    """``meta.domain``, else the first folder under ``models/`` (the folder is the domain)."""
    meta = node_meta(props)
    if meta.get("domain"):
        return str(meta["domain"])
    parts = Path(props.get("original_file_path") or props.get("path") or "").parts
    folders = parts[1:-1] if parts and parts[0] == "models" else parts[:-1]
    return folders[0] if folders else str(props.get("schema"))


def partition_column(config: Mapping[str, Any]) -> str | None:
    """The model's ``partition_by`` column (the day), or None when it has none."""
    partition_by = config.get("partition_by")
    column = partition_by[0] if isinstance(partition_by, list) and partition_by else partition_by
    return str(column) if column else None


MERGE_OPTIONS_REFUSED = ("merge_update_columns", "merge_exclude_columns", "incremental_predicates")
"""dbt merge options Mesh's ``merge`` kind does not apply: refused rather than silently ignored."""


def model_kind(config: Mapping[str, Any]) -> Kind:
    """The Mesh table kind a dbt model's config declares: ``table`` is ``full``, ``incremental`` with
    ``replace_where`` is ``partitions``, and with ``merge`` (and its ``unique_key``) is ``merge``. Raises
    ``ValueError`` saying what to change for any other."""
    materialized = config.get("materialized")
    if materialized == "table":
        return Full()
    if materialized != "incremental":
        raise ValueError(f"materialized {materialized!r}; Mesh publishes incremental or table models (or snapshots)")
    strategy = config.get("incremental_strategy")
    partition_by = config.get("partition_by")
    columns = [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
    if strategy == "merge":
        if len(columns) > 1:
            raise ValueError("a merge model may have at most one partition_by column (the day)")
        if not config.get("unique_key"):
            raise ValueError("incremental_strategy 'merge' needs a unique_key: the column(s) its rows are merged by")
        refused = [option for option in MERGE_OPTIONS_REFUSED if config.get(option)]
        if refused:
            raise ValueError(
                f"{', '.join(refused)} of incremental_strategy 'merge' are not supported by Mesh: a matched row is "
                "updated whole; remove them"
            )
        try:
            return Merge(unique_key=config["unique_key"])
        except ValidationError as exc:
            raise ValueError(
                f"unique_key {config['unique_key']!r} must name one column or a list of columns "
                f"({exc.errors()[0]['msg']})"
            ) from None
    if strategy != "replace_where" or len(columns) != 1:
        raise ValueError(
            "an incremental model is published by replacing its days (incremental_strategy 'replace_where' and "
            "exactly one partition_by column) or merged by key (incremental_strategy 'merge' and a unique_key)"
        )
    return Partitions()


def is_model(props: Mapping[str, Any]) -> bool:
    return props.get("resource_type") == "model"


def model_start(props: Mapping[str, Any], defaults: Mapping[str, DomainDefaults]) -> date:
    """A model's first partition: its own ``meta.start_date`` (in its config, or its folder's in
    ``dbt_project.yml``), else its domain's (``domain.yaml``), else the model floor's default."""
    meta = node_meta(props)
    if meta.get("start_date"):
        return date.fromisoformat(str(meta["start_date"]))
    own = defaults.get(model_domain(props))
    return own.start_date if own is not None and own.start_date is not None else DEFAULT_START


def model_end(props: Mapping[str, Any], defaults: Mapping[str, DomainDefaults]) -> date | None:
    """The first day with no partition of a model: its own ``meta.end_date``, else its domain's, else none (its
    partitions go on to today)."""
    meta = node_meta(props)
    if meta.get("end_date"):
        return date.fromisoformat(str(meta["end_date"]))
    own = defaults.get(model_domain(props))
    return own.end_date if own is not None else None


def models_of(manifest: Mapping[str, Any], domain: str) -> list[Mapping[str, Any]]:
    """The dbt models ``domain`` owns (``meta.domain``, else their folder), by unique id."""
    nodes = manifest["nodes"].values()
    return sorted((n for n in nodes if is_model(n) and model_domain(n) == domain), key=lambda n: n["unique_id"])
