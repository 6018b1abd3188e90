"""The mesh as its catalog describes it, as a Dagster asset graph: built from the resolved tables alone.

A code location knows the other domains from the catalog (:mod:`mesh_assets.graph.catalog`), never from their
code. Whatever must follow partitions across the whole mesh (an invalidation's suspects) walks this graph: each
table's key, its partitions and its inputs with the partition mappings their declared windows give, the same
ones the producing location's assets carry. No product's code is imported or run to build it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import dagster as dg

from mesh_assets.assets.mappings import window_mapping
from mesh_assets.compat import AssetGraph
from mesh_assets.graph.resolve import MeshGraph, Table, TableKind
from mesh_assets.model.grain import Grain

DBT_MODEL_GRAIN = Grain.DAILY
"""A dbt model's asset is daily-partitioned from its first day, whatever its materialization (dbt's assets)."""


def _deps(graph: MeshGraph, table: Table) -> list[dg.AssetDep]:
    if table.kind is TableKind.DBT:  # dagster-dbt's assets carry no mapping: Dagster's default applies to both
        return [dg.AssetDep(dg.AssetKey(list(ref))) for ref in table.inputs]
    deps = []
    for declared in table.declared:
        upstream = graph.get(declared.domain, declared.table)
        if upstream is not None:  # a table of a domain whose entry has errors: nothing reads through it
            mapping = window_mapping(upstream, declared.window_spec, table.grain, declared.region, table.regions)
            deps.append(dg.AssetDep(upstream.key, partition_mapping=mapping))
    return deps


def catalog_spec(graph: MeshGraph, table: Table) -> dg.AssetSpec:
    """``table`` as a spec: its key, partitions and inputs (nothing a run or the UI needs)."""
    if table.kind is TableKind.DBT:
        partitions = DBT_MODEL_GRAIN.partitions_def(table.start_date)
    else:
        partitions = table.partitions_def
    return dg.AssetSpec(table.key, deps=_deps(graph, table), partitions_def=partitions)


def catalog_asset_graph(graph: MeshGraph, plain: Iterable[dg.AssetSpec] = ()) -> AssetGraph:
    """Every table of ``graph`` as one Dagster asset graph, for walking partitions downstream; ``plain`` are the
    location's own plain Dagster assets (what they read, which the catalog does not hold), in place of the
    external table a domain declares for one. Each spec is an assets definition of its own: Dagster gathers
    loose specs into one, where two tables reading one input through different windows would be two mappings
    of one dependency."""
    own = {s.key: dg.AssetSpec(s.key, deps=s.deps, partitions_def=s.partitions_def) for s in plain}
    specs = [own.get(t.key) or catalog_spec(graph, t) for t in graph.tables.values()]
    specs += [s for key, s in own.items() if graph.get(*key.path) is None] if own else []
    with warnings.catch_warnings():  # Mesh's partition mappings use beta parameters, as its assets do
        warnings.simplefilter("ignore", dg.BetaWarning)
        assets = [dg.AssetsDefinition(specs=[spec]) for spec in specs]
    return dg.Definitions(assets=assets).resolve_asset_graph()


@dataclass(frozen=True)
class CatalogMesh:
    """The mesh's tables (who owns, writes and checks each) with the asset graph they form (which partitions read
    which), both from the catalog."""

    tables: MeshGraph
    graph: AssetGraph

    @classmethod
    def of(cls, tables: MeshGraph, plain: Iterable[dg.AssetSpec] = ()) -> CatalogMesh:
        return cls(tables, catalog_asset_graph(tables, plain))

    def table(self, key: dg.AssetKey) -> Table | None:
        return self.tables.get(*key.path) if len(key.path) == 2 else None
