"""An HTTP receiver on 127.0.0.1 for what Mesh posts (chat webhooks, OpenLineage events)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer


def json_receiver(on_post: Callable[[str, dict], None], status: int = 204) -> HTTPServer:
    """Serve on a free port until ``shutdown()``: each POST's path and JSON body go to ``on_post``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            on_post(self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
