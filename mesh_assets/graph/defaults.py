"""Reading a domain's defaults file, ``domains/<domain>/domain.yaml``, over the platform's per tier,
``domains/tiers.yaml`` (see :mod:`mesh_assets.model.defaults`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from mesh_assets.graph.spec_errors import pydantic_errors, read_spec
from mesh_assets.model.defaults import DomainDefaults, TierDefaults
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.lifecycle import Tier

DEFAULTS_FILE = "domain.yaml"
TIERS_FILE = "tiers.yaml"
"""Beside the domains' folders: the platform's defaults per tier."""
_TIERS = TypeAdapter(dict[Tier, TierDefaults])


def load_defaults(folder: Path) -> tuple[DomainDefaults, list[SpecError]]:
    """The domain's defaults (none when it has no ``domain.yaml``) over the tiers', or the errors that make
    either unusable, each with the file, line and field."""
    tiers, errors = load_tiers(folder.parent)
    path = folder / DEFAULTS_FILE
    if not path.is_file():
        return DomainDefaults().with_tiers(tiers), errors
    data, lines, unreadable = read_spec(path)
    if unreadable or data is None:
        return DomainDefaults().with_tiers(tiers), errors + unreadable
    if not isinstance(data, dict):
        return DomainDefaults(), [*errors, SpecError(relative(path), 1, "", "domain defaults must be a YAML mapping")]
    try:
        return DomainDefaults.model_validate(data).with_tiers(tiers), errors
    except ValidationError as exc:
        return DomainDefaults(), errors + pydantic_errors(exc, path, lines, yaml_style=True)


def load_tiers(domains_dir: Path) -> tuple[dict[Tier, TierDefaults], list[SpecError]]:
    """The platform's defaults per tier (none without ``domains/tiers.yaml``), or the errors that make them
    unusable."""
    path = domains_dir / TIERS_FILE
    if not path.is_file():
        return {}, []
    data, lines, unreadable = read_spec(path)
    if unreadable or data is None:
        return {}, unreadable
    if not isinstance(data, dict):
        return {}, [SpecError(relative(path), 1, "", "tier defaults must be a YAML mapping of tiers (t1, t2, t3)")]
    try:
        return _TIERS.validate_python(data), []
    except ValidationError as exc:
        return {}, pydantic_errors(exc, path, lines, yaml_style=True)


def domains_defaults(domains_dir: Path) -> dict[str, DomainDefaults]:
    """Every domain's defaults, for what a domain owns outside its folder (its dbt models); a domain whose
    defaults do not validate has none here (its own location reports why)."""
    out = {}
    for folder in sorted(p for p in domains_dir.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        defaults, errors = load_defaults(folder)  # a domain without domain.yaml still has its tier's
        if not errors:
            out[folder.name] = defaults
    return out
