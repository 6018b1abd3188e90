"""Engine mode ``submit`` on EMR Serverless through dagster-aws's Pipes client, against a local AWS stand-in
(moto in server mode): the step uploads the entry point and the domain's files, injects the run's context into
S3, starts the job run and polls it, reads the application's messages and output from S3, and records the
events; the run's compute logs go to S3 through dagster-aws's compute log manager, as ``mesh setup`` configures
the instance.

moto answers EMR Serverless's API but runs no job, so this test plays EMR's part: when a job run is started it
runs the job on this machine as EMR would (the entry point fetched from S3, spark-submit with the job's
``sparkSubmitParameters``, the driver's environment from its ``spark.emr-serverless.driverEnv`` settings), with
Delta's jars from ``mesh setup`` where EMR's image has its own. The warehouse is a local folder.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
import shop
from delta.tables import DeltaTable
from processes import run
from shop import PARTITIONS, LocalShop

from mesh_assets import MeshResource
from mesh_assets.cli import commands
from mesh_assets.engine.jars import cached
from mesh_assets.engine.submit import spark_submit
from mesh_assets.settings import get_settings

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]

REGION, BUCKET, LOGS = "us-east-1", "mesh-emr", "mesh-logs"
KEY_ID, SECRET = "mesh-test", "mesh-test-secret"
DRIVER_ENV = "spark.emr-serverless.driverEnv."


class EmrOnThisMachine:
    """moto's EMR Serverless client, whose started job runs are also run here, the way EMR would run them."""

    def __init__(self, client: Any, s3: Any, workdir: Path, env: dict[str, str]):
        self.client, self.s3, self.workdir, self.env = client, s3, workdir, env
        self.started: list[dict] = []

    def start_job_run(self, **params: Any) -> dict:
        response = self.client.start_job_run(**params)
        self.started.append(params)
        driver = params["jobDriver"]["sparkSubmit"]
        bucket, _, key = driver["entryPoint"].removeprefix("s3://").partition("/")
        entry = self.workdir / Path(key).name
        self.s3.download_file(bucket, key, str(entry))
        args, env = [], dict(self.env)
        words = shlex.split(driver["sparkSubmitParameters"])
        for flag, value in zip(words[::2], words[1::2], strict=True):
            assert flag == "--conf", words
            name, _, setting = value.partition("=")
            if name.startswith(DRIVER_ENV):
                env[name.removeprefix(DRIVER_ENV)] = setting
            else:
                args += [flag, value]
        jars = ",".join(str(j) for j in cached(get_settings().jars_path))
        command = [spark_submit(get_settings()), "--master", "local[1]", "--conf", f"spark.jars={jars}", *args]
        # EMR runs the driver in a working directory of its own, where Spark's default warehouse goes (the
        # job's configuration is the application's, not a local session's): never the checkout.
        run([*command, str(entry)], self.workdir / "driver.log", env, cwd=self.workdir)
        return response

    def get_application(self, **params: Any) -> dict:
        """moto echoes the type an application was created with (``SPARK``); AWS answers ``Spark``, which is what
        dagster-aws reads."""
        response = self.client.get_application(**params)
        response["application"]["type"] = response["application"]["type"].capitalize()
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def test_a_run_on_emr_serverless_reports_through_s3_and_records_what_local_mode_does(
    s3_endpoint: str, settings_env, local_shop: LocalShop, spark, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws = {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": REGION}
    settings_env(**aws, AWS_ENDPOINT_URL_EMR_SERVERLESS=s3_endpoint)
    s3 = boto3.client("s3", endpoint_url=s3_endpoint)
    s3.create_bucket(Bucket=BUCKET)
    s3.create_bucket(Bucket=LOGS)
    emr = boto3.client("emr-serverless")
    app = emr.create_application(name="mesh", releaseLabel="emr-7.9.0", type="SPARK")["applicationId"]
    driver_env = shop.run_env(tmp_path / "driver-home", **aws, AWS_ENDPOINT_URL_S3=s3_endpoint)
    here = EmrOnThisMachine(emr, s3, tmp_path, {**driver_env, "PYSPARK_PYTHON": sys.executable})
    real_client = boto3.client
    monkeypatch.setattr(
        boto3, "client", lambda name, *a, **k: here if name == "emr-serverless" else real_client(name, *a, **k)
    )
    settings_env(
        MESH_ENGINE__MODE="submit",
        MESH_ENGINE__LAUNCHER="emr-serverless",
        MESH_ENGINE__EMR_SERVERLESS__APPLICATION_ID=app,
        MESH_ENGINE__EMR_SERVERLESS__EXECUTION_ROLE_ARN="arn:aws:iam::123456789012:role/mesh-emr",
        MESH_ENGINE__EMR_SERVERLESS__BUCKET=BUCKET,
        MESH_S3__ENDPOINT=s3_endpoint,
        MESH_S3__REGION=REGION,
        MESH_S3__PATH_STYLE_ACCESS="true",
        MESH_COMPUTE_LOGS__BUCKET=LOGS,
        DAGSTER_HOME=str(tmp_path / "dagster"),
    )
    partition = PARTITIONS[0]
    mesh = MeshResource(warehouse=str(tmp_path / "warehouse"))
    shop.land(spark, mesh.registry, [shop.DAYS[0]])
    with commands.persistent_instance() as instance:  # the instance `mesh setup` writes: compute logs on S3
        result = shop.materialize(instance, mesh, [shop.ORDERS], partition)
        assert result.success
        published = [e.materialization for e in result.get_asset_materialization_events()]
        checks = result.get_asset_check_evaluations()

    # the events a local run records, from the outcome the application reported through S3
    local = [r for r in local_shop.rows["shop/orders"] if json.loads(r)["p_date"] == partition]
    assert [(m.partition, m.metadata["dagster/row_count"].value) for m in published] == [(partition, len(local))]
    assert sorted((c.check_name, c.partition, c.passed) for c in checks) == [
        ("not_null_id_city", partition, True),
        ("unique_id", partition, True),
        ("valid", partition, True),
    ]
    assert shop.rows(spark, mesh.registry, shop.ORDERS) == local
    history = DeltaTable.forPath(spark, mesh.registry.location(*shop.ORDERS)).history().collect()
    assert json.loads(history[0]["userMetadata"])["dagster_run_id"] == result.run_id
    # the job EMR was asked to run: Mesh's entry point and the domain's files in the bucket, EMR's logs beside them
    [job] = here.started
    prefix = f"mesh/runs/{result.run_id}/shop.orders"
    assert job["applicationId"] == app
    assert job["jobDriver"]["sparkSubmit"]["entryPoint"] == f"s3://{BUCKET}/{prefix}/mesh_remote.py"
    logs = job["configurationOverrides"]["monitoringConfiguration"]["s3MonitoringConfiguration"]["logUri"]
    assert logs == f"s3://{BUCKET}/{prefix}/logs/"
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}
    assert {f"{prefix}/mesh_remote.py", f"{prefix}/shop.zip"} <= keys
    assert not any(k.startswith(f"{prefix}/pipes-") for k in keys)  # the run's context is deleted after the run
    # the driver's output came back through the Pipes messages into the step's output, kept on S3
    logged = s3.list_objects_v2(Bucket=LOGS, Prefix=f"dagster/compute-logs/storage/{result.run_id}/").get("Contents")
    output = "".join(s3.get_object(Bucket=LOGS, Key=o["Key"])["Body"].read().decode() for o in logged or [])
    assert f"mesh: shop.orders {partition} on Spark" in output
