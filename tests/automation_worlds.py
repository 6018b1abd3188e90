"""The two places a domain's automation is evaluated in tests: the whole mesh in one set of definitions, and the
``down`` domain's own code location, which knows ``up``'s tables only as the catalog describes them."""

from __future__ import annotations

import dagster as dg

from mesh_assets.assets.outputs import build_output_asset
from mesh_assets.assets.specs import external_spec
from mesh_assets.automation.conditions import output_condition
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import DomainSpecs
from mesh_assets.graph.resolve import MeshGraph


def whole_mesh(domains: dict[str, DomainSpecs]) -> dg.Definitions:
    """Every output with its condition, and ``up``'s external tables, in one set of definitions."""
    graph = MeshGraph(domains)
    up = graph.products_of("up")[0]
    assets: list = [external_spec(up, t) for t in graph.tables.values() if t.external]
    assets += [build_output_asset(node, output_condition(node)) for node in graph.nodes.values()]
    return dg.Definitions(assets=assets, resources={"mesh": dg.ResourceDefinition.none_resource()})


def down_location(domains: dict[str, DomainSpecs]) -> dg.Definitions:
    """The ``down`` domain's code location: its own products, and ``up``'s tables as the catalog describes them."""
    up = list(MeshGraph({"up": domains["up"]}).tables.values())
    return build_definitions({"down": domains["down"]}, only={"down"}, extra=up)
