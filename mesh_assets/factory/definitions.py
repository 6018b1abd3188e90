"""Definitions for one domain's code location, or for the whole mesh.

Each domain loads its own products strictly (any governance error stops that location) and reads the
other domains only to resolve what it consumes, so one broken domain never takes the others down.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path

import dagster as dg

from mesh_assets.automation.conditions import output_condition
from mesh_assets.automation.sensors import domain_sensors
from mesh_assets.engine.resource import MeshResource
from mesh_assets.factory.assets import RESOURCE_KEY, build_external_spec, build_output_asset
from mesh_assets.factory.external_checks import build_external_checks
from mesh_assets.factory.notices import quiet_check_gating_notice
from mesh_assets.settings import get_settings
from mesh_assets.spec.catalog import Catalog, TableInfo
from mesh_assets.spec.discovery import DomainSpecs, load_all
from mesh_assets.spec.errors import SpecValidationError
from mesh_assets.spec.validate import validate

RUN_EXECUTOR = dg.in_process_executor
"""A run's steps execute in the run's own process, one after another, sharing its SparkSession: Spark already
spreads each step over every core, and a process per step would load the code location and start (or connect)
a Spark driver once per step. A job that wants step processes sets ``executor_def`` itself."""


def assets_for(specs: DomainSpecs, catalog: Catalog) -> list[dg.AssetsDefinition | dg.AssetSpec]:
    out: list[dg.AssetsDefinition | dg.AssetSpec] = []
    for product in specs.products:
        out += [
            build_output_asset(product, t, catalog, automation_condition=output_condition(product, t, catalog))
            for t in product.transformations
        ]
        out += [build_external_spec(product, e) for e in product.external]
    return out


def checks_for(specs: DomainSpecs) -> list[dg.AssetChecksDefinition]:
    """Executable checks of the domain's external tables (its outputs' checks run inside their assets)."""
    found = (build_external_checks(p, e) for p in specs.products for e in p.external)
    return [c for c in found if c is not None]


def tool_tables() -> list[TableInfo]:
    """Tables produced by other tools (dbt models, once the manifest is prepared), for products to consume."""
    from mesh_assets.dbt.catalog import dbt_tables

    try:
        return dbt_tables()
    except FileNotFoundError:
        return []


def build_definitions(
    domains: dict[str, DomainSpecs],
    only: set[str] | None = None,
    extra: list[TableInfo] | None = None,
    tool_keys: Iterable[dg.AssetKey] = (),
) -> dg.Definitions:
    """Validate, then build the assets of ``only`` (default: every domain).

    ``tool_keys`` are assets other tools build (dbt models) that join these definitions: each domain's
    automation sensor evaluates the ones keyed under its name.
    """
    extra = tool_tables() if extra is None else extra
    quiet_check_gating_notice()
    errors = validate(domains, only, extra)
    if errors:
        raise SpecValidationError(errors)
    catalog = Catalog(domains, extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        selected = {name: s for name, s in domains.items() if only is None or name in only}
        assets = [a for s in selected.values() for a in assets_for(s, catalog)]
        checks = [c for s in selected.values() for c in checks_for(s)]
        by_domain: dict[str, list[dg.AssetKey]] = {}
        for key in tool_keys:
            by_domain.setdefault(key.path[0], []).append(key)
        sensors = [
            sensor
            for name, s in selected.items()
            for sensor in domain_sensors(name, list(s.products), catalog, by_domain.get(name, []))
        ]
    return dg.Definitions(
        assets=assets,
        asset_checks=checks,
        sensors=sensors,
        resources={RESOURCE_KEY: MeshResource()},
        executor=RUN_EXECUTOR,
    )


def domain_definitions(definitions_file: str | Path) -> dg.Definitions:
    """The code location of the domain whose ``definitions.py`` is ``definitions_file``."""
    folder = Path(definitions_file).resolve().parent
    return build_definitions(load_all(folder.parent), only={folder.name})


def mesh_definitions(domains_dir: Path | None = None, *, dbt: bool | None = None) -> dg.Definitions:
    """Every domain in one Definitions: for the demo, tests and tools that see the whole mesh.

    The dbt models join when ``dbt`` is true (default: for the configured mesh, if its manifest is prepared).
    """
    extra = tool_tables()
    domains = load_all(domains_dir or get_settings().domains_dir)
    if dbt is False or (dbt is None and (domains_dir is not None or not extra)):
        return build_definitions(domains, extra=extra)
    from mesh_assets.dbt.assets import DBT_RESOURCE_KEY, build_dbt_assets, dbt_resource

    models = build_dbt_assets()
    defs = build_definitions(domains, extra=extra, tool_keys=models.keys)
    return dg.Definitions(
        assets=[*(defs.assets or []), models],
        asset_checks=defs.asset_checks,
        sensors=defs.sensors,
        resources={RESOURCE_KEY: MeshResource(), DBT_RESOURCE_KEY: dbt_resource()},
        executor=RUN_EXECUTOR,
    )
