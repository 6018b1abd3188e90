"""The Python API: a product object whose decorator turns PySpark functions into output tables.

    orders = Product("orders", owner="food@example.com", contacts=[chat("#food-data")])

    @orders.transformation(Output(table="orders", published=True), inputs={"raw": Input(table="raw_orders")})
    def build_orders(raw: DataFrame) -> DataFrame: ...

Functions receive each input as a DataFrame already restricted to the partition window (and, if they
declare a ``context`` parameter, a :class:`~mesh_assets.run.context.ProductContext`). They return a
DataFrame; the platform checks and writes it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date
from pathlib import Path
from typing import Any

from mesh_assets.model.product import Contact, ExternalTable, Input, Output

_LOADING: ContextVar[Path | None] = ContextVar("mesh_product_file", default=None)


@contextmanager
def loading(path: Path) -> Iterator[None]:
    """Products created while ``path`` is being loaded belong to it (discovery loads one file at a time)."""
    token = _LOADING.set(path)
    try:
        yield
    finally:
        _LOADING.reset(token)


def email(address: str) -> Contact:
    return Contact(kind="email", value=address)


def chat(channel: str) -> Contact:
    return Contact(kind="chat", value=channel)


class Product:
    """Collects a product's fields and transformations; validated into a DataProduct at discovery."""

    def __init__(
        self,
        name: str,
        *,
        owner: str,
        contacts: Iterable[Contact | Mapping[str, str]],
        description: str = "",
        tier: str = "t3",
        classification: str = "l1",
        tags: Mapping[str, str] | None = None,
        cron: str | None = None,
        rerun_history: bool = True,
        start_date: date | str | None = None,
        end_date: date | str | None = None,
        external: Iterable[ExternalTable | Mapping[str, Any]] = (),
        domain: str | None = None,
    ) -> None:
        caller = sys._getframe(1)  # one frame up, for the line; not the whole stack with its source files
        self.source_file = _LOADING.get() or Path(caller.f_code.co_filename)
        self.line = caller.f_lineno
        self.fields: dict[str, Any] = {
            "name": name,
            "owner": owner,
            "contacts": list(contacts),
            "description": description,
            "tier": tier,
            "classification": classification,
            "tags": dict(tags or {}),
            "cron": cron,
            "rerun_history": rerun_history,
            "external": list(external),
        }
        if start_date is not None:
            self.fields["start_date"] = start_date
        if end_date is not None:
            self.fields["end_date"] = end_date
        if domain is not None:
            self.fields["domain"] = domain
        self.transformations: list[dict[str, Any]] = []

    def transformation(
        self,
        output: Output | str,
        *,
        inputs: Mapping[str, Input | str] | None = None,
        range_aware: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register ``fn`` as the producer of ``output``; inputs map parameter names to tables."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.transformations.append(
                {
                    "kind": "pyspark",
                    "output": Output(table=output) if isinstance(output, str) else output,
                    "inputs": {k: Input(table=v) if isinstance(v, str) else v for k, v in (inputs or {}).items()},
                    "fn": fn,
                    "range_aware": range_aware,
                    "line": fn.__code__.co_firstlineno,
                }
            )
            return fn

        return register

    def spec_fields(self) -> dict[str, Any]:
        return {**self.fields, "transformations": self.transformations}
