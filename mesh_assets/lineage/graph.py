"""The lineage graph read back from emitted events, in Marquez's shape, and walked from one node.

Node ids follow Marquez: ``dataset:<namespace>:<name>`` and ``job:<namespace>:<name>``. Each job's
edges come from its latest COMPLETE event (what the run actually read and wrote), falling back to its
latest event of any kind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Direction = Literal["upstream", "downstream", "both"]


def read_events(folder: Path) -> list[dict[str, Any]]:
    """Every event in the file transport's JSON-lines files under ``folder``, oldest first."""
    events = []
    for path in sorted(folder.glob("openlineage-*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return sorted(events, key=lambda e: e.get("eventTime", ""))


def dataset_id(namespace: str, name: str) -> str:
    return f"dataset:{namespace}:{name}"


def job_id(namespace: str, name: str) -> str:
    return f"job:{namespace}:{name}"


@dataclass
class Node:
    id: str
    type: Literal["DATASET", "JOB"]
    namespace: str
    name: str
    data: dict[str, Any] = field(default_factory=dict)
    ins: set[str] = field(default_factory=set)
    outs: set[str] = field(default_factory=set)


@dataclass
class LineageGraph:
    nodes: dict[str, Node] = field(default_factory=dict)

    def node(self, kind: Literal["DATASET", "JOB"], namespace: str, name: str) -> Node:
        nid = (dataset_id if kind == "DATASET" else job_id)(namespace, name)
        return self.nodes.setdefault(nid, Node(nid, kind, namespace, name))

    def edge(self, origin: Node, destination: Node) -> None:
        origin.outs.add(destination.id)
        destination.ins.add(origin.id)

    def resolve(self, text: str) -> str:
        """A node id from an id, a job name (``domain.table``), or a dataset name/path."""
        if text in self.nodes:
            return text
        candidates = [n.id for n in self.nodes.values() if text in (n.name, f"{n.namespace}:{n.name}")]
        candidates += [n.id for n in self.nodes.values() if n.type == "JOB" and n.name == text.replace("/", ".")]
        if not candidates:
            raise KeyError(f"no lineage node {text!r} (run the product first, or pass a node id)")
        return sorted(set(candidates), key=lambda c: (not c.startswith("job:"), c))[0]

    def subgraph(self, start: str, direction: Direction = "both", depth: int = 20) -> LineageGraph:
        """The nodes reachable from ``start`` within ``depth`` edges, following ``direction``."""
        keep, frontier = {start}, {start}
        for _ in range(depth):
            nxt = set()
            for nid in frontier:
                node = self.nodes[nid]
                if direction in ("upstream", "both"):
                    nxt |= node.ins
                if direction in ("downstream", "both"):
                    nxt |= node.outs
            frontier = nxt - keep
            keep |= frontier
            if not frontier:
                break
        out = LineageGraph()
        for nid in keep:
            n = self.nodes[nid]
            out.nodes[nid] = Node(n.id, n.type, n.namespace, n.name, n.data, n.ins & keep, n.outs & keep)
        return out

    def to_marquez(self) -> dict[str, Any]:
        """``{"graph": [{"id", "type", "data", "inEdges", "outEdges"}]}`` as Marquez's ``/api/v1/lineage``."""
        graph = []
        for n in sorted(self.nodes.values(), key=lambda n: n.id):
            data = {"id": {"namespace": n.namespace, "name": n.name}, "namespace": n.namespace, "name": n.name}
            data.update(n.data)
            graph.append(
                {
                    "id": n.id,
                    "type": n.type,
                    "data": data,
                    "inEdges": [{"origin": o, "destination": n.id} for o in sorted(n.ins)],
                    "outEdges": [{"origin": n.id, "destination": d} for d in sorted(n.outs)],
                }
            )
        return {"graph": graph}

    def to_mermaid(self) -> str:
        """A Mermaid flowchart: datasets as cylinders, jobs as boxes, edges in data-flow direction."""
        ids = {nid: f"n{i}" for i, nid in enumerate(sorted(self.nodes))}
        lines = ["flowchart LR"]
        for nid, short in ids.items():
            n = self.nodes[nid]
            label = n.name.replace('"', "'")
            lines.append(f'    {short}[("{label}")]' if n.type == "DATASET" else f'    {short}["{label}"]')
        for nid, short in ids.items():
            for dest in sorted(self.nodes[nid].outs):
                lines.append(f"    {short} --> {ids[dest]}")
        return "\n".join(lines) + "\n"

    def to_dot(self) -> str:
        """A Graphviz digraph: datasets as cylinders, jobs as boxes, edges in data-flow direction."""
        ids = {nid: f"n{i}" for i, nid in enumerate(sorted(self.nodes))}
        lines = ["digraph lineage {", "    rankdir=LR;"]
        for nid, short in ids.items():
            n = self.nodes[nid]
            shape = "cylinder" if n.type == "DATASET" else "box"
            lines.append(f"    {short} [label={json.dumps(n.name)}, shape={shape}];")
        for nid, short in ids.items():
            for dest in sorted(self.nodes[nid].outs):
                lines.append(f"    {short} -> {ids[dest]};")
        return "\n".join([*lines, "}"]) + "\n"


def graph_from_events(events: Iterable[dict[str, Any]]) -> LineageGraph:
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        job = event.get("job") or {}
        key = (job.get("namespace", ""), job.get("name", ""))
        previous = latest.get(key)
        if previous is None or event.get("eventType") == "COMPLETE" or previous.get("eventType") != "COMPLETE":
            latest[key] = event
    graph = LineageGraph()
    for (namespace, name), event in sorted(latest.items()):
        job = graph.node("JOB", namespace, name)
        run = event.get("run") or {}
        job.data = {
            "type": "BATCH",
            "latestRun": {"id": run.get("runId"), "state": event.get("eventType"), "time": event.get("eventTime")},
        }
        for ds in event.get("inputs") or []:
            graph.edge(graph.node("DATASET", ds["namespace"], ds["name"]), job)
        for ds in event.get("outputs") or []:
            node = graph.node("DATASET", ds["namespace"], ds["name"])
            facets = ds.get("facets") or {}
            fields = (facets.get("schema") or {}).get("fields")
            if fields:
                node.data = {"type": "DB_TABLE", "fields": fields}
            if facets.get("columnLineage"):
                node.data["columnLineage"] = facets["columnLineage"]
            graph.edge(job, node)
        job.data["inputs"] = [{"namespace": graph.nodes[i].namespace, "name": graph.nodes[i].name} for i in job.ins]
        job.data["outputs"] = [{"namespace": graph.nodes[o].namespace, "name": graph.nodes[o].name} for o in job.outs]
    return graph


def graph_from_marquez(payload: dict[str, Any]) -> LineageGraph:
    """The graph a Marquez lineage response describes: the inverse of :meth:`LineageGraph.to_marquez`."""
    graph = LineageGraph()
    for item in payload.get("graph", []):
        data = dict(item.get("data") or {})
        kind: Literal["DATASET", "JOB"] = "JOB" if item["type"] == "JOB" else "DATASET"
        _, _, rest = item["id"].partition(":")
        namespace, _, name = rest.partition(":")
        namespace, name = data.pop("namespace", namespace), data.pop("name", name)
        data.pop("id", None)
        graph.nodes[item["id"]] = Node(item["id"], kind, namespace, name, data)
    for item in payload.get("graph", []):
        for edge in [*item.get("inEdges", []), *item.get("outEdges", [])]:
            origin, destination = graph.nodes.get(edge["origin"]), graph.nodes.get(edge["destination"])
            if origin is not None and destination is not None:
                graph.edge(origin, destination)
    return graph


def column_lineage_mermaid(output: str, facet: dict[str, Any]) -> str:
    """A ``columnLineage`` facet as a Mermaid flowchart: each dataset a box of its columns, an edge from each
    input column to the output column computed from it."""
    columns: dict[str, set[str]] = {output: set()}
    edges = []
    for column, spec in sorted((facet.get("fields") or {}).items()):
        columns[output].add(column)
        for f in spec.get("inputFields", []):
            columns.setdefault(f["name"], set()).add(f["field"])
            edges.append(((f["name"], f["field"]), (output, column)))
    ids: dict[tuple[str, str], str] = {}
    lines = ["flowchart LR"]
    for i, (dataset, names) in enumerate(sorted(columns.items(), key=lambda kv: (kv[0] == output, kv[0]))):
        lines.append(f'    subgraph d{i}["{dataset}"]')
        for j, name in enumerate(sorted(names)):
            ids[(dataset, name)] = f"d{i}c{j}"
            lines.append(f'        d{i}c{j}["{name}"]')
        lines.append("    end")
    lines += [f"    {ids[a]} --> {ids[b]}" for a, b in sorted(edges)]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class UndeclaredRead:
    job: str
    run_id: str
    time: str
    tables: tuple[str, ...]


def undeclared_reads(events: Iterable[dict[str, Any]], limit: int | None = None) -> list[UndeclaredRead]:
    """Closing events (newest first) whose run read tables it did not declare."""
    found = []
    for event in reversed(list(events)):
        if event.get("eventType") not in ("COMPLETE", "FAIL"):
            continue
        facet = ((event.get("run") or {}).get("facets") or {}).get("mesh_undeclaredReads")
        if facet:
            tables = tuple(facet.get("tables") or [d["name"] for d in facet.get("datasets", [])])
            found.append(UndeclaredRead(event["job"]["name"], event["run"]["runId"], event["eventTime"], tables))
    return found[:limit] if limit else found
