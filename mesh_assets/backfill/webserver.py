"""A Dagster webserver's GraphQL endpoint, spoken to with the standard library alone: a command that needs the
webserver asks whether it answers before it imports Dagster or loads the mesh (:func:`Webserver.answers`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROBE_SECONDS = 2.0
"""How long a command waits for the webserver's first answer: a refused connection fails at once, a server that
is listening but busy gets this long."""
PING = "query MeshPing { version }"


class WebserverError(RuntimeError):
    """The webserver did not answer, or refused the request: nothing was launched."""


@dataclass(frozen=True)
class Webserver:
    """A Dagster webserver's GraphQL endpoint (the ``dagster.url`` setting; ``make dev`` serves one)."""

    url: str
    timeout: float = 30.0

    def graphql(self, query: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        """The ``data`` of one GraphQL request; a :class:`WebserverError` naming the server if it fails."""
        body = json.dumps({"query": query, "variables": dict(variables)}).encode()
        endpoint = f"{self.url.rstrip('/')}/graphql"
        request = urllib.request.Request(endpoint, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as exc:
            raise WebserverError(
                f"the Dagster webserver at {self.url} answered HTTP {exc.code}: {_errors(exc)}"
            ) from None
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise WebserverError(
                f"no Dagster webserver answers at {self.url} ({reason}); start the webserver: make dev "
                "(or point the dagster.url setting, MESH_DAGSTER__URL, at the one that serves this mesh)"
            ) from None
        if answer.get("errors"):
            messages = "; ".join(e.get("message", str(e)) for e in answer["errors"])
            raise WebserverError(f"the Dagster webserver at {self.url} refused the request: {messages}")
        return answer["data"]

    def answers(self) -> None:
        """Raise :class:`WebserverError` (naming the URL and how to start one) unless the webserver answers a
        trivial query within :data:`PROBE_SECONDS`."""
        Webserver(self.url, min(self.timeout, PROBE_SECONDS)).graphql(PING, {})


def _errors(exc: urllib.error.HTTPError) -> str:
    try:
        return "; ".join(e["message"] for e in json.load(exc)["errors"])
    except (ValueError, KeyError, TypeError):
        return str(exc.reason)
