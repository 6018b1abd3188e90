"""Whether a run keeps its rows in executor storage between the audit and the write, or computes them twice.

Write-audit-publish needs the write to publish exactly the rows the audit judged. Keeping them
(:func:`~mesh_assets.storage.writer.stage`) guarantees it whatever the transformation does, for a copy of every
row: at volume that copy cost a narrow product 45-60 % of its raw write (``bench/volume.py``), while computing
the rows again for the write cost about what the audit's read of the checked columns costs. Computing twice
gives the same rows only when nothing in between can differ, so Mesh computes twice only when all of this holds,
and keeps the rows otherwise:

- every table the plan reads is a declared input, read at the version it had when the run started
  (:func:`~mesh_assets.run.compute.input_versions`), and Spark's plan of it is reachable (not under Connect);
- Spark calls the plan deterministic (no ``rand``, ``uuid``, ``first`` without order), it calls no Python UDF
  (Spark takes one for deterministic unless its author said otherwise, and cannot know), and it reads no clock
  (``current_timestamp()`` is fixed per query, not per run);
- the plan is narrow: projections, filters and unions of its reads, so computing it again costs a re-read of
  the columns the audit needs, never a second aggregation, join or sort;
- the audit reads the rows once: its checks are all judged in the one tally (no ``unique`` or ``sql`` check,
  each a job of its own over the rows).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pyspark.sql import DataFrame

from mesh_assets.graph.resolve import Node
from mesh_assets.lineage.capture import Reads
from mesh_assets.lineage.plan import normalize
from mesh_assets.model.checks import CheckSpec, SqlAssertion, Unique

NARROW = frozenset({"Project", "Filter", "Union", "SubqueryAlias", "View", "Relation", "LocalRelation", "Range"})
"""Logical plan nodes that computing again only re-reads: the plan may hold nothing else."""
CLOCKS = ("current_timestamp()", "current_date(", "now()", "localtimestamp(", "curdate()")
"""Functions whose value Spark fixes per query: two computations of one plan see two values."""
_NODE = re.compile(r"^[\s:|+\-]*([A-Za-z]\w*)")


def audited_in_one_pass(checks: Iterable[CheckSpec]) -> bool:
    """Whether the audit reads the rows once: no check that runs a job of its own over them."""
    return not any(isinstance(c, Unique | SqlAssertion) for c in checks)


def plan_nodes(analyzed: str) -> set[str]:
    """The node names of an analyzed plan as Spark prints it (one node a line, subqueries included)."""
    return {m.group(1) for line in analyzed.splitlines() if (m := _NODE.match(line))}


def recomputable(rows: DataFrame, node: Node, reads: Reads, pinned: Iterable[str]) -> bool:
    """Whether the write may compute ``rows`` again instead of keeping them (see the module's rules);
    ``pinned``: the locations of the inputs read at a fixed version."""
    fixed = {normalize(p) for p in pinned}
    if reads.locations is None or reads.undeclared or not {normalize(p) for p in reads.locations} <= fixed:
        return False
    if not audited_in_one_pass(node.table.checks):
        return False
    jdf = getattr(rows, "_jdf", None)
    if jdf is None:
        return False
    try:
        execution = jdf.queryExecution()
        analyzed = execution.analyzed()
        deterministic, text = bool(analyzed.deterministic()), str(analyzed.toString())
        optimized = str(execution.optimizedPlan().toString())
    except Exception:  # a plan Spark cannot show: keep the rows
        return False
    if not deterministic or "EvalPython" in optimized:  # Spark's optimizer gives Python UDFs nodes of their own
        return False
    return plan_nodes(text) <= NARROW and not any(c in text.lower() for c in CLOCKS)
