"""Every private Dagster import of the platform, in one place, each with a test (tests/unit/test_compat.py)
that fails loudly when an upgrade moves or changes it.

Dagster's public API has no equivalent for these; when it gains one, the use moves there and the entry goes.
"""

from __future__ import annotations

from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._utils.schedules import is_valid_cron_schedule

__all__ = [
    "AssetCheckEvaluationTargetMaterializationData",
    "AssetCheckExecutionRecordStatus",
    "is_valid_cron_schedule",
]
