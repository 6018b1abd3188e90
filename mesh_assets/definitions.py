"""The composition root: a domain's code location (or the whole mesh) as one ``dg.Definitions``.

Here, and only here, the pieces meet: discovery and governance, the graph resolved once, the assets and
checks built from it, dbt's models, each domain's sensors (automation, external-table observer, input
deadlines, failure alerts), the one resource and the executor. Each domain validates its own products
strictly (any governance error stops that location) and reads the other domains only to resolve what it
consumes, so one broken domain never takes the others down.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import dagster as dg

from mesh_assets.alerts.sensor import build_failure_sensor
from mesh_assets.assets.notices import quiet_check_gating_notice
from mesh_assets.assets.outputs import build_output_asset, build_rechecks_job
from mesh_assets.assets.specs import RESOURCE_KEY, external_spec, upstream_spec
from mesh_assets.automation.conditions import output_condition
from mesh_assets.automation.sensors import domain_sensors
from mesh_assets.checks.external import build_external_checks
from mesh_assets.compat import AssetGraph
from mesh_assets.graph.discovery import DEFS_FOLDER, DomainSpecs, load_all, load_domain
from mesh_assets.graph.isolate import catalog_tables, discover_all
from mesh_assets.graph.resolve import MeshGraph, Table, TableKind
from mesh_assets.graph.validate import validate
from mesh_assets.model.errors import SpecValidationError, relative
from mesh_assets.model.product import DataProduct
from mesh_assets.settings import get_settings
from mesh_assets.storage.resource import MeshResource

if TYPE_CHECKING:
    from dagster_dbt import DbtProject

RUN_EXECUTOR = dg.in_process_executor
"""A run's steps execute in the run's own process, one after another, sharing its SparkSession: Spark already
spreads each step over every core, and a process per step would load the code location and start (or connect)
a Spark driver once per step. A job that wants step processes sets ``executor_def`` itself."""


def tool_tables() -> list[Table]:
    """Tables produced by other tools (dbt models, once the manifest is prepared), for products to consume."""
    from mesh_assets.dbt.catalog import dbt_tables

    try:
        return dbt_tables()
    except FileNotFoundError:
        return []


def build_invalidate_job(domain: str, mesh_graph: Callable[[], AssetGraph]) -> dg.JobDefinition:
    """``mesh invalidate`` in the UI: ``<domain>__invalidate`` invalidates a table of the domain (config: table,
    start, end, reason). ``mesh_graph`` loads every domain's assets when it runs: suspects may be anywhere. The
    backfill package (and Spark) are imported by the run, not when the location loads."""
    optional = {"start": dg.Field(str, is_required=False), "end": dg.Field(str, is_required=False)}

    @dg.op(name=f"{domain}__mark_invalid", config_schema={"table": str, "reason": str, **optional})
    def _invalidate(context) -> None:  # unannotated: Dagster cannot read a postponed annotation here
        from mesh_assets.backfill import BackfillError, parse_asset_key
        from mesh_assets.backfill.invalidate import invalidate, notify

        config = context.op_config
        table = config["table"] if "/" in config["table"] or "." in config["table"] else f"{domain}/{config['table']}"
        graph = mesh_graph()
        try:
            key = parse_asset_key(table, graph)
            if key.path[0] != domain:
                raise BackfillError(f"{key.to_user_string()} is not a table of {domain}")
            marked = invalidate(
                context.instance,
                graph,
                key,
                config.get("start"),
                config.get("end"),
                config["reason"],
                by=f"run {context.run_id}",
            )
        except BackfillError as exc:
            raise dg.Failure(str(exc)) from None
        for m in marked:
            context.log.info(m.describe())
        for problem in notify(graph, marked, context.run_id):
            context.log.warning(problem)

    @dg.job(
        name=f"{domain}__invalidate",
        description=f"Invalidate published partitions of a {domain} table and mark what read them suspect.",
        tags={"mesh/invalidation": "true"},
    )
    def _job() -> None:
        _invalidate()

    return _job


def _product_definitions(graph: MeshGraph, product: DataProduct) -> dg.Definitions:
    """One product's assets (its outputs and its external tables' specs) and its external tables' checks."""
    key = (product.domain, product.name)
    nodes = [n for n in graph.nodes_of(product.domain) if (n.product.domain, n.product.name) == key]
    external = [t for t in graph.tables.values() if (t.domain, t.product) == key and t.external]
    assets: list[dg.AssetsDefinition | dg.AssetSpec] = [
        build_output_asset(n, output_condition(n), graph.consumers(n.domain, n.table.name)) for n in nodes
    ]
    assets += [external_spec(product, t) for t in external]
    checks = [c for t in external if (c := build_external_checks(t)) is not None]
    return dg.Definitions(assets=assets, asset_checks=checks)


