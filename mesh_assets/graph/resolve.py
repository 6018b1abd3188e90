"""The mesh resolved once: every table with what consumers need, every output with its inputs resolved.

Discovery gives validated specs per domain; resolution turns them (and the tables other tools publish, such
as dbt models) into one :class:`MeshGraph`. Each :class:`Node` is one output table of one product, holding
its product, its transformation, its SQL (read from its file once, here) and its :class:`Read` s, each
pointing at the resolved upstream :class:`Table` with its grain, location key and checks. The asset factory,
the run, automation, lineage and backfills consume nodes and tables; they never look a name up again.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from mesh_assets.model.checks import CheckSpec
from mesh_assets.model.grain import Grain
from mesh_assets.model.product import (
    OPEN_CLASSIFICATION,
    Column,
    Contact,
    DataProduct,
    ExternalTable,
    Input,
    Output,
    PySparkTransformation,
    SqlTransformation,
    blocking_checks,
    checks_of,
)

if TYPE_CHECKING:
    from mesh_assets.graph.discovery import DomainSpecs

Transformation = PySparkTransformation | SqlTransformation


class TableKind(enum.Enum):
    """Who writes a table: a Mesh product, an outside writer (observed), or dbt."""

    PRODUCT = "product"
    EXTERNAL = "external"
    DBT = "dbt"


@dataclass(frozen=True)
class DeclaredInput:
    """One input as its output declares it: what governance checks without the product's code."""

    name: str
    domain: str
    table: str
    window: str
    field: str
    """Where the spec declares it, e.g. ``tables.0.inputs.orders``."""
    line: int | None
    deadline: str | None = None
    """The deadline field it sets (``freshness_hours`` or ``timeout_hours``), if any."""


@dataclass(frozen=True)
class Table:
    """One table of the mesh, as its consumers, the run and the observers see it."""

    domain: str
    name: str
    product: str
    owner: str
    published: bool
    grain: Grain
    partition_column: str
    kind: TableKind
    start_date: date
    blocking_checks: tuple[str, ...]
    source_file: Path | None
    line: int | None
    regions: tuple[str, ...] = ()
    region_column: str = "region"
    end_date: date | None = None
    """The first day with no partitions (excluded); None: they go on to the present."""
    inputs: tuple[tuple[str, str], ...] = ()
    """The ``(domain, table)`` of every table this one reads."""
    declared: tuple[DeclaredInput, ...] = ()
    checks: tuple[CheckSpec, ...] = ()
    """The checks as they run (see :func:`~mesh_assets.model.product.checks_of`)."""
    contacts: tuple[Contact, ...] = ()
    contract: tuple[Column, ...] | None = None
    classification: str = "l1"
    spec: Output | ExternalTable | None = field(default=None, compare=False)

    @property
    def ref(self) -> str:
        return f"{self.domain}.{self.name}"

    @property
    def shows_values(self) -> bool:
        """Whether row values may appear in check samples and errors (else counts and column names only)."""
        return self.classification == OPEN_CLASSIFICATION

    @property
    def key(self) -> dg.AssetKey:
        return dg.AssetKey([self.domain, self.name])

    @property
    def partitions_def(self) -> dg.PartitionsDefinition | None:
        return self.grain.partitions_def(self.start_date, self.regions or None, self.end_date)

    @property
    def external(self) -> bool:
        return self.kind is TableKind.EXTERNAL

    def complete(self, published: set[str]) -> set[str]:
        """The published partition keys as consumers count them: a regional day only with every region."""
        if not self.regions:
            return published
        regions: dict[str, set[str]] = {}
        for key in published:
            day, region = key.split("|")
            regions.setdefault(day, set()).add(region)
        return {day for day, found in regions.items() if found >= set(self.regions)}


@dataclass(frozen=True)
class Read:
    """One input of a node: its parameter name, its declaration, and the table it resolves to."""

    name: str
    input: Input
    table: Table


@dataclass(frozen=True)
class Node:
    """One output table of one product: what the asset factory builds and the run executes."""

    product: DataProduct
    transformation: Transformation
    table: Table
    reads: tuple[Read, ...]
    sql: str | None
    """A SQL product's query, read once; None for a PySpark product."""

    @property
    def output(self) -> Output:
        return self.transformation.output

    @property
    def domain(self) -> str:
        return self.product.domain


def sql_text(transformation: SqlTransformation, product: DataProduct) -> str:
    """The query of a SQL transformation: inline, or from its file next to the spec."""
    if transformation.sql is not None:
        return transformation.sql
    assert product.source_file is not None and transformation.sql_file is not None
    return (product.source_file.parent / transformation.sql_file).read_text()


