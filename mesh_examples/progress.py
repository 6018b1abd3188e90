"""The demo's progress: one line per data product with its partitions published out of those planned.

On a terminal a live rich display; elsewhere (CI logs, ``| tee``, ``--verbose``) a plain line as each stage
starts and each product completes, so a log reads top to bottom without escape codes. The live display (the
stages above, one bar per product below) leaves ``sys.stdout`` and ``sys.stderr`` alone: rich would otherwise
redirect them onto the screen, and every library's log would scroll over the bars instead of going where the
CLI sent it, the demo's log file.
"""

from __future__ import annotations

from collections import defaultdict

import dagster as dg
from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn

from mesh_examples.run import DemoListener, Planned

Product = tuple[str, str]
"""(domain, product)"""


class DemoProgress(DemoListener):
    """Counts published partitions per (domain, product); draws them live or as plain lines."""

    def __init__(self, console: Console, live: bool) -> None:
        self.console = console
        self.live = live and console.is_terminal
        self.product_of: dict[dg.AssetKey, Product] = {}
        self.expected: dict[Product, set[tuple[dg.AssetKey, str | None]]] = defaultdict(set)
        self.done: dict[Product, set[tuple[dg.AssetKey, str | None]]] = defaultdict(set)
        self.failures: list[str] = []
        self.stages = Progress(SpinnerColumn(finished_text="[green]✓[/green]"), TextColumn("{task.description}"))
        self.display = Progress(
            SpinnerColumn(finished_text="[green]✓[/green]"),
            TextColumn("{task.fields[domain]}"),
            TextColumn("[bold]{task.fields[product]}"),
            BarColumn(bar_width=20),
            TextColumn("{task.fields[count]}"),
            console=console,
        )
        self.view = Live(
            Group(self.stages, self.display), console=console, redirect_stdout=False, redirect_stderr=False
        )
        self.tasks: dict[Product, TaskID] = {}
        self.current: TaskID | None = None

    def __enter__(self) -> DemoProgress:
        if self.live:
            self.view.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.current is not None:
            self.stages.update(self.current, total=1, completed=1)
        if self.live:
            self.view.stop()

    def stage(self, text: str) -> None:
        if not self.live:
            self.console.print(text, highlight=False)
            return
        if self.current is not None:
            self.stages.update(self.current, total=1, completed=1)
        self.current = self.stages.add_task(text, total=None)

    def planned(self, tables: list[Planned]) -> None:
        for table in tables:
            if not table.partitions:
                continue  # nothing of it in the demo's days (a week they do not hold): not shown
            product = (table.domain, table.product)
            self.product_of[table.key] = product
            self.expected[product] |= {(table.key, p) for p in table.partitions}
        if self.live:
            width = max(len(domain) for domain, _ in self.expected)
            for (domain, name), partitions in self.expected.items():
                fields = {"domain": domain.ljust(width), "product": name, "count": self.count((domain, name))}
                self.tasks[(domain, name)] = self.display.add_task("", total=len(partitions), **fields)

    def materialized(self, key: dg.AssetKey, partition: str | None) -> None:
        product = self.product_of.get(key)
        if product is None or (key, partition) in self.done[product]:
            return
        self.done[product].add((key, partition))
        if self.live:
            self.display.update(self.tasks[product], advance=1, count=self.count(product))
        elif len(self.done[product]) == len(self.expected[product]):
            self.console.print(f"  {self.line(product)}", highlight=False)

    def failed(self, message: str) -> None:
        self.failures.append(message)

    def count(self, product: Product) -> str:
        return f"{len(self.done[product])}/{len(self.expected[product])} partitions"

    def line(self, product: Product) -> str:
        return f"{product[0]}/{product[1]}: {self.count(product)}"

    def incomplete(self) -> list[str]:
        """Products that published fewer partitions than planned: ``domain/product: done/total`` and which."""
        out = []
        for product, planned in self.expected.items():
            missing = planned - self.done[product]
            if missing:
                out.append(f"{self.line(product)}; missing {spans(missing)}")
        return out


def spans(missing: set[tuple[dg.AssetKey, str | None]]) -> str:
    """``table a: 2021-06-02, 2021-06-03; table b: whole`` (a long run of days as ``first .. last (n days)``)."""
    by_table: dict[str, list[str]] = defaultdict(list)
    for key, partition in missing:
        by_table[key.to_user_string()].append(partition or "whole")
    parts = []
    for table, partitions in sorted(by_table.items()):
        keys = sorted(partitions)
        shown = ", ".join(keys) if len(keys) <= 3 else f"{keys[0]} .. {keys[-1]} ({len(keys)})"
        parts.append(f"{table} {shown}")
    return "; ".join(parts)
