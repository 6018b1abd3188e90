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

from mesh_assets.graph import access
from mesh_assets.graph.queries import query_columns
from mesh_assets.graph.revisions import code_version, revision, source_text, source_version, sql_text
from mesh_assets.model.access import Grant
from mesh_assets.model.checks import CheckSpec
from mesh_assets.model.grain import Grain
from mesh_assets.model.kinds import Kind, default_kind
from mesh_assets.model.lifecycle import Classification, Status, Tier
from mesh_assets.model.product import (
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
from mesh_assets.model.windows import Window

if TYPE_CHECKING:
    import dagster as dg

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
    version: int | None = None
    """The major version it pins, if any (``table`` is then that version's name, ``orders_v2``)."""
    n: int = 1
    """The window's size (``last``, ``previous``): with ``window``, the partition mapping, known without code."""
    watermark: str | None = None
    """The column whose maximum must reach the output partition's end (a whole read), if any."""
    min_complete: float | None = None
    """The share of the window that lets a partition run without the rest, if declared."""
    region: str | None = None
    """The one region it reads of a table partitioned by date and region, if it names one."""

    @property
    def ref(self) -> str:
        return f"{self.domain}.{self.table}"

    @property
    def window_spec(self) -> Window:
        """The window as the product declared it."""
        return Window(kind=self.window, n=self.n)  # type: ignore[arg-type]


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
    """The names of its regions (partitioned by date and region), in declared order."""
    zones: tuple[str, ...] = ()
    """Each region's time zone, in the order of ``regions``: where its days start."""
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
    classification: Classification = Classification.L1
    tier: Tier = Tier.T3
    status: Status = Status.ACTIVE
    sunset: date | None = None
    version: int = 1
    code_version: str | None = None
    """What computes its rows (see :mod:`~mesh_assets.graph.revisions`); None for a table Mesh does not compute."""
    source_version: str | None = None
    """The hash of its SQL or function source alone."""
    language: str | None = None
    """``sql`` or ``python``: what its source is, for a product's output."""
    columns: tuple[str, ...] | None = None
    """The columns a SQL product's query names (None when it selects ``*``, or for a PySpark product): its schema
    by name when it declares no contract."""
    revision: str | None = None
    """The revision of the product that declares it."""
    spec: Output | ExternalTable | None = field(default=None, compare=False)
    tool_kind: Kind | None = None
    """The kind of a table another tool writes (a dbt model's strategy); a product's is its output's."""
    restricted_from: Classification = Classification.L2
    """Its domain's threshold: classified at or above it, other domains read the table only by grant."""
    grants: tuple[Grant, ...] = ()
    """Its domain's grants, then its own (see :mod:`mesh_assets.model.access`)."""

    @property
    def ref(self) -> str:
        return f"{self.domain}.{self.name}"

    @property
    def table_kind(self) -> Kind:
        """What a run does to the table (:mod:`mesh_assets.model.kinds`): its output's kind, a tool's, or the
        default of its grain."""
        if isinstance(self.spec, Output):
            return self.spec.table_kind
        return self.tool_kind or default_kind(self.grain)

    @property
    def restricted(self) -> bool:
        """Whether another domain reads it only by grant (see :mod:`mesh_assets.graph.access`)."""
        return self.classification.at_least(self.restricted_from)

    @property
    def shows_values(self) -> bool:
        """Whether row values may appear in check samples and errors (else counts and column names only)."""
        return self.classification.shows_values

    def lifecycle(self) -> str:
        """``deprecated (sunset 2021-09-01)``, ``retired``: the status as a consumer is told it."""
        return f"{self.status} (sunset {self.sunset})" if self.sunset else str(self.status)

    @cached_property
    def key(self) -> dg.AssetKey:
        import dagster as dg  # here: a run's body, which may run without Dagster, never asks for a key

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
    guarded: tuple[Table, ...] = field(default=(), repr=False, compare=False)
    """The mesh's tables that some domain may not read undeclared (one tuple shared by every node)."""

    @property
    def withheld(self) -> tuple[str, ...]:
        """``<domain>.<table>`` of the other domains' tables this product may not read undeclared: internal to
        their domain, restricted and not granted to it, or with ``pii`` columns masked for it (see
        :mod:`mesh_assets.graph.access`)."""
        return tuple(t.ref for t in self.guarded if access.withheld(self.domain, self.product.name, t))

    @property
    def output(self) -> Output:
        return self.transformation.output

    @property
    def domain(self) -> str:
        return self.product.domain


def declared_table(spec: Output | ExternalTable, owner: Owner, line: int | None, **computed: object) -> Table:
    """The table ``spec`` declares, owned by ``owner`` (``computed``: an output's ``inputs``, ``declared`` and
    versions)."""
    external = isinstance(spec, ExternalTable)
    own_status = isinstance(spec, Output) and spec.status is not None
    return Table(
        domain=owner.domain,
        name=spec.name,
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
        regions=tuple(r.name for r in spec.regions or ()),
        zones=tuple(r.zone for r in spec.regions or ()),
        region_column=spec.region_column,
        checks=tuple(checks_of(spec)),
        contacts=owner.contacts,
        contract=spec.contract,
        classification=owner.classification,
        tier=owner.tier,
        status=spec.status if own_status else owner.status,  # type: ignore[union-attr]
        sunset=spec.sunset if own_status else owner.sunset,  # type: ignore[union-attr]
        version=spec.version if isinstance(spec, Output) else 1,
        revision=owner.revision,
        spec=spec,
        restricted_from=owner.restricted_from,
        grants=owner.grants + spec.grants,
        **computed,  # type: ignore[arg-type]
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
    classification: Classification
    tier: Tier = Tier.T3
    status: Status = Status.ACTIVE
    sunset: date | None = None
    revision: str | None = None
    end_date: date | None = None
    restricted_from: Classification = Classification.L2
    grants: tuple[Grant, ...] = ()

    @classmethod
    def of(cls, product: DataProduct, revision: str | None = None) -> Owner:
        return cls(
            product.domain,
            product.name,
            product.owner,
            product.start_date,
            product.source_file,
            product.contacts,
            product.classification,
            product.tier,
            product.status,
            product.sunset,
            revision,
            product.end_date,
            product.restricted_from,
            product.grants,
        )


def _versions(product: DataProduct) -> tuple[list[str], list[str]]:
    """(each transformation's source, its code version)."""
    sources = [source_text(t, product) for t in product.transformations]
    return sources, [code_version(t, source) for t, source in zip(product.transformations, sources, strict=True)]


def product_revision(product: DataProduct) -> str:
    """The revision of ``product`` (see :mod:`~mesh_assets.graph.revisions`)."""
    return revision(product, _versions(product)[1])


def tables_of(product: DataProduct) -> Iterator[Table]:
    """Every table ``product`` declares: its outputs, then its external tables."""
    sources, versions = _versions(product)
    owner = Owner.of(product, revision(product, versions))
    for i, t in enumerate(product.transformations):
        refs = {name: inp.target(product.domain) for name, inp in t.inputs.items()}
        yield declared_table(
            t.output,
            owner,
            t.line,
            code_version=versions[i],
            source_version=source_version(sources[i]),
            language=t.kind if t.kind == "sql" else "python",
            columns=query_columns(sources[i]) if t.kind == "sql" else None,
            inputs=tuple(refs.values()),
            declared=tuple(
                DeclaredInput(
                    name,
                    *refs[name],
                    inp.window.kind,
                    f"tables.{i}.inputs.{name}",
                    inp.line or t.line,
                    "timeout_hours" if inp.timeout_hours else "freshness_hours" if inp.freshness_hours else None,
                    inp.version,
                    inp.window.n,
                    inp.watermark,
                    inp.min_complete,
                    inp.region,
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
        guarded = tuple(t for t in self.tables.values() if access.guarded(t))
        for product in products:
            for t in product.transformations:
                key = (product.domain, t.output.name)
                if self.tables[key].spec is not t.output:
                    continue  # a duplicate table: governance reports it
                reads = tuple(
                    Read(name, inp, upstream)
                    for name, inp in t.inputs.items()
                    if (upstream := self.tables.get(inp.target(product.domain))) is not None
                )
                sql = sql_text(t, product) if isinstance(t, SqlTransformation) else None
                self.nodes[key] = Node(product, t, self.tables[key], reads, sql, guarded)

    def get(self, domain: str, table: str) -> Table | None:
        return self.tables.get((domain, table))

    def node(self, domain: str, table: str) -> Node:
        return self.nodes[(domain, table)]

    def products_of(self, domain: str) -> list[DataProduct]:
        return self._by_domain.get(domain, ([], [], []))[0]

    def nodes_of(self, domain: str) -> list[Node]:
        return self._by_domain.get(domain, ([], [], []))[1]

    def external_of(self, domain: str) -> list[Table]:
        """The external tables ``domain`` declares."""
        return self._by_domain.get(domain, ([], [], []))[2]

    @cached_property
    def _by_domain(self) -> dict[str, tuple[list[DataProduct], list[Node], list[Table]]]:
        """Per domain: its products, nodes and external tables, found in one pass (a location of many domains
        asks once per domain)."""
        found: dict[str, tuple[list[DataProduct], list[Node], list[Table]]] = {}
        for product in self.products:
            found.setdefault(product.domain, ([], [], []))[0].append(product)
        for (domain, _), node in self.nodes.items():
            found.setdefault(domain, ([], [], []))[1].append(node)
        for table in self.tables.values():
            if table.external:
                found.setdefault(table.domain, ([], [], []))[2].append(table)
        return found

    @cached_property
    def by_product(self) -> dict[tuple[str, str], tuple[list[Node], list[Table]]]:
        """Per ``(domain, product)``: its nodes and its external tables, found in one pass."""
        found: dict[tuple[str, str], tuple[list[Node], list[Table]]] = {}
        for node in self.nodes.values():
            found.setdefault((node.product.domain, node.product.name), ([], []))[0].append(node)
        for table in self.tables.values():
            if table.external:
                found.setdefault((table.domain, table.product), ([], []))[1].append(table)
        return found

    def longest_chain(self) -> int:
        """How many tables the longest chain of reads passes through (1: none reads another), walked without
        recursion; a table's reads of its own past are not a link, nor is a read that closes a cycle (another
        domain's, which this location's validation does not judge)."""
        depth: dict[tuple[str, str], int] = {}
        for root in self.tables:
            if root in depth:
                continue
            on_path, todo = {root}, [root]
            while todo:
                key = todo[-1]
                ups = [k for k in self.tables[key].inputs if k in self.tables and k != key and k not in on_path]
                waiting = next((k for k in ups if k not in depth), None)
                if waiting is not None:
                    on_path.add(waiting)
                    todo.append(waiting)
                else:
                    depth[key] = 1 + max((depth[k] for k in ups if k in depth), default=0)
                    on_path.discard(todo.pop())
        return max(depth.values(), default=0)

    def readers(self, domain: str, table: str) -> list[Table]:
        """Every table, in any domain, that reads ``domain.table``."""
        return [self.tables[(ref.split(".", 1)[0], ref.split(".", 1)[1])] for ref in self.consumers(domain, table)]

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
