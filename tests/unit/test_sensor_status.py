"""Every domain's automation runs as soon as its code location loads, unless ``automation.enabled`` is false;
its failure alerts and its alert sensor (freshness objectives, external checks, retries) run unless
``alerts.enabled`` is false, whatever the automation (a manual run's owners are told too)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mesh_assets.alerts.sensor import failure_sensor_name
from mesh_assets.alerts.watch import alert_sensor_name
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.settings import get_settings

DOMAINS = Path(__file__).resolve().parents[2] / "domains"


def sensor_statuses() -> dict[str, dg.DefaultSensorStatus]:
    get_settings.cache_clear()
    try:
        defs = build_definitions(load_all(DOMAINS), extra=[])
    finally:
        get_settings.cache_clear()
    return {sensor.name: sensor.default_status for sensor in defs.sensors or []}


def producing_domains() -> list[str]:
    return sorted(name for name, specs in load_all(DOMAINS).items() if any(p.transformations for p in specs.products))


def alert_sensors(statuses: dict[str, dg.DefaultSensorStatus]) -> set[str]:
    """Each producing domain's run-failure sensor and alert sensor, and the alert sensors of the others."""
    every = {name for name in statuses if name.endswith("__alerts")}
    return {failure_sensor_name(domain) for domain in producing_domains()} | every


def test_every_domain_automation_sensor_runs_by_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("MESH_AUTOMATION__ENABLED", raising=False)
    statuses = sensor_statuses()
    domains = producing_domains()
    assert domains, "the example mesh has domains with products"
    for domain in domains:
        assert statuses[f"{domain}__automation"] == dg.DefaultSensorStatus.RUNNING
        assert statuses[failure_sensor_name(domain)] == dg.DefaultSensorStatus.RUNNING
        assert statuses[alert_sensor_name(domain)] == dg.DefaultSensorStatus.RUNNING
    assert set(statuses.values()) == {dg.DefaultSensorStatus.RUNNING}


def test_automation_can_be_switched_off_in_settings(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MESH_AUTOMATION__ENABLED", "false")
    statuses = sensor_statuses()
    alerts = alert_sensors(statuses)
    assert {f"{domain}__automation" for domain in producing_domains()} <= set(statuses)
    assert {statuses[name] for name in set(statuses) - alerts} == {dg.DefaultSensorStatus.STOPPED}
    assert {statuses[name] for name in alerts} == {dg.DefaultSensorStatus.RUNNING}


def test_failure_alerts_can_be_switched_off_in_settings(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("MESH_AUTOMATION__ENABLED", raising=False)
    monkeypatch.setenv("MESH_ALERTS__ENABLED", "false")
    statuses = sensor_statuses()
    alerts = alert_sensors(statuses)
    assert {statuses[name] for name in alerts} == {dg.DefaultSensorStatus.STOPPED}
    assert {statuses[name] for name in set(statuses) - alerts} == {dg.DefaultSensorStatus.RUNNING}
