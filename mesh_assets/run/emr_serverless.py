"""Runs in engine mode ``submit`` on EMR Serverless, launched by dagster-aws's Pipes client.

The driver runs on AWS, not beside the step, so everything between them goes through the settings' S3 bucket,
under ``<prefix>/runs/<run id>/<domain>.<table>/``: the entry point, a zip of the domain's files, the run's
Pipes context; the Pipes messages (the outcome, the driver's log records, its stdout and stderr) come back
through the bucket too, and EMR keeps its own logs there. The job finds a Python with Mesh installed and
Delta's jars through the settings' ``spark_submit_parameters`` (docs/deployment.md).
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg

from mesh_assets.engine.session import application_conf
from mesh_assets.graph.resolve import Node
from mesh_assets.run.app import APPLICATION
from mesh_assets.settings import MeshSettings

if TYPE_CHECKING:
    from dagster import PipesClientCompletedInvocation


def zipped(folder: Path, archive: Path) -> Path:
    """``folder``'s files (no caches, nothing hidden) in a zip, paths relative to the folder."""
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_file() and not any(p == "__pycache__" or p.startswith(".") for p in relative.parts):
                out.write(path, relative)
    return archive


def submit_parameters(settings: MeshSettings) -> str:
    """The job's ``sparkSubmitParameters``: the configuration every Mesh application needs, then the settings'."""
    conf = " ".join(f"--conf {key}={value}" for key, value in application_conf(settings).items())
    return f"{conf} {settings.engine.emr_serverless.spark_submit_parameters}".strip()


def run_on_emr_serverless(
    context: dg.AssetExecutionContext, settings: MeshSettings, node: Node, folder: Path, request: dict[str, Any]
) -> PipesClientCompletedInvocation:
    """Upload the entry point and the domain's files, start the job run, wait for it and read its messages."""
    import boto3
    from dagster_aws.pipes import PipesEMRServerlessClient, PipesS3ContextInjector, PipesS3MessageReader

    emr = settings.engine.emr_serverless
    bucket, region = emr.bucket, emr.region or settings.s3.region
    assert bucket and emr.application_id and emr.execution_role_arn  # the settings refuse an incomplete launcher
    s3 = boto3.client("s3", endpoint_url=settings.s3.endpoint, region_name=region)
    prefix = f"{emr.prefix.strip('/')}/runs/{context.run.run_id}/{node.domain}.{node.table.name}"
    s3.upload_file(str(APPLICATION), bucket, f"{prefix}/{APPLICATION.name}")
    with tempfile.TemporaryDirectory() as scratch:
        s3.upload_file(str(zipped(folder, Path(scratch) / "domain.zip")), bucket, f"{prefix}/{node.domain}.zip")
    request = {**request, "node": {**request["node"], "folder": f"s3://{bucket}/{prefix}/{node.domain}.zip"}}
    client = PipesEMRServerlessClient(
        client=boto3.client("emr-serverless", region_name=region),
        context_injector=PipesS3ContextInjector(bucket=bucket, client=s3, key_prefix=f"{prefix}/pipes-"),
        message_reader=PipesS3MessageReader(bucket=bucket, client=s3, interval=5, include_stdio_in_messages=True),
    )
    params: Any = {
        "applicationId": emr.application_id,
        "executionRoleArn": emr.execution_role_arn,
        "name": f"mesh {node.table.ref} {context.run.run_id[:8]}",
        "jobDriver": {
            "sparkSubmit": {
                "entryPoint": f"s3://{bucket}/{prefix}/{APPLICATION.name}",
                "sparkSubmitParameters": submit_parameters(settings),
            }
        },
        "configurationOverrides": {
            "monitoringConfiguration": {"s3MonitoringConfiguration": {"logUri": f"s3://{bucket}/{prefix}/logs/"}}
        },
    }
    return client.run(context=context, start_job_run_params=params, extras=request)
