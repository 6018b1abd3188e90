"""``mesh --version`` prints the version ``pyproject.toml`` gives, and CHANGELOG.md has a heading for it."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def declared() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_mesh_version_is_the_projects() -> None:
    """As typed: the installed ``mesh`` script reads the installed package's metadata, which ``make setup``
    re-installs from ``pyproject.toml`` (a version changed there and not re-installed fails here)."""
    done = subprocess.run([ROOT / ".venv" / "bin" / "mesh", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"mesh {declared()}\n"


def test_the_changelog_has_a_heading_for_the_version() -> None:
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "Unreleased"
    assert declared() in headings[1:], f"CHANGELOG.md has no '## {declared()}' (headings: {headings})"
