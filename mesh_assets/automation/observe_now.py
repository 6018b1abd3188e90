"""One observer tick in this process, with the check runs it requests, as the daemon would run them.

Consumers compute only from external partitions that an observer reported and whose blocking checks
passed. The daemon does that every ``observer_interval_seconds``; the demo, in-process pipelines and tests
that land data and materialize right away do it here, through the same sensors and check jobs.
"""

from __future__ import annotations

import dagster as dg

from mesh_assets.model.names import OBSERVER_SUFFIX
from mesh_assets.storage.resource import MeshResource

RESOURCE_KEY = "mesh"


def observe_now(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    mesh: MeshResource,
    cursors: dict[str, str | None] | None = None,
) -> dict[str, str | None]:
    """Tick every external-table observer of ``defs`` once and execute the check runs it requests.

    ``cursors`` (sensor name -> cursor) are the previous ticks' and the new ones are returned, so a caller
    that lands more data observes only the new commits next time.
    """
    cursors = dict(cursors or {})
    for sensor in defs.sensors or []:
        if not sensor.name.endswith(OBSERVER_SUFFIX):
            continue
        with dg.build_sensor_context(
            instance=instance, cursor=cursors.get(sensor.name), resources={RESOURCE_KEY: mesh}
        ) as context:
            result = sensor(context)
        cursors[sensor.name] = result.cursor
        for event in result.asset_events:
            instance.report_runless_asset_event(event)
        for request in result.run_requests:
            defs.resolve_job_def(request.job_name).execute_in_process(
                run_config=request.run_config,
                instance=instance,
                resources={RESOURCE_KEY: mesh},
                tags=request.tags,
                raise_on_error=False,
            )
    return cursors
