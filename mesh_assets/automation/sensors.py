"""Each domain's automation: its AutomationConditionSensorDefinition and its external-table observer."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from mesh_assets.automation.deadlines import build_deadline_sensor
from mesh_assets.automation.observer import build_observer
from mesh_assets.engine.identity import IDENTITY_TAG
from mesh_assets.graph.resolve import Node, Table
from mesh_assets.settings import AlertSettings, AutomationSettings

ENGINE_TAG = "mesh/engine"


MAX_TARGETS = 500
"""Assets one sensor evaluated in a code server may target (Dagster's limit, ``MAX_ENTITIES``): a domain with
more gets one sensor per 500."""


def automation_sensors(
    domain: str, keys: Iterable[dg.AssetKey], settings: AutomationSettings, in_code_server: bool = True
) -> list[dg.AutomationConditionSensorDefinition]:
    """Evaluate the automation conditions of ``domain``'s own assets ``keys`` (running unless disabled in settings).

    ``in_code_server``: evaluated in the domain's own code server (``use_user_code_server``), against its own
    location's graph, so a slow or failing domain delays only its own tick; otherwise by the daemon, against the
    whole workspace. The target names the keys: Dagster resolves every sensor's target against the whole graph
    when a code location loads, and a tag or prefix selection would scan every asset once per domain.
    """
    ordered = sorted(set(keys))
    size = MAX_TARGETS if in_code_server else max(1, len(ordered))
    chunks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    where = "in its own code server" if in_code_server else "by the daemon"
    return [
        dg.AutomationConditionSensorDefinition(
            name=f"{domain}__automation" + (f"_{i + 1}" if i else ""),
            target=dg.AssetSelection.assets(*chunk),
            default_status=dg.DefaultSensorStatus.RUNNING if settings.enabled else dg.DefaultSensorStatus.STOPPED,
            minimum_interval_seconds=settings.interval_seconds,
            run_tags={IDENTITY_TAG: domain, **({ENGINE_TAG: settings.engine_tag} if settings.engine_tag else {})},
            use_user_code_server=in_code_server,
            description=f"Requests {domain}'s partitions when their inputs are published (data-dependency "
            f"automation), evaluated {where}.",
        )
        for i, chunk in enumerate(chunks)
    ]


def domain_sensors(
    domain: str,
    nodes: list[Node],
    external: list[Table],
    settings: AutomationSettings,
    tool_keys: Iterable[dg.AssetKey],
    alerts: AlertSettings,
    plain: Iterable[dg.AssetKey] = (),
) -> list[dg.SensorDefinition]:
    """The domain's sensors over its outputs ``nodes`` and its ``external`` tables; ``tool_keys`` are the
    domain's assets built by other tools (dbt models) beside it, ``plain`` its plain Dagster assets, which its
    automation sensor evaluates with its outputs."""
    outputs = [*(n.table.key for n in nodes), *plain]
    sensors: list[dg.SensorDefinition] = [*automation_sensors(domain, outputs, settings)] if outputs else []
    if models := list(tool_keys):
        # The daemon evaluates the dbt models' automation against the whole workspace: their gate on the blocking
        # checks of the other domains' tables they read is Dagster's, which needs those checks in the graph.
        sensors += automation_sensors(f"{domain}__dbt", models, settings, in_code_server=False)
    for extra in (build_observer(domain, external, settings), build_deadline_sensor(domain, nodes, settings, alerts)):
        if extra is not None:
            sensors.append(extra)
    return sensors
