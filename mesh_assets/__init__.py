"""Mesh: data products as Dagster assets on Spark and Delta Lake.

Domain teams import from here and nowhere else::

    from mesh_assets import Product, Output, Input, last, chat

Names are imported on first use (PEP 562): a product file that imports ``Product`` and ``Input`` loads the
floor alone, and the Spark application of a run launched in engine mode ``submit`` loads neither the
composition root nor the components and sensors it never uses.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mesh_assets.assets.specs import RESOURCE_KEY
    from mesh_assets.automation.observe_now import observe_now
    from mesh_assets.components import DataProduct
    from mesh_assets.definitions import domain_definitions, executable_assets, mesh_definitions
    from mesh_assets.model.author import Product, chat, email
    from mesh_assets.model.checks import (
        AcceptedValues,
        Freshness,
        NotNull,
        RowCount,
        SchemaContract,
        SqlAssertion,
        Unique,
        VolumeAnomaly,
    )
    from mesh_assets.model.grain import Grain
    from mesh_assets.model.kinds import Append, Changes, Full, History, Merge, Partitions
    from mesh_assets.model.product import Column, Contact, ExternalTable, Input, Output
    from mesh_assets.model.windows import Window, all_partitions, last, previous, same
    from mesh_assets.run.context import ProductContext
    from mesh_assets.settings import MeshSettings, get_settings
    from mesh_assets.storage.pyspark import MeshPySparkResource
    from mesh_assets.storage.resource import MeshResource, get_spark

_PUBLIC = {
    "AcceptedValues": "mesh_assets.model.checks",
    "Partitions": "mesh_assets.model.kinds",
    "Merge": "mesh_assets.model.kinds",
    "History": "mesh_assets.model.kinds",
    "Full": "mesh_assets.model.kinds",
    "Changes": "mesh_assets.model.kinds",
    "Append": "mesh_assets.model.kinds",
    "Column": "mesh_assets.model.product",
    "Contact": "mesh_assets.model.product",
    "DataProduct": "mesh_assets.components",
    "ExternalTable": "mesh_assets.model.product",
    "Freshness": "mesh_assets.model.checks",
    "Grain": "mesh_assets.model.grain",
    "Input": "mesh_assets.model.product",
    "MeshPySparkResource": "mesh_assets.storage.pyspark",
    "MeshResource": "mesh_assets.storage.resource",
    "MeshSettings": "mesh_assets.settings",
    "NotNull": "mesh_assets.model.checks",
    "Output": "mesh_assets.model.product",
    "Product": "mesh_assets.model.author",
    "ProductContext": "mesh_assets.run.context",
    "RESOURCE_KEY": "mesh_assets.assets.specs",
    "RowCount": "mesh_assets.model.checks",
    "SchemaContract": "mesh_assets.model.checks",
    "SqlAssertion": "mesh_assets.model.checks",
    "Unique": "mesh_assets.model.checks",
    "VolumeAnomaly": "mesh_assets.model.checks",
    "Window": "mesh_assets.model.windows",
    "all_partitions": "mesh_assets.model.windows",
    "chat": "mesh_assets.model.author",
    "domain_definitions": "mesh_assets.definitions",
    "email": "mesh_assets.model.author",
    "executable_assets": "mesh_assets.definitions",
    "get_settings": "mesh_assets.settings",
    "get_spark": "mesh_assets.storage.resource",
    "last": "mesh_assets.model.windows",
    "mesh_definitions": "mesh_assets.definitions",
    "observe_now": "mesh_assets.automation.observe_now",
    "previous": "mesh_assets.model.windows",
    "same": "mesh_assets.model.windows",
}
"""Where each public name is defined."""


__all__ = [
    "RESOURCE_KEY",
    "AcceptedValues",
    "Append",
    "Changes",
    "Column",
    "Contact",
    "DataProduct",
    "ExternalTable",
    "Freshness",
    "Full",
    "Grain",
    "History",
    "Input",
    "Merge",
    "MeshPySparkResource",
    "MeshResource",
    "MeshSettings",
    "NotNull",
    "Output",
    "Partitions",
    "Product",
    "ProductContext",
    "RowCount",
    "SchemaContract",
    "SqlAssertion",
    "Unique",
    "VolumeAnomaly",
    "Window",
    "all_partitions",
    "chat",
    "domain_definitions",
    "email",
    "executable_assets",
    "get_settings",
    "get_spark",
    "last",
    "mesh_definitions",
    "observe_now",
    "previous",
    "same",
]


def __getattr__(name: str) -> object:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from mesh_assets.collector import importing

    with importing():
        value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
