"""``python -m mesh_assets.dbt.prepare``: write dbt_project/target/manifest.json (a ``make setup`` step)."""

from __future__ import annotations

import sys

from mesh_assets.dbt.project import prepare
from mesh_assets.settings import MeshSettings


def main() -> int:
    path = prepare(MeshSettings().warehouse_uri)  # this process's entry point reads the configuration
    print(f"dbt manifest written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
