"""Code versions: what a product's output is computed by, hashed, so Dagster can tell a partition computed by
older code ("code version changed") from one computed by the code deployed now.

The hash covers the output's declaration (checks, schema policy, write mode, ...; not its description), each
input's declaration,
the SQL (a SQL product) or the transformation's source (a PySpark product). Formatting a file leaves it
unchanged only where the text it hashes is unchanged: the function's own source, not the whole file.
"""

from __future__ import annotations

import hashlib
import inspect

from mesh_assets.graph.resolve import Node
from mesh_assets.model.product import PySparkTransformation


def _source(node: Node) -> str:
    """The SQL, or the transformation function's source (its name when the source is not available)."""
    if node.sql is not None:
        return node.sql
    transformation = node.transformation
    assert isinstance(transformation, PySparkTransformation)
    try:
        return inspect.getsource(transformation.fn)
    except (OSError, TypeError):
        return f"{transformation.fn.__module__}.{transformation.fn.__qualname__}"


def code_version(node: Node) -> str:
    """A short, stable hash of what computes ``node``'s rows."""
    digest = hashlib.sha256()
    digest.update(node.output.model_dump_json(exclude={"description"}).encode())
    for name, read in sorted((r.name, r) for r in node.reads):
        digest.update(f"\0{name}={read.input.model_dump_json()}".encode())
    digest.update(b"\0" + _source(node).encode())
    return digest.hexdigest()[:16]
