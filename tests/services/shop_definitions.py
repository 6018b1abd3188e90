"""The ``shop`` fixture mesh as a code location (what a daemon loads): Mesh's resource reads the warehouse
from settings, like a deployed domain's."""

from pathlib import Path

from mesh_assets import mesh_definitions

defs = mesh_definitions(Path(__file__).resolve().parents[1] / "fixtures" / "services" / "domains")