def declared_table(spec: Output | ExternalTable, owner: Owner, line: int | None, **reads: tuple) -> Table:
    """The table ``spec`` declares, owned by ``owner`` (``reads``: an output's ``inputs`` and ``declared``)."""
    external = isinstance(spec, ExternalTable)
    return Table(
        domain=owner.domain,
        name=spec.table,
        product=owner.product,
        owner=owner.owner,
        published=spec.published,
        grain=spec.partitioning,
        partition_column=spec.partition_column,
        kind=TableKind.EXTERNAL if external else TableKind.PRODUCT,
        start_date=owner.start_date,
        end_date=owner.end_date,
        blocking_checks=blocking_checks(spec),
        source_file=owner.source_file,
        line=line,
        regions=(spec.regions or ()) if external else (),
        region_column=spec.region_column if external else "region",
        checks=tuple(checks_of(spec)),
        contacts=owner.contacts,
        contract=spec.contract,
        classification=owner.classification,
        spec=spec,
        **reads,
    )


@dataclass(frozen=True)
class Owner:
    """What a table takes from the product that declares it."""

    domain: str
    product: str
    owner: str
    start_date: date
    source_file: Path | None
    contacts: tuple[Contact, ...]
    classification: str
    end_date: date | None = None

    @classmethod
    def of(cls, product: DataProduct) -> Owner:
        return cls(
            product.domain,
            product.name,
            product.owner,
            product.start_date,
            product.source_file,
            product.contacts,
            product.classification,
            product.end_date,
        )


def tables_of(product: DataProduct) -> Iterator[Table]:
    """Every table ``product`` declares: its outputs, then its external tables."""
    owner = Owner.of(product)
    for i, t in enumerate(product.transformations):
        refs = {name: inp.ref(product.domain) for name, inp in t.inputs.items()}
        yield declared_table(
            t.output,
            owner,
            t.line,
            inputs=tuple(refs.values()),
            declared=tuple(
                DeclaredInput(
                    name,
                    *refs[name],
                    inp.window.kind,
                    f"tables.{i}.inputs.{name}",
                    inp.line or t.line,
                    "freshness_hours" if inp.freshness_hours else "timeout_hours" if inp.timeout_hours else None,
                )
                for name, inp in t.inputs.items()
            ),
        )
    for ext in product.external:
        yield declared_table(ext, owner, ext.line)


class MeshGraph:
    """Tables by ``(domain, table)`` and nodes by output; duplicates are kept aside for governance."""

    def __init__(self, domains: dict[str, DomainSpecs], extra: Iterable[Table] = ()):
        self.tables: dict[tuple[str, str], Table] = {}
        self.duplicates: list[tuple[Table, Table]] = []
        products = [p for specs in domains.values() for p in specs.products]
        self.products = products
        for table in [*(t for p in products for t in tables_of(p)), *extra]:
            key = (table.domain, table.name)
            if key in self.tables:
                self.duplicates.append((self.tables[key], table))
            else:
                self.tables[key] = table
        self.nodes: dict[tuple[str, str], Node] = {}
        for product in products:
            for t in product.transformations:
                key = (product.domain, t.output.table)
                if self.tables[key].spec is not t.output:
                    continue  # a duplicate table: governance reports it
                reads = tuple(
                    Read(name, inp, upstream)
                    for name, inp in t.inputs.items()
                    if (upstream := self.tables.get(inp.ref(product.domain))) is not None
                )
                sql = sql_text(t, product) if isinstance(t, SqlTransformation) else None
                self.nodes[key] = Node(product, t, self.tables[key], reads, sql)

    def get(self, domain: str, table: str) -> Table | None:
        return self.tables.get((domain, table))

    def node(self, domain: str, table: str) -> Node:
        return self.nodes[(domain, table)]

    def products_of(self, domain: str) -> list[DataProduct]:
        return [p for p in self.products if p.domain == domain]

    def nodes_of(self, domain: str) -> list[Node]:
        return [n for (d, _), n in self.nodes.items() if d == domain]

    def consumers(self, domain: str, table: str) -> tuple[str, ...]:
        """``<domain>.<table>`` of every table, in any domain, that reads ``domain.table``."""
        return self._readers.get((domain, table), ())

    @cached_property
    def _readers(self) -> dict[tuple[str, str], tuple[str, ...]]:
        """Every table's consumers, found in one pass (asking each table's question alone is quadratic)."""
        found: dict[tuple[str, str], set[str]] = {}
        for t in self.tables.values():
            for ref in t.inputs:
                found.setdefault(ref, set()).add(t.ref)
        return {ref: tuple(sorted(refs)) for ref, refs in found.items()}
