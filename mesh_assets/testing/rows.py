"""Expected and actual rows compared as a multiset on the expected columns, and told side by side."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

Rows = list[dict[str, Any]]


def _norm(value: Any) -> Any:
    """A value as both sides compare it: a date or timestamp by its ISO text, a float rounded to 9 places."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 9)
    if hasattr(value, "as_integer_ratio") and not isinstance(value, int | bool):  # a Decimal
        return round(float(value), 9)
    return value


def _key(row: dict[str, Any], columns: list[str]) -> tuple:
    return tuple(repr(_norm(row.get(c))) for c in columns)


@dataclass
class Mismatch:
    """Rows differing between expected and actual, paired where they can be, on the compared columns."""

    columns: list[str]
    missing_columns: list[str]
    """Expected columns the output does not have."""
    pairs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]]
    """(expected, actual) rows that differ; None on the side that has no row to pair."""


def compare(expected: Rows, actual: Rows) -> Mismatch | None:
    """None when ``actual`` holds exactly ``expected``'s rows (any order) on the columns the expected rows name."""
    columns = list(dict.fromkeys(c for row in expected for c in row))
    have = set(actual[0]) if actual else set(columns)
    missing = [c for c in columns if c not in have]
    if missing:
        return Mismatch(columns, missing, [])
    left = Counter(_key(r, columns) for r in expected)
    right = Counter(_key(r, columns) for r in actual)
    if left == right:
        return None
    only_expected = [r for r in expected if _take(left, right, _key(r, columns))]
    left = Counter(_key(r, columns) for r in expected)
    right = Counter(_key(r, columns) for r in actual)
    only_actual = [r for r in actual if _take(right, left, _key(r, columns))]
    only_expected.sort(key=lambda r: _key(r, columns))
    only_actual.sort(key=lambda r: _key(r, columns))
    pairs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
    for i in range(max(len(only_expected), len(only_actual))):
        e = only_expected[i] if i < len(only_expected) else None
        a = {c: only_actual[i].get(c) for c in columns} if i < len(only_actual) else None
        pairs.append((e, a))
    return Mismatch(columns, [], pairs)


def _take(mine: Counter, other: Counter, key: tuple) -> bool:
    """Whether this row is one ``other`` does not have (each row of ``other`` matches one of mine once)."""
    if other[key] > 0:
        other[key] -= 1
        return False
    return True


def differing(expected: dict[str, Any] | None, actual: dict[str, Any] | None, columns: list[str]) -> list[str]:
    if expected is None or actual is None:
        return columns
    return [c for c in columns if repr(_norm(expected.get(c))) != repr(_norm(actual.get(c)))]


def render(title: str, mismatch: Mismatch, expected_count: int, actual_count: int) -> str:
    """The mismatch as plain text, expected and actual side by side, each differing column marked ``*``."""
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    out = StringIO()
    console = Console(file=out, width=160, no_color=True, highlight=False)
    if mismatch.missing_columns:
        console.print(f"{title}: the output has no column {', '.join(mismatch.missing_columns)}")
        return out.getvalue()
    console.print(f"{title}: expected {expected_count} row(s), got {actual_count}; rows that differ:")
    table = Table(show_lines=False)
    table.add_column("")
    for column in mismatch.columns:
        table.add_column(f"expected {column}")
        table.add_column(f"actual {column}")
    for expected, actual in mismatch.pairs:
        marked = differing(expected, actual, mismatch.columns)
        cells = []
        for column in mismatch.columns:
            cells.append("(no row)" if expected is None else _show(expected.get(column)))
            mark = "* " if column in marked else ""
            cells.append("(no row)" if actual is None else mark + _show(actual.get(column)))
        table.add_row("*" if marked else "", *cells)
    console.print(table)
    changed = sorted({c for e, a in mismatch.pairs for c in differing(e, a, mismatch.columns)})
    console.print(f"differing columns (marked *): {', '.join(changed)}")
    return out.getvalue()


def _show(value: Any) -> str:
    return "null" if value is None else str(_norm(value))
