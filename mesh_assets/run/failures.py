"""How a run's failure reaches Dagster: as a ``dg.Failure`` in Mesh's words, whichever side the body ran on.

The body raises Mesh's :class:`~mesh_assets.model.errors.Refused` (it runs without Dagster in a submitted
application); the step turns it, or the failure a submitted application reported, into the ``dg.Failure`` the
run's error, the owners' alert and the lineage FAIL event show. Any other error of a classified output is
told there without row values (:mod:`mesh_assets.run.privacy`), and whole in the run's compute log.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg

from mesh_assets.checks.errors import error_class, to_compute_log
from mesh_assets.graph.resolve import Table
from mesh_assets.model.errors import Refused
from mesh_assets.run.privacy import private_description


def step_failure(
    description: str,
    metadata: Mapping[str, Any],
    error: str,
    kind: type[dg.Failure] = dg.Failure,
    *,
    retry: bool = True,
) -> dg.Failure:
    """A ``kind`` failing the step with ``description``, ``metadata`` (lists and mappings as JSON) and the
    ``error``'s class name, so the UI names what refused the run; ``retry``: whether the product's retry policy
    may run it again (never for Mesh's refusals: the same inputs would be refused again)."""
    values: dict[str, Any] = {
        key: dg.MetadataValue.json(value) if isinstance(value, list | dict) else value
        for key, value in metadata.items()
    }
    values["error"] = error
    return kind(description=description, metadata=values, allow_retries=retry)


@contextmanager
def step_failures(table: Table) -> Iterator[None]:
    """The run of ``table`` fails with Mesh's refusals as Dagster failures, and with any other error without
    row values when ``table`` is classified above ``l0``: the error whole goes to the run's compute log."""
    try:
        yield
    except Refused as exc:
        raise step_failure(exc.description, exc.metadata, type(exc).__name__, retry=False) from None
    except Exception as exc:
        if (description := private_description(exc, table)) is None:
            raise
        to_compute_log(f"{table.ref} failed", exc)
        raise step_failure(description, {}, error_class(exc)) from None
