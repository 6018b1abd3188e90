"""The ``shop`` mesh on an ``s3a://`` warehouse whose domains write with keys of their own, in a process of its own.

Lands ``shop.raw_orders`` for the days given (with the deployment's keys, ``AWS_*``), then, for each
``--partitions`` entry, materializes ``shop/orders`` with shop's keys read from ``SHOP_KEY_ID`` /
``SHOP_SECRET`` (set, per partition, from ``--keys``' pair of the same position: ``A_ID:A_SECRET``), and last
tries a write to ``--stray`` under shop's identity (the first pair of keys), the way a transformation escaping
Mesh's enclosure would. Prints one JSON object: each run's partition, success and failure, and the JVM causes
of the stray write's error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from datetime import date

import dagster as dg
import shop

from mesh_assets import MeshResource
from mesh_assets.engine.identity import use_identity
from mesh_assets.engine.session import stop_spark
from mesh_assets.settings import get_settings


def _failure(result: dg.ExecuteInProcessResult) -> str | None:
    failures = [e for e in result.all_events if e.is_step_failure]
    if not failures:
        return None
    data = failures[0].step_failure_data
    return data.user_failure_data.description if data.user_failure_data else data.error.to_string()


def _causes(exc: BaseException) -> list[str]:
    cause, found = getattr(exc, "java_exception", None), []
    while cause is not None and len(found) < 32:
        found.append(f"{cause.getClass().getName()}: {str(cause.getMessage() or '').splitlines()[:1]}")
        cause = cause.getCause()
    return found or [repr(exc)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--land", nargs="+", required=True)
    parser.add_argument("--partitions", nargs="+", required=True)
    parser.add_argument("--keys", nargs="+", required=True, help="ID:SECRET shop writes each partition with")
    parser.add_argument("--stray", required=True, help="an s3a:// location outside shop's prefix")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    mesh = MeshResource()
    shop.land(mesh.spark, mesh.registry, [date.fromisoformat(d) for d in args.land])
    out: dict = {"runs": []}
    with dg.DagsterInstance.ephemeral() as instance:
        for partition, pair in zip(args.partitions, args.keys, strict=True):
            os.environ["SHOP_KEY_ID"], _, os.environ["SHOP_SECRET"] = pair.partition(":")
            result = shop.materialize(instance, mesh, [shop.ORDERS], partition)
            run = instance.get_run_by_id(result.run_id)
            out["runs"].append(
                {
                    "partition": partition,
                    "success": result.success,
                    "failure": _failure(result),
                    "identity": run.tags.get("mesh/identity"),
                }
            )
    os.environ["SHOP_KEY_ID"], _, os.environ["SHOP_SECRET"] = args.keys[0].partition(":")  # shop's own again
    use_identity(mesh.spark, get_settings(), "shop")
    try:
        mesh.spark.createDataFrame([(1,)], "id long").write.format("delta").save(args.stray)
        out["stray"] = None
    except Exception as exc:  # the storage's refusal, as Spark reports it: its JVM causes, outermost first
        out["stray"] = _causes(exc)
    stop_spark()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
