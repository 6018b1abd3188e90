"""A check's verdict on one partition, and which partitions a run's verdicts refuse."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mesh_assets.model.checks import CheckSpec, Unique
from mesh_assets.model.kinds import KEY_CHECK


@dataclass(frozen=True)
class CheckOutcome:
    """One check's verdict on one partition (``None`` for an unpartitioned table)."""

    check: CheckSpec
    partition: str | None
    passed: bool
    failing_rows: int = 0
    sample: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    """Why the check could not judge the partition (it then failed); None when it judged."""

    @property
    def name(self) -> str:
        return self.check.check_name

    def describe(self) -> str:
        where = f" on partition {self.partition}" if self.partition else ""
        if self.name == KEY_CHECK and isinstance(self.check, Unique):  # the kind's key: say which columns
            where = f" ({', '.join(self.check.keys)}){where}"
        if self.error:
            return f"check {self.name}{where} errored: {self.error}"
        extra = f" ({self.failing_rows} failing rows)" if self.failing_rows else ""
        if "drift" in self.detail:
            extra = f" ({'; '.join(self.detail['drift'])})"
        elif "reason" in self.detail:
            extra = f" ({self.detail['reason']})"
        return f"check {self.name}{where} failed{extra}"


def failed_partitions(outcomes: Iterable[CheckOutcome]) -> dict[str | None, list[CheckOutcome]]:
    """Partitions that a blocking check failed, with the failing outcomes."""
    out: dict[str | None, list[CheckOutcome]] = {}
    for o in outcomes:
        if not o.passed and o.check.blocking:
            out.setdefault(o.partition, []).append(o)
    return out
