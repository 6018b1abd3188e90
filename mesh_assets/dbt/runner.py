"""Run dbt inside the Mesh process, on Mesh's SparkSession.

``DbtCliResource.cli`` starts a ``dbt`` subprocess, which would start a second JVM without Mesh's Delta
configuration. With the ``session`` target Mesh instead invokes dbt through ``dbtRunner`` in-process:
dbt-spark's ``SparkSession.builder.getOrCreate()`` returns the session Mesh created first, so dbt sees the
tables Mesh registered, and the compiled nodes come back as objects rather than files to read.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator

from mesh_assets.compat import dbt_invocation_params
from mesh_assets.settings import scoped_environ

# dbt keeps global state (flags, event manager, adapter registry): one in-process invocation at a time.
_dbt_lock = threading.Lock()


class InProcessDbtResult:
    """The outcome of one in-process dbt command: its raw events, the nodes it ran, and whether it succeeded."""

    def __init__(
        self,
        success: bool,
        events: list[dict[str, Any]],
        exception: BaseException | None,
        nodes: Mapping[str, Any],
    ):
        self.success = success
        self.events = events
        self.exception = exception
        self.nodes = nodes
        """Each node of the command's results (compiled SQL in ``compiled_code``), by unique id."""

    def errors(self) -> list[str]:
        return [e["info"]["msg"] for e in self.events if e["info"].get("level") == "error"]


def invoke_dbt(
    args: Sequence[str],
    *,
    project_dir: Path,
    profiles_dir: Path,
    target: str,
    target_path: Path,
    env: Mapping[str, str],
    log: Any = None,
) -> InProcessDbtResult:
    """``dbt <args>`` in this process; events are collected as the dicts of dbt's JSON log format."""
    from dbt.cli.main import dbtRunner
    from dbt_common.events.functions import msg_to_dict

    events: list[dict[str, Any]] = []

    def collect(msg: Any) -> None:
        event = msg_to_dict(msg)
        if "info" in event and "data" in event:
            events.append(event)
            if log is not None and event["info"].get("level") in {"info", "warn", "error"} and event["info"]["msg"]:
                level = event["info"]["level"]
                getattr(log, "warning" if level == "warn" else level)(event["info"]["msg"])

    argv = [
        *args,
        "--project-dir",
        str(project_dir),
        "--profiles-dir",
        str(profiles_dir),
        "--target",
        target,
        "--target-path",
        str(target_path),
        "--log-path",
        str(target_path),
        "--no-use-colors",
        "--log-level-file",
        "none",
    ]
    with _dbt_lock, scoped_environ({**env, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}):
        result = dbtRunner(callbacks=[collect]).invoke(argv)
    nodes = {r.node.unique_id: r.node for r in getattr(result.result, "results", None) or [] if hasattr(r, "node")}
    return InProcessDbtResult(bool(result.success), events, result.exception, nodes)


def selection_for(
    context: dg.AssetExecutionContext, manifest: Mapping[str, Any], translator: DagsterDbtTranslator
) -> list[str]:
    """dbt selection arguments for the assets and checks this step executes (subsets included)."""
    params = dbt_invocation_params(context, manifest, translator)
    args = list(params.selection_args)
    if params.indirect_selection:
        args += ["--indirect-selection", params.indirect_selection]
    return args