_RESOLVING: ContextVar[MeshGraph | None] = ContextVar("mesh_resolving", default=None)


def _from_component(product: DataProduct) -> bool:
    source = product.source_file
    return source is not None and source.name == "defs.yaml" and DEFS_FOLDER in source.parent.parts


def _component_definitions(graph: MeshGraph, folder: Path) -> dg.Definitions:
    """Everything the components in ``folder/defs`` build (products among them, from ``graph``), loaded by
    Dagster's component tree under a module name of this domain's own, so domains never share one."""
    folder = folder.resolve()
    module = ModuleType(f"mesh_domains.{folder.name}.{DEFS_FOLDER}")
    module.__path__ = [str(folder / DEFS_FOLDER)]
    module.__file__ = str(folder / DEFS_FOLDER / "__init__.py")
    token = _RESOLVING.set(graph)
    try:
        built = dg.ComponentTree(defs_module=module, project_root=folder, code_location_name=folder.name).build_defs()
    finally:
        _RESOLVING.reset(token)
    # What the tree built, without the tree: the whole mesh merges several domains, and Dagster merges one tree.
    return dg.Definitions(
        assets=built.assets,
        asset_checks=built.asset_checks,
        schedules=built.schedules,
        sensors=built.sensors,
        jobs=built.jobs,
        resources=built.resources,
    )


def component_definitions(spec_file: Path) -> dg.Definitions:
    """The definitions of the product a component file declares, from the mesh its domain's code location
    (:func:`domain_definitions`) resolved: a product's assets need the other domains' tables."""
    graph = _RESOLVING.get()
    if graph is None:
        raise dg.DagsterInvalidDefinitionError(
            f"{relative(spec_file)}: a mesh_assets.DataProduct loads through its domain's definitions.py "
            "(domain_definitions), which resolves the mesh first"
        )
    spec_file = spec_file.resolve()
    product = next(p for p in graph.products if p.source_file is not None and p.source_file.resolve() == spec_file)
    return _product_definitions(graph, product)


def _domain_definitions(
    graph: MeshGraph,
    domain: str,
    folder: Path,
    tool_keys: Iterable[dg.AssetKey],
    mesh_graph: Callable[[], AssetGraph],
) -> dg.Definitions:
    """One domain's assets, checks and sensors, from the resolved graph; the products declared as components
    are built by their components."""
    parts = [_product_definitions(graph, p) for p in graph.products_of(domain) if not _from_component(p)]
    if any((folder / DEFS_FOLDER).glob("**/defs.yaml")):
        parts.append(_component_definitions(graph, folder))
    nodes = graph.nodes_of(domain)
    external = [t for t in graph.tables.values() if t.domain == domain and t.external]
    sensors = domain_sensors(domain, nodes, external, get_settings().automation, tool_keys)
    built = [n.table for n in nodes] + [t for k in tool_keys if (t := graph.get(*k.path)) is not None]
    readers = {t.key: [r for r in graph.tables.values() if (t.domain, t.name) in r.inputs] for t in built}
    if (alerts := build_failure_sensor(domain, built, get_settings().alerts, readers)) is not None:
        sensors.append(alerts)
    jobs = [job for n in nodes if (job := build_rechecks_job(n)) is not None]
    jobs += [build_invalidate_job(domain, mesh_graph)] if nodes else []
    return dg.Definitions.merge(*parts, dg.Definitions(sensors=sensors, jobs=jobs))


def _resolved(domains: dict[str, DomainSpecs], only: set[str] | None, extra: list[Table]) -> MeshGraph:
    """The mesh resolved, once every product of ``only`` (default: every domain) passed governance."""
    graph = MeshGraph(domains, extra)
    errors = validate(domains, only, graph=graph)
    if errors:
        raise SpecValidationError(errors)
    return graph


