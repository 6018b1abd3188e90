"""Dagster notices that do not apply to Mesh assets, filtered where definitions are built.

A Mesh asset logs its check results per partition (a range run judges many partitions), so Dagster's
executor sees no check *output* and notes that a downstream step "will proceed without gating on it".
Mesh gates itself: a step that refuses partitions fails, and every consumer checks its inputs' results
before computing (``blocked_upstream``). The notice would only mislead operators reading run logs.
"""

from __future__ import annotations

import logging

from mesh_assets.compat import EXECUTOR_LOGGER


class _CheckGatingNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "will proceed without gating on it" not in record.getMessage()


def quiet_check_gating_notice() -> None:
    """Install the filter once per process."""
    logger = logging.getLogger(EXECUTOR_LOGGER)
    if not any(isinstance(f, _CheckGatingNotice) for f in logger.filters):
        logger.addFilter(_CheckGatingNotice())
