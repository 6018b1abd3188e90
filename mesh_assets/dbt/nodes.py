"""What Mesh reads from dbt's manifest nodes, without dbt or dagster-dbt.

Every code location consults the manifest to let products consume dbt models; only the locations of domains
that own dbt models need dagster-dbt itself, whose import costs seconds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.grain import Grain
from mesh_assets.model.kinds import Full, History, Kind, Merge, Partitions
from mesh_assets.model.product import DEFAULT_START

DBT_GRAIN = Grain.DAILY
"""dbt models are partitioned by day: the run's days reach dbt as ``min_date`` / ``max_date``."""


def node_meta(props: Mapping[str, Any]) -> dict[str, Any]:
    """A node's meta: ``config.meta`` (dbt >= 1.10) merged over the top-level ``meta``."""
    return {**(props.get("meta") or {}), **((props.get("config") or {}).get("meta") or {})}


def model_domain(props: Mapping[str, Any]) -> str:
    """``meta.domain``, else the first folder under ``models/`` or ``snapshots/`` (the folder is the domain)."""
    meta = node_meta(props)
    if meta.get("domain"):
        return str(meta["domain"])
    parts = Path(props.get("original_file_path") or props.get("path") or "").parts
    folders = parts[1:-1] if parts and parts[0] in {"models", "snapshots"} else parts[:-1]
    return folders[0] if folders else str(props.get("schema"))


def partition_column(config: Mapping[str, Any]) -> str | None:
    """The model's ``partition_by`` column (the day), or None when it has none; a snapshot's is the day that
    opened each version (``p_date`` unless it names another)."""
    partition_by = config.get("partition_by")
    column = partition_by[0] if isinstance(partition_by, list) and partition_by else partition_by
    if not column and config.get("materialized") == "snapshot":
        return SNAPSHOT_DAY
    return str(column) if column else None


MERGE_OPTIONS_REFUSED = ("merge_update_columns", "merge_exclude_columns", "incremental_predicates")
"""dbt merge options Mesh's ``merge`` kind does not apply: refused rather than silently ignored."""


SNAPSHOT_DAY = "p_date"
"""A snapshot's partition column (unless its config names one in ``partition_by``): the day whose run opened the
version, as a Mesh ``history`` table records it."""
IS_CURRENT = "dbt_is_current"
"""The column Mesh's ``history`` adds to a dbt snapshot (dbt has none: its current rows have a null valid_to)."""


def _keys(config: Mapping[str, Any], what: str) -> dict[str, Any]:
    if not config.get("unique_key"):
        raise ValueError(f"{what} needs a unique_key: the column(s) that identify a row")
    return {"unique_key": config["unique_key"]}


def _kind_of(cls: type[Kind], fields: dict[str, Any]) -> Kind:
    try:
        return cls(**fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"] if not isinstance(p, int))
        message = error["msg"].removeprefix("Value error, ")
        raise ValueError(f"{where} {error.get('input')!r}: {message}" if where else message) from None


def snapshot_kind(config: Mapping[str, Any]) -> History:
    """A dbt snapshot as Mesh's ``history`` kind: ``unique_key``; ``strategy: timestamp`` with ``updated_at`` or
    ``strategy: check`` with ``check_cols`` (a list); ``hard_deletes: invalidate`` closes a key missing from a run
    (``ignore``, the default, keeps it current); the validity columns keep dbt's names (``dbt_valid_from``,
    ``dbt_valid_to``, renamed by ``snapshot_meta_column_names``) and ``dbt_is_current`` is added. Raises
    ``ValueError`` for what Mesh does not apply."""
    fields = _keys(config, "a snapshot")
    strategy = config.get("strategy")
    if strategy == "timestamp":
        if not config.get("updated_at"):
            raise ValueError("strategy 'timestamp' needs updated_at: the column whose growth makes a new version")
        fields["updated_at"] = config["updated_at"]
    elif strategy == "check":
        columns = config.get("check_cols")
        if not isinstance(columns, list | tuple) or not columns:
            raise ValueError("check_cols must list the columns to compare ('all' is not supported by Mesh)")
        fields["check_columns"] = tuple(columns)
    else:
        raise ValueError(f"strategy {strategy!r}; a snapshot detects changes by strategy 'timestamp' or 'check'")
    deletes = config.get("hard_deletes") or ("invalidate" if config.get("invalidate_hard_deletes") else "ignore")
    if deletes not in {"ignore", "invalidate"}:
        raise ValueError(f"hard_deletes {deletes!r} is not supported by Mesh: use 'ignore' or 'invalidate'")
    if config.get("dbt_valid_to_current"):
        raise ValueError("dbt_valid_to_current is not supported by Mesh: a current row's valid_to is null")
    names = config.get("snapshot_meta_column_names") or {}
    return _kind_of(  # type: ignore[return-value]
        History,
        {
            **fields,
            "deletes": "close" if deletes == "invalidate" else "keep",
            "valid_from": names.get("dbt_valid_from") or "dbt_valid_from",
            "valid_to": names.get("dbt_valid_to") or "dbt_valid_to",
            "is_current": IS_CURRENT,
        },
    )


def model_kind(config: Mapping[str, Any]) -> Kind:
    """The Mesh table kind a dbt model's config declares: ``table`` is ``full``, ``incremental`` with
    ``replace_where`` is ``partitions``, and with ``merge`` (and its ``unique_key``) is ``merge``; a snapshot is
    ``history`` (:func:`snapshot_kind`). Raises ``ValueError`` saying what to change for any other."""
    materialized = config.get("materialized")
    if materialized == "snapshot":
        return snapshot_kind(config)
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
        fields = _keys(config, "incremental_strategy 'merge'")
        refused = [option for option in MERGE_OPTIONS_REFUSED if config.get(option)]
        if refused:
            raise ValueError(
                f"{', '.join(refused)} of incremental_strategy 'merge' are not supported by Mesh: a matched row is "
                "updated whole; remove them"
            )
        return _kind_of(Merge, fields)
    if strategy != "replace_where" or len(columns) != 1:
        raise ValueError(
            "an incremental model is published by replacing its days (incremental_strategy 'replace_where' and "
            "exactly one partition_by column) or merged by key (incremental_strategy 'merge' and a unique_key)"
        )
    return Partitions()


def is_model(props: Mapping[str, Any]) -> bool:
    """A model or a snapshot: what Mesh publishes of a dbt project."""
    return props.get("resource_type") in {"model", "snapshot"}


def model_code_version(props: Mapping[str, Any]) -> str | None:
    """A model's code version: the SHA-1 of its SQL as written (else dbt's checksum of its file). Its asset and its
    catalog table carry the same, so each materialization records it and ``mesh plan`` finds the models whose
    SQL changed since production computed them, as dbt's ``state:modified`` does."""
    code = props.get("raw_code") or props.get("raw_sql")
    if code:
        return hashlib.sha1(str(code).encode("utf-8")).hexdigest()
    return (props.get("checksum") or {}).get("checksum") or None


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
