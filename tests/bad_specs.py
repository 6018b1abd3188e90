"""The bad-spec fixtures: the meshes ``mesh validate`` refuses, that every command and ``dg`` must explain."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOOD = {"cross_domain", "partition_counts", "partition_counts_mixed"}
"""The governance fixtures whose specs pass (warnings at most)."""
BAD_MESHES = [
    *(d for d in sorted((FIXTURES / "governance").iterdir()) if d.name not in GOOD),
    FIXTURES / "reliability" / "bad_specs",
]
"""Every mesh under ``tests/fixtures/governance`` (a new one is covered without listing it; one whose specs pass
is named in ``GOOD``) and ``tests/fixtures/reliability/bad_specs``."""
