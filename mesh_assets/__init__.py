"""Mesh: data products as Dagster assets on Spark and Delta Lake.

Domain teams import from here and nowhere else::

    from mesh_assets import Product, Output, Input, last, chat
"""

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
from mesh_assets.model.product import Column, Contact, ExternalTable, Input, Output
from mesh_assets.model.windows import Window, all_partitions, last, previous, same
from mesh_assets.run.context import ProductContext
from mesh_assets.settings import MeshSettings, get_settings
from mesh_assets.storage.resource import MeshResource, get_spark

__all__ = [
    "RESOURCE_KEY",
    "AcceptedValues",
    "Column",
    "Contact",
    "DataProduct",
    "ExternalTable",
    "Freshness",
    "Grain",
    "Input",
    "MeshResource",
    "MeshSettings",
    "NotNull",
    "Output",
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
