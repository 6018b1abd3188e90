"""The OpenLineage spec as openlineage-python ships it, for validating events offline.

The client ships no spec JSON files: it ships classes generated from them (``openlineage.client.generated``),
one per ``$defs`` entry, with the spec's required fields, types and format checks (date-time, uuid, uri).
A JSON Schema is derived from those classes (required = no default), every facet is checked against the
class its own ``_schemaURL`` names, in a place the spec allows for it (a run, job, dataset, input or output
facet), and then rebuilt through the class, which runs the client's validators.
"""

from __future__ import annotations

import importlib
import pkgutil
import types
import typing
from enum import Enum
from typing import Any

import attr
import jsonschema
from openlineage.client import generated
from openlineage.client.generated import base
from openlineage.client.generated.base import RunEvent


def _classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for module in pkgutil.iter_modules(generated.__path__):
        mod = importlib.import_module(f"{generated.__name__}.{module.name}")
        for name, obj in vars(mod).items():
            if isinstance(obj, type) and attr.has(obj) and obj.__module__ == mod.__name__:
                found[name] = obj
    return found


CLASSES = _classes()


def _type_schema(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        real = [a for a in args if a is not type(None)]
        return _type_schema(real[0], defs) if len(real) == 1 else {"anyOf": [_type_schema(a, defs) for a in real]}
    if origin is list:
        return {"type": "array", "items": _type_schema(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1], defs)}
    if isinstance(hint, type) and issubclass(hint, Enum):
        return {"enum": [m.value for m in hint]}
    if isinstance(hint, type) and attr.has(hint):
        _define(hint, defs)
        return {"$ref": f"#/$defs/{hint.__qualname__}"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return {"type": simple[hint]} if hint in simple else {}


def _define(cls: type, defs: dict[str, Any]) -> None:
    if cls.__qualname__ in defs:
        return
    defs[cls.__qualname__] = {}  # placed first: a class may contain itself
    hints = typing.get_type_hints(cls)
    fields = [f for f in attr.fields(cls) if f.init or f.name.endswith("schemaURL")]
    defs[cls.__qualname__] = {
        "type": "object",
        "properties": {f.name: _type_schema(hints[f.name], defs) for f in fields},
        "required": [f.name for f in fields if f.default is attr.NOTHING],
    }


def class_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of one generated class: its fields, their types, the required ones."""
    defs: dict[str, Any] = {}
    _define(cls, defs)
    return {"$defs": defs, "$ref": f"#/$defs/{cls.__qualname__}"}


def _rebuild(cls: type, data: dict[str, Any]) -> Any:
    """An instance of ``cls`` from ``data``, nested classes included: the generated validators run."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in attr.fields(cls):
        if not f.init or f.name not in data:
            continue
        kwargs[f.alias] = _value(hints[f.name], data[f.name])
    return cls(**kwargs)


def _value(hint: Any, value: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return _value(next(a for a in args if a is not type(None)), value)
    if origin is list:
        return [_value(args[0], v) for v in value]
    if origin is dict:
        return {k: _value(args[1], v) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if isinstance(hint, type) and attr.has(hint):
        return _rebuild(hint, value)
    return value


def facet_class(facet: dict[str, Any], extra: dict[str, type]) -> type:
    """The class a facet's ``_schemaURL`` names (``...#/$defs/<Name>``)."""
    name = facet["_schemaURL"].rsplit("/", 1)[-1]
    return {**CLASSES, **extra}[name]


PLACES = {
    "run.facets": base.RunFacet,
    "job.facets": base.JobFacet,
    "facets": base.DatasetFacet,
    "inputFacets": base.InputDatasetFacet,
    "outputFacets": base.OutputDatasetFacet,
}
"""Where the spec lets a facet go, by the base class its definition extends (an input facet is not a
dataset facet: ``dataQualityAssertions`` belongs in an input's ``inputFacets``, not in an output's)."""


def _facets(event: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """Every facet of ``event`` as (where it is, the place kind of :data:`PLACES`, the facet)."""
    found = [(f"run.facets.{k}", "run.facets", f) for k, f in event["run"].get("facets", {}).items()]
    found += [(f"job.facets.{k}", "job.facets", f) for k, f in event["job"].get("facets", {}).items()]
    for side in ("inputs", "outputs"):
        for i, ds in enumerate(event.get(side, [])):
            for place in ("facets", "inputFacets", "outputFacets"):
                found += [(f"{side}[{i}].{place}.{k}", place, f) for k, f in ds.get(place, {}).items()]
    return found


def validate(event: dict[str, Any], extra: dict[str, type] | None = None) -> None:
    """Raise when ``event`` (a serialized RunEvent) breaks the spec of the event or of any facet."""
    extra = extra or {}
    jsonschema.validate(event, class_schema(RunEvent))
    assert event["schemaURL"].endswith("#/$defs/RunEvent")
    for where, place, facet in _facets(event):
        cls = facet_class(facet, extra)
        if not issubclass(cls, PLACES[place]):
            raise jsonschema.ValidationError(
                f"{where}: {cls.__name__} extends {cls.__mro__[1].__name__}, which the spec does not allow in "
                f"{place} (only a {PLACES[place].__name__})"
            )
        jsonschema.validate(facet, class_schema(cls))
        _rebuild(cls, facet)
    _rebuild(
        RunEvent,
        {k: v for k, v in event.items() if k not in ("run", "job", "inputs", "outputs")}
        | {
            "run": {"runId": event["run"]["runId"]},
            "job": {"namespace": event["job"]["namespace"], "name": event["job"]["name"]},
        },
    )
