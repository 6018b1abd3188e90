"""Product specs inside Dagster component files: ``defs.yaml`` holds ``type:`` and the spec as ``attributes:``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mesh_assets.graph.yaml_lines import Lines


def component_type(path: Path) -> str | None:
    """The ``type:`` of the component a ``defs.yaml`` declares (``None`` if it declares none or is unreadable;
    a file that is not a product is left to Dagster)."""
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError:
        return None
    return data.get("type") if isinstance(data, dict) else None


def within(data: dict[str, Any], lines: Lines, at: tuple[str, ...]) -> tuple[Any, Lines]:
    """The part of a document found at ``at``, with its lines keyed from there, so errors name the spec's own
    fields (``tables.0.table``) on the lines of the component file."""
    part: Any = data
    for key in at:
        part = part.get(key) if isinstance(part, dict) else None
    return ({} if part is None else part), {k[len(at) :]: v for k, v in lines.items() if k[: len(at)] == at}
