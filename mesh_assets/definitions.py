"""The composition root: a domain's code location (or the whole mesh) as one ``dg.Definitions``.

Here, and only here, the pieces meet: discovery and governance, the graph resolved once, the assets and
checks built from it, dbt's models, each domain's sensors (automation, external-table observer, input
deadlines, failure alerts), the one resource and the executor. Each domain validates its own products
strictly (any governance error stops that location) and reads the other domains only to resolve what it
consumes, so one broken domain never takes the others down.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import dagster as dg

from mesh_assets.alerts.sensor import build_failure_sensor
from mesh_assets.alerts.watch import build_alert_sensor
from mesh_assets.assets.notices import quiet_check_gating_notice
from mesh_assets.assets.outputs import build_output_asset, build_rechecks_job
from mesh_assets.assets.plain import plain_definitions, pyspark_resources, written_by_plain_assets
from mesh_assets.assets.specs import RESOURCE_KEY, external_spec, upstream_spec
from mesh_assets.automation.conditions import output_condition
from mesh_assets.automation.sensors import domain_sensors
from mesh_assets.checks.external import build_external_checks
from mesh_assets.collector import collector_paused
from mesh_assets.dbt.catalog import tool_tables
from mesh_assets.graph.defaults import domains_defaults
from mesh_assets.graph.discovery import DEFS_FOLDER, DomainSpecs
from mesh_assets.graph.isolate import catalog_tables, discover_all
from mesh_assets.graph.own_domain import load_own_domain, load_own_domains
from mesh_assets.graph.resolve import MeshGraph, Table, TableKind
from mesh_assets.graph.validate import validate
from mesh_assets.maintenance.jobs import build_maintain_job, build_restore_job
from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.errors import SpecError, SpecValidationError, relative
from mesh_assets.model.product import DataProduct
from mesh_assets.run.readiness import Watermark, table_watermarks
from mesh_assets.settings import AlertSettings, MeshSettings, get_settings
from mesh_assets.storage.resource import MeshResource

RUN_EXECUTOR = dg.in_process_executor
"""A run's steps execute in the run's own process, one after another, sharing its SparkSession: Spark already
spreads each step over every core, and a process per step would load the code location and start (or connect)
a Spark driver once per step. A job that wants step processes sets ``executor_def`` itself."""


INVALIDATE_OP = "mark_invalid"


def invalidate_job_name(domain: str) -> str:
    return f"{domain}__invalidate"


def build_invalidate_job(
    domain: str, tables: MeshGraph, alerts: AlertSettings, plain: list[dg.AssetSpec] | None = None
) -> dg.JobDefinition:
    """``mesh invalidate`` and the UI's way to it: ``<domain>__invalidate`` invalidates a table of the domain
    (config: table, start, end, reason) and returns what it marked and the alerts it could not send.
    Suspects may be anywhere: the run walks ``tables`` (the whole mesh as this location resolved it, the other
    domains from the catalog) and the instance, and executes no other domain's code; ``plain``, the location's
    plain Dagster assets, add what they read. The backfill package is imported by the run, not when the location
    loads."""
    optional = {"start": dg.Field(str, is_required=False), "end": dg.Field(str, is_required=False)}

    @dg.op(name=f"{domain}__{INVALIDATE_OP}", config_schema={"table": str, "reason": str, **optional})
    def _invalidate(context):  # unannotated: Dagster cannot read a postponed annotation here
        from mesh_assets.assets.catalog import CatalogMesh
        from mesh_assets.backfill import BackfillError, parse_asset_key
        from mesh_assets.backfill.invalidate import failed_checks, invalidation, notify

        config = context.op_config
        table = config["table"] if "/" in config["table"] or "." in config["table"] else f"{domain}/{config['table']}"
        mesh = CatalogMesh.of(tables, plain or ())
        try:
            key = parse_asset_key(table, mesh.graph)
            if key.path[0] != domain:
                raise BackfillError(f"{key.to_user_string()} is not a table of {domain}")
            marked = invalidation(context.instance, mesh, key, config.get("start"), config.get("end"), config["reason"])
        except BackfillError as exc:
            raise dg.Failure(str(exc)) from None
        for m in marked:
            for evaluation in failed_checks(context.instance, m, f"run {context.run_id}") if m.held else ():
                context.log_event(evaluation)
            context.log.info(m.describe())
        problems = notify(mesh, marked, alerts, context.run_id, context.instance)
        for problem in problems:
            context.log.warning(problem)
        return marked, problems

    @dg.job(
        name=invalidate_job_name(domain),
        description=f"Invalidate published partitions of a {domain} table and mark what read them suspect.",
        tags={"mesh/invalidation": "true"},
    )
    def _job() -> None:
        _invalidate()

    return _job


def _product_definitions(graph: MeshGraph, product: DataProduct) -> dg.Definitions:
    """One product's assets (its outputs but the retired ones, which leave the code location, and its external
    tables' specs) and its external tables' checks; an external table a plain asset of the domain writes is that
    asset's (:mod:`~mesh_assets.assets.plain`)."""
    nodes, external = graph.by_product.get((product.domain, product.name), ([], []))
    external = [t for t in external if t.key not in _PLAIN_KEYS.get()]
    assets: list[dg.AssetsDefinition | dg.AssetSpec] = [
        build_output_asset(n, output_condition(n, _WATERMARK.get()), graph.consumers(n.domain, n.table.name))
        for n in nodes
        if n.table.status.deployed
    ]
    assets += [external_spec(product, t) for t in external]
    checks = [c for t in external if (c := build_external_checks(t)) is not None]
    return dg.Definitions(assets=assets, asset_checks=checks)


