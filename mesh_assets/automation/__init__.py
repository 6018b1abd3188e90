"""Data-dependency-driven automation: conditions per output, a sensor per domain, external-table observers."""

from mesh_assets.automation.conditions import output_condition
from mesh_assets.automation.observer import build_observer, observe
from mesh_assets.automation.sensors import automation_sensors, domain_sensors

__all__ = ["automation_sensors", "build_observer", "domain_sensors", "observe", "output_condition"]
