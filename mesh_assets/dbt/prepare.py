"""``python -m mesh_assets.dbt.prepare``: write dbt_project/target/manifest.json (a ``make setup`` step)."""

from __future__ import annotations

import sys

from mesh_assets.dbt.project import prepare


def main() -> int:
    path = prepare()
    print(f"dbt manifest written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
