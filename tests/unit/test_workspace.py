"""Every domain folder is a code location: ``make dev`` serves only what ``workspace.yaml`` names."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_every_domain_folder_is_a_code_location():
    entries = [e["python_file"] for e in yaml.safe_load((ROOT / "workspace.yaml").read_text())["load_from"]]
    served = {e["location_name"]: e["relative_path"] for e in entries}
    folders = sorted(p.parent.name for p in (ROOT / "domains").glob("*/definitions.py"))
    assert folders, "no domain folders"
    assert {name: served.get(name) for name in folders} == {name: f"domains/{name}/definitions.py" for name in folders}


def test_the_readme_adds_a_domain_with_an_entry_shaped_like_the_workspace():
    section = (ROOT / "README.md").read_text().split("## Adding a domain", 1)[1].split("\n## ", 1)[0]
    (entry,) = yaml.safe_load(re.search(r"cat >> workspace.yaml <<'EOF'\n(.*?)EOF", section, re.S)[1])
    served = yaml.safe_load((ROOT / "workspace.yaml").read_text())["load_from"][0]
    assert entry.keys() == served.keys() and entry["python_file"].keys() == served["python_file"].keys()
    assert entry["python_file"]["relative_path"] == f"domains/{entry['python_file']['location_name']}/definitions.py"
