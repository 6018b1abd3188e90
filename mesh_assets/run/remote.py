"""The remote side of a run in engine mode ``submit``: the driver of a Spark application that spark-submit or
EMR started, talking to the Dagster step through Dagster Pipes.

It rebuilds the node from its domain's files (a folder on this machine, or a zip on S3 when the driver runs
elsewhere) and the upstream tables the request describes, takes the session the submission configured, runs
the body a local run runs, and reports the outcome, or the failure, as one custom message. It reports no
materialization: the Dagster step records the events, per partition. The application ends successfully
whenever it reported; whether the run published is the step's to say.

    python -m mesh_assets.run.remote   # only under Dagster Pipes (the step sets its environment)
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path
from typing import Any

from dagster_pipes import (
    PipesContextLoader,
    PipesDefaultContextLoader,
    PipesDefaultMessageWriter,
    PipesEnvVarParamsLoader,
    PipesMessageWriter,
    PipesParams,
    PipesS3ContextLoader,
    PipesS3MessageWriter,
    open_dagster_pipes,
)

from mesh_assets.checks.errors import to_compute_log
from mesh_assets.engine.session import stop_spark, submitted_spark
from mesh_assets.graph.catalog import table_from_json
from mesh_assets.graph.discovery import load_domain
from mesh_assets.graph.resolve import MeshGraph, Node
from mesh_assets.run.body import RunPlan, run_body
from mesh_assets.run.outcome import outcome_json
from mesh_assets.run.privacy import described, private_description
from mesh_assets.storage.tables import TableRegistry

NOT_UNDER_PIPES = (
    "mesh remote: this is the remote side of a run in engine mode submit; Dagster launches it through Pipes "
    "(engine.launcher spark-submit or emr-serverless), with the run's context in its environment"
)


class RemoteSetupError(RuntimeError):
    """The application could not rebuild what it was asked to run (its domain's files on this machine)."""


def pipes_io(context_params: PipesParams) -> tuple[PipesContextLoader, PipesMessageWriter]:
    """Where the step put the run's context and reads the messages: files beside a spark-submit driver, or an
    S3 bucket (EMR), as the context's parameters say. The S3 client takes credentials and endpoint from the
    environment, as boto3 does."""
    if "bucket" in context_params:
        import boto3

        s3 = boto3.client("s3")
        return PipesS3ContextLoader(s3), PipesS3MessageWriter(s3, interval=5)
    return PipesDefaultContextLoader(), PipesDefaultMessageWriter()


def domain_files(folder: str, domain: str) -> Path:
    """The domain folder: as given, or downloaded from ``s3://bucket/key.zip`` into a temporary folder."""
    if not folder.startswith("s3://"):
        return Path(folder)
    import boto3

    bucket, _, key = folder.removeprefix("s3://").partition("/")
    target = Path(tempfile.mkdtemp(prefix="mesh-domain-")) / domain
    archive = target.with_suffix(".zip")
    boto3.client("s3").download_file(bucket, key, str(archive))
    with zipfile.ZipFile(archive) as files:
        files.extractall(target)
    return target


def rebuilt_node(request: dict[str, Any]) -> Node:
    """The node as the code location resolved it: its own domain's products loaded from their files, the
    tables of other domains (and tools) it reads from the request."""
    domain, table = request["domain"], request["table"]
    specs = load_domain(domain_files(request["folder"], domain), dagster_rules=False)
    graph = MeshGraph({domain: specs}, [table_from_json(t) for t in request["tables"]])
    if (domain, table) not in graph.nodes:
        problems = "; ".join(f"{e.file}:{e.line} {e.message}" for e in specs.errors) or "no product declares it"
        raise RemoteSetupError(f"{specs.folder} does not declare the output {domain}.{table}: {problems}")
    return graph.node(domain, table)


def failure_json(exc: Exception, node: Node | None = None) -> dict[str, Any]:
    """The failure as the step raises it: a Mesh refusal's description and metadata, or the error's text (without
    row values for a table classified above ``l0``: the text may quote a row)."""
    if node is not None and (description := private_description(exc, node.table)) is not None:
        return {"error": type(exc).__name__, "description": description, "metadata": {}}
    if described(exc):
        metadata = {key: getattr(value, "value", value) for key, value in exc.metadata.items()}
        return {
            "error": type(exc).__name__,
            "description": exc.description or type(exc).__name__,
            "metadata": json.loads(json.dumps(metadata, default=str)),
        }
    return {"error": type(exc).__name__, "description": f"{type(exc).__name__}: {exc}", "metadata": {}}


def outcome_message(extras: dict[str, Any], log: logging.Logger) -> dict[str, Any]:
    """Run the requested body; its outcome, or its failure, as the message to report."""
    node = None
    try:
        node, plan = rebuilt_node(extras["node"]), RunPlan.from_json(extras["plan"])
        spark = submitted_spark(extras["log_level"], extras["s3a"])
        partitions = plan.part.describe() if plan.part else "the whole table"
        print(
            f"mesh: {node.table.ref} {partitions} on Spark {spark.version} at {spark.sparkContext.master}", flush=True
        )
        outcome = run_body(spark, TableRegistry(extras["warehouse"]), node, plan, log)
    except Exception as exc:  # reported to the step, which fails with it
        if node is None or node.table.shows_values:
            log.error(traceback.format_exc())  # Pipes makes it an event of the run
        else:  # a classified table's error may quote a row: the application's stderr, the step's compute log
            to_compute_log(f"{node.table.ref} failed", exc)
        return {"failure": failure_json(exc, node)}
    return {"outcome": outcome_json(outcome)}


def main() -> int:
    params = PipesEnvVarParamsLoader()
    if not params.is_dagster_pipes_process():
        print(NOT_UNDER_PIPES, file=sys.stderr)
        return 2
    loader, writer = pipes_io(params.load_context_params())
    try:
        with open_dagster_pipes(params_loader=params, context_loader=loader, message_writer=writer) as pipes:
            pipes.report_custom_message(outcome_message(pipes.extras, pipes.log))
    finally:
        stop_spark()
    return 0


if __name__ == "__main__":
    sys.exit(main())
