"""Pausing a product's automation: ``mesh pause <domain>/<product>`` holds every automated run of its outputs,
and of the outputs that read them, until ``mesh resume``.

The state lives in the Dagster instance (its key-value storage), so the daemon's automation, every code server,
the UI and the command line see the same thing. A paused product's outputs are never requested by automation;
their consumers wait too (the condition ``product_and_inputs_not_paused`` is false, and the automation's log
names the paused product and why). Manual runs and backfills still
run: pausing is for automation. Resuming lets automation catch up: a partition whose input was published while
paused is still due (its trigger waits until the partition is handled).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import dagster as dg

from mesh_assets.compat import automation_instance, kv_get, kv_set

PREFIX = "mesh/paused/"
TABLE_PREFIX = "mesh/paused-table/"
"""Each table of a paused product, keyed by table: what a dbt model knows of what it reads is tables, not their
products."""
PAUSED_METADATA = "mesh/paused"
"""The metadata key of the observation that shows a table's product paused (or resumed) in the UI."""


@dataclass(frozen=True)
class Pause:
    """Why and since when a product is paused."""

    reason: str
    since: str

    def describe(self) -> str:
        return f"paused since {self.since}: {self.reason}"


def _key(domain: str, product: str) -> str:
    return f"{PREFIX}{domain}/{product}"


def _table_key(table: dg.AssetKey) -> str:
    return TABLE_PREFIX + "/".join(table.path)


def paused_products(
    instance: dg.DagsterInstance, products: Iterable[tuple[str, str]], tables: Iterable[dg.AssetKey] = ()
) -> dict[tuple[str, str], Pause]:
    """Which of ``products`` (``(domain, product)``), and of the products of ``tables``, are paused now, with
    why."""
    wanted = {_key(d, p): (d, p) for d, p in products}
    by_table = {_table_key(t) for t in tables}
    found = kv_get(instance, set(wanted) | by_table) if wanted or by_table else {}
    out = {}
    for key, value in found.items():
        if value:
            data = json.loads(value)
            product = wanted.get(key) or tuple(data["product"].split("/", 1))
            out[product] = Pause(data["reason"], data["since"])
    return out


def set_paused(
    instance: dg.DagsterInstance,
    domain: str,
    product: str,
    tables: Iterable[dg.AssetKey],
    reason: str | None,
) -> Pause | None:
    """Pause (``reason`` given) or resume (``reason`` None) ``domain/product``; ``tables`` (its outputs) carry an
    observation saying so, which the UI shows on each. Returns the pause now in force, if any."""
    pause = None
    if reason is not None:
        pause = Pause(reason, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    value = json.dumps({"reason": pause.reason, "since": pause.since}) if pause else ""
    tables = list(tables)
    by_table = (
        json.dumps({"product": f"{domain}/{product}", "reason": pause.reason, "since": pause.since}) if pause else ""
    )
    kv_set(instance, {_key(domain, product): value, **{_table_key(t): by_table for t in tables}})
    shown = pause.describe() if pause else "no (resumed)"
    for key in tables:
        instance.report_runless_asset_event(dg.AssetObservation(asset_key=key, metadata={PAUSED_METADATA: shown}))
    return pause


class NotPaused(dg.AutomationCondition):
    """True unless the output's product, or the product of a table it reads, is paused (one read of the
    instance per tick, and only when there is something to request). A dbt model names the tables it reads
    (``tables``), whose products its translator does not know."""

    def __init__(
        self, own: tuple[str, str], upstream: Iterable[tuple[str, str]], tables: Iterable[dg.AssetKey] = ()
    ) -> None:
        self._own = own
        self._products = (own, *sorted(set(upstream) - {own}))
        self._tables = tuple(sorted(set(tables), key=lambda k: k.path))

    @property
    def name(self) -> str:
        return "product_and_inputs_not_paused"

    @property
    def description(self) -> str:
        return f"{'/'.join(self._own)} and the products it reads are not paused (mesh pause / mesh resume)"

    @property
    def requires_cursor(self) -> bool:
        return False

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        candidates = context.candidate_subset
        if candidates.is_empty:
            return dg.AutomationResult(context, candidates)
        paused = paused_products(automation_instance(context), self._products, self._tables)
        if not paused:
            return dg.AutomationResult(context, candidates)
        context.log.info(
            "held back: "
            + "; ".join(
                f"{'/'.join(p)} {pause.describe()}" + ("" if p == self._own else " (an input's product)")
                for p, pause in sorted(paused.items())
            )
        )
        return dg.AutomationResult(context, context.get_empty_subset())
