"""The product component's JSON schema, shaped so that ``dg check yaml`` names the field that is wrong.

``dg check yaml`` (and ``dg check defs`` before it loads anything) validates each ``defs.yaml`` against the
component's JSON schema with jsonschema, and reports each error at the path where jsonschema found it. Where the
schema offers alternatives (``anyOf``, ``oneOf``), jsonschema reports the whole value as "not valid under any of
the given schemas" at the alternatives, however deep the mistake: a typo in a table's field came out as the
product's ``tables`` line. Pydantic writes such alternatives for optional fields (``X | None``), a table's inputs
(a list or a mapping) and the checks (one model per ``kind``), and Dagster adds a template string to every
top-level field, which Mesh never renders (it reads ``defs.yaml`` itself). This rewrites them into one schema per
value wherever the alternatives can be told apart by the value's JSON type or a check's ``kind``, so each error
points at the field itself (``attributes.tables.0.publishd``: its file and line, and "Additional properties are
not allowed"). What the schema accepts is unchanged, apart from the template strings.
"""

from __future__ import annotations

from typing import Any

PER_TYPE = {
    "array": {"items", "minItems", "maxItems", "uniqueItems", "prefixItems"},
    "object": {"properties", "additionalProperties", "required", "propertyNames", "minProperties", "maxProperties"},
    "string": {"pattern", "minLength", "maxLength", "format"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "boolean": set(),
    "null": set(),
}
"""Keywords that constrain only values of one JSON type, so alternatives that differ by type can share a schema."""
TEMPLATE = {"type": "string"}


def precise_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a component's attributes) with its alternatives made precise; changed in place and returned."""
    for field in schema.get("properties", {}).values():
        options = field.get("anyOf")
        if options and TEMPLATE in options and any(o not in (TEMPLATE, {"type": "null"}) for o in options):
            options.remove(TEMPLATE)  # Dagster's template string: another option is the field's own type
    _rewrite(schema)
    return schema


def _rewrite(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _rewrite(item)
        return
    if not isinstance(node, dict):
        return
    for value in node.values():
        _rewrite(value)
    if "anyOf" in node and (merged := _by_type(node["anyOf"])) is not None:
        del node["anyOf"]
        node.update(merged)
    if "oneOf" in node and "discriminator" in node:
        _by_kind(node)


def _by_type(options: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One schema for ``options`` that each take one JSON type, none twice; None when they cannot merge."""
    if len(options) == 1:
        return dict(options[0])
    types = [o.get("type") for o in options]
    if not all(isinstance(t, str) and t in PER_TYPE for t in types) or len(set(types)) < len(types):
        return None
    if {"integer", "number"} <= set(types):
        return None  # an integer is also a number: their constraints would mix
    merged: dict[str, Any] = {"type": types}
    for option, kind in zip(options, types, strict=True):
        rest = {k: v for k, v in option.items() if k not in ("type", "title", "description")}
        if not set(rest) <= PER_TYPE[kind]:
            return None
        merged.update(rest)
    return merged


def _by_kind(node: dict[str, Any]) -> None:
    """A discriminated union as one schema per value of its discriminator: jsonschema then checks an entry
    against the model its ``kind`` names alone, and an unknown ``kind`` is named as such."""
    name = node["discriminator"]["propertyName"]
    mapping = node["discriminator"]["mapping"]
    del node["oneOf"]
    node["type"] = "object"
    node["required"] = [name]
    node["properties"] = {name: {"enum": sorted(mapping)}}
    node["allOf"] = [
        {"if": {"properties": {name: {"const": value}}, "required": [name]}, "then": {"$ref": ref}}
        for value, ref in sorted(mapping.items())
    ]
