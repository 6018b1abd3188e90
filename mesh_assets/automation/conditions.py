"""Each output's AutomationCondition, built from its spec: data dependencies drive runs across domains.

A partition is requested when

- one of its input partitions was published (materialized, or observed for an external table) since the
  partition was last requested or updated (``since_last_handled``: never twice for one upstream state);
- every input partition its window maps to is published: ``~any_deps_match(missing)``, so a daily output
  reading an hourly input needs all 24 hours (``all_deps_match`` would accept a day with any one hour);
- every blocking check of the input partitions it reads passed on their current data: a failed check, or one
  not yet run (an external table's check run still pending), holds it back (``ignore_quality`` inputs skip this);
- an input declaring ``min_complete`` is judged instead by the run's readiness rule (its share of the window
  ready, :mod:`mesh_assets.automation.ready`), so a rollup with a partial window is not held back forever;
- the product's ``cron`` (if any) ticked since the partition was last handled: cron is the earliest start;
- neither it nor an input is being written (``in_progress``);
- neither its product nor the product of a table it reads is paused (``mesh pause``,
  :mod:`mesh_assets.automation.pause`).

Historical partitions are requested too when an upstream re-publishes them, unless the product sets
``rerun_history: false`` (then only the latest time window). Inputs read whole (window ``all`` or an
unpartitioned table) re-trigger only the latest window: a dimension update must not recompute all history.

Evaluation cost (a tick evaluates every node of every asset's condition and stores a cursor entry for most of
them): the trigger comes first, so in steady state every hold-back test runs on an empty set of partitions;
the hold-back tests are one negated OR over one ``any_deps_match``, not a negation per test; conditions that
do not depend on which input is which are built once per shape and shared. Dagster evaluates each
``SinceCondition`` over all partitions whatever its position, so the trigger's state is kept every tick.
"""

from __future__ import annotations

import operator
from functools import cache, reduce

import dagster as dg

from mesh_assets.automation.pause import NotPaused
from mesh_assets.automation.ready import beyond_dagster, inputs_ready_elsewhere
from mesh_assets.graph.resolve import Node
from mesh_assets.run.readiness import Watermark

AC = dg.AutomationCondition
Keys = tuple[dg.AssetKey, ...] | None
"""Inputs a sub-condition looks at; None for all of them (no ``allow`` needed, so the condition is shared)."""


def _updated() -> dg.AutomationCondition:
    """An input partition published since the previous tick by a run that did not also target us."""
    return (AC.newly_updated() & ~AC.executed_with_root_target()).with_label(
        "newly_updated_without_root"
    ) | AC.will_be_requested()


def _unpassed_blocking_checks() -> dg.AutomationCondition:
    """A blocking check has not passed on the partition's current data and is not requested in this tick.

    The same as ``any_checks_match(~passed)``, as a check has its asset's partitions, with one negation per
    input instead of one per check (each negation is one more cursor entry per tick)."""
    return ~AC.all_checks_match(AC.check_passed() | AC.will_be_requested(), blocking_only=True)


def input_keys(node: Node) -> tuple[list[dg.AssetKey], list[dg.AssetKey], list[dg.AssetKey]]:
    """(inputs read partition by partition, inputs read whole, inputs whose quality gates us here; an input with
    ``min_complete`` is gated by the readiness rule, not here)."""
    by_partition, whole, quality = [], [], []
    for read in node.reads:
        partitioned = read.table.grain.partitioned and not read.input.window.whole
        (by_partition if not node.table.grain.partitioned or partitioned else whole).append(read.table.key)
        if not read.input.ignore_quality and read.input.min_complete is None:
            quality.append(read.table.key)
    return by_partition, whole, quality


def gated_keys(node: Node) -> list[dg.AssetKey]:
    """Inputs whose every window partition must be published here: all but those with ``min_complete`` and those
    Dagster maps beyond what the run reads (one region, a region's local day: :func:`beyond_dagster`), which the
    run's readiness rule judges (:mod:`mesh_assets.automation.ready`)."""
    return [read.table.key for read in node.reads if read.input.min_complete is None and not beyond_dagster(node, read)]


def _beyond(node: Node, key: dg.AssetKey) -> bool:
    """Whether every read of ``key`` by ``node`` is one Dagster maps beyond what the run reads."""
    return all(beyond_dagster(node, read) for read in node.reads if read.table.key == key)


def _only(condition: dg.AutomationCondition, keys: Keys) -> dg.AutomationCondition:
    """``condition`` restricted to the inputs ``keys``; unchanged for all inputs (an asset's deps are its inputs)."""
    return condition if keys is None else condition.allow(dg.AssetSelection.assets(*keys))  # type: ignore[attr-defined]


