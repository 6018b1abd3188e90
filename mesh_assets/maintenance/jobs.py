"""Each domain's maintenance in Dagster: ``<domain>__maintain`` (an op per output table, in the table's pool, so
it never commits beside a run writing the table), its schedule ``<domain>__maintenance``, and
``<domain>__restore``, which ``mesh restore`` runs and the UI's Launchpad launches.

These are op jobs: a compaction or clean-up records no materialization, so no automation condition downstream
sees anything new; a restore records the materializations of the partitions it brought back.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from mesh_assets.assets.specs import RESOURCE_KEY, table_pool
from mesh_assets.graph.resolve import MeshGraph, Node
from mesh_assets.settings import MaintenanceSettings


def maintain_job_name(domain: str) -> str:
    return f"{domain}__maintain"


def restore_job_name(domain: str) -> str:
    return f"{domain}__restore"


def maintain_op_name(domain: str, table: str) -> str:
    return f"{domain}__maintain__{table}"


def _maintain_op(domain: str, node: Node, graph: MeshGraph, settings: MaintenanceSettings) -> dg.OpDefinition:
    table = node.table
    config = {"compact": dg.Field(bool, default_value=True), "vacuum": dg.Field(bool, default_value=True)}

    @dg.op(
        name=maintain_op_name(domain, table.name),
        pool=table_pool(domain, table.name),
        config_schema=config,
        required_resource_keys={RESOURCE_KEY},
        tags={"mesh/maintenance": "true"},
    )
    def _maintain(context):  # unannotated: Dagster cannot read a postponed annotation here
        from mesh_assets.maintenance.maintain import maintain

        mesh = getattr(context.resources, RESOURCE_KEY)
        readers = [t.key for t in graph.readers(table.domain, table.name)]
        done = maintain(
            mesh.spark,
            context.instance,
            mesh.registry,
            table,
            readers,
            settings,
            compaction=context.op_config["compact"],
            clean_up=context.op_config["vacuum"],
        )
        context.log.info(done.describe())
        if done.files is not None:
            context.add_output_metadata(
                {"files": done.files.files, "bytes": done.files.bytes, "small_files": done.files.small}
            )
        return done

    return _maintain


def build_maintain_job(
    domain: str, nodes: list[Node], graph: MeshGraph, settings: MaintenanceSettings
) -> tuple[dg.JobDefinition, dg.ScheduleDefinition] | None:
    """The domain's maintenance job (an op per output table) and its schedule; None without outputs."""
    ops = [_maintain_op(domain, n, graph, settings) for n in nodes]
    if not ops:
        return None

    @dg.job(
        name=maintain_job_name(domain),
        description=f"Compact {domain}'s tables where small files piled up, and clean up with their retention.",
        tags={"mesh/maintenance": "true"},
    )
    def _job() -> None:
        for op in ops:
            op()

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
        name=f"{domain}__restore_table",
        config_schema={"table": str, **optional},
        required_resource_keys={RESOURCE_KEY},
    )
    def _restore(context):  # unannotated: Dagster cannot read a postponed annotation here
        from mesh_assets.maintenance.restore_run import restore_in_run

        return restore_in_run(context, getattr(context.resources, RESOURCE_KEY), domain, graph, alerts)

    @dg.job(
        name=restore_job_name(domain),
        description=f"Restore a {domain} table to an earlier Delta version and mark what read the later ones suspect.",
        tags={"mesh/restore": "true"},
    )
    def _job() -> None:
        _restore()

    return _job