_RESOLVING: ContextVar[MeshGraph | None] = ContextVar("mesh_resolving", default=None)
_WATERMARK: ContextVar[Watermark | None] = ContextVar("mesh_watermark", default=None)
"""How the domain being built reads a watermark column's maximum: from the settings' warehouse."""
_PLAIN_KEYS: ContextVar[frozenset[dg.AssetKey]] = ContextVar("mesh_plain_keys", default=frozenset())
"""The keys the plain assets of the domain being built define: its products' components build under it too."""


def _from_component(product: DataProduct) -> bool:
    source = product.source_file
    return source is not None and source.name == "defs.yaml" and DEFS_FOLDER in source.parent.parts


def _component_definitions(graph: MeshGraph, folder: Path) -> dg.Definitions:
    """Everything the components in ``folder/defs`` build (products among them, from ``graph``), loaded by
    Dagster's component tree under a module name of this domain's own, so domains never share one. The tree is
    built from the defs folder, not its root, which would add a description of every installed library's
    component types (importing each library: 0.32 s) that a location does not serve."""
    folder = folder.resolve()
    module = ModuleType(f"mesh_domains.{folder.name}.{DEFS_FOLDER}")
    module.__path__ = [str(folder / DEFS_FOLDER)]
    module.__file__ = str(folder / DEFS_FOLDER / "__init__.py")
    token = _RESOLVING.set(graph)
    try:
        tree = dg.ComponentTree(defs_module=module, project_root=folder, code_location_name=folder.name)
        built = tree.build_defs(folder / DEFS_FOLDER)
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


@collector_paused()
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


def _dbt_models(domain: str, defaults: dict[str, DomainDefaults]) -> list[dg.AssetsDefinition]:
    """The dbt models ``domain`` owns, selected from the one dbt project by their ``meta.domain`` or folder (none
    when the manifest is not prepared). dagster-dbt, whose import costs seconds, is imported only by the
    locations of domains that own models."""
    from mesh_assets.dbt.nodes import models_of
    from mesh_assets.dbt.project import load_manifest, project_dir
    from mesh_assets.dbt.set_aside import parse_errors

    if errors := [error for _, error in parse_errors(project_dir(), {domain})]:
        raise SpecValidationError(errors)  # its model files dbt could not parse: the other domains load theirs
    try:
        if not models_of(load_manifest(), domain):
            return []
    except FileNotFoundError:
        return []
    from mesh_assets.dbt.assets import build_dbt_assets

    return build_dbt_assets(domain, defaults)


def _dbt_resources(models: list[dg.AssetsDefinition]) -> dict[str, object]:
    """The dbt resource, once, when any domain built has dbt models."""
    if not models:
        return {}
    from mesh_assets.dbt.assets import DBT_RESOURCE_KEY, dbt_resource

    return {DBT_RESOURCE_KEY: dbt_resource()}


