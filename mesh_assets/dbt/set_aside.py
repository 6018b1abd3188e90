"""One dbt project, many domains: a model file dbt cannot parse costs its own domain, not every domain's models.

dbt parses the whole project before it compiles or runs any part of it, so one model with a Jinja error (or a
``ref`` to a model that does not exist, or a broken schema file next to it) stopped every domain's dbt models:
no manifest at setup, and no compile in any run. When dbt names the model file it could not parse, Mesh sets
that file aside and parses again without it, until the project parses (a model that reads a set-aside one is
set aside in turn). The project without those files is a copy made of links to the project's own files
(``target/mesh_project``), so nothing is written outside ``target/``; the manifest and every later dbt call
(each domain's run compiles its models there) use it. The files set aside and dbt's errors are recorded in
``target/mesh_parse_errors.json``: the domain owning one (its folder under the model path) fails to load with
dbt's error, naming the file and line, and ``mesh validate`` reports it, as for a product with an error. A file
outside the model paths (a macro, the project's own configuration) is shared by every model and is not set
aside: dbt's error then stops the project, as before. A model file broken after the manifest was prepared is
met by a run's compile, which parses the project again: a file that is none of the step's own models is left
out of that compile the same way (:func:`compile_setting_aside`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

from mesh_assets.model.errors import SpecError, relative

ERRORS_FILE = "mesh_parse_errors.json"
COPY = "mesh_project"
MODEL_PATH = "models"
MAX_SET_ASIDE = 100
"""More files than this set aside is no longer one domain's mistake: the parse is given up."""
_IN_PARENTHESES = re.compile(r"\(([^()\s]+)\)")
_LINE = re.compile(r"\bline (\d+)\b")
R = TypeVar("R")


@dataclass(frozen=True)
class SetAside:
    """A model file dbt could not parse, the domain whose folder holds it, and dbt's error."""

    file: str
    """Relative to the project (``models/growth/daily.sql``)."""
    domain: str | None
    message: str

    @property
    def line(self) -> int | None:
        found = _LINE.search(self.message)
        return int(found.group(1)) if found else None


class ParseFailed(RuntimeError):
    """dbt could not parse the project, for a reason no model file set aside removes."""


def unparsed_file(project: Path, message: str) -> str | None:
    """The model file dbt's error names (``... in model x (models/growth/x.sql)``), if it is one."""
    for candidate in _IN_PARENTHESES.findall(message):
        path = Path(candidate)
        if path.parts[:1] == (MODEL_PATH,) and (project / path).is_file():
            return path.as_posix()
    return None


def _owner(file: str) -> str | None:
    parts = Path(file).parts
    return parts[1] if len(parts) > 2 else None  # models/<domain>/...; a file at the top of models/ has none


def parse_setting_aside(project: Path, parse: Callable[[Path], Exception | None]) -> list[SetAside]:
    """Parse ``project`` with ``parse`` (dbt's parse of the folder given: None, or its error), setting aside each
    model file dbt names until it parses; what was set aside is recorded, and the copy parsed last is kept."""
    target = project / "target"
    set_aside: list[SetAside] = []
    where = project
    while (error := parse(where)) is not None:
        message = str(error).strip()
        file = unparsed_file(project, message)
        if file is None or len(set_aside) >= MAX_SET_ASIDE or any(s.file == file for s in set_aside):
            raise ParseFailed(f"dbt parse failed: {message}")
        set_aside.append(SetAside(file, _owner(file), message))
        where = _copy_without(project, {s.file for s in set_aside})
    if not set_aside:
        shutil.rmtree(target / COPY, ignore_errors=True)
    target.mkdir(exist_ok=True)
    (target / ERRORS_FILE).write_text(json.dumps([asdict(s) for s in set_aside], indent=2))
    return set_aside


def _copy_without(project: Path, skipped: set[str], copy: Path | None = None) -> Path:
    """A copy of ``project`` (default ``target/mesh_project``): its folders, each of its files a link to the
    original but the ``skipped`` ones, and ``target`` a link to the project's own (where dbt writes the
    manifest). ``project`` may itself be such a copy: the links point at the original files."""
    copy = copy or project / "target" / COPY
    shutil.rmtree(copy, ignore_errors=True)
    for folder, subfolders, files in os.walk(project):
        relative = Path(folder).relative_to(project)
        if relative == Path("."):
            subfolders[:] = [s for s in subfolders if s not in {"target", "logs"}]
        (copy / relative).mkdir(parents=True, exist_ok=True)
        for name in files:
            if (relative / name).as_posix() not in skipped:
                (copy / relative / name).symlink_to((Path(folder) / name).resolve())
    (copy / "target").symlink_to((project / "target").resolve(), target_is_directory=True)
    return copy


def compile_setting_aside(
    project: Path, own: set[str], scratch: Path, compile: Callable[[Path], R], error: Callable[[R], str | None]
) -> tuple[R, list[SetAside]]:
    """``compile`` in ``project``, again in a copy under ``scratch`` without each model file dbt could not parse
    that is none of ``own`` (the step's own models' files), so a file another domain broke since the manifest
    was prepared does not fail this domain's run; the result of the last attempt, and the files left out."""
    left_out: list[SetAside] = []
    where = project
    while True:
        result = compile(where)
        message = error(result)
        file = unparsed_file(project, message) if message else None
        if file is None or file in own or len(left_out) >= MAX_SET_ASIDE or any(s.file == file for s in left_out):
            return result, left_out
        left_out.append(SetAside(file, _owner(file), message or ""))
        where = _copy_without(project, {s.file for s in left_out}, scratch / COPY)


def set_aside_files(project: Path) -> list[SetAside]:
    """What the last parse set aside (none when the project parsed whole, or was never parsed by Mesh)."""
    try:
        return [SetAside(**s) for s in json.loads((project / "target" / ERRORS_FILE).read_text())]
    except (OSError, ValueError, TypeError):
        return []


def parsed_project(project: Path) -> Path:
    """The folder dbt is given: the project, or its copy without the files the last parse set aside."""
    copy = project / "target" / COPY
    return copy if set_aside_files(project) and copy.is_dir() else project


def parse_errors(project: Path, domains: set[str] | None = None) -> list[tuple[str | None, SpecError]]:
    """Each file the last parse set aside (of ``domains``, default every one) as an error naming its file and
    line, with the domain that owns it."""
    return [
        (s.domain, SpecError(relative(project / s.file), s.line, "", _one_line(s.message)))
        for s in set_aside_files(project)
        if domains is None or s.domain in domains
    ]


def _one_line(message: str) -> str:
    """dbt's error on one line, as Mesh's errors are printed."""
    return "dbt could not parse it, so it is set aside: " + "; ".join(
        line.strip() for line in message.splitlines() if line.strip()
    )
