"""The example mesh's partitions are its history, June 2021: Dagster's UI lists the days the demo publishes
among 30, not a sliver of every day since 2021."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import yaml

from mesh_assets.cli.main import main
from mesh_assets.settings import get_settings
from mesh_examples.run import DEMO_DAYS, DEMO_START, HISTORY_DAYS

DOMAINS = Path(__file__).resolve().parents[2] / "domains"


def test_every_example_domain_ends_its_tables_with_the_examples_history():
    ends = {
        folder.name: yaml.safe_load((folder / "domain.yaml").read_text()).get("end_date")
        for folder in DOMAINS.iterdir()
        if (folder / "domain.yaml").exists()
    }
    assert set(ends) == {"analytics", "central", "courier", "food_delivery", "growth"}
    assert set(ends.values()) == {DEMO_START + timedelta(days=HISTORY_DAYS)}
    assert DEMO_DAYS <= HISTORY_DAYS


def test_the_demo_refuses_days_beyond_the_history_and_lands_nothing(capsys, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("MESH_HOME", str(tmp_path))
    get_settings.cache_clear()
    assert main(["demo", "--days", str(HISTORY_DAYS + 1)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert (
        out == f"error --days {HISTORY_DAYS + 1}: the example's history is June 2021, from 1 to 30 days; nothing landed"
    )
    assert list(tmp_path.iterdir()) == []
