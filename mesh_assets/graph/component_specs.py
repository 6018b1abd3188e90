"""Product specs inside Dagster component files: ``defs.yaml`` holds ``type:`` and the spec as ``attributes:``."""

from __future__ import annotations

from typing import Any

from mesh_assets.graph.yaml_lines import Lines


def within(data: dict[str, Any], lines: Lines, at: tuple[str, ...]) -> tuple[Any, Lines]:
    """The part of a document found at ``at``, with its lines keyed from there, so errors name the spec's own
    fields (``tables.0.table``) on the lines of the component file."""
    part: Any = data
    for key in at:
        part = part.get(key) if isinstance(part, dict) else None
    return ({} if part is None else part), {k[len(at) :]: v for k, v in lines.items() if k[: len(at)] == at}
