"""dbt models as Mesh catalog entries, so Python and SQL products can declare them as inputs.

Discovery finds only Python/YAML products; ``dbt_tables()`` reads the prepared manifest and returns one
:class:`~mesh_assets.graph.resolve.Table` per persisted dbt model (and snapshot), with its kind, keyed
``(domain, model)`` like the dbt assets, for the graph to resolve.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mesh_assets.dbt import project
from mesh_assets.dbt.nodes import (
    DBT_GRAIN,
    is_model,
    model_code_version,
    model_domain,
    model_end,
    model_kind,
    model_start,
    node_meta,
    partition_column,
)
from mesh_assets.dbt.project import load_manifest, project_dir
from mesh_assets.graph.defaults import domains_defaults
from mesh_assets.graph.resolve import Table, TableKind
from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.grain import Grain
from mesh_assets.model.kinds import Kind
from mesh_assets.model.lifecycle import Classification

PERSISTED = {"incremental", "table", "snapshot"}


def _partitioning(config: dict[str, Any]) -> tuple[Grain, str]:
    column = partition_column(config)
    if column and config.get("materialized") in {"incremental", "snapshot"}:
        return DBT_GRAIN, column
    return Grain.NONE, "p_date"


def _kind(config: dict[str, Any]) -> Kind | None:
    """The model's kind (a merge's unique key, for ``mesh list``, replays and plans); a config Mesh cannot
    publish has none here, and its run is refused saying why."""
    try:
        return model_kind(config)
    except ValueError:
        return None


def blocking_tests(manifest: dict[str, Any], model_id: str) -> tuple[str, ...]:
    """Names of the model's dbt tests with severity ``error``: its blocking asset checks."""
    names = []
    for child in manifest.get("child_map", {}).get(model_id, []):
        test = manifest["nodes"].get(child)
        is_test = bool(test) and test["resource_type"] == "test" and test.get("attached_node") == model_id
        if is_test and str((test.get("config") or {}).get("severity") or "error").lower() == "error":
            names.append(test["name"])
    return tuple(sorted(names))


def _inputs(manifest: dict[str, Any], node: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The ``(domain, table)`` a model reads: sources are the platform's tables, models are keyed like them."""
    out = []
    for parent in (node.get("depends_on") or {}).get("nodes", []):
        if parent in manifest.get("sources", {}):
            source = manifest["sources"][parent]
            out.append((str(node_meta(source).get("domain") or source["schema"]), source["name"]))
        elif parent in manifest["nodes"]:
            model = manifest["nodes"][parent]
            out.append((model_domain(model), model["alias"] or model["name"]))
    return tuple(out)


def dbt_tables(
    manifest: dict[str, Any] | Path | None = None, defaults: Mapping[str, DomainDefaults] | None = None
) -> list[Table]:
    """Every persisted dbt model as a Table: ``published``, ``product`` and ``owner`` from its meta; its first
    partition, contacts and classification, where its meta names none, from its domain's ``defaults``."""
    defaults = defaults or {}
    if not isinstance(manifest, dict):
        manifest = load_manifest(manifest)
    root = project_dir()
    out = []
    for node in manifest["nodes"].values():
        config = node.get("config") or {}
        if not is_model(node) or config.get("materialized") not in PERSISTED:
            continue
        meta = node_meta(node)
        grain, column = _partitioning(config)
        domain = model_domain(node)
        domain_defaults = defaults.get(domain) or DomainDefaults()
        out.append(
            Table(
                domain=domain,
                name=node["alias"] or node["name"],
                product=str(meta.get("product") or domain),
                owner=str(meta.get("owner") or domain_defaults.owner or ""),
                published=bool(meta.get("published", False)),
                grain=grain,
                partition_column=column,
                kind=TableKind.DBT,
                tool_kind=_kind(config),
                start_date=model_start(node, defaults),
                end_date=model_end(node, defaults),
                contacts=domain_defaults.contacts or (),
                classification=Classification(meta.get("classification") or domain_defaults.classification or "l1"),
                source_file=root / node["original_file_path"],
                line=None,
                blocking_checks=blocking_tests(manifest, node["unique_id"]),
                inputs=_inputs(manifest, node),
                code_version=model_code_version(node),
            )
        )
    return sorted(out, key=lambda i: (i.domain, i.name))


def tool_tables(domains_dir: Path) -> list[Table]:
    """Tables produced by other tools (dbt models, once the manifest is prepared), for products to consume; the
    domains of ``domains_dir`` give them the defaults their config leaves out."""
    manifest = project.manifest_path()  # looked up when called: a test or tool may point it elsewhere
    if not manifest.exists():  # before the domains' defaults are read for it
        return []
    try:
        return dbt_tables(manifest, defaults=domains_defaults(domains_dir))
    except FileNotFoundError:
        return []
