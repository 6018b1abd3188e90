"""Each domain's automation: its AutomationConditionSensorDefinition and its external-table observer."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from mesh_assets.automation.deadlines import build_deadline_sensor
from mesh_assets.automation.observer import build_observer
from mesh_assets.graph.resolve import Node, Table
from mesh_assets.settings import AlertSettings, AutomationSettings

ENGINE_TAG = "mesh/engine"


def automation_sensor(
    domain: str, keys: Iterable[dg.AssetKey], settings: AutomationSettings
) -> dg.AutomationConditionSensorDefinition:
    """Evaluates the automation conditions of ``domain``'s own assets ``keys`` (running unless disabled in settings).

    The target names the keys: Dagster resolves every sensor's target against the whole graph when a code
    location loads, and a tag or prefix selection would scan every asset once per domain.
    """
    return dg.AutomationConditionSensorDefinition(
        name=f"{domain}__automation",
        target=dg.AssetSelection.assets(*sorted(set(keys))),
        default_status=dg.DefaultSensorStatus.RUNNING if settings.enabled else dg.DefaultSensorStatus.STOPPED,
        minimum_interval_seconds=settings.interval_seconds,
        run_tags={ENGINE_TAG: settings.engine_tag} if settings.engine_tag else None,
        description=f"Requests {domain}'s partitions when their inputs are published (data-dependency automation).",
    )


def domain_sensors(
    domain: str,
    nodes: list[Node],
    external: list[Table],
    settings: AutomationSettings,
    tool_keys: Iterable[dg.AssetKey],
    alerts: AlertSettings,
) -> list[dg.SensorDefinition]:
    """The domain's sensors over its outputs ``nodes`` and its ``external`` tables; ``tool_keys`` are the
    domain's assets built by other tools (dbt models) beside it."""
    outputs = [n.table.key for n in nodes]
    keys = [*outputs, *tool_keys]
    sensors: list[dg.SensorDefinition] = [automation_sensor(domain, keys, settings)] if keys else []
    for extra in (build_observer(domain, external, settings), build_deadline_sensor(domain, nodes, settings, alerts)):
        if extra is not None:
            sensors.append(extra)
    return sensors
