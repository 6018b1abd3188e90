"""A domain's dbt models as Mesh assets, built by the domain's own code location, daily-partitioned like the mesh.

- one dbt project; each domain owns the models whose ``meta.domain`` (else their folder) names it, and its
  code location builds them: one multi-asset per partition range (a model's ``meta.start_date`` and
  ``meta.end_date``, else the domain's ``domain.yaml``), which is usually one per domain;
- keys ``[domain, model]``; dbt sources are the platform tables' own keys, so the graph is one graph;
- a run's partition window reaches dbt as the environment variables ``MESH_DBT_MIN_DATE`` /
  ``MESH_DBT_MAX_DATE`` (a new ``--vars`` would make dbt parse the whole project on every run); a range is one
  run (``BackfillPolicy.single_run()``);
- dbt compiles and Mesh publishes: each model's rows are staged, its dbt tests (asset checks, blocking when
  their severity is ``error``) run on each partition's rows, and only the partitions that passed replace
  theirs, in one commit (:mod:`mesh_assets.dbt.gate`); re-running a day is idempotent. That needs dbt on
  Mesh's own Spark session (the ``session`` target); any other target is refused
  (:func:`~mesh_assets.dbt.project.dbt_target`);
- ``full_refresh: true`` in run config (or the run tag ``mesh/rebuild=true`` of ``mesh rebuild``) recreates the
  selected models from the run's window;
- an ``incremental`` model with ``incremental_strategy: merge`` is a ``merge`` table and a snapshot a ``history``
  table (:func:`~mesh_assets.dbt.nodes.model_kind`), committed by their kind's strategy after the gate.
"""

import sys
import warnings
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
from dagster_dbt import DbtCliResource, DbtProject, dbt_assets

from mesh_assets.compat import DBT_UNIQUE_ID_METADATA_KEY as UNIQUE_ID
from mesh_assets.dbt.nodes import DBT_GRAIN, is_model, model_domain, model_end, model_start, models_of
from mesh_assets.dbt.project import dbt_env, load_manifest, mesh_dbt_project
from mesh_assets.dbt.translator import MeshDbtTranslator
from mesh_assets.engine.identity import identify_run, use_identity
from mesh_assets.engine.session import scoped_conf
from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.errors import Refused
from mesh_assets.model.names import check_identifier
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.resource import MeshResource
from mesh_assets.storage.schema import rebuild_requested
from mesh_assets.storage.tables import TableNotFoundError

if TYPE_CHECKING:
    from mesh_assets.graph.resolve import MeshGraph

RESOURCE_KEY = "mesh"
DBT_RESOURCE_KEY = "dbt"
DBT_POOL = "mesh/dbt"
DBT_SESSION_CONF = {"spark.sql.ansi.enabled": "false"}


class DbtRunConfig(dg.Config):
    """Run config of the dbt assets."""

    full_refresh: bool = False


def sources_read(manifest: dict[str, Any], models: set[str]) -> list[tuple[str, str]]:
    """The ``(schema, name)`` of the dbt sources the ``models`` (unique ids) read."""
    read = {parent for uid in models for parent in (manifest["nodes"][uid].get("depends_on") or {}).get("nodes", [])}
    return sorted({(s["schema"], s["name"]) for uid, s in manifest["sources"].items() if uid in read})


