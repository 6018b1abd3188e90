"""Each domain discovered on its own: a domain's Python runs in a process of its own, never in another's.

A code location runs its own domain's files and learns every other domain from the catalog
(:mod:`mesh_assets.graph.catalog`). A missing entry is made here: a domain with Python product files is
loaded and checked by ``python -m mesh_assets.graph.isolate`` in a child process with a time limit, so a file
that calls ``sys.exit``, ``os._exit``, raises, or blocks on import costs that domain its entry (an error naming
the domain and the file) and nothing else. A domain of YAML specs only runs no code and is read in-process
(the YAML loader is bounded, see :mod:`mesh_assets.graph.yaml_lines`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mesh_assets.graph.catalog import DomainEntry, content_key, entry_of, read_entry, write_entry
from mesh_assets.graph.discovery import domain_folders, is_python_product, load_domain
from mesh_assets.graph.resolve import MeshGraph, Table
from mesh_assets.graph.validate import local_errors, mesh_errors
from mesh_assets.model.errors import SpecError

STDERR_TAIL = 400
"""Characters of a failed child's standard error quoted in its error."""
STARTUP_SECONDS = 300.0
"""How long a child may take to start (import Mesh) before it loads its first file."""
POLL_SECONDS = 0.05


def discover(folder: Path, home: Path, timeout: float, *, retry: bool = False) -> DomainEntry:
    """The catalog entry of the domain in ``folder``: stored for its current content, else made and stored.

    ``retry`` makes again an entry whose discovery exited or hung (``mesh validate`` does; code locations
    take the stored verdict rather than wait for a hanging domain at every load).
    """
    key = content_key(folder)
    entry = read_entry(home, key)
    if entry is not None and (entry.complete or not retry):
        return entry
    if any(is_python_product(p) for p in folder.iterdir()):
        entry = _discover_in_child(folder, key, timeout)
    else:
        specs = load_domain(folder)
        entry = entry_of(folder.name, key, specs.products, local_errors(specs))
    write_entry(home, entry)
    return entry


def discover_all(
    domains_dir: Path, home: Path, timeout: float, *, skip: set[str] = frozenset(), retry: bool = False
) -> dict[str, DomainEntry]:
    """The entries of every domain under ``domains_dir`` but ``skip``, made in parallel where missing."""
    folders = [f for f in domain_folders(domains_dir) if f.name not in skip]
    if not folders:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(folders), os.cpu_count() or 2)) as pool:
        entries = pool.map(lambda f: discover(f, home, timeout, retry=retry), folders)
        return {f.name: e for f, e in zip(folders, entries, strict=True)}


def catalog_tables(entries: dict[str, DomainEntry]) -> list[Table]:
    return [t for entry in entries.values() for t in entry.tables]


def catalog_graph(entries: dict[str, DomainEntry], extra: Iterable[Table] = ()) -> MeshGraph:
    """The mesh the entries (and ``extra``, other tools' tables) describe, resolved from their tables alone."""
    return MeshGraph({}, [*catalog_tables(entries), *extra])


def validate_catalog(
    entries: dict[str, DomainEntry],
    extra: Iterable[Table] = (),
    only: set[str] | None = None,
    graph: MeshGraph | None = None,
) -> list[SpecError]:
    """Every error of the mesh the entries describe (restricted to ``only`` if given): each domain's own, found
    where its code ran, and the rules between tables, on the tables alone (``graph``, when the caller has it)."""
    graph = graph or catalog_graph(entries, extra)
    errors = [e for name, entry in entries.items() if only is None or name in only for e in entry.errors_here()]
    return sorted(set(errors + mesh_errors(graph, only)))


def _discover_in_child(folder: Path, key: str, timeout: float) -> DomainEntry:
    with tempfile.TemporaryDirectory(prefix="mesh-discover-") as scratch:
        out, progress, stderr = Path(scratch, "entry.json"), Path(scratch, "loading"), Path(scratch, "stderr")
        command = [sys.executable, "-m", "mesh_assets.graph.isolate", str(folder), key, str(out), str(progress)]
        with stderr.open("wb") as err:
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
            status = _wait(child, progress, timeout)
        if status == 0 and out.exists():
            return DomainEntry.from_json(json.loads(out.read_text()))
        where = Path(progress.read_text()) if progress.exists() else folder
        if status is None:
            why = f"did not finish loading within {timeout:g} s (stopped while loading this file)"
        else:
            tail = stderr.read_text(errors="replace")[-STDERR_TAIL:].strip()
            why = f"ended its process (exit status {status}) while loading this file" + (f": {tail}" if tail else "")
    message = f"domain {folder.name} {why}; its tables are unknown to the other domains until it loads"
    return DomainEntry(folder.name, key, (), (SpecError(str(where.resolve()), None, "", message),), complete=False)


def _wait(child: subprocess.Popen, progress: Path, timeout: float) -> int | None:
    """The child's exit status, or None when it was stopped: ``timeout`` counts from its first product file
    (Mesh's own start-up, however slow a busy machine makes it, is not the domain's fault)."""
    started, loading = time.monotonic(), None
    while True:
        try:
            return child.wait(POLL_SECONDS)
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if loading is None and progress.exists():
                loading = now
            if now - (loading or started) > (timeout if loading else STARTUP_SECONDS):
                child.kill()
                child.wait()
                return None


def _child(folder: Path, key: str, out: Path, progress: Path) -> None:
    """In the child: load and check one domain, write its entry, and end at once (no stray thread or exit
    hook of a product file can keep the process, or change its status, after the entry is written)."""
    specs = load_domain(folder, on_file=lambda path: progress.write_text(str(path.resolve())))
    entry = entry_of(folder.name, key, specs.products, local_errors(specs))
    out.write_text(json.dumps(entry.to_json()))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    _child(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
