"""A spec's validation errors, each naming the file, the line and the field (a :class:`SpecError`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mesh_assets.graph import yaml_lines
from mesh_assets.model.errors import SpecError, relative


def read_spec(path: Path) -> tuple[Any, yaml_lines.Lines, list[SpecError]]:
    """A YAML spec's document and lines, or why it cannot be read (outside the bounds, not YAML)."""
    try:
        data, lines = yaml_lines.load(path)
    except yaml_lines.SpecRefused as exc:
        return None, {}, [SpecError(relative(path), None, "", str(exc))]
    except Exception as exc:  # yaml.YAMLError carries its own line
        mark = getattr(exc, "problem_mark", None)
        return None, {}, [SpecError(relative(path), mark.line + 1 if mark else None, "", f"invalid YAML: {exc}")]
    return data, lines, []


def yaml_loc(loc: tuple) -> tuple:
    """A model error location in YAML terms: ``transformations.0.output.table`` -> ``tables.0.table``."""
    if loc[:1] == ("transformations",):
        loc = ("tables", *loc[1:])
        if len(loc) > 2 and loc[2] == "output":
            loc = loc[:2] + loc[3:]
    return loc


def _union_tag(loc: tuple, i: int) -> bool:
    """Whether ``loc[i]`` is pydantic's name for the member of a union (a transformation's kind, a check's, a table
    kind's), which a spec never writes: ``tables.0.checks.1.not_null.colums`` is ``tables.0.checks.1.colums``."""
    part = loc[i]
    if not isinstance(part, str) or i == len(loc) - 1:
        return False
    if i >= 1 and loc[i - 1] == "kind":  # a table kind's model: ``kind.merge.unique_key`` is ``kind.unique_key``
        return True
    return part in {"pyspark", "sql"} or (i >= 2 and isinstance(loc[i - 1], int) and loc[i - 2] == "checks")


def pydantic_errors(exc: ValidationError, file: Path, lines: yaml_lines.Lines, yaml_style: bool) -> list[SpecError]:
    out = []
    for err in exc.errors():
        loc = without_tags(err["loc"])
        if yaml_style:
            loc = yaml_loc(loc)
        out.append(
            SpecError(
                relative(file),
                yaml_lines.line_for(lines, loc),
                ".".join(str(p) for p in loc) or "<product>",
                message(err, loc),
            )
        )
    return out


def field_error(file: Path, line: int | None, err: Any) -> SpecError:
    """An error of a model built in a Python file (``Output(...)``), at the line that built it."""
    loc = without_tags(err["loc"])
    return SpecError(relative(file), line, ".".join(str(p) for p in loc), message(err, loc))


def without_tags(loc: tuple) -> tuple:
    """An error's location as a spec writes it: without pydantic's names for union members."""
    return tuple(p for i, p in enumerate(loc) if not _union_tag(loc, i))


def message(err: Any, loc: tuple) -> str:
    """The error's words, a spec's terms where pydantic's are its own (an unknown field, an unknown kind)."""
    if err["type"] == "extra_forbidden" and loc:
        return f"unknown field {loc[-1]!r}"
    if err["type"] == "union_tag_invalid" and loc[-1:] == ("kind",):
        return f"unknown kind {err['ctx']['tag']!r}: one of {err['ctx']['expected_tags']}"
    return err["msg"]