def _subset(keys: list[dg.AssetKey], inputs: set[dg.AssetKey]) -> Keys:
    """``keys`` as a cache key: None when they are all the inputs (the common case, shared across outputs)."""
    return None if set(keys) == inputs else tuple(keys)


DBT_LABEL = "mesh_dependencies(dbt)"
"""How the UI names a dbt model's condition."""


@cache
def dbt_model_condition() -> dg.AutomationCondition:
    """A dbt model's condition: Dagster's ``eager`` (its latest window once every input is there, once per
    upstream state), held back like a product's while an input's blocking checks have not passed.
    History is recomputed by backfills (``mesh backfill --downstream``), which pass the window to dbt.
    One object shared by every model."""
    gate = ~AC.any_deps_match(_unpassed_blocking_checks()).with_label("input_blocking_checks_passed")
    return (AC.eager() & gate).with_label(DBT_LABEL)


def _trigger(by_partition: Keys, whole: Keys) -> dg.AutomationCondition:
    """An input published since the partition was last handled (whole inputs: the latest window only)."""
    triggers = []
    if by_partition != ():
        triggers.append(_only(AC.any_deps_match(_updated()), by_partition))
    if whole != ():
        triggers.append(AC.in_latest_time_window() & _only(AC.any_deps_match(_updated()), whole))
    trigger = triggers[0] if len(triggers) == 1 else triggers[0] | triggers[1]
    return trigger.since_last_handled().with_label("input_published_since_last_handled")


def _held_back(quality: Keys, gated: Keys = None) -> dg.AutomationCondition:
    """It or an input is being written, an input partition (of ``gated``) is not published, or an input's check
    has not passed.

    One ``any_deps_match`` over the OR of the input tests is the same as one per test (any input matching
    any test), with fewer nodes to evaluate and to keep in the cursor."""
    unpublished = (AC.missing() & ~AC.will_be_requested()).with_label("unpublished")
    per_input = [AC.in_progress(), unpublished]
    if quality is None:
        per_input.append(_unpassed_blocking_checks().with_label("blocking_checks_not_passed"))
    tests = [AC.in_progress()]
    if gated != ():
        inputs = _only(AC.any_deps_match(reduce(operator.or_, per_input)), gated)
        tests.append(inputs.with_label("an_input_not_ready"))
    if gated is not None:  # the inputs left to the readiness rule (min_complete) still hold it back while written
        tests.append(AC.any_deps_match(AC.in_progress()).with_label("an_input_in_progress"))
    if quality:
        checks = _only(AC.any_deps_match(_unpassed_blocking_checks()), quality)
        tests.append(checks.with_label("an_input_blocking_check_not_passed"))
    return reduce(operator.or_, tests).with_label("held_back")


@cache
def _parts(
    rerun_history: bool, cron: str | None, by_partition: Keys, whole: Keys, quality: Keys, gated: Keys = None
) -> tuple[tuple[dg.AutomationCondition, ...], str]:
    """The conditions one shape of output ANDs, and its label; cached, so outputs of one shape share them."""
    parts = []
    if not rerun_history:
        parts.append(AC.in_latest_time_window())
    parts.append(_trigger(by_partition, whole))
    if cron:
        parts.append(AC.cron_tick_passed(cron).since_last_handled().with_label(f"cron_passed({cron})"))
    parts.append((~_held_back(quality, gated)).with_label("inputs_ready"))
    label = "mesh_dependencies" + ("" if rerun_history else "(latest_window)")
    if cron:
        label += f"(cron={cron})"
    return tuple(parts), label


def output_condition(node: Node, watermark: Watermark | None = None) -> dg.AutomationCondition | None:
    """The condition of one output; None for an output without inputs (nothing to react to) and for a draft or
    retired one (materialized by hand only).

    Inputs in other code locations are also judged by the run's readiness rule, last, on the partitions
    everything before let through (:mod:`mesh_assets.automation.ready`): there their checks are not in the graph.
    So are inputs read whole whose age is limited (``watermark`` reads their watermark columns).
    """
    if not node.reads or not node.table.status.automated:
        return None
    by_partition, whole, quality = input_keys(node)
    inputs = {*by_partition, *whole}
    shape = (
        node.product.rerun_history,
        node.product.cron,
        _subset(by_partition, inputs),
        _subset(whole, inputs),
        _subset([k for k in quality if k in gated_keys(node) or not _beyond(node, k)], inputs),
        _subset(gated_keys(node), inputs),
    )
    elsewhere = inputs_ready_elsewhere(node, watermark)
    parts, label = _parts(*shape)
    tail = [elsewhere] if elsewhere is not None else []
    not_paused = NotPaused((node.domain, node.product.name), ((r.table.domain, r.table.product) for r in node.reads))
    return reduce(operator.and_, [*parts, *tail, not_paused]).with_label(label)
