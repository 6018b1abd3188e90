"""The Python API: a product object whose decorator turns PySpark functions into output tables.

    orders = Product("orders", owner="food@example.com", contacts=[chat("#food-data")])

    @orders.transformation(Output(table="orders", published=True), inputs={"raw": Input(table="raw_orders")})
    def build_orders(raw: DataFrame) -> DataFrame: ...

Functions receive each input as a DataFrame already restricted to the partition window (and, if they
declare a ``context`` parameter, a :class:`~mesh_assets.run.context.ProductContext`). They return a
DataFrame; the platform checks and writes it.
"""

from __future__ import annotations

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
    """Products created while ``path`` is being loaded belong to it (discovery loads one file at a time).

    This is how a product knows its file without inspecting the call stack; its line is the line of the
    statement that names it, which discovery reads from the file's syntax tree once per file."""
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
    """Collects a product's fields and transformations; validated into a DataProduct at discovery.

    ``owner``, ``contacts``, ``tier``, ``classification``, ``start_date``, ``end_date``, ``input_freshness_hours``
    and ``retries`` default to the domain's (``domains/<domain>/domain.yaml``); a product that gives one keeps
    its own.

    ``source_file`` is the file discovery was loading when the product was made (None outside discovery,
    where a product is never validated).
    """

    def __init__(
        self,
        name: str,
        *,
        owner: str | None = None,
        contacts: Iterable[Contact | Mapping[str, str]] | None = None,
        description: str = "",
        tier: str | None = None,
        classification: str | None = None,
        status: str = "active",
        sunset: date | str | None = None,
        tags: Mapping[str, str] | None = None,
        cron: str | None = None,
        rerun_history: bool = True,
        start_date: date | str | None = None,
        end_date: date | str | None = None,
        external: Iterable[ExternalTable | Mapping[str, Any]] = (),
        domain: str | None = None,
        engine: str | None = None,
        input_freshness_hours: float | None = None,
        retries: Mapping[str, Any] | None = None,
    ) -> None:
        self.source_file = _LOADING.get()
        self.fields: dict[str, Any] = {
            "name": name,
            "description": description,
            "status": status,
            "sunset": sunset,
            "tags": dict(tags or {}),
            "cron": cron,
            "rerun_history": rerun_history,
            "external": list(external),
        }
        # Left out when not given: the domain's defaults (domain.yaml) fill them, else the model's own defaults.
        given = {"owner": owner, "tier": tier, "classification": classification, "start_date": start_date}
        self.fields.update({k: v for k, v in given.items() if v is not None})
        if contacts is not None:
            self.fields["contacts"] = list(contacts)
        if end_date is not None:
            self.fields["end_date"] = end_date
        if domain is not None:
            self.fields["domain"] = domain
        if engine is not None:
            self.fields["engine"] = engine
        if input_freshness_hours is not None:
            self.fields["input_freshness_hours"] = input_freshness_hours
        if retries is not None:
            self.fields["retries"] = dict(retries)
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