def _domain_definitions(
    graph: MeshGraph,
    specs: DomainSpecs,
    dbt: list[dg.AssetsDefinition],
    plain: list[dg.AssetsDefinition],
    checks: list[dg.AssetChecksDefinition],
    settings: MeshSettings,
) -> dg.Definitions:
    """One domain's assets, checks and sensors, from the resolved graph; the products declared as components
    are built by their components, the domain's dbt models (``dbt``) by dagster-dbt, and the plain Dagster
    assets and checks its Python files define (``plain``, ``checks``) join them."""
    domain, folder = specs.domain, specs.folder
    external = graph.external_of(domain)
    observed = [t for t in external if t not in written_by_plain_assets(external, plain)]
    token = _PLAIN_KEYS.set(frozenset(k for a in plain for k in a.keys))
    warehouse = settings.warehouse_uri.rstrip("/")
    reader = _WATERMARK.set(table_watermarks(lambda d, t: f"{warehouse}/{d}/{t}", settings.s3))
    try:
        parts = [_product_definitions(graph, p) for p in graph.products_of(domain) if not _from_component(p)]
        if any((folder / DEFS_FOLDER).glob("**/defs.yaml")):
            parts.append(_component_definitions(graph, folder))
    finally:
        _PLAIN_KEYS.reset(token)
        _WATERMARK.reset(reader)
    tool_keys = [k for models in dbt for k in models.keys]
    parts.append(dg.Definitions(assets=[*dbt, *plain], asset_checks=checks))
    nodes = [n for n in graph.nodes_of(domain) if n.table.status.deployed]
    plain_keys = [k for a in plain for k in a.keys]
    sensors = domain_sensors(domain, nodes, observed, settings.automation, tool_keys, settings.alerts, plain_keys)
    built = [n.table for n in nodes] + [t for k in tool_keys if (t := graph.get(*k.path)) is not None]
    readers = {t.key: graph.readers(t.domain, t.name) for t in [*built, *observed]}
    checked = [t for t in observed if t.checks]
    if (alerts := build_failure_sensor(domain, built, settings.alerts, readers, checked)) is not None:
        sensors.append(alerts)
    if built or observed:
        sensors.append(build_alert_sensor(domain, built, observed, readers, settings.alerts))
    jobs = [job] if (job := build_rechecks_job(domain, nodes)) is not None else []
    plain_specs = [spec for a in plain for spec in a.specs]
    jobs += [build_invalidate_job(domain, graph, settings.alerts, plain_specs)] if nodes else []
    schedules = []
    if (maintenance := build_maintain_job(domain, nodes, graph, settings.maintenance)) is not None:
        jobs += [maintenance[0], build_restore_job(domain, graph, settings.alerts)]
        schedules.append(maintenance[1])
    return dg.Definitions.merge(*parts, dg.Definitions(sensors=sensors, jobs=jobs, schedules=schedules))


def _resolved(
    domains: dict[str, DomainSpecs],
    only: set[str] | None,
    extra: list[Table],
    judged: dict[str, list[SpecError]] | None = None,
) -> MeshGraph:
    """The mesh resolved, once every product of ``only`` (default: every domain) passed governance (``judged``:
    domains' own errors already found for their content)."""
    graph = MeshGraph(domains, extra)
    errors = validate(domains, only, graph=graph, judged=judged)
    if errors:
        raise SpecValidationError(errors)
    return graph


def _room_for_dagsters_recursion(depth: int) -> None:
    """Dagster builds a job's graph by recursing once per level of a chain of assets (``graph_definition.py``),
    from a start that string hashing orders, so a chain about 1,000 deep loaded or raised RecursionError at
    Python's default limit depending on ``PYTHONHASHSEED``. The limit is raised, never lowered, to fit the
    deepest chain (Python 3.11 calls between Python functions take no C stack)."""
    needed = 1_000 + 2 * depth
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


@collector_paused()
def build_definitions(
    domains: dict[str, DomainSpecs],
    only: set[str] | None = None,
    extra: list[Table] | None = None,
    settings: MeshSettings | None = None,
    *,
    dbt: bool = False,
    judged: dict[str, list[SpecError]] | None = None,
    resources: Mapping[str, object] | None = None,
) -> dg.Definitions:
    """Validate, resolve, then build the definitions of ``only`` (default: every domain).

    With ``dbt``, each domain's dbt models join its definitions, and its automation and failure sensors.
    ``settings`` default to the process's, read here, at the root, and passed to every part that needs them.
    ``resources`` are the domain's own, for its plain Dagster assets (Mesh's ``mesh`` and ``dbt`` stay Mesh's).
    ``judged`` are domains' own errors already found for their current content.
    """
    settings = settings or get_settings()
    domains_dir = next(iter(domains.values())).folder.parent if domains else settings.domains_dir
    extra = tool_tables(domains_dir) if extra is None else extra
    quiet_check_gating_notice()
    graph = _resolved(domains, only, extra, judged)
    _room_for_dagsters_recursion(graph.longest_chain())

    chosen = [name for name in domains if only is None or name in only]
    defaults = domains_defaults(domains_dir) if dbt else {}
    models = {name: _dbt_models(name, defaults) if dbt else [] for name in chosen}
    plain = {name: plain_definitions(domains[name].modules) for name in chosen}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        chosen = [name for name in domains if only is None or name in only]
        parts = [_domain_definitions(graph, domains[name], models[name], *plain[name], settings) for name in chosen]
    built = [m for ms in models.values() for m in ms]
    own = [a for assets, _ in plain.values() for a in assets]
    elsewhere = _defined_elsewhere(graph, chosen, {k for m in [*built, *own] for k in m.keys}, own)
    resources = {**pyspark_resources(own), **(resources or {}), RESOURCE_KEY: MeshResource(), **_dbt_resources(built)}
    return dg.Definitions.merge(*parts, dg.Definitions(assets=elsewhere, resources=resources, executor=RUN_EXECUTOR))


