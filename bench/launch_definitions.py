"""The benchmark product as a code location, for runs launched in their own process."""

from pathlib import Path

from mesh_assets import mesh_definitions

defs = mesh_definitions(Path(__file__).resolve().parent / "domains", dbt=False)
