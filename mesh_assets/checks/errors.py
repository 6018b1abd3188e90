"""Why a check could not judge its rows, in one short line a product owner can act on.

A check that errors (a column the rows lack, a value Spark cannot cast) is that check's failed result,
never a crash of the whole evaluation; its message names the column, or Spark's error class and the first
line of its message, and never the evaluation's own columns.
"""

from __future__ import annotations

from pyspark.errors import PySparkException

from mesh_assets.model.checks import CheckSpec, checked_columns

MAX_LENGTH = 300


def missing_columns(check: CheckSpec, columns: list[str], case_sensitive: bool) -> str | None:
    """Why ``check`` cannot run on rows with ``columns``, resolved as Spark would; None when it can."""
    known = set(columns) if case_sensitive else {c.lower() for c in columns}
    missing = [c for c in checked_columns(check) if (c if case_sensitive else c.lower()) not in known]
    if not missing:
        return None
    what = f"column {missing[0]} does not" if len(missing) == 1 else f"columns {', '.join(missing)} do not"
    return f"{what} exist in the staged rows (columns: {', '.join(columns)})"


def spark_error(exc: PySparkException) -> str:
    """Spark's error class and the first line of its message (the plan and stack that follow are noise)."""
    first = next(iter(str(exc).strip().splitlines()), "") or type(exc).__name__
    condition = exc.getCondition()
    if condition and f"[{condition}]" not in first:
        first = f"[{condition}] {first}"
    return first if len(first) <= MAX_LENGTH else first[: MAX_LENGTH - 1] + "…"


def error_class(exc: BaseException) -> str:
    """An error's class without its message: Spark's condition, a JVM exception's class, else the Python type."""
    if isinstance(exc, PySparkException) and exc.getCondition():
        return str(exc.getCondition())
    java = getattr(exc, "java_exception", None)
    if java is not None:
        return str(java.getClass().getSimpleName())
    return type(exc).__name__


def withheld(exc: BaseException, ref: str, classification: str) -> str:
    """An error of a table classified above ``l0`` as its class alone: Spark's messages (and a transformation's
    own) may quote the row value they failed on, and the texts made of them reach logs, UIs and chat."""
    return f"[{error_class(exc)}] (message withheld: {ref} is classified {classification})"
