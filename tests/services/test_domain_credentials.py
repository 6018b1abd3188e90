"""Per-domain storage keys on a local S3 server that enforces IAM (moto with ``INITIAL_NO_AUTH_ACTION_COUNT``):
two users whose policies let each read the warehouse and write only its own domain's prefix. A domain's run
writes its prefix with its own keys; with the other domain's keys the same run is refused by the storage, and
a write of a domain's identity to another domain's prefix is refused too, with nothing left in either case."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
import shop
from processes import free_port, run, start, stop, wait_for_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]

BUCKET = "mesh-domains"
DAY1, DAY2 = "2021-06-01", "2021-06-02"


@dataclass
class IamS3:
    endpoint: str
    admin: dict[str, str]
    users: dict[str, tuple[str, str]]
    """user -> (access key id, secret)"""

    def s3(self):
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", **self.admin)

    def text(self, key: str) -> str:
        return self.s3().get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()

    def keys(self, prefix: str) -> list[str]:
        listed = self.s3().list_objects_v2(Bucket=BUCKET, Prefix=prefix)
        return [o["Key"] for o in listed.get("Contents", [])]


def _policy(domain: str) -> str:
    """Read the whole warehouse (other domains' published tables are inputs), write only the domain's prefix."""
    statements = [
        {"Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"], "Resource": f"arn:aws:s3:::{BUCKET}"},
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": f"arn:aws:s3:::{BUCKET}/warehouse/*"},
        {
            "Effect": "Allow",
            "Action": ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
            "Resource": f"arn:aws:s3:::{BUCKET}/warehouse/{domain}/*",
        },
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


@pytest.fixture(scope="module")
def iam_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IamS3]:
    """A moto server of its own that authorizes every request after the first three (an admin user, its policy
    and its key), a bucket, and a user per domain (shop, ledger) allowed to write only its own prefix."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto-iam") / "moto.log"
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"}
    server = start([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], log, env)
    try:
        wait_for_port(port, server, log)
        endpoint = f"http://127.0.0.1:{port}"
        anyone = {"aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", **anyone)
        iam.create_user(UserName="admin")
        everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        iam.put_user_policy(UserName="admin", PolicyName="all", PolicyDocument=json.dumps(everything))
        key = iam.create_access_key(UserName="admin")["AccessKey"]
        admin = {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", **admin)
        users = {}
        for domain in ("shop", "ledger"):
            iam.create_user(UserName=domain)
            iam.put_user_policy(UserName=domain, PolicyName="own-prefix", PolicyDocument=_policy(domain))
            key = iam.create_access_key(UserName=domain)["AccessKey"]
            users[domain] = (key["AccessKeyId"], key["SecretAccessKey"])
        world = IamS3(endpoint, admin, users)
        world.s3().create_bucket(Bucket=BUCKET)
        with pytest.raises(Exception, match="InvalidAccessKeyId"):  # enforced: an unknown key is refused
            boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **anyone).list_buckets()
        yield world
    finally:
        stop(server)


def test_each_domains_keys_write_its_own_prefix_and_no_other(iam_s3: IamS3, tmp_path) -> None:
    shop_keys, ledger_keys = (":".join(iam_s3.users[d]) for d in ("shop", "ledger"))
    env = shop.run_env(
        tmp_path / "home",
        MESH_WAREHOUSE=f"s3a://{BUCKET}/warehouse",
        MESH_S3__ENDPOINT=iam_s3.endpoint,
        MESH_S3__REGION="us-east-1",
        MESH_S3__PATH_STYLE_ACCESS="true",
        MESH_S3__DOMAINS__SHOP__ACCESS_KEY_ENV="SHOP_KEY_ID",
        MESH_S3__DOMAINS__SHOP__SECRET_KEY_ENV="SHOP_SECRET",
        AWS_ACCESS_KEY_ID=iam_s3.admin["aws_access_key_id"],  # the deployment's: lands shop's raw orders
        AWS_SECRET_ACCESS_KEY=iam_s3.admin["aws_secret_access_key"],
    )
    stray = f"s3a://{BUCKET}/warehouse/ledger/planted"
    command = [sys.executable, str(Path(__file__).with_name("identity_run.py"))]
    args = ["--land", DAY1, DAY2, "--partitions", DAY1, DAY2, "--keys", shop_keys, ledger_keys, "--stray", stray]
    out = json.loads(run([*command, *args], tmp_path / "run.log", env, timeout=900).strip().splitlines()[-1])

    first, second = out["runs"]
    assert (first["success"], first["identity"]) == (True, "shop")  # shop's keys write shop's prefix
    assert any(k.startswith(f"warehouse/shop/orders/p_date={DAY1}/") for k in iam_s3.keys("warehouse/shop/orders/"))
    # the same run with ledger's keys: the storage refuses the write, nothing of the day is left
    assert second["success"] is False and second["identity"] == "shop"
    assert "writing shop.orders partition 2021-06-02 failed" in second["failure"]
    assert "Access Denied" in second["failure"] and "the table is unchanged at version 0" in second["failure"]
    assert not [k for k in iam_s3.keys("warehouse/shop/orders/") if f"p_date={DAY2}" in k]
    commits = [k for k in iam_s3.keys("warehouse/shop/orders/_delta_log/") if k.endswith(".json")]
    assert commits and not [k for k in commits if DAY2 in iam_s3.text(k)]  # no commit of the refused day
    # shop's identity writing ledger's prefix: refused by the storage, nothing there
    assert out["stray"] is not None, "shop's keys wrote ledger's prefix"
    assert any(c.startswith("java.nio.file.AccessDeniedException") for c in out["stray"]), out["stray"]
    assert iam_s3.keys("warehouse/ledger/") == []
