"""Each domain's maintenance in Dagster: ``<domain>__maintain`` (config: the tables, default every output of the
domain; whether to compact and to clean up), its schedule ``<domain>__maintenance``, and ``<domain>__restore``,
which ``mesh restore`` runs and the UI's Launchpad launches.

These are op jobs: a compaction or clean-up records no materialization, so no automation condition downstream
sees anything new (each table's files after the pass are recorded on its asset as an observation, which neither
staleness nor automation counts for a materialized asset); a restore records the materializations of the
partitions it brought back. The maintenance
op works on one table at a time holding the table's pool (:mod:`~mesh_assets.maintenance.slots`), so it never
commits beside a run writing the table.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from mesh_assets.assets.specs import RESOURCE_KEY, table_pool
from mesh_assets.graph.resolve import MeshGraph, Node
from mesh_assets.settings import MaintenanceSettings

MAINTAIN_OP = "maintain_tables"
RESTORE_OP = "restore_table"


def maintain_job_name(domain: str) -> str:
    return f"{domain}__maintain"


def restore_job_name(domain: str) -> str:
    return f"{domain}__restore"


def _shown(done: Any) -> dict[str, Any]:
    """One table's files after the pass, as the run's output shows them."""
    files = done.files
    if files is None:
        return {"table": done.ref, "written": False}
    return {
        "table": done.ref,
        "files": files.files,
        "small_files": files.small,
        "bytes": files.bytes,
        "last_compaction": files.last_compaction.isoformat() if files.last_compaction else None,
        "last_clean_up": files.last_clean_up.isoformat() if files.last_clean_up else None,
    }


def build_maintain_job(
    domain: str, nodes: list[Node], graph: MeshGraph, settings: MaintenanceSettings
) -> tuple[dg.JobDefinition, dg.ScheduleDefinition] | None:
    """The domain's maintenance job and its schedule; None without outputs."""
    tables = {n.table.name: n.table for n in nodes}
    if not tables:
        return None
    config = {
        "tables": dg.Field([str], default_value=[]),
        "compact": dg.Field(bool, default_value=True),
        "vacuum": dg.Field(bool, default_value=True),
    }

    @dg.op(name=f"{domain}__{MAINTAIN_OP}", config_schema=config, required_resource_keys={RESOURCE_KEY})
    def _maintain(context):  # unannotated: Dagster cannot read a postponed annotation here
        from mesh_assets.maintenance.feeds import feed_readers
        from mesh_assets.maintenance.maintain import maintain
        from mesh_assets.maintenance.slots import table_slot
        from mesh_assets.storage.environment import clones_by_table

        mesh = getattr(context.resources, RESOURCE_KEY)
        names = context.op_config["tables"] or sorted(tables)
        unknown = sorted(set(names) - set(tables))
        if unknown:
            raise dg.Failure(f"{domain} has no output {', '.join(unknown)}: {', '.join(sorted(tables))}")
        done = []
        clones = clones_by_table(mesh.settings.home)
        for name in names:
            table = tables[name]
            readers = [t.key for t in graph.readers(table.domain, table.name)]
            pool = table_pool(domain, name)
            with table_slot(context.instance, pool, context.run_id, f"{context.op_handle}[{name}]"):
                done.append(
                    maintain(
                        mesh.spark,
                        context.instance,
                        mesh.registry,
                        table,
                        readers,
                        settings,
                        compaction=context.op_config["compact"],
                        clean_up=context.op_config["vacuum"],
                        cloned_in=clones.get(f"{table.domain}/{table.name}", ()),
                        feed_readers=feed_readers(graph, table),
                    )
                )
            context.log.info(done[-1].describe())
            if done[-1].files is not None:  # an observation: no new data, nothing goes stale or runs downstream
                context.log_event(dg.AssetObservation(asset_key=table.key, metadata=done[-1].files.metadata()))
        context.add_output_metadata({"tables": dg.MetadataValue.json([_shown(d) for d in done])})
        return done

    @dg.job(
        name=maintain_job_name(domain),
        description=f"Compact {domain}'s tables where small files piled up, and clean up with their retention.",
        tags={"mesh/maintenance": "true"},
    )
    def _job() -> None:
        _maintain()

    schedule = dg.ScheduleDefinition(
        name=f"{domain}__maintenance",
        job=_job,
        cron_schedule=settings.cron,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING if settings.scheduled else dg.DefaultScheduleStatus.STOPPED,
    )
    return _job, schedule


def build_restore_job(domain: str, graph: MeshGraph, alerts: Any) -> dg.JobDefinition:
    """``<domain>__restore`` (config: table, and to_version or to_timestamp): restores a table of the domain and
    marks what read the withdrawn versions suspect."""
    optional = {"to_version": dg.Field(int, is_required=False), "to_timestamp": dg.Field(str, is_required=False)}

    @dg.op(
        name=f"{domain}__{RESTORE_OP}",
        config_schema={"table": str, **optional},
        required_resource_keys={RESOURCE_KEY},
    )
    def _restore(context):  # unannotated: Dagster cannot read a postponed annotation here
        from mesh_assets.maintenance.restore_run import restore_in_run
        from mesh_assets.maintenance.slots import table_slot

        name = context.op_config["table"].replace(".", "/").split("/")[-1]
        with table_slot(context.instance, table_pool(domain, name), context.run_id, str(context.op_handle)):
            return restore_in_run(context, getattr(context.resources, RESOURCE_KEY), domain, graph, alerts)

    @dg.job(
        name=restore_job_name(domain),
        description=f"Restore a {domain} table to an earlier Delta version and mark what read the later ones suspect.",
        tags={"mesh/restore": "true"},
    )
    def _job() -> None:
        _restore()

    return _job
