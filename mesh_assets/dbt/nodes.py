"""What Mesh reads from dbt's manifest nodes, without dbt or dagster-dbt.

Every code location consults the manifest to let products consume dbt models; only the locations of domains
that own dbt models need dagster-dbt itself, whose import costs seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.grain import Grain
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
