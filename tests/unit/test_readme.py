"""The README as a guide: its contents lead to every section, and its marked blocks are where the e2e test finds them.

tests/e2e/test_first_run.py runs the blocks marked ``readme-test`` and compares those marked ``readme-output`` with
what their commands print; a marker whose block is not right below it would be skipped without a word.
"""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
HEADING = re.compile(r"^(#{2,3}) (.+)$", re.M)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def outside_code(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def test_the_contents_link_to_sections_and_list_every_section():
    prose = outside_code(README)
    headings = {slug(title): level for level, title in HEADING.findall(prose)}
    contents = README.split("**Contents**", 1)[1].split("\n## ", 1)[0]
    linked = re.findall(r"\]\(#([\w-]+)\)", contents)
    assert [anchor for anchor in linked if anchor not in headings] == []
    assert [anchor for anchor, level in headings.items() if level == "##" and anchor not in linked] == []


def test_one_operating_section_with_one_backfill_guide():
    sections = [title for level, title in HEADING.findall(outside_code(README)) if level == "##"]
    assert [title for title in sections if "operating" in title.lower()] == ["Operating"]
    assert len(re.findall(r"--downstream --wait", README)) == 1, "the backfill commands are shown once"


MARKERS = {
    "<!-- readme-test: runs after make demo -->": "```bash",
    "<!-- readme-test: adds a domain, in a copy of the checkout -->": "```bash",
    "<!-- readme-output: ": "```text",
}


def test_every_marker_sits_right_above_its_block():
    for marker, fence in MARKERS.items():
        count = len(re.findall("^" + re.escape(marker), README, re.M))  # the prose quotes them mid-line
        assert count > 0
        above = re.findall("^" + re.escape(marker) + r".*\n" + re.escape(fence) + "\n", README, re.M)
        assert len(above) == count, marker
