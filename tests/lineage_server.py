"""A lineage server on 127.0.0.1 with Marquez's two endpoints: events are POSTed to ``/api/v1/lineage`` and
stored; ``GET /api/v1/lineage?nodeId=<id>&depth=<n>`` answers the graph around a node (404 when unknown)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

from mesh_assets.lineage.graph import graph_from_events


class LineageServer(HTTPServer):
    events: list[dict]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


def lineage_server() -> LineageServer:
    """Serve until ``shutdown()``."""

    class Handler(BaseHTTPRequestHandler):
        server: LineageServer

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.server.events.append(body)
            self.send_response(201)
            self.end_headers()

        def do_GET(self) -> None:
            url = urlparse(self.path)
            query = parse_qs(url.query)
            graph = graph_from_events(self.server.events)
            node = query.get("nodeId", [""])[0]
            if url.path != "/api/v1/lineage" or node not in graph.nodes:
                self.send_response(404)
                self.end_headers()
                return
            payload = graph.subgraph(node, "both", int(query.get("depth", ["20"])[0])).to_marquez()
            body = json.dumps(payload).encode()
            self.send_response(200)
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