def build_definitions(
    domains: dict[str, DomainSpecs],
    only: set[str] | None = None,
    extra: list[Table] | None = None,
    tool_keys: Iterable[dg.AssetKey] = (),
) -> dg.Definitions:
    """Validate, resolve, then build the definitions of ``only`` (default: every domain).

    ``tool_keys`` are assets other tools build (dbt models) that join these definitions: each domain's
    automation sensor evaluates the ones keyed under its name.
    """
    extra = tool_tables() if extra is None else extra
    quiet_check_gating_notice()
    graph = _resolved(domains, only, extra)

    def whole_mesh() -> AssetGraph:
        """Every domain's assets: where an invalidation looks for the partitions that read the invalid ones."""
        return build_definitions(domains, extra=extra).resolve_asset_graph()

    tool_keys = list(tool_keys)
    by_domain: dict[str, list[dg.AssetKey]] = {}
    for key in tool_keys:
        by_domain.setdefault(key.path[0], []).append(key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        chosen = [name for name in domains if only is None or name in only]
        parts = [
            _domain_definitions(graph, name, domains[name].folder, by_domain.get(name, []), whole_mesh)
            for name in chosen
        ]
    elsewhere = _defined_elsewhere(graph, chosen, set(tool_keys))
    return dg.Definitions.merge(
        *parts,
        dg.Definitions(assets=elsewhere, resources={RESOURCE_KEY: MeshResource()}, executor=RUN_EXECUTOR),
    )


def _defined_elsewhere(graph: MeshGraph, chosen: list[str], tool_keys: set[dg.AssetKey]) -> list[dg.AssetSpec]:
    """The tables the ``chosen`` domains' outputs read that other code locations define (another domain's, dbt's),
    with their partitions: each domain's automation is evaluated against its own location's graph."""
    built = {t.key for t in graph.tables.values() if t.domain in chosen and t.kind is not TableKind.DBT} | tool_keys
    read = {r.table.key: r.table for name in chosen for n in graph.nodes_of(name) for r in n.reads}
    return [upstream_spec(table) for key, table in sorted(read.items()) if key not in built]


def domain_definitions(definitions_file: str | Path) -> dg.Definitions:
    """The code location of the domain whose ``definitions.py`` is ``definitions_file``.

    Only this domain's files run here; the other domains are known from the catalog, whose missing entries
    are made in processes of their own, so another domain's files can neither stop nor hang this location.
    """
    folder = Path(definitions_file).resolve().parent
    settings = get_settings()
    others = discover_all(folder.parent, settings.home, settings.discovery_timeout_seconds, skip={folder.name})
    extra = tool_tables() + catalog_tables(others)
    return build_definitions({folder.name: load_domain(folder)}, only={folder.name}, extra=extra)


def dbt_definitions(project: DbtProject | None = None, manifest_path: Path | None = None) -> dg.Definitions:
    """The code location of the dbt project's models: their assets (with checks), automation, failure alerts
    (to the owners the models' meta names), Mesh and dbt."""
    from mesh_assets.automation.sensors import automation_sensors
    from mesh_assets.dbt.assets import DBT_RESOURCE_KEY, build_dbt_assets, dbt_resource
    from mesh_assets.dbt.catalog import dbt_tables

    models = build_dbt_assets(project, manifest_path)
    domains = sorted({key.path[0] for key in models.keys})
    manifest = manifest_path or (Path(project.manifest_path) if project else None)
    tables = [t for t in dbt_tables(manifest) if t.key in models.keys]
    alerts = [build_failure_sensor(d, [t for t in tables if t.domain == d], get_settings().alerts) for d in domains]
    return dg.Definitions(
        assets=[models],
        # The daemon evaluates the models' automation against the whole workspace: their gate on the blocking
        # checks of the domains' tables they read is Dagster's, which needs those checks in the graph.
        sensors=[
            sensor
            for domain in domains
            for sensor in automation_sensors(
                domain, [k for k in models.keys if k.path[0] == domain], get_settings().automation, in_code_server=False
            )
        ]
        + [sensor for sensor in alerts if sensor is not None],
        resources={RESOURCE_KEY: MeshResource(), DBT_RESOURCE_KEY: dbt_resource(project)},
        executor=RUN_EXECUTOR,
    )


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
    return dg.Definitions.merge(defs, dg.Definitions(assets=[models], resources={DBT_RESOURCE_KEY: dbt_resource()}))


def executable_assets(defs: dg.Definitions) -> list[dg.AssetsDefinition]:
    """The assets of ``defs`` a run computes (external tables' specs left out): what ``dg.materialize`` takes."""
    return [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) and a.is_executable]
