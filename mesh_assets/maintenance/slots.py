"""A table's pool slot held by a maintenance step while it works on the table.

One maintenance op serves every table of a domain (an op per table made a location of hundreds of outputs load
seconds slower), so the op takes each table's pool (``mesh/<domain>/<table>``, as the table's writers do) itself,
the way Dagster's executor takes a step's: the pool is set to the instance's default limit if it has none, a slot
is claimed, waited for while a writer holds it, and freed afterwards. An instance without pools (an ephemeral
one) holds nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg


class TableBusy(RuntimeError):
    """The table's writers held its pool for longer than the maintenance waits."""


@contextmanager
def table_slot(
    instance: dg.DagsterInstance, pool: str, run_id: str, step_key: str, wait_seconds: float = 600.0
) -> Iterator[None]:
    """Hold a slot of ``pool`` for ``run_id``'s ``step_key`` while the block runs."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        yield
        return
    default = instance.global_op_concurrency_default_limit
    if default is not None and storage.get_concurrency_info(pool).slot_count == 0:
        storage.initialize_concurrency_limit_to_default(pool)
    if storage.get_concurrency_info(pool).slot_count == 0:  # an unlimited pool
        yield
        return
    deadline = time.monotonic() + wait_seconds
    try:
        while not storage.claim_concurrency_slot(pool, run_id, step_key).is_claimed:
            if time.monotonic() > deadline:
                raise TableBusy(f"pool {pool} stayed busy for {wait_seconds:.0f} s: its writers kept it")
            time.sleep(1.0)
        yield
    finally:
        storage.free_concurrency_slot_for_step(run_id, step_key)
