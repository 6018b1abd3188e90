"""The mesh catalog: what each domain declares, as data, so no domain has to run another domain's code.

A domain's entry holds its resolved tables (schema contract, partitioning, checks, inputs) and its errors.
It is stored under ``<home>/catalog/`` in a file named for a hash of everything it was made from: the
domain's files and Mesh's own source. A changed file is a new name, so an entry can never be stale; a
missing entry is made again (see :mod:`mesh_assets.graph.isolate`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

from mesh_assets.graph.resolve import DeclaredInput, Owner, Table, TableKind, declared_table, tables_of
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.product import Contact, ExternalTable, Output

FORMAT = 2


@dataclass(frozen=True)
class DomainEntry:
    """One domain as other domains see it: its tables and its errors (file paths absolute)."""

    domain: str
    key: str
    tables: tuple[Table, ...]
    errors: tuple[SpecError, ...]
    complete: bool = True
    """False when the domain's discovery exited or hung before reporting: ``mesh validate`` tries it again."""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "domain": self.domain,
            "key": self.key,
            "tables": [_table_json(t) for t in self.tables],
            "errors": [asdict(e) for e in self.errors],
            "complete": self.complete,
        }

    def errors_here(self) -> list[SpecError]:
        """The errors with file paths relative to the working directory, as every other error names them."""
        return [SpecError(relative(e.file), e.line, e.field, e.message) for e in self.errors]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DomainEntry:
        return cls(
            data["domain"],
            data["key"],
            tuple(_table_from_json(t) for t in data["tables"]),
            tuple(SpecError(**e) for e in data["errors"]),
            data["complete"],
        )


def entry_of(domain: str, key: str, products: list, errors: list[SpecError]) -> DomainEntry:
    """The entry of a domain discovered (and checked) in this process."""
    tables = tuple(t for p in products for t in tables_of(p))
    return DomainEntry(domain, key, tables, tuple(_absolute(e) for e in errors))


def _absolute(error: SpecError) -> SpecError:
    """Errors name files relative to the working directory; the catalog keeps them absolute."""
    return SpecError(str(Path(error.file).resolve()), error.line, error.field, error.message)


def _table_json(table: Table) -> dict[str, Any]:
    assert table.spec is not None
    return {
        "kind": table.kind.value,
        "domain": table.domain,
        "product": table.product,
        "owner": table.owner,
        "start_date": table.start_date.isoformat(),
        "end_date": table.end_date.isoformat() if table.end_date else None,
        "source_file": str(table.source_file) if table.source_file else None,
        "contacts": [c.model_dump() for c in table.contacts],
        "classification": table.classification,
        "line": table.line,
        "inputs": [list(ref) for ref in table.inputs],
        "declared": [asdict(d) for d in table.declared],
        "spec": table.spec.model_dump(mode="json", by_alias=True, exclude={"line"}),
    }


def _table_from_json(data: dict[str, Any]) -> Table:
    model = ExternalTable if data["kind"] == TableKind.EXTERNAL.value else Output
    owner = Owner(
        data["domain"],
        data["product"],
        data["owner"],
        date.fromisoformat(data["start_date"]),
        Path(data["source_file"]) if data["source_file"] else None,
        tuple(Contact.model_validate(c) for c in data["contacts"]),
        data["classification"],
        date.fromisoformat(data["end_date"]) if data["end_date"] else None,
    )
    reads: dict[str, tuple] = {}
    if model is Output:
        reads["inputs"] = tuple(tuple(ref) for ref in data["inputs"])
        reads["declared"] = tuple(DeclaredInput(**d) for d in data["declared"])
    return declared_table(model.model_validate(data["spec"]), owner, data["line"], **reads)


@cache
def rules_version() -> str:
    """A hash of Mesh's own source: a new release (new rules, new entry format) makes every entry anew."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def content_key(folder: Path) -> str:
    """The hash of a domain folder (its place, which entries' file paths name, and its files' names and bytes,
    ``__pycache__`` and hidden files left out) and of Mesh's source: what an entry is valid for."""
    digest = hashlib.sha256(f"{FORMAT}\0{rules_version()}\0{folder.resolve()}".encode())
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or any(part == "__pycache__" or part.startswith(".") for part in relative.parts):
            continue
        digest.update(f"\0{relative}\0".encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:32]


def entry_path(home: Path, key: str) -> Path:
    """Named by the key alone (it covers the domain's name, which may be anything a folder can be called)."""
    return home / "catalog" / f"{key}.json"


def read_entry(home: Path, key: str) -> DomainEntry | None:
    """The stored entry for exactly this content, if one was made."""
    path = entry_path(home, key)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
        return None
    return DomainEntry.from_json(data)


def write_entry(home: Path, entry: DomainEntry) -> None:
    """Store ``entry`` atomically: concurrent readers see the whole file or none."""
    path = entry_path(home, entry.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as handle:
        json.dump(entry.to_json(), handle)
    os.replace(handle.name, path)
