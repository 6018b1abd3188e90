"""Where ``mesh lineage``, ``mesh backfill --from-lineage`` and ``mesh validate --lineage`` read lineage: the
local event files, or the lineage server the events are sent to, through Marquez's API: the graph
(``GET /api/v1/lineage?nodeId=&depth=``), a dataset's column lineage (``GET /api/v1/column-lineage``, which
the graph's dataset nodes do not carry) and the events received (``GET /api/v1/events/lineage``).

The choice follows where events go: with an HTTP transport (``lineage.url``, or the client's
``OPENLINEAGE_URL`` / ``openlineage.yml``) the server is asked, since the files then hold nothing.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from mesh_assets.lineage.emit import server_url
from mesh_assets.lineage.events import dataset_name
from mesh_assets.lineage.graph import (
    LineageGraph,
    dataset_id,
    graph_from_events,
    graph_from_marquez,
    job_id,
    read_events,
)
from mesh_assets.settings import MeshSettings


class LineageUnavailable(RuntimeError):
    """The lineage server could not be asked, or does not know the node."""


class UnknownToServer(LineageUnavailable):
    """The lineage server answered 404: it knows nothing of what was asked."""


def node_id(text: str, prefix: str = "") -> str:
    """A Marquez node id from an id, ``<domain>.<table>`` / ``<domain>/<table>`` (the job, in namespace
    ``<prefix><domain>``), or a path."""
    if text.startswith(("job:", "dataset:")):
        return text
    parts = text.replace("/", ".").split(".")
    if len(parts) == 2 and all(p and p.isidentifier() for p in parts):
        return job_id(prefix + parts[0], ".".join(parts))
    return dataset_id(*dataset_name(text))


def server_json(url: str, path: str, query: dict[str, object], what: str, timeout: float = 10.0) -> Any:
    """The JSON the lineage server at ``url`` answers for ``GET <path>?<query>``, asked about ``what``."""
    endpoint = f"{url.rstrip('/')}{path}?{urllib.parse.urlencode(query)}"
    try:
        with urllib.request.urlopen(endpoint, timeout=timeout) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise UnknownToServer(f"the lineage server at {url} knows no {what}") from None
        raise LineageUnavailable(f"the lineage server at {url} answered {exc.code} for {what}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise LineageUnavailable(f"the lineage server at {url} could not be read: {exc}") from None


def server_graph(url: str, node: str, depth: int, timeout: float = 10.0) -> LineageGraph:
    """The lineage around ``node`` as the server at ``url`` answers it."""
    query = {"nodeId": node, "depth": depth}
    return graph_from_marquez(server_json(url, "/api/v1/lineage", query, f"node {node!r}", timeout))


def server_column_lineage(url: str, namespace: str, name: str, timeout: float = 10.0) -> dict[str, Any]:
    """A dataset's column lineage as a ``columnLineage`` facet, from Marquez's ``GET /api/v1/column-lineage``
    (its graph endpoint's dataset nodes do not carry it): the ``DATASET_FIELD`` nodes of the dataset, each
    naming its input fields."""
    node = dataset_id(namespace, name)
    payload = server_json(url, "/api/v1/column-lineage", {"nodeId": node, "depth": 1}, f"node {node!r}", timeout)
    fields: dict[str, Any] = {}
    for item in payload.get("graph") or []:
        data = item.get("data") or {}
        if item.get("type") != "DATASET_FIELD" or (data.get("namespace"), data.get("dataset")) != (namespace, name):
            continue
        sources = data.get("inputFields") or []
        inputs = [{"namespace": f["namespace"], "name": f["dataset"], "field": f["field"]} for f in sources]
        if inputs:
            fields[data["field"]] = {"inputFields": inputs}
    return {"fields": fields}


def server_events(url: str, newest: int, page: int = 100) -> list[dict[str, Any]]:
    """The server's latest ``newest`` events, oldest first (Marquez's ``GET /api/v1/events/lineage``)."""
    events: list[dict[str, Any]] = []
    while len(events) < newest:
        query = {"sortDirection": "desc", "limit": min(page, newest - len(events)), "offset": len(events)}
        batch = server_json(url, "/api/v1/events/lineage", query, "events endpoint").get("events") or []
        events += batch
        if len(batch) < query["limit"]:
            break
    return events[::-1]


def recent_events(settings: MeshSettings, newest: int = 5000) -> tuple[list[dict[str, Any]], str]:
    """The events Mesh's runs sent, oldest first, and where they were read: the lineage server's latest
    ``newest`` when events go over HTTP (the files then hold nothing), else every event in the files."""
    url = server_url(settings)
    if url is None:
        return read_events(settings.lineage_dir), f"the files in {settings.lineage_dir}"
    return server_events(url, newest), f"the latest {newest} events of the lineage server at {url}"


def column_lineage(settings: MeshSettings, graph: LineageGraph, start: str) -> tuple[str, dict[str, Any]] | None:
    """The column lineage of ``start``'s dataset (a job's first output that has one) as (dataset name,
    ``columnLineage`` facet): from the events' facets, or the lineage server's column-lineage endpoint."""
    node = graph.nodes[start]
    datasets = [node] if node.type == "DATASET" else [graph.nodes[o] for o in sorted(node.outs)]
    url = server_url(settings)
    for dataset in datasets:
        if url is None:
            facet = dataset.data.get("columnLineage")
        else:
            try:
                facet = server_column_lineage(url, dataset.namespace, dataset.name)
            except UnknownToServer:
                facet = None  # Marquez answers 404 for a dataset with no fields recorded
        if facet and facet.get("fields"):
            return dataset.name, facet
    return None


def lineage_around(settings: MeshSettings, text: str, depth: int) -> tuple[LineageGraph, str]:
    """The lineage graph around ``text`` and the node id it resolved to, from the configured source."""
    url = server_url(settings)
    if url is None:
        graph = graph_from_events(read_events(settings.lineage_dir))
        try:
            return graph, graph.resolve(text)
        except KeyError as exc:
            raise LineageUnavailable(exc.args[0]) from None
    start = node_id(text, settings.lineage.namespace_prefix)
    graph = server_graph(url, start, depth)
    if start not in graph.nodes:
        raise LineageUnavailable(f"the lineage server at {url} knows no node {start!r}")
    return graph, start
