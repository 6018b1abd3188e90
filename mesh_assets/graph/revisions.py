"""Code versions and revisions: what computes a table, and what a product is, each as a short stable hash.

An output's **code version** covers what computes its rows: the output's declaration (checks, schema policy,
write mode, contract, ...; not its description, version or lifecycle), each input's declaration (not the line
it is written on) and the SQL (a SQL product) or the transformation function's code (a PySpark product: its
definition without decorators, comments or formatting), so editing a file elsewhere changes nothing. Dagster
compares it with the one each partition was computed by ("code version changed").

A product's **revision** covers the product as submitted: its fields (owner, tier, classification, status,
contacts, cron, ...), every output's code version, version and status, and every external table's declaration.
Every materialization records the revision that produced it (``mesh/revision``), and the UI shows the current
one on each asset.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
from typing import Any

from pydantic import BaseModel

from mesh_assets.model.lifecycle import Classification
from mesh_assets.model.product import DataProduct, PySparkTransformation, SqlTransformation

Transformation = PySparkTransformation | SqlTransformation
REVISION_KEY = "mesh/revision"
"""The metadata key of a revision, on an asset's definition and on each of its materializations."""
REVISION_LENGTH = 16


def sql_text(transformation: SqlTransformation, product: DataProduct) -> str:
    """The query of a SQL transformation: inline, or from its file next to the spec."""
    if transformation.sql is not None:
        return transformation.sql
    assert product.source_file is not None and transformation.sql_file is not None
    return (product.source_file.parent / transformation.sql_file).read_text()


def source_text(transformation: Transformation, product: DataProduct) -> str:
    """The SQL, or the transformation function's code: its definition without its decorators (they declare the
    output, which is hashed as a declaration) and without comments or formatting; its name when the source is
    not available."""
    if isinstance(transformation, SqlTransformation):
        return sql_text(transformation, product)
    try:
        source = textwrap.dedent(inspect.getsource(transformation.fn))
        [node] = ast.parse(source).body
    except (OSError, TypeError, SyntaxError, ValueError):
        return f"{transformation.fn.__module__}.{transformation.fn.__qualname__}"
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        node.decorator_list = []
    return ast.unparse(node)


def _hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:REVISION_LENGTH]


def source_version(source: str) -> str:
    """The hash of the SQL or function source alone: whether the code changed, apart from the declarations."""
    return _hash(source)


ACCESS_DEFAULTS = {"grants": (), "restricted_from": Classification.L2}
"""Who may read a table: declared, part of its product's revision; left at these defaults, left out of it, so
a product that declares none keeps the revision it had before they existed."""


def _unset_access(model: BaseModel) -> dict[str, Any]:
    """What ``model_dump_json`` leaves out of ``model`` (a product, output or external table): its access fields
    at their defaults, and each contract column's ``pii`` and ``mask`` when it is not personal data."""
    unset: dict[str, Any] = {k: True for k, v in ACCESS_DEFAULTS.items() if getattr(model, k, v) == v}
    contract = getattr(model, "contract", None) or ()
    plain = {i: {"pii": True, "mask": True} for i, column in enumerate(contract) if not column.pii}
    if plain:
        unset["contract"] = plain
    return unset


def code_version(transformation: Transformation, source: str) -> str:
    """A short, stable hash of what computes ``transformation``'s rows, ``source`` being its SQL or function;
    who may read them (grants, ``pii`` masks) is not part of it."""
    contract = transformation.output.contract or ()
    output = transformation.output.model_dump_json(
        exclude={
            "description": True,
            "version": True,
            "status": True,
            "sunset": True,
            "zorder": True,
            "grants": True,
            "contract": {i: {"pii": True, "mask": True} for i in range(len(contract))},
        }
    )
    inputs = [f"{name}={inp.model_dump_json(exclude={'line'})}" for name, inp in sorted(transformation.inputs.items())]
    return _hash(output, *inputs, source)


def revision(product: DataProduct, code_versions: list[str]) -> str:
    """The product's revision: its own fields and its tables' code versions (``code_versions``, one per
    transformation in order) and external tables' declarations."""
    fields = product.model_dump_json(
        exclude={k: True for k in ("transformations", "external", "source_file", "line", "description")}
        | _unset_access(product)
    )
    lifecycle = [t.output.model_dump_json(include={"version", "status", "sunset"}) for t in product.transformations]
    external = [
        e.model_dump_json(exclude={"line": True, "description": True} | _unset_access(e)) for e in product.external
    ]
    return _hash(fields, *code_versions, *lifecycle, *external)
