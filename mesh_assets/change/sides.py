"""The meshes a plan compares: the working tree's, and a base, a git ref's domains loaded the way any domain is
(through the catalog: each domain's Python in a process of its own, with a time limit), never imported here."""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mesh_assets.graph.catalog import DomainEntry, ProductEntry, same_files
from mesh_assets.graph.isolate import catalog_graph, discover_all
from mesh_assets.graph.resolve import MeshGraph, Table, TableKind


class BaseUnavailable(RuntimeError):
    """The base cannot be read (not a git checkout, an unknown ref); nothing was planned."""


@dataclass(frozen=True)
class Side:
    """One mesh: its own tables (products' outputs and external tables) and products by key, and the graph that
    also holds other tools' tables (dbt models), for their consumers."""

    label: str
    graph: MeshGraph
    products: dict[tuple[str, str], ProductEntry] = field(default_factory=dict)

    @property
    def tables(self) -> dict[tuple[str, str], Table]:
        return {k: t for k, t in self.graph.tables.items() if t.kind is not TableKind.DBT}


def side_of(label: str, entries: dict[str, DomainEntry], extra: Iterable[Table] = ()) -> Side:
    """The side ``entries`` (and ``extra``, other tools' tables) describe."""
    products = {(p.domain, p.name): p for entry in entries.values() for p in entry.products}
    return Side(label, catalog_graph(entries, extra), products)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except OSError as exc:
        raise BaseUnavailable(f"git cannot run here ({exc.strerror or exc})") from None


def git_entries(
    ref: str, domains_dir: Path, timeout: float, working: dict[str, DomainEntry] | None = None
) -> dict[str, DomainEntry]:
    """Every domain of ``domains_dir`` as git ``ref`` has it (none when the ref has no such folder), exported to a
    temporary folder and discovered there; the working tree and its catalog are left as they are. A domain whose
    files are the same in the working tree takes its ``working`` entry instead of being discovered again (each
    Python domain in a process of its own): an unchanged repository is planned in seconds."""
    found = _git(domains_dir, "rev-parse", "--show-toplevel")
    if found.returncode != 0:
        raise BaseUnavailable(f"{domains_dir} is not in a git checkout, so there is no base {ref!r} to compare with")
    root = Path(found.stdout.decode().strip())
    folder = domains_dir.resolve().relative_to(root.resolve()).as_posix()
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise BaseUnavailable(f"unknown git ref {ref!r} in {root}")
    if _git(root, "cat-file", "-e", f"{ref}:{folder}").returncode != 0:
        return {}
    archive = _git(root, "archive", "--format=tar", ref, "--", folder)
    if archive.returncode != 0:
        raise BaseUnavailable(f"git archive {ref} failed: {archive.stderr.decode(errors='replace').strip()}")
    with tempfile.TemporaryDirectory(prefix="mesh-base-") as scratch:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(scratch, filter="data")
        base, working = Path(scratch) / folder, working or {}
        same = {name for name in working if (base / name).is_dir() and same_files(base / name, domains_dir / name)}
        found = discover_all(base, Path(scratch) / "home", timeout, skip=same, retry=True)
        return {name: found[name] if name in found else working[name] for name in sorted({*found, *same})}
