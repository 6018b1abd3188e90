"""Delta tables on S3-compatible object storage through s3a: a local S3 server (moto), a warehouse at
``s3a://<bucket>/...`` and the endpoint set by settings alone, credentials from the environment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import boto3
import dagster as dg
import pytest
import shop
from shop import PARTITIONS, LocalShop

from mesh_assets import MeshResource
from mesh_assets.automation.observer import build_observer
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.product import DataProduct, ExternalTable
from mesh_assets.settings import get_settings

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]

BUCKET = "mesh-lake"
KEY_ID, SECRET = "mesh-test", "mesh-test-secret"


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


@pytest.fixture
def s3_settings(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's settings point at the local S3 server; its credentials are in the environment only."""
    for name, value in {
        "MESH_S3__ENDPOINT": s3_endpoint,
        "MESH_S3__REGION": "us-east-1",
        "MESH_S3__PATH_STYLE_ACCESS": "true",
        "AWS_ACCESS_KEY_ID": KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET,
    }.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    yield
    monkeypatch.undo()
    get_settings.cache_clear()


def test_an_external_table_in_the_bucket_is_observed(s3_endpoint: str, s3_settings: None, spark, tmp_path) -> None:
    """Each commit an outside writer puts in the bucket is reported once: the first through the table's snapshot
    (delta-rs), the next through its commit file (boto3)."""
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket="mesh-external")
    local, prefix = tmp_path / "raw_events", "lake/central/raw_events"

    def land_and_upload(day: date) -> None:
        df = spark.createDataFrame([(1, day)], "id long, p_date date")
        df.write.format("delta").mode("append").partitionBy("p_date").save(str(local))
        for path in sorted(p for p in Path(local).rglob("*") if p.is_file()):
            s3.upload_file(str(path), "mesh-external", f"{prefix}/{path.relative_to(local)}")

    spec = DataProduct(
        domain="central",
        name="events",
        owner="team:central",
        contacts=[{"kind": "chat", "value": "#central"}],
        start_date="2021-06-01",
        external=(ExternalTable(table="raw_events", partition_column="p_date"),),
    )
    sensor = build_observer("central", list(tables_of(spec)), get_settings().automation)
    assert sensor is not None
    mesh = MeshResource(warehouse="s3a://mesh-external/lake")

    def tick(cursor: str | None) -> tuple[list[str], str | None]:
        with dg.build_sensor_context(
            instance=dg.DagsterInstance.ephemeral(), cursor=cursor, resources={"mesh": mesh}
        ) as context:
            result = sensor(context)
        return [e.partition for e in result.asset_events], result.cursor

    land_and_upload(date(2021, 6, 1))
    keys, cursor = tick(None)
    assert keys == ["2021-06-01"]
    land_and_upload(date(2021, 6, 2))
    keys, cursor = tick(cursor)
    assert keys == ["2021-06-02"]
    assert tick(cursor) == ([], cursor)
