"""A lineage server on 127.0.0.1 shaped like Marquez (its ``spec/openapi.yml``), for the endpoints Mesh uses.

- ``POST /api/v1/lineage``: an event is stored (201), in the order received.
- ``GET /api/v1/lineage?nodeId=<id>&depth=<n>``: the graph around a node (404 when unknown). As in Marquez, a
  dataset node's ``data`` carries its fields, never its column lineage.
- ``GET /api/v1/column-lineage?nodeId=dataset:<ns>:<name>&depth=<n>``: Marquez's column lineage graph, built
  from the ``columnLineage`` facets of the COMPLETE events: one ``DATASET_FIELD`` node per field
  (``datasetField:<ns>:<dataset>:<field>``) whose ``data.inputFields`` name the input fields, followed
  upstream ``depth`` edges; 404 for a dataset the server does not know.
- ``GET /api/v1/events/lineage?sortDirection=desc&limit=&offset=``: the stored events,
  ``{"events": [...], "totalCount": n}``.

``down = True`` makes it answer 503 to everything, as a server that is up but not serving.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from mesh_assets.lineage.graph import graph_from_events


class LineageServer(HTTPServer):
    events: list[dict]
    down: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


def _field_id(namespace: str, dataset: str, field: str) -> str:
    return f"datasetField:{namespace}:{dataset}:{field}"


def column_lineage_graph(events: list[dict], namespace: str, name: str, depth: int) -> dict[str, Any]:
    """Marquez's ``/api/v1/column-lineage`` answer for a dataset, from the latest COMPLETE facet of each output."""
    facets: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        if event.get("eventType") == "COMPLETE":
            for ds in event.get("outputs") or []:
                facet = (ds.get("facets") or {}).get("columnLineage")
                if facet:
                    facets[(ds["namespace"], ds["name"])] = facet
    nodes: dict[str, dict[str, Any]] = {}

    def node(ns: str, dataset: str, field: str) -> dict[str, Any]:
        nid = _field_id(ns, dataset, field)
        empty = {"namespace": ns, "dataset": dataset, "datasetVersion": None, "field": field, "inputFields": []}
        return nodes.setdefault(nid, {"id": nid, "type": "DATASET_FIELD", "data": empty, "inEdges": [], "outEdges": []})

    frontier, seen = [(namespace, name)], set()
    for _ in range(depth):
        nxt = []
        for ns, dataset in frontier:
            seen.add((ns, dataset))
            for field, spec in sorted(((facets.get((ns, dataset)) or {}).get("fields") or {}).items()):
                inputs = spec.get("inputFields") or []
                if not inputs:
                    continue  # Marquez stores column lineage as edges: a field without inputs has none
                out = node(ns, dataset, field)
                out["data"]["fieldType"] = ""
                for f in inputs:
                    source = node(f["namespace"], f["name"], f["field"])
                    out["data"]["inputFields"].append(
                        {"namespace": f["namespace"], "dataset": f["name"], "datasetVersion": None, "field": f["field"]}
                    )
                    edge = {"origin": source["id"], "destination": out["id"]}
                    out["inEdges"].append(edge)
                    source["outEdges"].append(edge)
                    if (f["namespace"], f["name"]) not in seen:
                        nxt.append((f["namespace"], f["name"]))
        frontier = nxt
    return {"graph": sorted(nodes.values(), key=lambda n: n["id"])}


def lineage_server() -> LineageServer:
    """Serve until ``shutdown()``."""

    class Handler(BaseHTTPRequestHandler):
        server: LineageServer

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.server.down:
                self.send_response(503)
                self.end_headers()
                return
            self.server.events.append(body)
            self.send_response(201)
            self.end_headers()

        def do_GET(self) -> None:
            url = urlparse(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if self.server.down:
                return self._answer(503, None)
            events = list(self.server.events)
            if url.path == "/api/v1/events/lineage":
                ordered = events[::-1] if query.get("sortDirection", "desc") == "desc" else events
                offset, limit = int(query.get("offset", 0)), int(query.get("limit", 100))
                return self._answer(200, {"events": ordered[offset : offset + limit], "totalCount": len(events)})
            graph = graph_from_events(events)
            node = query.get("nodeId", "")
            if node not in graph.nodes:
                return self._answer(404, {"code": 404, "message": "Could not find node"})
            depth = int(query.get("depth", 20))
            if url.path == "/api/v1/column-lineage" and graph.nodes[node].type == "DATASET":
                found = graph.nodes[node]
                return self._answer(200, column_lineage_graph(events, found.namespace, found.name, depth))
            if url.path != "/api/v1/lineage":
                return self._answer(404, None)
            payload = graph.subgraph(node, "both", depth).to_marquez()
            for item in payload["graph"]:
                item["data"].pop("columnLineage", None)  # Marquez serves it from /api/v1/column-lineage only
            return self._answer(200, payload)

        def _answer(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode() if payload is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = LineageServer(("127.0.0.1", 0), Handler)
    server.events = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
