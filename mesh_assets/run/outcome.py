"""What a run of one output did, and the same as JSON: a run launched on a cluster reports its outcome to the
Dagster step as a Pipes message, and the step records exactly what a local run records.

The JSON carries only what the events, lineage and refusals need; a check's declaration is not sent but found
again by name on the node, so both sides judge with one set of checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from mesh_assets.checks.outcomes import CheckOutcome, failed_partitions
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import WriteResult

if TYPE_CHECKING:
    from mesh_assets.graph.resolve import Node


@dataclass(frozen=True)
class RunOutcome:
    """What a run of one output did: what it published and what its checks found."""

    result: WriteResult | None
    part: PartitionRange | None
    outcomes: list[CheckOutcome]
    failed: dict[str | None, list[CheckOutcome]]
    reads: list[str] | None = None
    """Locations the computation actually read (from Spark's plan); ``None`` when not observable."""
    undeclared_reads: tuple[str, ...] = ()
    undeclared_names: tuple[str, ...] = ()
    column_lineage: dict[str, list[tuple[str, str]]] | None = None
    """Output column -> the (location, column) pairs it is computed from; ``None`` when not observable."""
    blocked: dict[str | None, list[str]] = field(default_factory=dict)
    """Partitions not computed because an input partition they read is not published or not checked."""
    incomplete: dict[str | None, dict[str, list[str]]] = field(default_factory=dict)
    """Partitions computed from an incomplete window (``min_complete``): input table -> the keys missing."""


def merged(part: PartitionRange, outcomes: list[RunOutcome]) -> RunOutcome:
    """The outcomes of a range computed partition by partition, as one run's (the last commit's version)."""
    results = [o.result for o in outcomes if o.result is not None]
    result = None
    if results:
        result = WriteResult(
            location=results[-1].location,
            version=results[-1].version,
            rows=sum(r.rows for r in results),
            partition_rows={k: n for r in results for k, n in r.partition_rows.items()},
            schema=results[-1].schema,
            changes={k: sum(r.changes.get(k, 0) for r in results) for k in {k for r in results for k in r.changes}},
            committed=any(r.committed for r in results),
        )
    observed = [o.reads for o in outcomes if o.reads is not None]
    return RunOutcome(
        result,
        part,
        [c for o in outcomes for c in o.outcomes],
        {k: v for o in outcomes for k, v in o.failed.items()},
        reads=sorted({r for reads in observed for r in reads}) if observed else None,
        undeclared_reads=tuple(sorted({r for o in outcomes for r in o.undeclared_reads})),
        undeclared_names=tuple(sorted({n for o in outcomes for n in o.undeclared_names})),
        blocked={k: v for o in outcomes for k, v in o.blocked.items()},
        incomplete={k: v for o in outcomes for k, v in o.incomplete.items()},
    )


def in_dagster_keys(outcome: RunOutcome) -> RunOutcome:
    """A region's outcome with Dagster's keys (``2024-03-31|eu``) where the run's body keyed its dates alone."""
    part = outcome.part
    if part is None or part.region is None:
        return outcome

    def key(value: str | None) -> str | None:
        return None if value is None else part.dagster_key(value)

    result = outcome.result
    if result is not None:
        result = replace(result, partition_rows={key(k): n for k, n in result.partition_rows.items()})
    return replace(
        outcome,
        result=result,
        outcomes=[replace(o, partition=key(o.partition)) for o in outcome.outcomes],
        failed={key(k): v for k, v in outcome.failed.items()},
        blocked={key(k): v for k, v in outcome.blocked.items()},
        incomplete={key(k): v for k, v in outcome.incomplete.items()},
    )


def outcome_json(outcome: RunOutcome) -> dict[str, Any]:
    """``outcome`` as JSON-ready values (the partition range is the request's, so it is not repeated)."""
    result = outcome.result
    return {
        "result": None
        if result is None
        else {
            "location": result.location,
            "version": result.version,
            "rows": result.rows,
            "partition_rows": result.partition_rows,
            "schema": result.schema.jsonValue(),
            "changes": dict(result.changes),
            "committed": result.committed,
        },
        "checks": [
            {
                "name": o.name,
                "partition": o.partition,
                "passed": o.passed,
                "failing_rows": o.failing_rows,
                "sample": o.sample,
                "detail": o.detail,
                "error": o.error,
            }
            for o in outcome.outcomes
        ],
        "reads": outcome.reads,
        "undeclared_reads": list(outcome.undeclared_reads),
        "undeclared_names": list(outcome.undeclared_names),
        "column_lineage": outcome.column_lineage,
        "blocked": [[partition, why] for partition, why in outcome.blocked.items()],
    }


def outcome_from_json(data: dict[str, Any], node: Node, part: PartitionRange | None) -> RunOutcome:
    """The outcome :func:`outcome_json` described, each check outcome tied to ``node``'s declaration of it."""
    from pyspark.sql.types import StructType  # the schema's type only: no session, no JVM

    declared = {c.check_name: c for c in node.table.checks}
    outcomes = [
        CheckOutcome(
            declared[c["name"]],
            c["partition"],
            c["passed"],
            c["failing_rows"],
            c["sample"],
            c["detail"],
            c["error"],
        )
        for c in data["checks"]
    ]
    result = None
    if (r := data["result"]) is not None:
        schema = StructType.fromJson(r["schema"])
        result = WriteResult(
            r["location"],
            r["version"],
            r["rows"],
            dict(r["partition_rows"]),
            schema,
            changes=dict(r["changes"]),
            committed=r["committed"],
        )
    lineage = data["column_lineage"]
    return RunOutcome(
        result,
        part,
        outcomes,
        failed_partitions(outcomes),
        reads=data["reads"],
        undeclared_reads=tuple(data["undeclared_reads"]),
        undeclared_names=tuple(data["undeclared_names"]),
        column_lineage=None if lineage is None else {k: [tuple(p) for p in v] for k, v in lineage.items()},
        blocked={partition: why for partition, why in data["blocked"]},
    )
