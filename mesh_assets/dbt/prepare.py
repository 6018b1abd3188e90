"""``python -m mesh_assets.dbt.prepare``: write dbt_project/target/manifest.json (a ``make setup`` step)."""

from __future__ import annotations

import sys

from mesh_assets.dbt.project import prepare, project_dir
from mesh_assets.dbt.set_aside import ParseFailed, set_aside_files
from mesh_assets.settings import MeshSettings


def main() -> int:
    try:
        path = prepare(MeshSettings().warehouse_uri)  # this process's entry point reads the configuration
    except ParseFailed as exc:
        print(f"error {exc}", file=sys.stderr)
        return 1
    for aside in set_aside_files(project_dir()):
        owner = f"domain {aside.domain}" if aside.domain else "no domain"
        print(f"error {aside.file}: set aside ({owner} fails to load until it parses): {aside.message}")
    print(f"dbt manifest written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