def _defined_elsewhere(
    graph: MeshGraph, chosen: list[str], tool_keys: set[dg.AssetKey], plain: list[dg.AssetsDefinition]
) -> list[dg.AssetSpec]:
    """The tables the ``chosen`` domains' outputs and ``plain`` assets read that other code locations define
    (another domain's, or a dbt model not built here), with their partitions: each domain's automation is
    evaluated against its own location's graph."""
    built = {t.key for t in graph.tables.values() if t.domain in chosen and t.kind is not TableKind.DBT} | tool_keys
    read = {r.table.key: r.table for name in chosen for n in graph.nodes_of(name) for r in n.reads}
    for key in {k for a in plain for k in a.dependency_keys if len(k.path) == 2}:
        if (table := graph.get(*key.path)) is not None:
            read.setdefault(key, table)
    return [upstream_spec(table) for key, table in sorted(read.items()) if key not in built]


@collector_paused()
def domain_definitions(
    definitions_file: str | Path, *, resources: Mapping[str, object] | None = None
) -> dg.Definitions:
    """The code location of the domain whose ``definitions.py`` is ``definitions_file``: its products, its dbt
    models, its plain Dagster assets, its sensors and jobs; ``resources``: those its plain assets need besides
    Mesh's (``pyspark`` and ``lazy_pyspark`` are Mesh's session unless given here).

    Only this domain's files run here; the other domains are known from the catalog, whose missing entries
    are made in processes of their own, so another domain's files can neither stop nor hang this location.
    The domain's own validated YAML products are kept for its content hash, so an unchanged domain reloads
    without reading them again (:mod:`~mesh_assets.graph.own_domain`). Its dbt models' reads are judged as
    ``mesh validate`` judges them. Under ``dg check defs`` its spec errors are printed alone (:func:`_exit_with`).
    """
    folder = Path(definitions_file).resolve().parent
    settings = get_settings()
    try:
        others = discover_all(folder.parent, settings.home, settings.discovery_timeout_seconds, skip={folder.name})
        extra = tool_tables(folder.parent) + catalog_tables(others)
        own = load_own_domain(folder, settings.home)
        return build_definitions(
            {folder.name: own.specs},
            only={folder.name},
            extra=extra,
            settings=settings,
            dbt=True,
            judged={folder.name: own.errors},
            resources=resources,
        )
    except SpecValidationError as exc:
        if os.environ.get(VALIDATION_CLI) != "1":
            raise
        _exit_with(exc, folder.name)


VALIDATION_CLI = "DAGSTER_IS_DEFS_VALIDATION_CLI"
"""Set to ``1`` by ``dg check defs`` and ``dagster definitions validate``, as Dagster documents, for code that
behaves otherwise when only being validated."""


def _exit_with(exc: SpecValidationError, domain: str) -> NoReturn:
    """Report a domain's spec errors as ``mesh validate`` does and end the validating command with status 1.

    Dagster prints a location's load error with its stack under "Stack Trace:" whatever the exception (at least
    the frame that caught it, as "[n dagster system frames hidden]"), and a bad spec is the user's to fix, not a
    fault of code: under the validation command the errors alone are printed, one per line (file, line, field),
    and the process exits with the status Dagster gives a location that fails to load. A workspace of several
    locations loads each in a code server of its own: that server prints the errors and exits, the others are
    still checked, and Dagster adds that the server exited with code 1.
    """
    print(exc, file=sys.stderr)
    print(f"{domain}: the domain's specs do not pass `mesh validate`: its code location is not loaded", file=sys.stderr)
    raise SystemExit(1) from None


@collector_paused()
def mesh_definitions(domains_dir: Path | None = None, *, dbt: bool | None = None) -> dg.Definitions:
    """Every domain in one Definitions: for the demo, tests and tools that see the whole mesh.

    Each domain's dbt models join when ``dbt`` is true (default: for the configured mesh, if its manifest is
    prepared).
    """
    settings = get_settings()
    folder = domains_dir or settings.domains_dir
    extra = tool_tables(folder)
    with_dbt = dbt if dbt is not None else (domains_dir is None and bool(extra))
    own = load_own_domains(folder, settings.home)
    return build_definitions(
        {name: domain.specs for name, domain in own.items()},
        extra=extra,
        settings=settings,
        dbt=with_dbt,
        judged={name: domain.errors for name, domain in own.items()},
    )


def executable_assets(defs: dg.Definitions) -> list[dg.AssetsDefinition]:
    """The assets of ``defs`` a run computes (external tables' specs left out): what ``dg.materialize`` takes."""
    return [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) and a.is_executable]
