"""Whose records a run's gates read, in an environment: production's for the tables it reads in place, its own for
the tables it computes, and both for a table it started from a clone of production (the clone's past partitions
were published in production, the partitions it computed since in the environment).

In production every table's records are the run's own instance, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import dagster as dg

from mesh_assets.graph.resolve import Table
from mesh_assets.storage.environment import Environment

Records = Callable[[Table], Any]
"""The instance (or a view with the same three reads) that knows a table's published partitions and checks."""


@lru_cache(maxsize=4)
def production_instance(home: str) -> dg.DagsterInstance:
    """Production's instance, opened once per process, to read: an environment's run never writes to it."""
    return dg.DagsterInstance.from_config(home)


class _Cloned:
    """A cloned table's records: production's before the environment's first partition, then the environment's."""

    def __init__(self, own: dg.DagsterInstance, production: dg.DagsterInstance, start: str | None):
        self.own, self.production, self.start = own, production, start

    def _before(self, key: str | None) -> bool:
        return self.start is None or key is None or key[:10] < self.start

    def get_materialized_partitions(self, key: dg.AssetKey) -> set[str]:
        past = {p for p in self.production.get_materialized_partitions(key) if self._before(p)}
        return past | self.own.get_materialized_partitions(key)

    def get_latest_materialization_event(self, key: dg.AssetKey) -> Any:
        return self.own.get_latest_materialization_event(key) or self.production.get_latest_materialization_event(key)

    @property
    def event_log_storage(self) -> _Cloned:
        return self

    def get_asset_check_partition_info(self, keys: list[dg.AssetCheckKey], partition_keys: list[str] | None) -> list:
        mine = self.own.event_log_storage.get_asset_check_partition_info(keys, partition_keys=partition_keys)
        theirs = self.production.event_log_storage.get_asset_check_partition_info(keys, partition_keys=partition_keys)
        merged = {(i.check_key, i.partition_key): i for i in theirs if self._before(i.partition_key)}
        merged |= {(i.check_key, i.partition_key): i for i in mine}
        return list(merged.values())


def records_for(instance: dg.DagsterInstance, environment: Environment | None) -> Records:
    """Which records stand for each table in a run on ``instance`` (``environment``: the one the run is in)."""
    if environment is None:
        return lambda table: instance
    env = environment
    production = production_instance(env.production_dagster_home)

    def records(table: Table) -> Any:
        ref = "/".join(table.key.path)
        if ref in env.cloned:
            return _Cloned(instance, production, env.start)
        return instance if ref in env.tables else production

    return records
