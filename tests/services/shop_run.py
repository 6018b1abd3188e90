"""Land and materialize the ``shop`` mesh in a process of its own, with whatever Spark the settings name.

The service tests run this where the pytest process cannot: with a ``spark://`` or ``sc://`` master, an
``s3a://`` warehouse, or several at once against one Dagster instance. It prints one JSON object: each
run's id, partition, success and the Delta version each table's materialization recorded, and (with
``--rows``) the tables' rows as :func:`shop.rows` gives them.

    python tests/services/shop_run.py --land 2021-06-01 2021-06-02 --partitions 2021-06-01..2021-06-02 --rows
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from datetime import date

import dagster as dg
import shop

from mesh_assets import MeshResource
from mesh_assets.engine.session import stop_spark
from mesh_assets.settings import get_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--land", nargs="*", default=[], help="days of shop.raw_orders to land first")
    parser.add_argument("--partitions", nargs="*", default=[], help="one run each (a key or first..last), in order")
    parser.add_argument("--assets", nargs="+", default=["shop/orders"], help="<domain>/<table> to materialize")
    parser.add_argument("--instance", choices=["ephemeral", "home"], default="ephemeral", help="home: DAGSTER_HOME")
    parser.add_argument("--rows", action="store_true", help="print the materialized tables' rows")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    mesh = MeshResource()
    keys = [a.split("/") for a in args.assets]
    if args.land:  # otherwise Spark starts inside the first run, as in a run process of a deployment
        shop.land(mesh.spark, mesh.registry, [date.fromisoformat(d) for d in args.land])
    out: dict = {"master": get_settings().spark.master, "runs": [], "rows": {}}
    with dg.DagsterInstance.get() if args.instance == "home" else dg.DagsterInstance.ephemeral() as instance:
        for partition in args.partitions:
            result = shop.materialize(instance, mesh, keys, partition)
            versions = {"/".join(k): shop.recorded_version(instance, k) for k in keys}
            run = {"partition": partition, "run_id": result.run_id, "success": result.success, "versions": versions}
            out["runs"].append(run)
    out["session"] = type(mesh.spark).__module__
    if args.rows:
        out["rows"] = {"/".join(k): shop.rows(mesh.spark, mesh.registry, k) for k in keys}
    stop_spark()
    print(json.dumps(out))
    return 0 if all(r["success"] for r in out["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
