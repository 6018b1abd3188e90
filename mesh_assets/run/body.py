"""The part of a run after readiness: compute, stage, audit, publish. It needs Spark and the warehouse, not
Dagster, so the same code runs in the step's own process (engine mode ``session``) and in a Spark application
launched through Dagster Pipes (``submit``, see :mod:`mesh_assets.run.remote`).

Everything it is told comes in a :class:`RunPlan`, decided on the Dagster side (which partitions are ready,
what the run's tags and settings ask) and sent as JSON when the body runs elsewhere.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import SparkSession

from mesh_assets.graph.resolve import Node
from mesh_assets.lineage.capture import observed_reads
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.run.compute import compute, feed_versions, input_versions
from mesh_assets.run.enclosure import withheld_refusal
from mesh_assets.run.outcome import RunOutcome
from mesh_assets.run.publish import publish
from mesh_assets.run.staging import recomputable
from mesh_assets.settings import UndeclaredReads
from mesh_assets.storage.schema import SchemaRule
from mesh_assets.storage.tables import TableRegistry


@dataclass(frozen=True)
class RunPlan:
    """What one run of a node computes and how it may write, as the Dagster side decided it."""

    part: PartitionRange | None
    runnable: list[PartitionRange]
    """The partitions whose inputs are ready (the single partitions of ``part``); empty when unpartitioned."""
    run_id: str
    schema: SchemaRule
    undeclared_reads: UndeclaredReads = "warn"
    blocked: dict[str | None, list[str]] = field(default_factory=dict)
    """Partitions not computed, each with why (an input partition not published or not checked)."""
    withheld: tuple[str, ...] = ()
    """Other domains' tables the product may not read undeclared (:attr:`~mesh_assets.graph.resolve.Node.withheld`)."""

    def to_json(self) -> dict[str, Any]:
        part = self.part
        return {
            "part": None
            if part is None
            else [part.grain.name, part.grain.key(part.start), part.grain.key(part.end), part.region, part.zone],
            "runnable": [p.grain.key(p.start) for p in self.runnable],
            "run_id": self.run_id,
            "schema": [self.schema.policy, self.schema.rebuild, list(self.schema.consumers)],
            "undeclared_reads": self.undeclared_reads,
            "blocked": [[partition, why] for partition, why in self.blocked.items()],
            "withheld": list(self.withheld),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunPlan:
        part = None
        if data["part"] is not None:
            grain, start, end, region, zone = data["part"]
            part = replace(PartitionRange.from_keys(Grain.of(grain), start, end), region=region, zone=zone)
        policy, rebuild, consumers = data["schema"]
        return cls(
            part,
            [replace(part, start=part.grain.parse(key), end=part.grain.parse(key)) for key in data["runnable"]]
            if part
            else [],
            data["run_id"],
            SchemaRule(policy, rebuild, tuple(consumers)),
            data["undeclared_reads"],
            {partition: why for partition, why in data["blocked"]},
            tuple(data["withheld"]),
        )


def run_body(
    spark: SparkSession, registry: TableRegistry, node: Node, plan: RunPlan, log: logging.Logger
) -> RunOutcome:
    """Compute the plan's runnable partitions, every input at its version when the run started, then stage, audit
    and publish them in one commit."""
    versions = input_versions(registry, node)
    rows = compute(spark, registry, node, plan.part, plan.runnable, log, plan.run_id, versions, plan.withheld)
    reads = observed_reads(rows, node, registry, log, plan.undeclared_reads)
    if (refused := withheld_refusal(reads.undeclared_names, node, plan.withheld)) is not None:
        raise refused
    part, blocked = plan.part, plan.blocked
    pinned = [registry.location(*table) for table in versions]
    done = publish(
        spark,
        registry,
        node,
        rows,
        part,
        blocked,
        run_id=plan.run_id,
        schema=plan.schema,
        feeds=feed_versions(node, versions),
        keep=lambda: not recomputable(rows, node, reads, pinned),
    )
    return RunOutcome(done.result, part, done.outcomes, done.failed, blocked=blocked, **reads.as_fields())
