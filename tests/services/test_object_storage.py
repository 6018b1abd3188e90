"""Delta tables on S3-compatible object storage through s3a: a local S3 server (moto), a warehouse at
``s3a://<bucket>/...`` and the endpoint set by settings alone, credentials from the environment."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
import shop
from moto.server import ThreadedMotoServer
from processes import free_port
from shop import PARTITIONS, LocalShop

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]

BUCKET = "mesh-lake"
KEY_ID, SECRET = "mesh-test", "mesh-test-secret"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def test_a_product_partition_lands_as_a_delta_table_in_the_bucket(
    s3_endpoint: str, local_shop: LocalShop, tmp_path
) -> None:
    s3 = boto3.client(
        "s3", endpoint_url=s3_endpoint, region_name="us-east-1", aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET
    )
    s3.create_bucket(Bucket=BUCKET)
    settings = {
        "MESH_WAREHOUSE": f"s3a://{BUCKET}/warehouse",
        "MESH_S3__ENDPOINT": s3_endpoint,
        "MESH_S3__REGION": "us-east-1",
        "MESH_S3__PATH_STYLE_ACCESS": "true",
    }
    env = shop.run_env(tmp_path / "home", **settings, AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET)
    partition = PARTITIONS[0]
    out = shop.run(tmp_path / "run.log", env, "--land", partition, "--partitions", partition, "--rows")

    assert [r["success"] for r in out["runs"]] == [True]
    local = [r for r in local_shop.rows["shop/orders"] if json.loads(r)["p_date"] == partition]
    assert out["rows"]["shop/orders"] == local
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix="warehouse/shop/orders/")
    keys = [o["Key"] for o in listed.get("Contents", [])]
    assert "warehouse/shop/orders/_delta_log/00000000000000000000.json" in keys
    assert any(k.startswith(f"warehouse/shop/orders/p_date={partition}/") and k.endswith(".parquet") for k in keys)
    commit = s3.get_object(Bucket=BUCKET, Key="warehouse/shop/orders/_delta_log/00000000000000000000.json")
    actions = [json.loads(line) for line in commit["Body"].read().decode().splitlines()]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert json.loads(info["userMetadata"])["dagster_run_id"] == out["runs"][0]["run_id"]
