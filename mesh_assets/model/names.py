"""Naming rules shared by specs, storage and SQL: one identifier grammar everywhere.

Domain and table names become path segments, Spark identifiers and Dagster asset keys, so they are
restricted to lower-case snake case; nothing else can smuggle a path separator or SQL into them.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")
"""Matched whole (``fullmatch``): ``$`` would let a trailing newline through."""


def check_identifier(value: str) -> str:
    if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
        raise ValueError(
            f"invalid identifier {value!r}: use lower-case letters, digits and '_', starting with a letter"
        )
    return value


Identifier = Annotated[str, AfterValidator(check_identifier)]


def split_table_ref(ref: str, default_domain: str | None = None) -> tuple[str, str]:
    """``domain.table`` (or ``table`` within ``default_domain``) -> validated (domain, table)."""
    parts = ref.split(".")
    if len(parts) == 1 and default_domain is not None:
        return check_identifier(default_domain), check_identifier(parts[0])
    if len(parts) != 2:
        raise ValueError(f"invalid table reference {ref!r}: expected 'domain.table'")
    return check_identifier(parts[0]), check_identifier(parts[1])


OBSERVER_SUFFIX = "__observe_external_tables"


def observer_name(domain: str) -> str:
    """The sensor that reports ``domain``'s external tables' new partitions: named here, below the automation
    that builds it, so that a run refused for want of its report can name it."""
    return f"{domain}{OBSERVER_SUFFIX}"
