"""Spec errors that name the file, the line and the field, so a domain team can fix them without guessing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SpecError:
    """One error or warning; sorted by file, then line (an error without one, such as a Python product's
    external table or a whole file's, first), field and message."""

    file: str
    line: int | None
    field: str
    message: str

    def _key(self) -> tuple[str, int, str, str]:
        return (self.file, self.line or 0, self.field, self.message)

    def __lt__(self, other: SpecError) -> bool:
        return self._key() < other._key()

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class SpecValidationError(Exception):
    """All errors found in a set of specs, reported together rather than one at a time."""

    def __init__(self, errors: list[SpecError]):
        self.errors = sorted(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


def relative(path: Path | str | None) -> str:
    if path is None:
        return "<unknown>"
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class Refused(Exception):
    """A run Mesh refuses, in words made of partition keys, counts, check and column names (never row values).

    The Dagster step fails with it as a ``dg.Failure`` of the same description and metadata; it is not one
    itself so that a run's body imports no Dagster where it runs as a Spark application (engine mode
    ``submit``), where importing Dagster costs most of a second of every run.
    """

    def __init__(self, description: str, metadata: dict[str, Any] | None = None):
        super().__init__(description)
        self.description = description
        self.metadata = dict(metadata or {})
