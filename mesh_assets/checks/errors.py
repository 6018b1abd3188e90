"""Why a check, or a run, could not go on, in one short line a product owner can act on.

A check that errors (a column the rows lack, a value Spark cannot cast) is that check's failed result,
never a crash of the whole evaluation; its message names the column, or Spark's error class and the first
line of its message, and never the evaluation's own columns.

For a table classified above ``l0`` the line keeps what names the problem and withholds what quotes a row.
Spark's errors say which is which: each has a class (``UNRESOLVED_COLUMN.WITH_SUGGESTION``) and named message
parameters (``objectName``, ``proposal``, ``expression``...). Parameters that name a column, table, function or
type come from the query and the schema, and are shown; any other (a value that failed a cast, a message
``raise_error`` built from a row, an index) is replaced by ``<withheld>``. An error that is not Spark's (a
transformation's own ``ValueError``) says only its class and where it was raised: its text can quote anything.
The full error goes to the run's compute log (:func:`to_compute_log`), where the domain's operators read it.
"""

from __future__ import annotations

import re
import sys
import sysconfig
import traceback
from pathlib import Path

from pyspark.errors import PySparkException

from mesh_assets.model.checks import CheckSpec, checked_columns

MAX_LENGTH = 300
WITHHELD = "<withheld>"
NAMING = re.compile(r"(Name|Names|Type|Types)$")
"""Spark's message parameters named like these name an object or a type (``objectName``, ``routineName``,
``relationName``, ``targetType``...), never a row's value."""
NAMES = frozenset({"proposal", "searchPath", "ansiConfig", "config", "column", "columns", "table", "function"})
"""Other parameters that name things: the columns Spark suggests, its search path, a configuration key."""
COMPUTE_LOG = "the full error is in the run's compute log (stderr)"
LIBRARIES = tuple(sorted({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}))


def missing_columns(check: CheckSpec, columns: list[str], case_sensitive: bool) -> str | None:
    """Why ``check`` cannot run on rows with ``columns``, resolved as Spark would; None when it can."""
    known = set(columns) if case_sensitive else {c.lower() for c in columns}
    missing = [c for c in checked_columns(check) if (c if case_sensitive else c.lower()) not in known]
    if not missing:
        return None
    what = f"column {missing[0]} does not" if len(missing) == 1 else f"columns {', '.join(missing)} do not"
    return f"{what} exist in the staged rows (columns: {', '.join(columns)})"


def _first_line(text: str, exc: PySparkException) -> str:
    first = next(iter(text.strip().splitlines()), "") or type(exc).__name__
    condition = exc.getCondition()
    if condition and f"[{condition}]" not in first:
        first = f"[{condition}] {first}"
    return first if len(first) <= MAX_LENGTH else first[: MAX_LENGTH - 1] + "…"


def spark_error(exc: PySparkException) -> str:
    """Spark's error class and the first line of its message (the plan and stack that follow are noise)."""
    return _first_line(str(exc), exc)


def shown(parameter: str) -> bool:
    """Whether a Spark message parameter names something (shown) rather than quoting a value (withheld)."""
    return parameter in NAMES or bool(NAMING.search(parameter))


def error_class(exc: BaseException) -> str:
    """An error's class without its message: Spark's condition, a JVM exception's class, else the Python type."""
    if isinstance(exc, PySparkException) and exc.getCondition():
        return str(exc.getCondition())
    java = getattr(exc, "java_exception", None)
    if java is not None:
        return str(java.getClass().getSimpleName())
    return type(exc).__name__


def raised_at(exc: BaseException) -> str | None:
    """Where ``exc`` was raised, as ``file:line in function``: the innermost frame outside Python's library and
    the installed packages (the transformation's own line), else the innermost one."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if not f.filename.startswith(LIBRARIES)] or frames
    if not own:
        return None
    frame = own[-1]
    path = Path(frame.filename)
    if path.is_absolute() and path.is_relative_to(Path.cwd()):
        path = path.relative_to(Path.cwd())
    return f"{path}:{frame.lineno} in {frame.name}"


def withheld(exc: BaseException, ref: str, classification: str) -> str:
    """An error of a table classified above ``l0`` without a row's value: Spark's error with its parameters that
    name things and ``<withheld>`` for the others; any other error as its class and where it was raised."""
    why = f"{ref} is classified {classification}; {COMPUTE_LOG}"
    if isinstance(exc, PySparkException) and exc.getCondition():
        text = str(exc)
        values = [str(v) for k, v in (exc.getMessageParameters() or {}).items() if not shown(k) and str(v)]
        for value in sorted(values, key=len, reverse=True):
            text = text.replace(value, WITHHELD)
        first = _first_line(text, exc)
        return f"{first} (values withheld: {why})" if values else first
    where = raised_at(exc)
    return f"[{error_class(exc)}]{f' raised at {where}' if where else ''} (message withheld: {why})"


def to_compute_log(what: str, exc: BaseException) -> None:
    """``exc`` whole, message and traceback, on the process's stderr: the run's compute log, which the domain's
    operators read, where the run's events (and the alerts and lineage made of them) carry no row value."""
    print(f"mesh: {what}:", file=sys.stderr)
    traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.flush()
