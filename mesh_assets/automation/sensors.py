"""Each domain's automation: its AutomationConditionSensorDefinition and its external-table observer."""

from __future__ import annotations

import dagster as dg

from mesh_assets.automation.deadlines import build_deadline_sensor
from mesh_assets.automation.observer import build_observer
from mesh_assets.settings import get_settings
from mesh_assets.spec.catalog import Catalog
from mesh_assets.spec.model import DataProduct

ENGINE_TAG = "mesh/engine"


def automation_sensor(domain: str) -> dg.AutomationConditionSensorDefinition:
    """Evaluates the automation conditions of ``domain``'s own assets (running unless disabled in settings)."""
    settings = get_settings().automation
    return dg.AutomationConditionSensorDefinition(
        name=f"{domain}__automation",
        target=dg.AssetSelection.tag("domain", domain),
        default_status=dg.DefaultSensorStatus.RUNNING if settings.enabled else dg.DefaultSensorStatus.STOPPED,
        minimum_interval_seconds=settings.interval_seconds,
        run_tags={ENGINE_TAG: settings.engine_tag} if settings.engine_tag else None,
        description=f"Requests {domain}'s partitions when their inputs are published (data-dependency automation).",
    )


def domain_sensors(domain: str, products: list[DataProduct], catalog: Catalog) -> list[dg.SensorDefinition]:
    sensors: list[dg.SensorDefinition] = [automation_sensor(domain)] if any(p.transformations for p in products) else []
    for extra in (build_observer(domain, products), build_deadline_sensor(domain, products, catalog)):
        if extra is not None:
            sensors.append(extra)
    return sensors
