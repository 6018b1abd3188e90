"""The SQL text of a product's transformation, wherever the spec keeps it (no parser needed to read it)."""

from __future__ import annotations

from mesh_assets.model.product import DataProduct, SqlTransformation


def sql_text(transformation: SqlTransformation, product: DataProduct) -> str:
    """The query of a SQL transformation: inline, or from its file next to the spec."""
    if transformation.sql is not None:
        return transformation.sql
    assert product.source_file is not None and transformation.sql_file is not None
    return (product.source_file.parent / transformation.sql_file).read_text()
