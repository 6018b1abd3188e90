"""Reading a domain's defaults file, ``domains/<domain>/domain.yaml`` (see :mod:`mesh_assets.model.defaults`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from mesh_assets.graph.spec_errors import pydantic_errors, read_spec
from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.errors import SpecError, relative

DEFAULTS_FILE = "domain.yaml"


def load_defaults(folder: Path) -> tuple[DomainDefaults, list[SpecError]]:
    """The domain's defaults (none when it has no ``domain.yaml``), or the errors that make it unusable, each
    with the file, line and field."""
    path = folder / DEFAULTS_FILE
    if not path.is_file():
        return DomainDefaults(), []
    data, lines, unreadable = read_spec(path)
    if unreadable or data is None:
        return DomainDefaults(), unreadable
    if not isinstance(data, dict):
        return DomainDefaults(), [SpecError(relative(path), 1, "", "domain defaults must be a YAML mapping")]
    try:
        return DomainDefaults.model_validate(data), []
    except ValidationError as exc:
        return DomainDefaults(), pydantic_errors(exc, path, lines, yaml_style=True)


def domains_defaults(domains_dir: Path) -> dict[str, DomainDefaults]:
    """Every domain's defaults, for what a domain owns outside its folder (its dbt models); a domain whose
    defaults do not validate has none here (its own location reports why)."""
    out = {}
    for path in sorted(domains_dir.glob(f"*/{DEFAULTS_FILE}")):
        defaults, errors = load_defaults(path.parent)
        if not errors:
            out[path.parent.name] = defaults
    return out
