"""Kind ``history`` as a spec declares it: what it requires of the output, before anything runs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mesh_assets import History, Output


def test_history_needs_a_partitioned_output():
    with pytest.raises(ValidationError, match="kind history needs a partitioned output"):
        Output(table="courier_history", partitioning="none", kind=History(unique_key="id", updated_at="at"))


def test_history_detects_changes_by_exactly_one_of_updated_at_or_check_columns():
    with pytest.raises(ValidationError, match="exactly one of updated_at or check_columns"):
        History(unique_key="id", updated_at="at", check_columns=("zone",))
    with pytest.raises(ValidationError, match="exactly one of updated_at or check_columns"):
        History(unique_key="id")


def test_a_yaml_mapping_declares_the_kind_and_its_metadata_says_how_it_detects_changes():
    out = Output.model_validate(
        {"table": "zones", "kind": {"name": "history", "unique_key": "courier_id", "check_columns": ["zone"]}}
    )
    assert out.table_kind.describe() == "history on courier_id by check zone"
    assert out.table_kind.extra_columns == ("valid_from", "valid_to", "is_current")
