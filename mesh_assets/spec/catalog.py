"""The mesh-wide table catalog: every table any domain declares, with what consumers need to know."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from mesh_assets.spec.discovery import DomainSpecs
from mesh_assets.spec.model import DataProduct, ExternalTable, Output, Partitioning


@dataclass(frozen=True)
class TableInfo:
    domain: str
    table: str
    product: str
    owner: str
    published: bool
    partitioning: Partitioning
    partition_column: str
    external: bool
    start_date: date
    blocking_checks: tuple[str, ...]
    source_file: Path | None
    line: int | None
    regions: tuple[str, ...] = ()
    inputs: tuple[tuple[str, str], ...] = ()
    """The ``(domain, table)`` of every table this one reads."""

    @property
    def ref(self) -> str:
        return f"{self.domain}.{self.table}"


def blocking_checks(table: Output | ExternalTable) -> tuple[str, ...]:
    names = [c.check_name for c in table.checks if c.blocking and c.kind != "freshness"]
    if table.contract is not None and not any(c.kind == "schema_contract" for c in table.checks):
        names.append("schema_contract")
    return tuple(names)


def tables_of(product: DataProduct) -> list[TableInfo]:
    out = [
        TableInfo(
            product.domain,
            t.output.table,
            product.name,
            product.owner,
            t.output.published,
            t.output.partitioning,
            t.output.partition_column,
            False,
            product.start_date,
            blocking_checks(t.output),
            product.source_file,
            t.line,
            inputs=tuple(inp.ref(product.domain) for inp in t.inputs.values()),
        )
        for t in product.transformations
    ]
    out += [
        TableInfo(
            product.domain,
            e.table,
            product.name,
            product.owner,
            e.published,
            e.partitioning,
            e.partition_column,
            True,
            product.start_date,
            blocking_checks(e),
            product.source_file,
            e.line,
            e.regions or (),
        )
        for e in product.external
    ]
    return out


class Catalog:
    """Tables by ``(domain, table)``; duplicates are kept aside for governance to report."""

    def __init__(self, domains: dict[str, DomainSpecs], extra: Iterable[TableInfo] = ()):
        self.tables: dict[tuple[str, str], TableInfo] = {}
        self.duplicates: list[tuple[TableInfo, TableInfo]] = []
        products = [info for specs in domains.values() for product in specs.products for info in tables_of(product)]
        for info in [*products, *extra]:
            key = (info.domain, info.table)
            if key in self.tables:
                self.duplicates.append((self.tables[key], info))
            else:
                self.tables[key] = info

    def get(self, domain: str, table: str) -> TableInfo | None:
        return self.tables.get((domain, table))

    def consumers(self, domain: str, table: str) -> tuple[str, ...]:
        """``<domain>.<table>`` of every table, in any domain, that reads ``domain.table``."""
        return tuple(sorted(info.ref for info in self.tables.values() if (domain, table) in info.inputs))
