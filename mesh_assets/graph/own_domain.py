"""A code location's own domain, loaded as dbt's partial parsing loads a project.

The domain's validated YAML products, and the columns its queries return, are kept beside its catalog entry
(:mod:`mesh_assets.graph.catalog`) under the same content hash (the domain folder's files and Mesh's own
source), and only for content judged without error. A reload of an unchanged domain takes them from there
(its entry made), so it reads no YAML, validates no spec and parses no SQL; its Python files still run, since
their products are their code. A changed file is a new hash, so a kept product can never be stale; a domain
with errors is loaded and judged afresh every time.

The products are kept with ``pickle`` (a validated pydantic model unpickles without being validated again)
in Mesh's home, which a deployment trusts as it trusts the code: whoever writes there can change the mesh.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mesh_assets.graph.catalog import content_key, entry_of, entry_path, passed, write_entry
from mesh_assets.graph.discovery import DomainSpecs, YamlCache, domain_folders, load_domain
from mesh_assets.graph.queries import known_columns, remember
from mesh_assets.graph.revisions import sql_text
from mesh_assets.graph.validate import local_errors
from mesh_assets.model.errors import SpecError
from mesh_assets.model.product import SqlTransformation


@dataclass(frozen=True)
class OwnDomain:
    """The domain's specs and its own errors (discovery's, SQL, function parameters), judged for this content."""

    specs: DomainSpecs
    errors: list[SpecError]
    warm: bool
    """Whether the YAML products came from the kept ones."""


def _kept_path(home: Path, key: str) -> Path:
    return entry_path(home, key).with_suffix(".specs.pickle")


@dataclass(frozen=True)
class Kept:
    """What a domain's load keeps: its validated YAML products by file, and the columns its queries return."""

    products: YamlCache
    columns: dict[str, tuple[str, ...] | None]


def _read_kept(home: Path, key: str) -> Kept | None:
    try:
        with _kept_path(home, key).open("rb") as handle:
            kept = pickle.load(handle)
    except Exception:  # missing, or written by another Python or library version: load afresh
        return None
    return kept if isinstance(kept, Kept) else None


def _write_kept(home: Path, key: str, kept: Kept) -> None:
    path = _kept_path(home, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, suffix=".tmp", delete=False) as handle:
        pickle.dump(kept, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(handle.name, path)


def load_own_domain(folder: Path, home: Path) -> OwnDomain:
    """The domain in ``folder``, its YAML products kept (or taken) under its content hash in ``home``."""
    key = content_key(folder)
    kept = _read_kept(home, key)
    if kept is not None and entry_path(home, key).exists():  # kept only for content judged without error
        remember(kept.columns)
        specs = load_domain(folder, cache=kept.products)
        return OwnDomain(specs, list(specs.errors), warm=True)
    verdict = passed(home, key)
    products: YamlCache = {}
    specs = load_domain(folder, cache=products)
    errors = local_errors(specs)
    if verdict is None:
        write_entry(home, entry_of(folder.name, key, specs.products, errors))
    if not errors:
        queries = [
            sql_text(t, product)
            for product in specs.products
            for t in product.transformations
            if isinstance(t, SqlTransformation)
        ]
        _write_kept(home, key, Kept(products, known_columns(queries)))
    return OwnDomain(specs, errors, warm=False)


def load_own_domains(domains_dir: Path, home: Path) -> dict[str, OwnDomain]:
    """Every domain under ``domains_dir``, each as its own code location loads it: the whole mesh in one
    process (the demo, tests, ``mesh`` commands) reloads an unchanged domain from what was kept."""
    return {folder.name: load_own_domain(folder, home) for folder in domain_folders(domains_dir)}
