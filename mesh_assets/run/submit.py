"""Runs in engine mode ``submit``: the step gates the run (readiness needs the Dagster instance), launches the
body as a Spark application through Dagster Pipes, and turns what the application reports into the events a
local run records. No Spark session is started in the step's process.

Pipes reports one materialization per asset and knows no partitions, so the application reports none: its
whole outcome (each partition's rows, each check's verdict per partition, the refused partitions, what it
read) comes back as one custom message, and :func:`mesh_assets.run.record.record` emits the events here, as
for a local run. A failure of the body comes back the same way, so the step fails with the body's own words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg

from mesh_assets.compat import end_typed_event_stream
from mesh_assets.engine.identity import domain_environ
from mesh_assets.engine.submit import submit_command, submit_env
from mesh_assets.graph.catalog import table_json
from mesh_assets.graph.discovery import domain_folder
from mesh_assets.graph.resolve import Node
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.run.app import APPLICATION
from mesh_assets.run.body import RunPlan
from mesh_assets.run.failures import step_failure
from mesh_assets.run.outcome import RunOutcome, outcome_from_json
from mesh_assets.settings import Launcher
from mesh_assets.storage.resource import MeshResource


class SubmittedRunFailed(dg.Failure):
    """The body failed in the Spark application; the description is its error's own."""


def run_request(node: Node, plan: RunPlan, mesh: MeshResource, folder: str) -> dict[str, Any]:
    """What the application needs to run ``plan`` (the Pipes extras): where the node's domain files are, the
    upstream tables it reads, the warehouse and how its session is configured."""
    settings = mesh.settings
    return {
        "node": {
            "domain": node.domain,
            "table": node.table.name,
            "folder": folder,
            "tables": [table_json(read.table) for read in node.reads],
        },
        "warehouse": mesh.registry.warehouse,
        "plan": plan.to_json(),
        "log_level": settings.spark.log_level,
        "s3a": settings.uses_s3a,
    }


def launch(context: dg.AssetExecutionContext, mesh: MeshResource, node: Node, plan: RunPlan) -> RunOutcome:
    """Run ``plan``'s body as a Spark application and return the outcome it reported."""
    settings = mesh.settings
    folder = domain_folder(node.product)
    request = run_request(node, plan, mesh, str(folder))
    if settings.engine.launcher is Launcher.EMR_SERVERLESS:
        from mesh_assets.run.emr_serverless import run_on_emr_serverless

        invocation = run_on_emr_serverless(context, settings, node, folder, request)
    else:
        if settings.connect:
            raise dg.Failure(
                description=f"{node.table.ref}: product {node.product.name} runs with engine: submit, which launches "
                f"with spark-submit and needs a cluster's master, not Spark Connect's {settings.spark.master}"
            )
        command = submit_command(settings, f"mesh {node.table.ref} {context.run.run_id[:8]}", APPLICATION)
        client = dg.PipesSubprocessClient(env={**submit_env(), **domain_environ(settings, node.domain)})
        invocation = client.run(context=context, command=command, extras=request)
    end_typed_event_stream(context)  # the events are recorded per partition, as a local run records them
    return reported_outcome(invocation.get_custom_messages(), node, plan.part)


def reported_outcome(messages: Sequence[Any], node: Node, part: PartitionRange | None) -> RunOutcome:
    """The outcome the application reported; its failure raised as the step's."""
    for message in messages:
        if isinstance(message, dict) and "failure" in message:
            failure = message["failure"]
            raise step_failure(failure["description"], failure["metadata"], failure["error"], SubmittedRunFailed)
        if isinstance(message, dict) and "outcome" in message:
            return outcome_from_json(message["outcome"], node, part)
    raise dg.Failure(
        description=f"{node.table.ref}: the Spark application reported no outcome (its output is in the step's log)"
    )
