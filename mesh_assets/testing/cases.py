"""A product's unit tests as its team declares them beside its spec, in ``<product>.tests.yaml``::

    tests:
      - name: keeps_delivered_orders
        table: orders_7_days          # the output tested (its product's)
        partition: 2021-06-07         # the partition computed (a partitioned output)
        given:                        # rows of each input, by input name: what the transformation reads
          orders: [{id: 1, status: delivered, p_date: 2021-06-07}]
        expect:                       # the output's rows, in any order; only the columns named are compared
          - {order_id: 1}

Every problem is a :class:`SpecError` naming the file, line and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from mesh_assets.graph.discovery import TESTS_SUFFIX
from mesh_assets.graph.spec_errors import read_spec
from mesh_assets.graph.yaml_lines import Lines, line_for
from mesh_assets.model.errors import SpecError, relative

Rows = list[dict[str, Any]]
FIELDS = {"name", "table", "partition", "given", "expect"}


@dataclass(frozen=True)
class Case:
    """One unit test of one output: the rows given to each input and the rows expected."""

    file: Path
    line: int | None
    name: str
    domain: str
    table: str
    partition: str | None
    given: dict[str, Rows]
    expect: Rows

    @property
    def title(self) -> str:
        return f"{self.domain}/{self.table}::{self.name}"


def test_files(folder: Path) -> list[Path]:
    """A domain folder's test files, its ``defs/`` included."""
    return sorted(folder.rglob(f"*{TESTS_SUFFIX}"))


def _rows(value: object, where: str) -> Rows | str:
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        return f"{where} must be a list of rows, each a mapping of column to value"
    bad = [k for r in value for k in r if not isinstance(k, str)]
    return f"{where}: a column name must be text, not {bad[0]!r}" if bad else value


def read_cases(path: Path, domain: str) -> tuple[list[Case], list[SpecError]]:
    """The cases of one test file, or every problem in it (file, line, field)."""
    data, lines, unreadable = read_spec(path)
    if unreadable:
        return [], unreadable
    file = relative(path)

    def error(loc: tuple, message: str) -> SpecError:
        return SpecError(file, line_for(lines, loc), ".".join(str(p) for p in loc), message)

    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        return [], [error(("tests",), "a test file holds `tests:`, a list of test cases")]
    cases, errors = [], []
    for i, raw in enumerate(data["tests"]):
        case, found = _case(raw, ("tests", i), path, domain, lines, error)
        errors += found
        if case is not None:
            cases.append(case)
    names = [c.name for c in cases]
    errors += [error(("tests", i, "name"), f"duplicate test name {n!r}") for i, n in enumerate(names) if n in names[:i]]
    return cases, errors


def _case(raw: object, at: tuple, path: Path, domain: str, lines: Lines, error: Any) -> tuple[Case | None, list]:
    if not isinstance(raw, dict):
        return None, [error(at, "a test case is a mapping with name, table, given and expect")]
    errors = [error((*at, k), f"unknown field {k!r} (expected one of {', '.join(sorted(FIELDS))})") for k in raw]
    errors = [e for e, k in zip(errors, raw, strict=True) if k not in FIELDS]
    for required in ("name", "table", "expect"):
        if required not in raw:
            errors.append(error(at, f"missing field {required!r}"))
    given = raw.get("given", {})
    if not isinstance(given, dict):
        errors.append(error((*at, "given"), "given maps each input's name to its rows"))
        given = {}
    inputs: dict[str, Rows] = {}
    for name, rows in given.items():
        checked = _rows(rows, f"given.{name}")
        if isinstance(checked, str):
            errors.append(error((*at, "given", name), checked))
        else:
            inputs[str(name)] = checked
    expect = _rows(raw.get("expect", []), "expect")
    if isinstance(expect, str):
        errors.append(error((*at, "expect"), expect))
    partition = raw.get("partition")
    if partition is not None and not isinstance(partition, date | datetime | str):
        errors.append(error((*at, "partition"), "partition is a partition key, such as 2021-06-07"))
    if errors:
        return None, errors
    key = partition.isoformat() if isinstance(partition, date | datetime) else partition
    assert not isinstance(expect, str)
    line = line_for(lines, at)
    return Case(path, line, str(raw["name"]), domain, str(raw["table"]), key, inputs, expect), []
