"""Backfills of tables whose partitions apply in order (kinds ``merge`` without ``sequence_by``, ``history``,
``changes`` kept as history): planned so that their runs are not refused (:mod:`mesh_assets.run.replay`).

A table that replays forward gets its range extended to its latest applied partition, so the one run replays
them in order; a table that keeps versions is left out, naming ``mesh rebuild``, when the range starts before its
latest applied partition. The kind's rule reaches the plan as its asset's ``replay`` metadata.
"""

from __future__ import annotations

import dagster as dg

from mesh_assets.backfill.computable import LeftOut
from mesh_assets.compat import AssetGraph, PartitionsSubset
from mesh_assets.model.kinds import REPLAY


def _rule(graph: AssetGraph, key: dg.AssetKey) -> str | None:
    value = graph.get(key).metadata.get(REPLAY)
    return getattr(value, "value", value)


def in_order(
    graph: AssetGraph, instance: dg.DagsterInstance, reached: dict[dg.AssetKey, PartitionsSubset | None]
) -> tuple[dict[dg.AssetKey, PartitionsSubset | None], list[LeftOut], list[str]]:
    """``reached`` with forward tables extended and versioned ones left out where they must be, what was left
    out, and a note per extension."""
    kept: dict[dg.AssetKey, PartitionsSubset | None] = {}
    left_out: list[LeftOut] = []
    notes: list[str] = []
    for key, subset in reached.items():
        rule = _rule(graph, key)
        if subset is None or subset.is_empty or rule is None:
            kept[key] = subset
            continue
        keys = sorted(subset.get_partition_keys())
        applied = instance.get_materialized_partitions(key)
        name = key.to_user_string()
        if rule == "rebuild" and (later := sorted(k for k in applied if k > keys[0])):
            left_out.append(
                LeftOut(
                    key,
                    tuple(keys),
                    f"keeps versions in order and its latest applied partition is {later[-1]}: only that one may "
                    f"be applied again; `mesh rebuild {name}` replays every partition in order",
                )
            )
            continue
        if rule == "forward" and (later := sorted(k for k in applied if k > keys[-1])):
            pdef = graph.get(key).partitions_def
            assert pdef is not None
            subset = subset | pdef.empty_subset().with_partition_key_range(
                pdef, dg.PartitionKeyRange(keys[-1], later[-1])
            )
            notes.append(
                f"{name}: extended to {later[-1]}, its latest applied partition: it applies partitions in order, so "
                "the run replays every partition after the range too"
            )
        kept[key] = subset
    return kept, left_out, notes
