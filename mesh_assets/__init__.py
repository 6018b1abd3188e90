"""Mesh: data products as Dagster assets on Spark and Delta Lake.

Domain teams import from here and nowhere else::

    from mesh_assets import Product, Output, Input, last, chat
"""

from mesh_assets.automation.observe_now import observe_now
from mesh_assets.checks.spec import (
    AcceptedValues,
    Freshness,
    NotNull,
    RowCount,
    SchemaContract,
    SqlAssertion,
    Unique,
    VolumeAnomaly,
)
from mesh_assets.engine.resource import MeshResource
from mesh_assets.engine.session import get_spark
from mesh_assets.factory.context import ProductContext
from mesh_assets.factory.definitions import domain_definitions, mesh_definitions
from mesh_assets.settings import MeshSettings, get_settings
from mesh_assets.spec.model import (
    Column,
    Contact,
    ExternalTable,
    Input,
    Output,
    Window,
    all_partitions,
    last,
    same,
)
from mesh_assets.spec.python_api import Product, chat, email

__all__ = [
    "AcceptedValues",
    "Column",
    "Contact",
    "ExternalTable",
    "Freshness",
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
    "get_settings",
    "get_spark",
    "last",
    "mesh_definitions",
    "observe_now",
    "same",
]
