"""Each output's AutomationCondition, built from its spec: data dependencies drive runs across domains.

A partition is requested when

- one of its input partitions was published (materialized, or observed for an external table) since the
  partition was last requested or updated (``since_last_handled``: never twice for one upstream state);
- every input partition its window maps to is published: ``~any_deps_match(missing)``, so a daily output
  reading an hourly input needs all 24 hours (``all_deps_match`` would accept a day with any one hour);
- every blocking check of the input partitions it reads passed on their current data: a failed check, or one
  not yet run (an external table's check run still pending), holds it back (``ignore_quality`` inputs skip this);
- the product's ``cron`` (if any) ticked since the partition was last handled: cron is the earliest start;
- neither it nor an input is being written (``in_progress``).

Historical partitions are requested too when an upstream re-publishes them, unless the product sets
``rerun_history: false`` (then only the latest time window). Inputs read whole (window ``all`` or an
unpartitioned table) re-trigger only the latest window: a dimension update must not recompute all history.
"""

from __future__ import annotations

import dagster as dg

from mesh_assets.spec.catalog import Catalog
from mesh_assets.spec.model import DataProduct, PySparkTransformation, SqlTransformation

AC = dg.AutomationCondition


def _updated() -> dg.AutomationCondition:
    """An input partition published since the previous tick by a run that did not also target us."""
    return (AC.newly_updated() & ~AC.executed_with_root_target()).with_label(
        "newly_updated_without_root"
    ) | AC.will_be_requested()


def input_keys(
    product: DataProduct, t: PySparkTransformation | SqlTransformation, catalog: Catalog
) -> tuple[list[dg.AssetKey], list[dg.AssetKey], list[dg.AssetKey]]:
    """(inputs read partition by partition, inputs read whole, inputs whose quality gates us)."""
    by_partition, whole, quality = [], [], []
    for inp in t.inputs.values():
        domain, table = inp.ref(product.domain)
        key = dg.AssetKey([domain, table])
        upstream = catalog.get(domain, table)
        partitioned = upstream is not None and upstream.partitioning != "none"
        if t.output.partitioning == "none" or (partitioned and inp.window.kind != "all"):
            by_partition.append(key)
        else:
            whole.append(key)
        if not inp.ignore_quality:
            quality.append(key)
    return by_partition, whole, quality


def _only(condition: dg.AutomationCondition, keys: list[dg.AssetKey]) -> dg.AutomationCondition:
    return condition.allow(dg.AssetSelection.assets(*keys))  # type: ignore[attr-defined]


def dbt_model_condition() -> dg.AutomationCondition:
    """A dbt model's condition: Dagster's ``eager`` (its latest window once every input is there, once per
    upstream state), held back like a product's while an input's blocking checks have not passed.
    History is recomputed by backfills (``mesh backfill --downstream``), which pass the window to dbt."""
    unpassed = AC.any_checks_match(~AC.check_passed() & ~AC.will_be_requested(), blocking_only=True)
    return (AC.eager() & ~AC.any_deps_match(unpassed).with_label("input_blocking_checks_passed")).with_label(
        "mesh_dependencies(dbt)"
    )


def output_condition(
    product: DataProduct, t: PySparkTransformation | SqlTransformation, catalog: Catalog
) -> dg.AutomationCondition | None:
    """The condition of one output; None for an output without inputs (nothing to react to)."""
    if not t.inputs:
        return None
    by_partition, whole, quality = input_keys(product, t, catalog)
    triggers = []
    if by_partition:
        triggers.append(_only(AC.any_deps_match(_updated()), by_partition))
    if whole:
        triggers.append(AC.in_latest_time_window() & _only(AC.any_deps_match(_updated()), whole))
    trigger = triggers[0] if len(triggers) == 1 else triggers[0] | triggers[1]
    parts = []
    if not product.rerun_history:
        parts.append(AC.in_latest_time_window())
    parts.append(trigger.since_last_handled().with_label("input_published_since_last_handled"))
    if product.cron:
        parts.append(AC.cron_tick_passed(product.cron).since_last_handled().with_label(f"cron_passed({product.cron})"))
    parts += [
        ~AC.in_progress(),
        ~AC.any_deps_in_progress(),
        (~AC.any_deps_match(AC.missing() & ~AC.will_be_requested())).with_label("all_input_partitions_published"),
    ]
    if quality:
        unpassed = AC.any_checks_match(~AC.check_passed() & ~AC.will_be_requested(), blocking_only=True)
        parts.append((~_only(AC.any_deps_match(unpassed), quality)).with_label("input_blocking_checks_passed"))
    condition = parts[0]
    for part in parts[1:]:
        condition = condition & part
    label = "mesh_dependencies" + ("" if product.rerun_history else "(latest_window)")
    if product.cron:
        label += f"(cron={product.cron})"
    return condition.with_label(label)
