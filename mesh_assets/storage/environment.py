"""A named environment's manifest: which tables it computes (under its own root) and where production is.

An environment is an overlay on the settings: a table it computes lives under ``<home>/envs/<name>/warehouse``
and every other table resolves to its production location, read in place (no copy). The manifest is written when
the environment is built (``mesh apply --env``) and read by every process that runs in it (``MESH_ENVIRONMENT``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mesh_assets.model.names import check_identifier

MANIFEST = "environment.json"


class EnvironmentRefused(RuntimeError):
    """An environment that does not exist, or a request that would reach outside it: nothing was done."""


@dataclass(frozen=True)
class Environment:
    """One environment: its folder, the tables it computes (``domain/table``), those started from a clone of
    production, the partition range it was built for and where production's tables and instance are."""

    name: str
    root: str
    production_warehouse: str
    production_dagster_home: str
    tables: tuple[str, ...] = ()
    cloned: tuple[str, ...] = ()
    start: str | None = None
    end: str | None = None
    base: str = "instance"
    clone_versions: dict[str, int] = field(default_factory=dict)
    reads: dict[str, int] = field(default_factory=dict)
    """The production version of each table the environment reads in place, when it was built: what promotion
    compares with to tell an input that moved since."""

    @property
    def warehouse(self) -> str:
        return str(Path(self.root) / "warehouse")

    @property
    def dagster_home(self) -> Path:
        return Path(self.root) / "dagster"

    def computes(self, domain: str, table: str) -> bool:
        return f"{domain}/{table}" in self.tables

    def location(self, domain: str, table: str) -> str:
        """Where the environment's own copy of ``domain.table`` lives (whether or not it computes it)."""
        return str(Path(self.warehouse) / check_identifier(domain) / check_identifier(table))

    def save(self) -> None:
        Path(self.root).mkdir(parents=True, exist_ok=True)
        (Path(self.root) / MANIFEST).write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")


def environments_dir(home: Path) -> Path:
    return home / "envs"


def load(folder: Path) -> Environment:
    """The environment whose folder is ``folder``; :class:`EnvironmentRefused` when it was never built."""
    path = folder / MANIFEST
    if not path.is_file():
        raise EnvironmentRefused(f"no environment {folder.name!r} ({path} does not exist): mesh apply --env builds one")
    data = json.loads(path.read_text())
    return Environment(**{**data, "tables": tuple(data["tables"]), "cloned": tuple(data["cloned"])})


def listed(home: Path) -> list[Environment]:
    """Every environment built under ``home``, by name."""
    folder = environments_dir(home)
    found = sorted(p for p in folder.iterdir() if (p / MANIFEST).is_file()) if folder.is_dir() else []
    return [load(p) for p in found]


def clones_by_table(home: Path) -> dict[str, list[str]]:
    """``domain/table`` -> the environments under ``home`` whose shallow clone of it points at production's files:
    clean-up keeps those files while a clone exists (a VACUUM would leave the clone unreadable)."""
    held: dict[str, list[str]] = {}
    for env in listed(home):
        for ref in env.cloned:
            held.setdefault(ref, []).append(env.name)
    return held


def drop(home: Path, name: str) -> Path:
    """Delete the environment ``name``: its folder only (its tables, instance and manifest), never a path outside
    ``<home>/envs``; a clone's files are production's and are left where they are. Returns the folder deleted."""
    envs = environments_dir(home).resolve()
    given = envs / name
    folder = given.resolve()
    if given.is_symlink() or folder.parent != envs or not (folder / MANIFEST).is_file():
        raise EnvironmentRefused(f"{name!r} is not an environment under {envs}: nothing was deleted")
    shutil.rmtree(folder)
    return folder