def _models(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted(
        {
            (model_domain(n), n["alias"] or n["name"])
            for n in manifest["nodes"].values()
            if is_model(n) and n["config"].get("materialized") in {"incremental", "table", "snapshot"}
        }
    )


def register_tables(mesh: MeshResource, manifest: dict[str, Any], models: set[str]) -> None:
    """Make the dbt sources ``models`` read, and every existing model, resolvable as ``<domain>.<table>`` in
    Mesh's session.

    Those sources must have been published (another domain's models may read sources not published yet); models
    are registered when their Delta table exists, so dbt's ``is_incremental()`` sees them and the models reading
    them read what was published.
    """
    spark, registry = mesh.spark, mesh.registry
    for schema, name in sources_read(manifest, models):
        try:
            registry.register(spark, check_identifier(schema), check_identifier(name))
        except TableNotFoundError as exc:
            raise dg.Failure(description=f"dbt source {schema}.{name} has never been published: {exc}") from None
    for domain, name in _models(manifest):
        if registry.exists(spark, domain, name):
            registry.register(spark, domain, name)


def mesh_tables(mesh: MeshResource) -> "MeshGraph":
    """Every table of the mesh (the domains' products and the dbt models), for the step's readiness, grants
    and masks."""
    from mesh_assets.dbt.catalog import dbt_tables
    from mesh_assets.graph.defaults import domains_defaults
    from mesh_assets.graph.isolate import catalog_tables, discover_all
    from mesh_assets.graph.resolve import MeshGraph

    settings = mesh.settings
    entries = discover_all(settings.domains_dir, settings.home, settings.discovery_timeout_seconds)
    defaults = domains_defaults(settings.domains_dir)
    return MeshGraph({}, [*catalog_tables(entries), *dbt_tables(defaults=defaults)])


def unready_models(
    context: dg.AssetExecutionContext, mesh: MeshResource, graph: "MeshGraph"
) -> dict[dg.AssetKey, dict[str | None, list[str]]]:
    """Per selected model, the run's partitions whose inputs from outside the dbt assets (the platform's
    tables: dbt sources) are not published or have not passed their blocking checks, or, read whole, are older
    than the model's domain allows (``input_freshness_hours`` in its ``domain.yaml``, else its tier's in
    ``domains/tiers.yaml``), with the reasons."""
    from mesh_assets.graph.defaults import domains_defaults
    from mesh_assets.model.product import Input
    from mesh_assets.run.layers import records_for
    from mesh_assets.run.readiness import landed_keys, unready

    defaults = domains_defaults(mesh.settings.domains_dir)
    own = set(context.assets_def.keys)
    rng = context.partition_key_range
    part = PartitionRange.from_keys(DBT_GRAIN, rng.start, rng.end)
    out: dict[dg.AssetKey, dict[str | None, list[str]]] = {}
    records = records_for(context.instance, mesh.environment)  # in an environment: production's, for its inputs
    for key in sorted(context.selected_asset_keys):
        reads = []
        for dep in sorted(set(context.assets_def.asset_deps.get(key, ())) - own):
            info = graph.get(*dep.path) if len(dep.path) == 2 else None
            if info is None:
                raise dg.Failure(
                    description=f"dbt model {key.to_user_string()} reads {dep.to_user_string()}, "
                    "which is not a table of the mesh"
                )
            reads.append((Input(table=".".join(dep.path)), info))
        domain = defaults.get(key.path[0]) if len(key.path) == 2 else None
        hours = domain.under({}).get("input_freshness_hours") if domain is not None else None  # or its tier's
        found = unready(context.instance, reads, part, landed=landed_keys(mesh), default_hours=hours, records=records)
        if found:
            out[key] = found
    return out


def window_vars(context: dg.AssetExecutionContext) -> dict[str, str]:
    """The run's days as dbt's models read them (``var('min_date')`` .. ``var('max_date')``, inclusive)."""
    rng = context.partition_key_range
    days = PartitionRange.from_keys(DBT_GRAIN, rng.start, rng.end)
    return {"min_date": days.start.date().isoformat(), "max_date": days.end.date().isoformat()}


def build_dbt_assets(
    domain: str,
    defaults: Mapping[str, DomainDefaults],
    project: DbtProject | None = None,
    manifest_path: Path | None = None,
) -> list[dg.AssetsDefinition]:
    """The dbt models ``domain`` owns as daily-partitioned, single-run-backfilled multi-assets, one per partition
    range (``defaults``: every domain's, for the partition ranges and owners of the models); none when the
    domain owns no model."""
    project = project or mesh_dbt_project()
    manifest = load_manifest(manifest_path or Path(project.manifest_path))
    by_range: dict[tuple[date, date | None], list[str]] = {}
    for node in models_of(manifest, domain):
        span = (model_start(node, defaults), model_end(node, defaults))
        by_range.setdefault(span, []).append("fqn:" + ".".join(node["fqn"]))
    name = f"{check_identifier(domain)}__dbt_models"
    return [
        _dbt_models(
            f"{name}_{start:%Y%m%d}" + (f"_{end:%Y%m%d}" if end else "") if len(by_range) > 1 else name,
            (start, end),
            " ".join(select),
            project,
            manifest,
            defaults,
        )
        for (start, end), select in sorted(by_range.items(), key=lambda item: (item[0][0], item[0][1] or date.max))
    ]


def _dbt_models(
    name: str,
    span: tuple[date, date | None],
    select: str,
    project: DbtProject,
    manifest: dict[str, Any],
    defaults: Mapping[str, DomainDefaults],
) -> dg.AssetsDefinition:
    """The models ``select`` names, whose partitions run from the first day of ``span`` to the day before its
    second (none: to today), as one multi-asset."""
    partitions_def = DBT_GRAIN.partitions_def(span[0], None, span[1])
    translator = MeshDbtTranslator(partitions_def, defaults)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)

        @dbt_assets(
            manifest=manifest,
            project=project,
            select=select,
            name=name,
            dagster_dbt_translator=translator,
            partitions_def=partitions_def,
            backfill_policy=dg.BackfillPolicy.single_run(),
            pool=DBT_POOL,
        )
        def dbt_models(
            context: dg.AssetExecutionContext, mesh: MeshResource, dbt: DbtCliResource, config: DbtRunConfig
        ):
            from mesh_assets.dbt.compiled import compile_step  # the run side: Spark, the write path
            from mesh_assets.dbt.publish import publish_models, refuse_past_ranges

            full_refresh = config.full_refresh or rebuild_requested(context.run.tags)
            domain = sorted(context.selected_asset_keys)[0].path[0]  # a location's models are its domain's
            identify_run(context, mesh.settings, domain)
            graph = mesh_tables(mesh)
            unready = unready_models(context, mesh, graph)
            specs = context.assets_def.specs_by_key
            selected = {specs[key].metadata[UNIQUE_ID] for key in context.selected_asset_keys}
            register_tables(mesh, manifest, selected)  # creates Mesh's session first: dbt reuses it
            try:
                use_identity(mesh.spark, mesh.settings, domain)  # its writes with its domain's storage keys
            except Refused as exc:
                raise dg.Failure(description=exc.description) from None
            # dbt-spark turns ANSI mode off on the session it shares; its models are written for that, and the
            # products run after them in this process must get the session back as it was.
            with scoped_conf(mesh.spark, DBT_SESSION_CONF):
                models = compile_step(
                    context,
                    manifest,
                    translator,
                    window=window_vars(context),
                    full_refresh=full_refresh,
                    dbt_dirs=(Path(dbt.project_dir), Path(dbt.profiles_dir or dbt.project_dir)),
                    target_path=(mesh.settings.environment_dir or mesh.settings.home) / "dbt" / "target",
                    env=dbt_env(mesh.registry.warehouse),
                )
                refuse_past_ranges(context, manifest, models, full_refresh=full_refresh)
                yield from publish_models(
                    context,
                    mesh,
                    models,
                    full_refresh=full_refresh,
                    unready=unready,
                    nodes=manifest["nodes"],
                    tables=graph,
                )

    return dbt_models


def dbt_resource(project: DbtProject | None = None) -> DbtCliResource:
    project = project or mesh_dbt_project()
    venv_dbt = Path(sys.executable).with_name("dbt")  # the virtualenv's dbt, even when it is not on PATH
    return DbtCliResource(
        project_dir=project,
        profiles_dir=str(project.profiles_dir),
        target=project.target,
        dbt_executable=str(venv_dbt) if venv_dbt.exists() else "dbt",
    )
