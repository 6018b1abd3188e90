"""One commit strategy per table kind, as SQLMesh's evaluator has one per model kind.

Every strategy takes staged rows that passed their audit and publishes them in at most one Delta commit (none
when nothing changed), or raises :class:`~mesh_assets.storage.writer.WriteFailed` having committed nothing.
"""

from __future__ import annotations

from typing import Protocol

from pyspark.sql import DataFrame, SparkSession

from mesh_assets.model.kinds import Append, Full, History, Kind, Merge, Partitions
from mesh_assets.storage.strategies.target import Target
from mesh_assets.storage.writer import WriteResult

__all__ = ["Strategy", "Target", "strategy_for"]


class Strategy(Protocol):
    def commit(self, spark: SparkSession, staged: DataFrame, target: Target) -> WriteResult: ...


def strategy_for(kind: Kind) -> Strategy:
    """The strategy that commits a table of ``kind`` (its module imported when a run needs it)."""
    if isinstance(kind, Partitions | Full):
        from mesh_assets.storage.strategies.replace import Replace

        return Replace()
    if isinstance(kind, Append):
        from mesh_assets.storage.strategies.append import AppendRows

        return AppendRows(kind)
    if isinstance(kind, Merge):
        from mesh_assets.storage.strategies.merge import MergeRows

        return MergeRows(kind)
    if isinstance(kind, History):
        from mesh_assets.storage.strategies.history import KeepHistory

        return KeepHistory(kind)
    raise TypeError(f"no commit strategy for kind {kind.name}")
