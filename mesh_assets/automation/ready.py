"""Readiness of inputs that live in other code locations, as an automation condition evaluated in a domain's own.

Each domain's automation is evaluated in its own code server (``use_user_code_server``), against its own code
location's asset graph. Another domain's table is there only as a placeholder with its partitions
(:func:`mesh_assets.assets.specs.upstream_spec`), so Dagster's conditions map partitions and see materializations
and runs across domains, but not the table's checks: a check key is defined once in the workspace (a second
definition in a consumer's location would take the check's place in the UI), so ``any_checks_match`` finds no
blocking check on a placeholder and would let a consumer through on a failed one. This condition asks the
instance instead, with the run's own readiness rule (:mod:`mesh_assets.run.readiness`): automation requests
exactly the partitions a run would accept.

The same condition holds back a partition whose input read whole is older than allowed or behind its watermark
(:mod:`mesh_assets.run.readiness`), wherever that input is defined: Dagster's conditions know nothing of a
table's age. The partition waits and is requested on a later tick, once the input is published again.
"""

from __future__ import annotations

import dagster as dg

from mesh_assets.compat import automation_instance, subset_partition_keys, subset_without
from mesh_assets.graph.resolve import Node, Read, Table, TableKind
from mesh_assets.model.partitions import PartitionRange, ranges_of_regions
from mesh_assets.run.readiness import Watermark, unready


def in_other_location(node: Node, table: Table) -> bool:
    """Whether ``table`` is defined in another code location than ``node``'s: another domain's, or a dbt model
    (the dbt project is a location of its own)."""
    return table.domain != node.domain or table.kind is TableKind.DBT


class InputsReadyElsewhere(dg.AutomationCondition):
    """True for the partitions whose inputs from other code locations are published and passed their blocking
    checks on their current data (``ignore_quality`` inputs: published)."""

    def __init__(self, node: Node, reads: tuple[Read, ...], watermark: Watermark | None = None) -> None:
        self._grain = node.table.grain
        self._regions, self._zones = node.table.regions, node.table.zones
        self._reads = [(read.input, read.table) for read in reads]
        self._tables = ", ".join(sorted({read.table.ref for read in reads}))
        self._default_hours = node.product.input_freshness_hours
        self._watermark = watermark

    @property
    def name(self) -> str:
        return "inputs_in_other_locations_ready"

    @property
    def description(self) -> str:
        return f"{self._tables} published, their blocking checks passed and, read whole, fresh enough"

    @property
    def requires_cursor(self) -> bool:
        return False

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        candidates = context.candidate_subset
        keys = subset_partition_keys(candidates)
        if not keys:
            return dg.AutomationResult(context, candidates)
        parts: list[PartitionRange | None] = [None]
        if None in keys:
            pass
        elif self._regions:  # each region's dates, refusals keyed as Dagster keys them (2024-03-31|eu)
            parts = list(ranges_of_regions(self._grain, self._regions, self._zones, sorted(keys)))  # type: ignore[arg-type]
        else:
            starts = sorted(self._grain.parse(k) for k in keys if k is not None)
            parts = [PartitionRange(self._grain, starts[0], starts[-1])]
        refused: set[str | None] = set()
        for part in parts:
            found = unready(
                automation_instance(context),
                self._reads,
                part,
                watermark=self._watermark,
                default_hours=self._default_hours,
            )
            refused |= {k if part is None or k is None else part.dagster_key(k) for k in found}
        refused &= keys
        return dg.AutomationResult(context, subset_without(candidates, refused) if refused else candidates)


def limits_age(node: Node, read: Read) -> bool:
    """Whether ``read`` reads a table whole with a limit on its age or a watermark, which may hold ``node`` back."""
    whole = read.input.window.whole or not read.table.grain.partitioned or not node.table.grain.partitioned
    return whole and bool(read.input.watermark or read.input.freshness_hours or node.product.input_freshness_hours)


def beyond_dagster(node: Node, read: Read) -> bool:
    """Whether Dagster's mapping of ``read`` is a superset of what the run reads (:mod:`mesh_assets.assets.mappings`):
    one region of a regional input, or a regional output's local days over a table partitioned in UTC. Such an
    input is judged by the run's readiness rule alone, not by Dagster's conditions, which would wait for every
    region of a date, or for the UTC day."""
    if read.input.window.whole or not read.table.grain.partitioned or not node.table.grain.partitioned:
        return False
    if read.input.region is not None:
        return True
    return bool(node.table.regions) and not set(node.table.regions) <= set(read.table.regions)


def inputs_ready_elsewhere(node: Node, watermark: Watermark | None = None) -> InputsReadyElsewhere | None:
    """The condition over ``node``'s inputs from other code locations, those whose age is limited, those read
    with ``min_complete`` (a share of the window) and those Dagster's mappings map beyond what the run reads
    (:func:`beyond_dagster`); None when it reads none. ``watermark`` reads a watermark column's maximum (from the
    deployment's warehouse)."""
    reads = tuple(
        read
        for read in node.reads
        if in_other_location(node, read.table)
        or limits_age(node, read)
        or read.input.min_complete is not None
        or beyond_dagster(node, read)
    )
    return InputsReadyElsewhere(node, reads, watermark) if reads else None
